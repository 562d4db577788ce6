"""Approximate dense search (LanceDB's IVF-HNSW-SQ, IVF-PQ, IVF-HNSW-PQ) against exact search.

Vectors: real MiniLM embeddings of real passages, and above their count vectors derived
from them, seeded (``ann_vectors.py`` says how); queries are real texts embedded as
queries (golden v2 questions and held-out first sentences), the same at every size.

For each size a store is written with groundkit's own code
(:func:`groundkit.retrieval.vector_files.write_atomically`): once without an index (the
exact path, the peer) and once per index build setting in ``--builds``; build time,
index bytes on disk. Then, each in a fresh worker process (``--worker``), the store is
opened with :meth:`VectorStore.open` and every query searched top 10: exact
(``exact=True``, numpy over the loaded matrix: today's path) and, for each search
setting, through the index (``exact=False``); per setting recall@10 against the exact
top 10, latency p50/p99 (each query timed once after one untimed pass over all), and
the worker's peak RSS.

    python bench/bench_ann.py                                  # 20k, 100k
    python bench/bench_ann.py --sizes 20000,100000,1000000 --builds hnsw_sq,pq

Writes ``.bench/ann.json``; ``--table FILE...`` prints the trade-off table of result files.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from ann_vectors import MODEL, NOISE, derived_vectors, query_vectors, real_vectors
from common import ROOT, disk_bytes, latency_summary, load_average, machine, write_result

from groundkit.embeddings import EmbeddingIdentity
from groundkit.retrieval import vector_files
from groundkit.retrieval.ann import AnnParams
from groundkit.retrieval.vectors import VectorStore, _cosines, _top_rows

IDENTITY = EmbeddingIdentity(provider="local", model="all-MiniLM-L6-v2", dimension=384)
TOP = 10

# Build settings by name; {n} is replaced by a partition count for the size.
BUILDS: dict[str, dict[str, Any]] = {
    "hnsw_sq": {"kind": "ivf_hnsw_sq", "partitions": 1},
    "hnsw_sq_efc100": {"kind": "ivf_hnsw_sq", "partitions": 1, "ef_construction": 100},
    "hnsw_sq_m32": {"kind": "ivf_hnsw_sq", "partitions": 1, "m": 32},
    "hnsw_sq_p8": {"kind": "ivf_hnsw_sq", "partitions": 8},
    "pq": {"kind": "ivf_pq", "partitions": "sqrt"},
    "pq48": {"kind": "ivf_pq", "partitions": "sqrt", "sub_vectors": 48},
    "hnsw_pq": {"kind": "ivf_hnsw_pq", "partitions": 1},
}
# Search settings per index kind: every one is measured on every index of that kind.
SEARCHES: dict[str, list[dict[str, Any]]] = {
    "ivf_hnsw_sq": [{"ef": ef, "candidates": c} for ef in (100, 200, 400) for c in (1, 2)],
    "ivf_hnsw_pq": [{"ef": ef, "candidates": c, "refine_factor": r}
                    for ef in (100, 200) for c in (1, 4) for r in (None, 5)],
    "ivf_pq": [{"nprobes": p, "candidates": c, "refine_factor": r}
               for p in (10, 20, 50) for c in (1, 4) for r in (None, 10)],
}


def build_params(name: str, rows: int) -> AnnParams:
    spec = dict(BUILDS[name])
    if spec.get("partitions") == "sqrt":
        spec["partitions"] = max(1, int(rows ** 0.5))
    return AnnParams(**spec)


def write_store(directory: Path, ids: list[str], vectors: np.ndarray,
                params: AnnParams | None) -> float:
    start = time.perf_counter()
    vector_files.write_atomically(directory, {"bench": "ann"}, IDENTITY, ids, vectors, params)
    return time.perf_counter() - start


def exact_top(vectors: np.ndarray, queries: np.ndarray) -> list[list[int]]:
    return [_top_rows(_cosines(vectors, q), TOP) for q in queries]


# -- worker ----------------------------------------------------------------------------


def worker(directory: Path, queries_file: Path, searches: list[dict[str, Any]]) -> dict[str, Any]:
    """Open the store, search every query exactly and with each search setting."""
    queries = np.load(queries_file)
    start = time.perf_counter()
    store = VectorStore.open(directory, {"bench": "ann"}, IDENTITY)
    out: dict[str, Any] = {"open_s": round(time.perf_counter() - start, 3)}
    out["exact"] = _timed(lambda q: store.search(q, TOP, exact=True), queries)
    index = store.approximate()
    if index is not None:
        start = time.perf_counter()
        index.candidates(queries[0], TOP)
        out["ann_open_s"] = round(time.perf_counter() - start, 3)
        base = index.params
        out["ann"] = []
        for search in searches:
            index.params = dataclasses.replace(base, **search)
            out["ann"].append({"search": search, **_timed(
                lambda q: store.search(q, TOP, exact=False), queries)})
    out["peak_rss_mib"] = _hwm_mib()
    return out


def _hwm_mib() -> float:
    """This process's peak RSS (``VmHWM``: unlike ``ru_maxrss`` not inherited across exec)."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def _timed(search: Any, queries: np.ndarray) -> dict[str, Any]:
    for q in queries:  # one untimed pass: caches warm, the same for every setting
        search(q)
    ms, ids = [], []
    for q in queries:
        start = time.perf_counter_ns()
        hits = search(q)
        ms.append((time.perf_counter_ns() - start) / 1e6)
        ids.append([cid for cid, _ in hits])
    return {"latency_ms": latency_summary(ms), "ids": ids}


def run_worker(directory: Path, queries_file: Path, searches: list[dict[str, Any]]
               ) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--worker", str(directory), "--queries-file",
           str(queries_file), "--searches", json.dumps(searches)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False,
                          env={**os.environ, "RUST_LOG": "error"})
    if done.returncode:
        raise RuntimeError(f"worker failed: {done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# -- one size --------------------------------------------------------------------------


def recall(found: list[list[str]], truth: list[list[str]]) -> float:
    return round(float(np.mean([len(set(f) & set(t)) / len(t) for f, t in
                                zip(found, truth, strict=True)])), 4)


# long: one size's steps in order (vectors, exact store, each index build, report)
def one_size(n: int, real: np.ndarray, queries_file: Path, builds: list[str], seed: int,
             work: Path) -> dict[str, Any]:
    vectors = derived_vectors(real, n, seed)
    ids = [f"c{i:09d}" for i in range(n)]
    truth = [[ids[r] for r in rows] for rows in exact_top(vectors, np.load(queries_file))]
    base = work / f"exact-{n}"
    shutil.rmtree(base, ignore_errors=True)
    row: dict[str, Any] = {"size": n, "real_vectors": min(n, len(real)),
                           "derived_vectors": max(0, n - len(real))}
    row["store_write_s"] = round(write_store(base, ids, vectors, None), 2)
    row["store_bytes"] = disk_bytes(base)
    exact = run_worker(base, queries_file, [])
    row["exact"] = {"latency_ms": exact["exact"]["latency_ms"], "open_s": exact["open_s"],
                    "peak_rss_mib": exact["peak_rss_mib"],
                    "recall_at_10": recall(exact["exact"]["ids"], truth)}
    shutil.rmtree(base, ignore_errors=True)
    row["indexes"] = []
    for name in builds:
        params = build_params(name, n)
        target = work / f"{name}-{n}"
        shutil.rmtree(target, ignore_errors=True)
        total = write_store(target, ids, vectors, params)
        entry: dict[str, Any] = {"build": name, "params": params.to_dict(),
                                 "store_write_with_index_s": round(total, 2),
                                 "index_build_s": round(total - row["store_write_s"], 2),
                                 "index_bytes": disk_bytes(target / "vectors.lance" / "_indices")}
        got = run_worker(target, queries_file, SEARCHES[params.kind])
        entry["open_s"], entry["ann_open_s"] = got["open_s"], got.get("ann_open_s")
        entry["peak_rss_mib"] = got["peak_rss_mib"]
        entry["exact_in_same_worker_ms"] = got["exact"]["latency_ms"]
        entry["searches"] = [{"search": s["search"], "latency_ms": s["latency_ms"],
                              "recall_at_10": recall(s["ids"], truth)} for s in got["ann"]]
        row["indexes"].append(entry)
        print(json.dumps({"size": n, "build": name, "index_build_s": entry["index_build_s"],
                          "best": max(entry["searches"], key=lambda s: s["recall_at_10"])}),
              flush=True)
        shutil.rmtree(target, ignore_errors=True)
    return row


def table(paths: list[Path]) -> str:
    """A markdown trade-off table from result files: exact, then each index and setting."""
    lines = ["| vectors | search | build s | index MiB | open s | worker peak RSS MiB "
             "| p50 / p99 ms | recall@10 |", "|---:|---|---:|---:|---:|---:|---|---:|"]
    for path in paths:
        for row in json.loads(path.read_text())["sizes"]:
            n, ex = f"{row['size']:,}", row["exact"]
            lines.append(f"| {n} | exact (numpy) | {row['store_write_s']} (store) | - | "
                         f"{ex['open_s']} | {ex['peak_rss_mib']:.0f} | {_ms(ex)} | 1.0 |")
            for ix in row["indexes"]:
                p = ix["params"]
                label = f"{p['kind']} m={p['m']} efc={p['ef_construction']}" \
                    if "hnsw" in p["kind"] else f"{p['kind']} nlist={p['partitions']}"
                for s in ix["searches"]:
                    knobs = ", ".join(f"{k}={v}" for k, v in s["search"].items())
                    lines.append(f"| {n} | {label}; {knobs} | {ix['index_build_s']} | "
                                 f"{ix['index_bytes'] / 2**20:.1f} | {ix['ann_open_s']} | "
                                 f"{ix['peak_rss_mib']:.0f} | {_ms(s)} | {s['recall_at_10']} |")
    return "\n".join(lines)


def _ms(entry: dict[str, Any]) -> str:
    return f"{entry['latency_ms']['p50_ms']:.2f} / {entry['latency_ms']['p99_ms']:.1f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="20000,100000", help="comma-separated vector counts")
    parser.add_argument("--real", type=int, default=20000, help="real passages embedded")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--builds", default="hnsw_sq,pq",
                        help=f"index build settings, of: {', '.join(BUILDS)}")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--cache", type=Path, default=ROOT / ".bench")
    parser.add_argument("--out", type=Path, default=None, help="JSON (default .bench/ann.json)")
    parser.add_argument("--ef", default=None,
                        help="HNSW search ef values to measure, comma-separated "
                        "(default 100,200,400, each with candidates 1 and 2)")
    parser.add_argument("--table", type=Path, nargs="+",
                        help="print a markdown table from these result files and exit")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--queries-file", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--searches", default="[]", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.table:
        print(table(args.table))
        return 0
    if args.worker:
        print(json.dumps(worker(args.worker, args.queries_file, json.loads(args.searches))))
        return 0
    if args.ef:
        SEARCHES["ivf_hnsw_sq"] = [{"ef": int(ef), "candidates": 2} for ef in args.ef.split(",")]
    real = real_vectors(args.real, args.cache)
    queries_file = args.cache / "ann" / f"queries-{args.real}-{args.queries}-{args.seed}.npy"
    query_vectors(args.real, args.queries, args.seed, args.cache)
    work = args.cache / "ann" / "stores"
    builds = [b for b in args.builds.split(",") if b]
    sizes = []
    for n in (int(s) for s in args.sizes.split(",")):
        load_before = load_average()
        row = one_size(n, real, queries_file, builds, args.seed, work)
        row["load_average_before_after"] = [load_before, load_average()]
        sizes.append(row)
        write_result("ann", _result(args, sizes), args.out)
    return 0


def _result(args: argparse.Namespace, sizes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"machine": machine(), "model": MODEL, "real_passages": args.real,
            "derived_noise": NOISE, "queries": args.queries, "seed": args.seed,
            "top_k": TOP, "sizes": sizes}


if __name__ == "__main__":
    raise SystemExit(main())
