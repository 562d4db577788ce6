"""Which BM25 queries dominate the tail: per-query latency against query length and
posting volume, on one saved groundkit index (kept, unlike ``bench_scale.py``'s).

    python bench/profile_bm25_queries.py --passages 1000000          # build once, then profile
    python bench/profile_bm25_queries.py --passages 1000000 --passes 3 --top 15

The corpus and queries are ``bench_scale.py``'s (``scale_corpus``, ``make_queries``, the
same seed). The index is built once into ``<cache>/scale-corpus/profile-index-<n>`` and
reused. Each pass times every query once, in order (as the bench does); the best of the
passes is kept per query (hot caches, the least preempted), in wall time and, for a
loaded machine, in this thread's CPU time (``--clock cpu``: what grouping and ranking
use). Printed: p50/p99/mean, the same by number of distinct query terms, by posting
volume, and the slowest queries with their terms' document frequencies. ``--kernel
numpy`` times the numpy kernel instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import scale_corpus
from bench_bm25 import load_texts, make_queries  # first: it pins numeric libraries to one thread
from common import ROOT, load_average, percentile

K = 10
STAMP = {"bench": 1}


def index_at(passages: int, cache: Path, seed: int) -> Any:
    """The kept groundkit index of ``passages`` (built on first use)."""
    from groundkit.retrieval.bm25 import BM25Index, BM25Params

    corpus = scale_corpus.scale_corpus(passages, 1000, seed, cache)
    where = cache / "scale-corpus" / f"profile-index-{passages}"
    if not (where / "meta.json").exists():
        start = time.perf_counter()
        texts = load_texts(corpus)
        BM25Index.build_from_texts(texts, params=BM25Params(k1=0.9, b=0.4)).save(where, STAMP)
        print(f"built {where} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
    return BM25Index.load(where, STAMP), corpus


def query_facts(index: Any, query: str) -> dict[str, Any]:
    weights = index._query_weights(index.analyzer.analyze(query))
    dfs = sorted((index.document_frequency(t) for t in weights), reverse=True)
    return {"terms": len(weights), "postings": sum(dfs), "dfs": dfs}


def bucket(postings: int) -> str:
    for edge in (10_000, 100_000, 300_000, 1_000_000):
        if postings < edge:
            return f"<{edge // 1000}k"
    return ">=1M"


def summary(rows: list[dict[str, Any]], key: str) -> None:
    groups: dict[Any, list[float]] = {}
    for r in rows:
        groups.setdefault(r[key], []).append(r["ms"])
    print(f"\nby {key}:")
    for g in sorted(groups, key=str):
        v = groups[g]
        print(f"  {g!s:>7}: n {len(v):4d}  p50 {percentile(v, 50):.4f}  p99 "
              f"{percentile(v, 99):.4f}  max {max(v):.3f}  sum {sum(v):.1f} ms")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--top", type=int, default=20, help="slowest queries listed")
    p.add_argument("--kernel", choices=["compiled", "numpy"], default="compiled")
    p.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                   help="wall time, or this thread's CPU time (less noisy under load)")
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    p.add_argument("--json", type=Path, help="write the per-query rows here")
    args = p.parse_args()
    if args.kernel == "numpy":
        os.environ["GROUNDKIT_BM25_KERNEL"] = "numpy"
    index, corpus = index_at(args.passages, args.cache, args.seed)
    queries = make_queries(load_texts(corpus), args.queries, args.seed)
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    best = [float("inf")] * len(queries)
    for _ in range(args.passes):
        for i, q in enumerate(queries):
            t0 = clock()
            index.search(q, K)
            best[i] = min(best[i], (clock() - t0) * 1e3)
    rows = [{"query": q, "ms": ms, **query_facts(index, q)}
            for q, ms in zip(queries, best, strict=True)]
    for r in rows:
        r["volume"] = bucket(r["postings"])
    ms = [r["ms"] for r in rows]
    print(f"{args.passages} passages, {len(rows)} queries, best of {args.passes} passes, "
          f"kernel {args.kernel}, {args.clock} ms, load {load_average()}")
    print(f"p50 {percentile(ms, 50):.4f}  p99 {percentile(ms, 99):.4f}  "
          f"mean {sum(ms) / len(ms):.4f} ms")
    summary(rows, "terms")
    summary(rows, "volume")
    print(f"\nslowest {args.top}:")
    for r in sorted(rows, key=lambda r: -r["ms"])[: args.top]:
        print(f"  {r['ms']:7.3f} ms  {r['terms']} terms  {r['postings']:8d} postings  "
              f"dfs {r['dfs']}  {r['query']!r}")
    if args.json:
        args.json.write_text(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
