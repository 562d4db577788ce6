"""Dense and hybrid retrieval: embedding throughput of two providers, query latency, index size.

Corpus: the Python standard library sources of the running interpreter
(``sysconfig`` stdlib, ``*.py`` outside site-packages, sorted by path), cut on
line boundaries into passages of at least 800 characters; ``--passages`` of
them are taken at an even stride. Queries: ``--queries`` sets of 2-5 distinct
words (>= 3 letters) drawn with a fixed seed from random passages.

Measured in one run, on this machine's CPU, for the ``local`` provider
(sentence-transformers fp32 all-MiniLM-L6-v2, the peer) and the ``onnx`` provider
(the same model as an int8 ONNX graph; ``--no-onnx`` skips it), both on ``--threads``:

- embedding throughput, passages/s, on the same fixed sample (``--throughput-sample``),
  best of ``--rounds`` interleaved runs, and the ratio onnx/local (goal >= 2); also
  over the full :meth:`VectorStore.build` when it embeds (vectors are cached in
  ``.bench/dense-cache`` and ``.bench/dense-cache-onnx`` and reused through
  ``previous=`` while the corpus is unchanged; ``--no-cache`` re-embeds everything);
- index size on disk and open time;
- per-query latency p50/p99 on ``--query-threads``: query embedding alone for each
  provider (goal: onnx p50 <= 3 ms), dense (query embedding + exact search) with each,
  BM25 and hybrid (local dense + BM25 + RRF), each list ``--depth`` deep, fused to the
  top 10, measured interleaved query by query so other load on the machine hits all
  alike; each query's latency is the fastest of ``REPEATS`` runs (load averages are
  recorded); goal: hybrid p50 <= dense p50 + BM25 p50 + 2 ms;
- exact search at ``--synthetic`` x 384 (seeded random unit vectors): numpy
  over the loaded matrix vs LanceDB's own flat ``table.search()``.

    python bench/bench_dense.py                       # 10,000 passages, 200 queries
    python bench/bench_dense.py --passages 2000 --synthetic 0
    python bench/bench_dense.py --query-threads 1    # one thread for query embedding

Writes ``.bench/dense.json``.

``--folder DIR`` measures instead what issue 46's throughput target names: each provider
indexing the same folder as a user does (``grk index DIR -c NAME --embed SPEC`` in a
temporary home, then ``--rounds`` interleaved ``grk index -c NAME --rebuild``, each a fresh
process: the embedding progress line's chunks/s, model load included, and the child's CPU
seconds), and, in this process with both models loaded, embedding the folder's chunk
texts, best of ``--rounds`` interleaved; writes ``.bench/dense-folder.json``:

    nice -n 10 python bench/bench_dense.py --folder golden/v2/docs/birchline --rounds 5
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import random
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    ROOT,
    Stopwatch,
    cpu_s,
    disk_bytes,
    latency_summary,
    load_average,
    machine,
    timed_ms,
    write_result,
)

sys.path.insert(0, str(ROOT))

from groundkit import store as chunk_store
from groundkit.embeddings import EmbeddingIdentity, make_provider
from groundkit.embeddings.onnx_export import default_home
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

GOAL_RATIO = 2.0
"""onnx passages/s over local passages/s, same sample, same threads, same run."""
GOAL_QUERY_P50_MS = 3.0
"""onnx query embedding p50."""


def bench_corpus(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    passages = take_evenly(stdlib_passages(), args.passages)
    ids = [f"bench:{i:020x}" for i in range(len(passages))]
    queries = make_queries(passages, args.queries)
    names = ["local"] + ([] if args.no_onnx else ["onnx"])
    loaded = {name: load_provider(name, args.threads, args.batch_size) for name in names}
    sample = take_evenly(passages, args.throughput_sample)
    speed = throughput(loaded, sample, args.rounds)
    out: dict[str, Any] = {"corpus": corpus_info(passages, queries)}
    stores = {}
    for name, (provider, load_s) in loaded.items():
        store, build = build_store(args, work, passages, ids, provider, name)
        out["embedding" if name == "local" else f"embedding_{name}"] = {
            "provider": provider.identity.describe(), "model_load_seconds": round(load_s, 2),
            "threads": args.threads, "batch_size": getattr(provider, "batch_size", None),
            "sample_passages": len(sample), "sample_passages_per_second": speed[name],
            **build}
        stores[name] = store
    if "onnx" in speed:
        ratio = speed["onnx"] / speed["local"]
        out["embedding_ratio"] = {"onnx_over_local_passages_per_second": round(ratio, 2),
                                  "goal": GOAL_RATIO, "met": ratio >= GOAL_RATIO}
    open_s, stores["local"] = timed_ms(lambda: VectorStore.open(
        stores["local"].directory, stores["local"].stamp, stores["local"].identity))
    out["index"] = {"bytes_on_disk": disk_bytes(stores["local"].directory),
                    "open_seconds": round(open_s / 1e3, 3)}
    query_threads = args.query_threads or args.threads
    set_torch_threads(query_threads)
    providers = {"local": loaded["local"][0]}
    if "onnx" in loaded:
        providers["onnx"] = load_provider("onnx", query_threads, args.batch_size)[0]
    out["latency"] = {"query_threads": query_threads,
                      **bench_latency(args, passages, ids, queries, stores, providers)}
    return out


def load_provider(name: str, threads: int, batch_size: int) -> tuple[Any, float]:
    """A provider with its model loaded (one embed), and the seconds that took."""
    options: dict[str, Any] = {"threads": threads}
    if name == "local":
        options["batch_size"] = batch_size
    with Stopwatch() as load:
        provider = make_provider(name, **options)
        provider.embed(["warm up"], kind="document")  # loads the model (onnx: builds it once)
    if name == "local":
        set_torch_threads(threads)
    return provider, load.s


def throughput(loaded: dict[str, tuple[Any, float]], sample: list[str],
               rounds: int) -> dict[str, float]:
    """Passages/s of each provider on ``sample``: the best of ``rounds`` interleaved runs."""
    best = dict.fromkeys(loaded, float("inf"))
    for _ in range(max(1, rounds)):
        for name, (provider, _) in loaded.items():
            ms, _ = timed_ms(lambda p=provider: p.embed(sample, kind="document"))
            best[name] = min(best[name], ms)
    return {name: round(len(sample) / (ms / 1e3), 1) for name, ms in best.items()}


def build_store(
    args: argparse.Namespace, work: Path, passages: list[str], ids: list[str], provider: Any,
    name: str = "local",
) -> tuple[VectorStore, dict[str, Any]]:
    """Build the store, reusing vectors cached by an earlier run over the same corpus."""
    identity = provider.identity
    stamp = {**STAMP, "corpus": corpus_info(passages, [])["sha256"][:16]}
    cache = ROOT / ".bench" / ("dense-cache" if name == "local" else f"dense-cache-{name}")
    previous = None
    if cache.exists() and not args.no_cache:
        with contextlib.suppress(IndexMismatchError):
            previous = VectorStore.open(cache, stamp, identity)
    seconds, store = timed_ms(lambda: VectorStore.build(
        work / f"dense-{name}", stamp, identity, ids, passages, provider, previous=previous))
    shutil.rmtree(cache, ignore_errors=True)
    shutil.copytree(work / f"dense-{name}", cache)
    stats = store.stats
    out: dict[str, Any] = {"build_seconds": round(seconds / 1e3, 2),
                           "embedded": stats.embedded, "reused": stats.reused}
    if stats.embedded:
        out["build_passages_per_second"] = round(stats.embedded / (seconds / 1e3), 1)
    return store, out


def bench_latency(args: argparse.Namespace, passages: list[str], ids: list[str],
                  queries: list[str], stores: dict[str, VectorStore], providers: dict[str, Any],
                  ) -> dict[str, Any]:
    """Query embedding alone and dense search with each provider, BM25, hybrid and RRF alone,
    per query, interleaved, so machine load hits them all alike."""
    store = stores["local"]
    vectors = {q: providers["local"].embed([q], kind="query")[0] for q in queries}
    out: dict[str, Any] = {"depth_per_list": args.depth, "fused_top_k": 10,
                           "dense_search_only": latency_summary(latencies_ms(
                               lambda q: store.search(vectors[q], args.depth), queries))}

    def dense(query: str, name: str = "local") -> list[tuple[str, float]]:
        vector = providers[name].embed([query], kind="query")[0]
        return stores[name].search(vector, args.depth)

    from groundkit.retrieval.bm25 import BM25Index

    index = BM25Index.build_from_texts(passages)

    def bm25(query: str) -> list[tuple[str, float]]:
        return [(ids[i], s) for i, s in index.search(query, top_k=args.depth)]

    def hybrid(query: str) -> list[Any]:
        return rrf({"bm25": bm25(query), "dense": dense(query)}, top_k=10)

    lists = {q: {"bm25": bm25(q), "dense": dense(q)} for q in queries}
    modes: dict[str, Callable[[str], Any]] = {
        "dense": dense, "bm25": bm25, "hybrid": hybrid,
        "rrf_only": lambda q: rrf(lists[q], top_k=10)}
    for name, provider in providers.items():
        modes[f"embed_{name}"] = lambda q, p=provider: p.embed([q], kind="query")
        if name != "local":
            modes[f"dense_{name}"] = partial(dense, name=name)
    times = interleaved(queries, modes)
    overhead = [h - d - b for h, d, b in zip(times["hybrid"], times["dense"], times["bm25"],
                                             strict=True)]
    out.update({name: latency_summary(times[name]) for name in modes
                if not name.startswith("embed_")})
    out["hybrid_minus_dense_minus_bm25_p50_ms"] = round(statistics.median(overhead), 3)
    embedding = {name: latency_summary(times[f"embed_{name}"]) for name in providers}
    if "onnx" in embedding:
        embedding["goal"] = {"onnx_p50_ms": GOAL_QUERY_P50_MS,
                             "met": embedding["onnx"]["p50_ms"] <= GOAL_QUERY_P50_MS}
    out["query_embedding"] = embedding
    return out


def interleaved(queries: Sequence[str], modes: dict[str, Callable[[str], Any]]
                ) -> dict[str, list[float]]:
    """Each query's best-of-REPEATS time in every mode, the modes' order rotating."""
    names = list(modes)
    for query in queries[:5]:
        for fn in modes.values():
            fn(query)
    times: dict[str, list[float]] = {name: [] for name in names}
    for i, query in enumerate(queries):
        for name in names[i % len(names) :] + names[: i % len(names)]:
            times[name].append(timed_ms(partial(modes[name], query), REPEATS)[0])
    return times


def corpus_info(passages: Sequence[str], queries: Sequence[str]) -> dict[str, Any]:
    digest = hashlib.sha256("\x1e".join(passages).encode()).hexdigest()
    return {
        "source": "Python stdlib *.py of the running interpreter, sorted by path, passages of "
        f">= {MIN_PASSAGE} chars on line boundaries, taken at an even stride",
        "stdlib": sysconfig.get_paths()["stdlib"], "passages": len(passages),
        "mean_chars": round(statistics.fmean(len(p) for p in passages), 1),
        "sha256": digest, "queries": len(queries), "query_seed": 0,
    }


def set_torch_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


# -- a folder, indexed as a user indexes it (issue 46) --------------------------------

FOLDER_SPECS = {"local": "local:all-MiniLM-L6-v2", "onnx": "onnx:all-MiniLM-L6-v2-int8"}
GOAL_FOLDER_RATIO = 4.0
"""Issue 46: the recommended provider's chunks/s at least 4x ``local:``'s on the same folder."""
_RATE = re.compile(r"embedding: [\d,]+/[\d,]+ chunks \(100%\), ([\d.]+)/s")
_GRK = "import sys; from groundkit.cli import run; sys.exit(run())"


def bench_folder(args: argparse.Namespace) -> dict[str, Any]:
    """Both providers indexing ``args.folder``: fresh ``grk`` processes, then in-process."""
    home = Path(tempfile.mkdtemp(prefix="grk-bench-folder-"))
    try:
        # the int8 model built once on this machine (the home's, else the test suite's)
        built = [d for d in (default_home() / "models" / "onnx", ROOT / ".cache" / "onnx-models")
                 if d.is_dir()]
        if built:
            (home / "models").mkdir()
            (home / "models" / "onnx").symlink_to(built[0])
        env = {**os.environ, "GROUNDKIT_HOME": str(home)}
        for name, spec in FOLDER_SPECS.items():  # builds the collections (and warms caches)
            grk_index(env, [str(args.folder), "-c", name, "--embed", spec])
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in FOLDER_SPECS}
        for r in range(max(1, args.rounds)):
            for name in list(FOLDER_SPECS)[:: 1 if r % 2 == 0 else -1]:
                runs[name].append(grk_index(env, ["-c", name, "--rebuild"]))
        texts = folder_texts(home / "collections" / "onnx" / "store.sqlite3")
        in_process = embed_texts(texts, args.rounds, home / "models" / "onnx")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    best = {name: max(run["chunks_per_second"] for run in rows) for name, rows in runs.items()}
    cpu = {name: min(run["cpu_seconds"] for run in rows) for name, rows in runs.items()}
    ratio = best["onnx"] / best["local"]
    return {"folder": str(args.folder), "chunks": len(texts), "rounds": args.rounds,
            "grk_index_rebuild": {"runs": runs, "best_chunks_per_second": best,
                                  "least_cpu_seconds": cpu,
                                  "ratio_best_rate": round(ratio, 2),
                                  "ratio_least_cpu": round(cpu["local"] / cpu["onnx"], 2),
                                  "goal": GOAL_FOLDER_RATIO, "met": ratio >= GOAL_FOLDER_RATIO},
            "in_process": in_process}


def grk_index(env: dict[str, str], argv: list[str]) -> dict[str, float]:
    """One ``grk index`` in a fresh process: its embedding rate, CPU and wall seconds."""
    before, started = os.times(), time.perf_counter()
    done = subprocess.run([sys.executable, "-c", _GRK, "index", *argv], env=env, cwd=ROOT,
                          capture_output=True, text=True, check=False)
    after = os.times()
    found = _RATE.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"grk index {' '.join(argv)} failed ({done.returncode}): "
                         f"{done.stderr.strip()[-400:]}")
    return {"chunks_per_second": float(found.group(1)),
            "cpu_seconds": round(after.children_user + after.children_system
                                 - before.children_user - before.children_system, 2),
            "wall_seconds": round(time.perf_counter() - started, 2),
            "load_average": load_average()[0]}


def folder_texts(database: Path) -> list[str]:
    """The chunk texts of a collection's current generation, as its build embedded them."""
    with contextlib.closing(sqlite3.connect(database)) as conn:
        generation = chunk_store.current_generation(conn)
        if generation is None:
            raise SystemExit(f"{database} has no generation")
        return [chunk.text for chunk in chunk_store.iter_generation_chunks(conn, generation)]


def embed_texts(texts: list[str], rounds: int, models: Path) -> dict[str, Any]:
    """Both providers on ``texts`` in this process, models loaded, default options:
    chunks/s and CPU seconds of the best of ``rounds`` interleaved runs."""
    loaded = {"local": make_provider(FOLDER_SPECS["local"]),
              "onnx": make_provider(FOLDER_SPECS["onnx"], cache_dir=models)}
    best = {name: (float("inf"), 0.0) for name in loaded}
    for r in range(max(1, rounds) + 1):  # the first round loads the models, uncounted
        for name in list(loaded)[:: 1 if r % 2 == 0 else -1]:
            cpu = cpu_s()
            ms, _ = timed_ms(lambda p=loaded[name]: p.embed(texts, kind="document"))
            if r and ms < best[name][0]:
                best[name] = (ms, cpu_s() - cpu)
    rate = {name: round(len(texts) / (ms / 1e3), 1) for name, (ms, _) in best.items()}
    return {"best_chunks_per_second": rate,
            "cpu_seconds_of_best": {name: round(c, 2) for name, (_, c) in best.items()},
            "ratio_best_rate": round(rate["onnx"] / rate["local"], 2)}


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
        found = (table.search(queries[int(key)]).distance_type("cosine").limit(10)
                 .select(["chunk_id", "_distance"]).to_arrow())
        return [str(c) for c in found.column("chunk_id").to_pylist()]

    agree = sum(numpy_search(k) == lance_search(k) for k in keys[:20])
    return {
        "rows": n, "dimension": dim, "write_seconds": round(build_ms / 1e3, 2),
        "open_seconds": round(open_ms / 1e3, 3), "bytes_on_disk": disk_bytes(work / "synthetic"),
        "numpy_exact_top10": latency_summary(latencies_ms(numpy_search, keys, warmup=2)),
        "lancedb_flat_top10": latency_summary(latencies_ms(lance_search, keys, warmup=2)),
        "same_top10_of_20": agree,
    }


# -- main -----------------------------------------------------------------------------

def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--passages", type=int, default=10_000)
    add("--queries", type=int, default=200)
    add("--depth", type=int, default=50, help="list depth fed to fusion")
    add("--batch-size", type=int, default=64, help="local provider batch (onnx: its default, 1)")
    add("--threads", type=int, default=os.cpu_count() or 1,
        help="torch and ONNX Runtime threads for embedding (default: the CPU count)")
    add("--throughput-sample", type=int, default=256)
    add("--rounds", type=int, default=2, help="throughput: best of this many interleaved runs")
    add("--no-cache", action="store_true", help="re-embed every passage")
    add("--no-onnx", action="store_true", help="measure the local provider only")
    add("--query-threads", type=int, default=0,
        help="torch and ONNX Runtime threads for the latency phase (default: --threads)")
    add("--synthetic", type=int, default=100_000, help="0 skips it")
    add("--synthetic-queries", type=int, default=50)
    add("--out", type=Path, default=None,
        help="default .bench/dense.json (--folder: .bench/dense-folder.json)")
    add("--folder", type=Path, help="measure indexing this folder instead (issue 46)")
    args = parser.parse_args(argv)
    if args.folder is not None:
        result = {"machine": machine(), **bench_folder(args)}
        result["machine"]["loadavg_after"] = load_average()
        write_result("dense-folder", result, args.out)
        json.dump(result, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    work = ROOT / ".bench" / "dense-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    import lancedb

    result: dict[str, Any] = {"machine": machine(numpy=np.__version__,
                                                 lancedb=lancedb.__version__)}
    result.update(bench_corpus(args, work))
    result["machine"]["loadavg_after"] = load_average()
    latency = result["latency"]
    budget = latency["dense"]["p50_ms"] + latency["bm25"]["p50_ms"] + 2.0
    latency["goal"] = {"hybrid_p50_budget_ms": round(budget, 3),
                       "met": latency["hybrid"]["p50_ms"] <= budget}
    if args.synthetic:
        result["exact_search"] = bench_synthetic(args, work)
    shutil.rmtree(work, ignore_errors=True)
    write_result("dense", result, args.out)
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
