"""Growth of groundkit's BM25 path with the corpus: 10k, 100k, 1M passages (10M on request).

Per size, for groundkit and its peers in the same run (tantivy, bm25s+numba, Lucene 8.8.1;
a peer that cannot run is "not measured" with the reason): index build time and MB/s,
build peak RSS, bytes on disk, cold open time, top-10 BM25 latency p50/p99/mean for single
queries on one thread; for groundkit also, on a real collection of the same passages
(``scale_collection.py``): ``index()`` time, single-file update time (the ``grk watch``
path), collection search, verified search (``verify=True``) and ``fetch_chunk`` p50, and
search under 8 concurrent reader processes.

The engines are ``bench_bm25.py``'s (``bm25_engines.py``: the same build, open and search
code, the same worker figures): each engine and phase runs in its own subprocess, one
thread, sequentially (never two 1M indexes in one process). Per size: every engine builds
once; then every engine's query phase runs ``--repeat`` times round-robin, the first one
cold: the index's files are evicted from the page cache first (``posix_fadvise
DONTNEED`` on those files only), and its open time is the **cold open** figure; latency
keeps the best run (``bm25_table.best_of``). Lucene's JVM gets a larger heap above 100k
passages (:func:`lucene_heap`). The corpora are ``scale_corpus.py``'s (real sentences
recombined, fixed seed; cached under ``.bench/scale-corpus/``).

Writes ``--out`` (default ``.bench/scale.json``) and, in the folder beside it named after
it (``.bench/scale/``), a log-log PNG per measure and ``index.html``; prints the fitted
growth exponents and the targets (``scale_report.py``).

    python bench/bench_scale.py                               # 10k, 100k, 1M
    python bench/bench_scale.py --sizes 10000,100000 --out .bench/scale-small.json
    python bench/bench_scale.py --sizes 500,2000 --engines groundkit --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import bench_bm25  # first: it pins numeric libraries to one thread
import bm25_engines
import scale_collection
import scale_corpus
import scale_report
from bench_bm25 import load_texts, make_queries
from bm25_engines import available, engine_env
from bm25_table import best_of
from common import ROOT, load_average, machine, write_result

ENGINES = ("groundkit", "tantivy", "bm25s-numba", "lucene")
SIZES = (10_000, 100_000, 1_000_000)


def lucene_heap(passages: int) -> str:
    """The JVM's -Xmx for ``passages``: bm25_engines' 1g up to 100k, then ~4 GB per million
    (the corpus as Java strings, the writer's buffer and the merges)."""
    return bm25_engines.LUCENE_HEAP if passages <= 100_000 else f"{2 + 2 * -(-passages // 10**6)}g"


# -- worker ---------------------------------------------------------------------------

def worker(args: argparse.Namespace) -> dict[str, Any]:
    """One engine's phase (bench_bm25's worker), or groundkit's collection measures."""
    if args.phase == "prepare":
        return prepare(int(args.sizes), args)
    if args.phase == "collection":
        queries = json.loads(Path(args.queries_path).read_text())[: args.n_queries]
        return scale_collection.measure(Path(args.corpus), queries, Path(args.index_dir),
                                        readers=args.readers, edits=args.edits, seed=args.seed)
    heap = f"-Xmx{args.lucene_heap}"
    bm25_engines.JVM_FLAGS = tuple(heap if f.startswith("-Xmx") else f
                                   for f in bm25_engines.JVM_FLAGS)
    return bench_bm25.worker(args)


def evict(path: Path) -> None:
    """Drop ``path``'s files (only those) from the OS page cache."""
    for p in [path] if path.is_file() else path.rglob("*"):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)  # dirty pages are not dropped
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def run_worker(engine: str, phase: str, args: argparse.Namespace,
               paths: dict[str, Path], passages: int) -> dict[str, Any]:
    index_dir = paths["indexes"] / engine if phase != "collection" else paths["work"]
    cmd = [sys.executable, __file__, "--worker", engine, "--phase", phase,
           "--corpus", str(paths["corpus"]), "--query-file", str(paths["queries"]),
           "--index-dir", str(index_dir), "--queries", str(args.n_queries),
           "--lucene-heap", lucene_heap(passages), "--readers", str(args.readers),
           "--edits", str(args.edits), "--seed", str(args.seed), "--sizes", str(passages),
           "--chunk-chars", str(args.chunk_chars), "--pool", str(args.pool),
           "--cache", str(args.cache)]
    env = dict(os.environ, PYTHONPATH=str(ROOT), **engine_env(engine))
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {args.timeout} s"}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip()[-2000:] or f"exit status {proc.returncode}"}
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    return {**got, "worker_s": time.perf_counter() - start}


# -- one size ---------------------------------------------------------------------------

def scale_paths(n: int, args: argparse.Namespace) -> dict[str, Path]:
    scale = args.cache / "scale-corpus"
    return {"corpus": scale_corpus.corpus_file(args.cache, n, args.chunk_chars, args.seed),
            "queries": scale / f"queries-{n}-{args.n_queries}-{args.seed}.json",
            "indexes": scale / f"indexes-{n}", "work": scale / f"collection-{n}"}


def prepare(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """The corpus (cached) and its queries, written by this worker: the driver never holds
    the texts, so the workers it starts do not inherit its memory in ``ru_maxrss``."""
    corpus = scale_corpus.scale_corpus(n, args.chunk_chars, args.seed, args.cache,
                                       pool_passages=args.pool)
    texts = load_texts(corpus)
    queries = make_queries(texts, args.n_queries, args.seed)
    scale_paths(n, args)["queries"].write_text(json.dumps(queries))
    return {"mb": sum(len(t.encode("utf-8")) for t in texts) / 1e6}


def _phase(engine: str, phase: str, args: argparse.Namespace, paths: dict[str, Path],
           n: int, runs: dict[str, list[dict[str, Any]]], failed: dict[str, str]) -> None:
    if engine in failed:
        return
    got = run_worker(engine, phase, args, paths, n)
    print(f"  {n} {engine} {phase}: " + (f"FAILED {got['error'][-300:]}" if "error" in got
          else f"{got['worker_s']:.1f} s"), file=sys.stderr, flush=True)
    if "error" in got:
        failed[engine] = f"{phase} failed: {got['error']}"
    else:
        runs.setdefault(engine, []).append(got)


def measure_size(n: int, args: argparse.Namespace, engines: list[str]) -> dict[str, Any]:
    """Every engine's row for one size (module docstring: build, then query rounds)."""
    paths = scale_paths(n, args)
    prep = run_worker("-", "prepare", args, paths, n)
    if "error" in prep:
        raise SystemExit(f"corpus of {n} passages: {prep['error']}")
    print(f"{n} passages: {prep['mb']:.1f} MB, {args.n_queries} queries; "
          f"load {load_average()}", file=sys.stderr, flush=True)
    builds: dict[str, list[dict[str, Any]]] = {}
    queries: dict[str, list[dict[str, Any]]] = {}
    failed: dict[str, str] = {}
    for engine in engines:
        _phase(engine, "build", args, paths, n, builds, failed)
    cold: dict[str, float] = {}
    for r in range(max(1, args.repeat)):
        for engine in engines:
            if r == 0 and engine not in failed:
                evict(paths["indexes"] / engine)
            _phase(engine, "query", args, paths, n, queries, failed)
            if r == 0 and engine in queries:
                cold[engine] = queries[engine][0]["load_s"]
    rows: dict[str, Any] = {}
    for engine in engines:
        if engine in failed:
            rows[engine] = {"not_measured": failed[engine]}
            continue
        row = {**best_of(builds[engine]), **best_of(queries[engine])}
        rows[engine] = {**row, "cold_open_s": cold[engine], "corpus_mb": prep["mb"]}
    if "groundkit" in rows and "not_measured" not in rows["groundkit"] and args.collection:
        got = run_worker("groundkit", "collection", args, paths, n)
        if "error" in got:
            rows["groundkit"]["collection_error"] = got["error"]
            print(f"  {n} collection FAILED: {got['error'][-300:]}", file=sys.stderr)
        else:
            rows["groundkit"].update(got)
    shutil.rmtree(paths["indexes"], ignore_errors=True)
    return rows


# -- orchestration --------------------------------------------------------------------------

def select_engines(names: str) -> tuple[list[str], dict[str, str]]:
    engines, missing = [], {}
    for engine in names.split(","):
        why = available(engine)
        if why:
            missing[engine] = why
        else:
            engines.append(engine)
    return engines, missing


def estimate_next(report: dict[str, Any]) -> dict[str, Any] | None:
    """The wall time of one more size 10x the largest, from the exponent of the per-size
    wall time (every engine and the collection measures of that size) over the two largest
    sizes (at the smallest, fixed costs dominate)."""
    sizes = sorted(int(s) for s in report["wall_s"])[-2:]
    if len(sizes) < 2:
        return None
    walls = [report["wall_s"][str(s)] for s in sizes]
    k = scale_report.fit_exponent(sizes, walls)
    if k is None:
        return None
    return {"size": 10 * sizes[-1], "exponent": round(k, 3),
            "estimated_s": round(walls[-1] * 10 ** k)}


def orchestrate(args: argparse.Namespace) -> int:
    facts = machine()
    engines, missing = select_engines(args.engines)
    for engine, why in missing.items():
        print(f"{engine}: not measured ({why})", file=sys.stderr)
    sizes: dict[str, dict[str, Any]] = {}
    wall: dict[str, float] = {}
    for n in sorted(int(s) for s in args.sizes.split(",")):
        start = time.perf_counter()
        sizes[str(n)] = {**measure_size(n, args, engines),
                         **{e: {"not_measured": why} for e, why in missing.items()}}
        wall[str(n)] = round(time.perf_counter() - start, 1)
        write_result("scale", {"partial": True, "sizes": sizes, "wall_s": wall},
                     Path(f"{args.out}.partial"))  # what a killed run leaves
    names = [*engines, *missing]
    exps = scale_report.exponents(sizes, names)
    report: dict[str, Any] = {
        "command": shlex.join(["python", "bench/bench_scale.py", *sys.argv[1:]]),
        "cpus": facts["cpu_count"], "python": facts["python"],
        "loadavg_before": facts["loadavg_before"], "threads": 1, "repeat": args.repeat,
        "params": {"k1": bm25_engines.K1, "b": bm25_engines.B, "top_k": bm25_engines.TOP_K},
        "corpus": {"chunk_chars": args.chunk_chars, "seed": args.seed, "pool": args.pool,
                   "queries": args.n_queries}, "sizes": sizes, "wall_s": wall,
        "exponents": exps, "exponents_two_largest": scale_report.exponents(sizes, names, 2),
        "targets": scale_report.targets(sizes, exps), "loadavg_after": load_average()}
    return render(report, args.out)


def render(report: dict[str, Any], out: Path) -> int:
    """Print, write the JSON, the plots and the page (``--replot`` re-renders a JSON)."""
    report["next_size_estimate"] = estimate_next(report)
    print_summary(report)
    out = write_result("scale", report, out)
    folder = out.with_suffix("")
    folder.mkdir(parents=True, exist_ok=True)
    names = list(next(iter(report["sizes"].values()), {}))
    pngs = scale_report.plot(report["sizes"], names, report["exponents"], folder)
    page = scale_report.write_html(report, pngs, folder / "index.html")
    print(f"\nwritten {out}, {len(pngs)} plots and {page}", file=sys.stderr)
    return 0


def print_summary(report: dict[str, Any]) -> None:
    keys = ["build_s", "build_mb_s", "peak_rss_mib", "disk_mib", "cold_open_s", "p50_ms",
            "p99_ms", "mean_ms", "update_s", "search_p50_ms", "verified_search_p50_ms",
            "fetch_chunk_p50_ms", "concurrent_p50_ms", "concurrent_p99_ms"]
    for size, rows in report["sizes"].items():
        print(f"\n{size} passages (wall {report['wall_s'][size]} s):")
        for engine, row in rows.items():
            if "not_measured" in row:
                print(f"  {engine:12s} not measured: {row['not_measured'][-200:]}")
                continue
            print(f"  {engine:12s} " + ", ".join(f"{k} {row[k]:.4g}" for k in keys
                                                 if isinstance(row.get(k), int | float)))
    for title, name in (("every size", "exponents"),
                        ("the two largest sizes", "exponents_two_largest")):
        print(f"\nfitted growth exponents (log-log least squares, {title}):")
        for key, per in report.get(name, {}).items():
            print(f"  {key:24s} " + ", ".join(f"{e} {v:.3f}" for e, v in per.items()))
    scale_report.print_targets(report["targets"])
    if report["next_size_estimate"]:
        est = report["next_size_estimate"]
        print(f"\n{est['size']} passages would take about {est['estimated_s'] / 60:.0f} min "
              f"here (wall time exponent {est['exponent']})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="passages, comma-separated")
    p.add_argument("--engines", default=",".join(ENGINES), help="comma-separated")
    p.add_argument("--queries", dest="n_queries", type=int, default=1000)
    p.add_argument("--chunk-chars", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--pool", type=int, default=scale_corpus.POOL_PASSAGES,
                   help="real passages the sentence pool is cut from")
    p.add_argument("--repeat", type=int, default=2, help="query rounds per size (first cold)")
    p.add_argument("--readers", type=int, default=8, help="concurrent reader processes")
    p.add_argument("--edits", type=int, default=3, help="single-file updates timed")
    p.add_argument("--no-collection", dest="collection", action="store_false",
                   help="skip groundkit's collection measures")
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    p.add_argument("--out", type=Path, default=None, help="JSON (default .bench/scale.json)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds per worker")
    p.add_argument("--replot", type=Path, help="re-render a written JSON (no measuring)")
    for hidden in ("--worker", "--phase", "--corpus", "--index-dir", "--lucene-heap"):
        p.add_argument(hidden, help=argparse.SUPPRESS)
    p.add_argument("--query-file", dest="queries_path", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.out is None:
        args.out = args.cache / "scale.json"
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    if args.replot:
        report = json.loads(args.replot.read_text())
        names = list(next(iter(report["sizes"].values()), {}))
        report["exponents"] = scale_report.exponents(report["sizes"], names)
        report["exponents_two_largest"] = scale_report.exponents(report["sizes"], names, 2)
        report["targets"] = scale_report.targets(report["sizes"], report["exponents"])
        return render(report, args.out)
    return orchestrate(args)


if __name__ == "__main__":
    sys.exit(main())
