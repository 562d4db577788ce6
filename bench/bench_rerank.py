"""Cross-encoder rerank latency for a 30-passage shortlist, against the BM25 search before it.

Corpus: golden v1's documents (sorted by path) cut on line boundaries into passages of
about 1,000 characters (``PASSAGE_CHARS``). Queries: the first ``--queries`` golden v1
questions. For each query, BM25 (``BM25Index.build_from_texts`` over the passages)
returns its top 30; when it returns fewer, the shortlist is filled up with the first
passages it missed (score 0), so every rerank scores exactly 30 pairs. Timed, per query
and interleaved (alternating which goes first), after one warm-up pass:

- ``bm25``: ``BM25Index.search(query, 30)`` alone (the peer);
- ``rerank``: :func:`groundkit.retrieval.rerank.rerank` of that shortlist (depth 30,
  ``replace``): 30 ``(query, passage)`` pairs through the cross-encoder, batch 16, one
  torch thread, then the reordering.

Each query's figure is the fastest of ``--repeat`` runs. Models: the tiny test
cross-encoder (``groundkit.testing.tiny_cross_encoder``, random weights; built here with
a 512-token limit so pairs are truncated as a BERT-base reranker truncates them, but
2 layers of width 32, so its latency is a floor, not an estimate); and, when
``GROUNDKIT_RERANK_MODEL=PATH`` names a sentence-transformers CrossEncoder directory,
that model (else recorded as not measured). The ratio is rerank p50 / BM25 p50.

    python bench/bench_rerank.py [--queries 100] [--repeat 3] [--threads 1]

Writes ``.bench/rerank.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import ROOT, latency_summary, load_average, machine, ratio, write_result

sys.path.insert(0, str(ROOT))

from groundkit.retrieval.base import Scored
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.rerank import CrossEncoderReranker, Reranker, rerank

PASSAGE_CHARS = 1000
DEPTH = 30
ENV = "GROUNDKIT_RERANK_MODEL"
NOT_MEASURED = f"not measured ({ENV} not set)"


def passages(root: Path) -> list[str]:
    """Every document's lines, grouped into passages of at least PASSAGE_CHARS characters."""
    out: list[str] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        current = ""
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            current += line
            if len(current) >= PASSAGE_CHARS:
                out.append(current)
                current = ""
        if current.strip():
            out.append(current)
    return out


def queries(count: int) -> list[str]:
    import json

    lines = (ROOT / "golden" / "v1" / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["question"] for line in lines[:count]]


def shortlist(index: BM25Index, query: str, total: int) -> list[Scored]:
    hits = index.search(query, DEPTH)
    seen = {position for position, _ in hits}
    fill = [(p, 0.0) for p in range(total) if p not in seen][:DEPTH - len(hits)]
    return [Scored(p, s, ()) for p, s in hits + fill]


def interleaved(calls: Sequence[tuple[str, Callable[[str], object]]], qs: Sequence[str],
                repeat: int) -> dict[str, list[float]]:
    """Per call name, each query's fastest wall time of ``repeat`` runs, in ms."""
    out: dict[str, list[float]] = {name: [] for name, _ in calls}
    for q in qs:  # warm-up
        for _, call in calls:
            call(q)
    for i, q in enumerate(qs):
        best = {name: float("inf") for name, _ in calls}
        for r in range(max(1, repeat)):
            order = calls if (i + r) % 2 == 0 else list(reversed(calls))
            for name, call in order:
                start = time.perf_counter_ns()
                call(q)
                best[name] = min(best[name], (time.perf_counter_ns() - start) / 1e6)
        for name in best:
            out[name].append(best[name])
    return out


def measure(model: Reranker, texts: list[str], index: BM25Index, qs: list[str],
            repeat: int) -> dict[str, Any]:
    lists = {q: shortlist(index, q, len(texts)) for q in qs}

    def reranked(q: str) -> object:
        first = lists[q]
        return rerank(first, [texts[s.position] for s in first], q, model, depth=DEPTH)

    times = interleaved([("bm25", lambda q: index.search(q, DEPTH)), ("rerank", reranked)],
                        qs, repeat)
    bm25, rr = latency_summary(times["bm25"]), latency_summary(times["rerank"])
    return {"identity": model.identity.to_dict(), "bm25": bm25, "rerank": rr,
            "rerank_over_bm25_p50": ratio(rr["p50_ms"], bm25["p50_ms"]),
            "bm25_hits_below_depth": sum(1 for q in qs if len(index.search(q, DEPTH)) < DEPTH)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from groundkit.testing.tiny_cross_encoder import make_tiny_cross_encoder

    texts = passages(ROOT / "golden" / "v1" / "docs")
    index = BM25Index.build_from_texts(texts)
    qs = queries(args.queries)
    result: dict[str, Any] = {
        "machine": machine(torch=torch.__version__),
        "corpus": {"passages": len(texts), "mean_chars": round(sum(map(len, texts)) / len(texts)),
                   "source": "golden/v1/docs"},
        "queries": len(qs), "depth": DEPTH, "method": "replace", "batch_size": args.batch_size,
        "threads": args.threads, "repeat": args.repeat}
    with tempfile.TemporaryDirectory(prefix="bench-rerank-") as tmp:
        path = make_tiny_cross_encoder(Path(tmp) / "tiny-cross-encoder", seed=0, max_length=512)
        tiny = CrossEncoderReranker(path, batch_size=args.batch_size, threads=args.threads)
        result["tiny"] = measure(tiny, texts, index, qs, args.repeat)
    real = os.environ.get(ENV)
    if real:
        model = CrossEncoderReranker(Path(real).expanduser(), batch_size=args.batch_size,
                                     threads=args.threads)
        result["real"] = measure(model, texts, index, qs, args.repeat)
    else:
        result["real"] = NOT_MEASURED
    result["loadavg_after"] = load_average()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=100, help="golden v1 questions used")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query (fastest kept)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads while scoring")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    result = run(args)
    print(f"{result['corpus']['passages']} passages (~{result['corpus']['mean_chars']} chars), "
          f"{result['queries']} queries, shortlist {DEPTH}, {args.threads} torch thread(s):")
    for label in ("tiny", "real"):
        part = result[label]
        if isinstance(part, str):
            print(f"  {label:<5} {part}")
            continue
        print(f"  {label:<5} {part['identity']['name']} (max_length "
              f"{part['identity']['max_length']}): rerank p50 {part['rerank']['p50_ms']:.2f} ms "
              f"p99 {part['rerank']['p99_ms']:.2f} ms; BM25 p50 {part['bm25']['p50_ms']:.3f} ms "
              f"p99 {part['bm25']['p99_ms']:.3f} ms; ratio {part['rerank_over_bm25_p50']:.0f}x")
    path = write_result("rerank", result, args.out)
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
