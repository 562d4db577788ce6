"""Dense and hybrid retrieval: embedding throughput, query latency, index size.

Corpus: the Python standard library sources of the running interpreter
(``sysconfig`` stdlib, ``*.py`` outside site-packages, sorted by path), cut on
line boundaries into passages of at least 800 characters; ``--passages`` of
them are taken at an even stride over the whole list, so every package is
represented. Queries: ``--queries`` sets of 2-5 distinct words (>= 3 letters)
drawn with a fixed seed from random passages.

Measured in one run, on this machine's CPU:

- embedding throughput of the ``local`` provider (all-MiniLM-L6-v2), passages/s,
  on a fixed sample (``--throughput-sample``) every run, and over the full
  :meth:`VectorStore.build` when it embeds (vectors are cached in
  ``.bench/dense-cache`` and reused through ``previous=`` while the corpus is
  unchanged; ``--no-cache`` re-embeds everything);
- index size on disk and open time;
- per-query latency p50/p99 for dense (query embedding + exact search), BM25
  (if ``groundkit.retrieval.bm25`` exists) and hybrid (both + RRF), each list
  ``--depth`` deep, fused to the top 10, measured interleaved query by query so
  other load on the machine hits all three alike; each query's latency is the
  fastest of ``REPEATS`` runs (load averages are recorded);
  goal: hybrid p50 <= dense p50 + BM25 p50 + 2 ms;
- exact search at ``--synthetic`` x 384 (seeded random unit vectors): numpy
  over the loaded matrix vs LanceDB's own flat ``table.search()``.

    python bench/bench_dense.py                       # 10,000 passages, 200 queries
    python bench/bench_dense.py --passages 2000 --synthetic 0
    python bench/bench_dense.py --query-threads 1    # one torch thread for query embedding

Writes ``.bench/dense.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import random
import re
import shutil
import statistics
import sys
import sysconfig
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    ROOT,
    Stopwatch,
    disk_bytes,
    latency_summary,
    load_average,
    machine,
    timed_ms,
    write_result,
)

sys.path.insert(0, str(ROOT))

from groundkit.embeddings import EmbeddingIdentity, make_provider
from groundkit.errors import IndexMismatchError
from groundkit.retrieval.fusion import rrf
from groundkit.retrieval.vectors import VectorStore

MIN_PASSAGE = 800
_WORD = re.compile(r"[A-Za-z]{3,}")
STAMP = {"generation": 1, "collection": "bench"}


# -- corpus and queries ---------------------------------------------------------------


def stdlib_passages() -> list[str]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in stdlib.rglob("*.py") if "site-packages" not in p.parts)
    passages: list[str] = []
    for path in files:
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        current: list[str] = []
        size = 0
        for line in text.splitlines(keepends=True):
            current.append(line)
            size += len(line)
            if size >= MIN_PASSAGE:
                passages.append("".join(current))
                current, size = [], 0
        if current and size >= MIN_PASSAGE // 4:
            passages.append("".join(current))
    return passages


def take_evenly(items: list[str], n: int) -> list[str]:
    if n >= len(items):
        return items
    stride = len(items) / n
    return [items[int(i * stride)] for i in range(n)]


def make_queries(passages: Sequence[str], n: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    while len(queries) < n:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(rng.choice(passages))))
        if len(words) >= 2:
            queries.append(" ".join(rng.sample(words, min(len(words), rng.randint(2, 5)))))
    return queries


# -- latency (timing and percentiles from common.py) ---------------------------------


REPEATS = 3
"""Each query runs this many times per mode; its latency is the fastest run.

The minimum over repeats filters out interference from other processes on a
shared machine; p99 is then the tail over queries, not over scheduler noise.
"""


def latencies_ms(fn: Callable[[str], Any], queries: Sequence[str], warmup: int = 5) -> list[float]:
    for query in queries[:warmup]:
        fn(query)
    return [timed_ms(partial(fn, query), REPEATS)[0] for query in queries]


# -- the real corpus ------------------------------------------------------------------


def bench_corpus(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    passages = take_evenly(stdlib_passages(), args.passages)
    ids = [f"bench:{i:020x}" for i in range(len(passages))]
    queries = make_queries(passages, args.queries)
    with Stopwatch() as load:
        provider = make_provider("local", batch_size=args.batch_size)
        identity = provider.identity  # imports torch and sentence-transformers, loads the model
    embed_threads = torch_threads()
    sample = take_evenly(passages, args.throughput_sample)
    sample_ms, _ = timed_ms(lambda: provider.embed(sample, kind="document"))
    store, build = build_store(args, work, passages, ids, provider)
    open_s, store = timed_ms(lambda: VectorStore.open(store.directory, store.stamp, identity))
    if args.query_threads:
        import torch

        torch.set_num_threads(args.query_threads)
    return {
        "corpus": corpus_info(passages, queries),
        "embedding": {
            "provider": identity.describe(),
            "model_load_seconds": round(load.s, 2),
            "torch_threads": embed_threads,
            "sample_passages": len(sample),
            "sample_passages_per_second": round(len(sample) / (sample_ms / 1e3), 1),
            **build,
        },
        "index": {
            "bytes_on_disk": disk_bytes(store.directory),
            "open_seconds": round(open_s / 1e3, 3),
        },
        "latency": {
            "query_torch_threads": torch_threads(),
            **bench_latency(args, passages, ids, queries, store, provider),
        },
    }


def build_store(
    args: argparse.Namespace, work: Path, passages: list[str], ids: list[str], provider: Any
) -> tuple[VectorStore, dict[str, Any]]:
    """Build the store, reusing vectors cached by an earlier run over the same corpus."""
    identity = provider.identity
    stamp = {**STAMP, "corpus": corpus_info(passages, [])["sha256"][:16]}
    cache = ROOT / ".bench" / "dense-cache"
    previous = None
    if cache.exists() and not args.no_cache:
        with contextlib.suppress(IndexMismatchError):
            previous = VectorStore.open(cache, stamp, identity)
    seconds, store = timed_ms(
        lambda: VectorStore.build(
            work / "dense", stamp, identity, ids, passages, provider, previous=previous
        )
    )
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(work / "dense", cache)
    stats = store.stats
    out: dict[str, Any] = {
        "build_seconds": round(seconds / 1e3, 2),
        "embedded": stats.embedded,
        "reused": stats.reused,
    }
    if stats.embedded:
        out["build_passages_per_second"] = round(stats.embedded / (seconds / 1e3), 1)
    return store, out


def bench_latency(
    args: argparse.Namespace,
    passages: list[str],
    ids: list[str],
    queries: list[str],
    store: VectorStore,
    provider: Any,
) -> dict[str, Any]:
    """Dense, BM25 and hybrid per query, interleaved, so machine load hits all three alike."""
    vectors = {q: provider.embed([q], kind="query")[0] for q in queries}
    out: dict[str, Any] = {
        "depth_per_list": args.depth,
        "fused_top_k": 10,
        "dense_search_only": latency_summary(
            latencies_ms(lambda q: store.search(vectors[q], args.depth), queries)
        ),
    }

    def dense(query: str) -> list[tuple[str, float]]:
        return store.search(provider.embed([query], kind="query")[0], args.depth)

    try:
        from groundkit.retrieval.bm25 import BM25Index
    except ImportError:
        out["dense"] = latency_summary(latencies_ms(dense, queries))
        out["note"] = "groundkit.retrieval.bm25 not available: no BM25 or hybrid figures"
        return out
    index = BM25Index.build_from_texts(passages)

    def bm25(query: str) -> list[tuple[str, float]]:
        return [(ids[i], s) for i, s in index.search(query, top_k=args.depth)]

    def hybrid(query: str) -> list[Any]:
        return rrf({"bm25": bm25(query), "dense": dense(query)}, top_k=10)

    out.update(interleaved(queries, {"dense": dense, "bm25": bm25, "hybrid": hybrid}))
    return out


def interleaved(queries: Sequence[str], modes: dict[str, Callable[[str], Any]]) -> dict[str, Any]:
    names = list(modes)
    for query in queries[:5]:
        for fn in modes.values():
            fn(query)
    times: dict[str, list[float]] = {name: [] for name in names}
    fusion: list[float] = []
    for i, query in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            times[name].append(timed_ms(partial(modes[name], query), REPEATS)[0])
        lists = {"bm25": modes["bm25"](query), "dense": modes["dense"](query)}
        fusion.append(timed_ms(partial(rrf, lists, top_k=10), REPEATS)[0])
    overhead = [
        h - d - b for h, d, b in zip(times["hybrid"], times["dense"], times["bm25"], strict=True)
    ]
    out: dict[str, Any] = {name: latency_summary(values) for name, values in times.items()}
    out["rrf_only"] = latency_summary(fusion)
    out["hybrid_minus_dense_minus_bm25_p50_ms"] = round(statistics.median(overhead), 3)
    return out


def corpus_info(passages: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    digest = hashlib.sha256("\x1e".join(passages).encode()).hexdigest()
    return {
        "source": "Python stdlib *.py of the running interpreter, sorted by path, passages of "
        f">= {MIN_PASSAGE} chars on line boundaries, taken at an even stride",
        "stdlib": sysconfig.get_paths()["stdlib"],
        "passages": len(passages),
        "mean_chars": round(statistics.fmean(len(p) for p in passages), 1),
        "sha256": digest,
        "queries": len(queries),
        "query_seed": 0,
    }


def torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


# -- synthetic exact search -----------------------------------------------------------


class RandomProvider:
    """Seeded random unit vectors: enough to size and time exact search."""

    def __init__(self, dimension: int, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)
        self.identity = EmbeddingIdentity(provider="random", model="seeded", dimension=dimension)

    def embed(self, texts: Sequence[str], *, kind: str) -> np.ndarray:
        vectors = self._rng.standard_normal((len(texts), self.identity.dimension))
        return vectors.astype(np.float32)

    def close(self) -> None:
        pass


def bench_synthetic(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    import lancedb

    n, dim = args.synthetic, 384
    provider = RandomProvider(dim)
    ids = [f"bench:{i:020x}" for i in range(n)]
    build_ms, _ = timed_ms(lambda: VectorStore.build(work / "synthetic", STAMP, provider.identity,
                                                    ids, [""] * n, provider))
    open_ms, store = timed_ms(lambda: VectorStore.open(work / "synthetic", STAMP,
                                                       provider.identity))
    table = lancedb.connect(str(work / "synthetic")).open_table("vectors")
    rng = np.random.default_rng(1)
    queries = rng.standard_normal((args.synthetic_queries, dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    keys = [str(i) for i in range(len(queries))]

    def numpy_search(key: str) -> list[str]:
        return [cid for cid, _ in store.search(queries[int(key)], 10)]

    def lance_search(key: str) -> list[str]:
        found = (
            table.search(queries[int(key)])
            .distance_type("cosine")
            .limit(10)
            .select(["chunk_id", "_distance"])
            .to_arrow()
        )
        return [str(c) for c in found.column("chunk_id").to_pylist()]

    agree = sum(numpy_search(k) == lance_search(k) for k in keys[:20])
    return {
        "rows": n,
        "dimension": dim,
        "write_seconds": round(build_ms / 1e3, 2),
        "open_seconds": round(open_ms / 1e3, 3),
        "bytes_on_disk": disk_bytes(work / "synthetic"),
        "numpy_exact_top10": latency_summary(latencies_ms(numpy_search, keys, warmup=2)),
        "lancedb_flat_top10": latency_summary(latencies_ms(lance_search, keys, warmup=2)),
        "same_top10_of_20": agree,
    }


# -- main -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--depth", type=int, default=50, help="list depth fed to fusion")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--throughput-sample", type=int, default=256)
    parser.add_argument("--no-cache", action="store_true", help="re-embed every passage")
    parser.add_argument(
        "--query-threads", type=int, default=0, help="torch threads for the latency phase"
    )
    parser.add_argument("--synthetic", type=int, default=100_000, help="0 skips it")
    parser.add_argument("--synthetic-queries", type=int, default=50)
    parser.add_argument("--out", type=Path, default=ROOT / ".bench" / "dense.json")
    args = parser.parse_args(argv)
    work = ROOT / ".bench" / "dense-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    import lancedb

    result: dict[str, Any] = {"machine": machine(numpy=np.__version__,
                                                 lancedb=lancedb.__version__)}
    result.update(bench_corpus(args, work))
    result["machine"]["loadavg_after"] = load_average()
    latency = result["latency"]
    if latency.get("bm25"):
        budget = latency["dense"]["p50_ms"] + latency["bm25"]["p50_ms"] + 2.0
        latency["goal"] = {
            "hybrid_p50_budget_ms": round(budget, 3),
            "met": latency["hybrid"]["p50_ms"] <= budget,
        }
    if args.synthetic:
        result["exact_search"] = bench_synthetic(args, work)
    shutil.rmtree(work, ignore_errors=True)
    write_result("dense", result, args.out)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
