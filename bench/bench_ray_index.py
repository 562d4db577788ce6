"""``grk index --ray`` on a few thousand files: where BM25 analysis runs, measured.

    python bench/bench_ray_index.py [--files 3000] [--per-file 5] [--repeat 2]

The same tree of Markdown files (``--per-file`` ~1,000-character passages each, from
``bench_bm25``'s corpus of this machine's documentation) is indexed into a fresh home by
(a) one process (``index()``'s default: one forked worker chunks beside the writer), (b) a
local Ray with every core, BM25 analysis in the partition tasks (today's ``--ray``), and
(c) the same Ray with the analysis in the driver (``RayExecutor(analyse=False)``: the layout
before). Reported per run: wall time, the ingest phase (discovery, reading, chunking, the
store's writes) and the BM25 build, each also as this process's CPU seconds (the driver's
work, which bounds a cluster's speed-up and moves less with the machine's load than wall
time), and whether each generation's derived files are the same bytes as those of a
first, untimed single-process run. The configurations take turns, in a rotated order each
round. Ray's start-up is excluded (it is
started once, before the runs). Writes ``.bench/ray_index.json``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import common
from bench_bm25 import make_corpus
from scale_collection import write_tree

from groundkit.collection import IndexConfig, index
from groundkit.collection.derived import default_builders
from groundkit.collection.home import collection_dir
from groundkit.collection.ray_executor import RayExecutor, import_ray


def timed_builders(executor: Any, phases: dict[str, float]) -> list[Any]:
    """The default builders, the BM25 one timed; the ingest phase ends when the first runs."""
    rowids, bm25, vectors = default_builders(executor=executor)

    def first(*args: Any) -> None:
        phases["ingest_end"], phases["ingest_cpu_end"] = time.perf_counter(), time.process_time()
        rowids(*args)

    def timed(*args: Any) -> None:
        start, cpu = time.perf_counter(), time.process_time()
        bm25(*args)
        phases["bm25_s"] = time.perf_counter() - start
        phases["bm25_cpu_s"] = time.process_time() - cpu

    return [first, timed, vectors]


def run(root: Path, executor: Any) -> tuple[dict[str, float], dict[str, bytes]]:
    home = Path(tempfile.mkdtemp(prefix="grk-ray-bench-"))
    try:
        phases: dict[str, float] = {}
        start, cpu = time.perf_counter(), time.process_time()
        index("b", IndexConfig(roots=(str(root),)), home=home,
              builders=timed_builders(executor, phases), executor=executor)
        wall, cpu_total = time.perf_counter() - start, time.process_time() - cpu
        gen = collection_dir("b", home) / "gen-1"
        files = {str(p.relative_to(gen)): p.read_bytes() for p in sorted(gen.rglob("*"))
                 if p.is_file()}
        return {"wall_s": round(wall, 3), "ingest_s": round(phases["ingest_end"] - start, 3),
                "bm25_s": round(phases["bm25_s"], 3), "driver_cpu_s": round(cpu_total, 3),
                "ingest_cpu_s": round(phases["ingest_cpu_end"] - cpu, 3),
                "bm25_cpu_s": round(phases["bm25_cpu_s"], 3)}, files
    finally:
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--files", type=int, default=4000)
    ap.add_argument("--per-file", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    texts = make_corpus(args.files * args.per_file, 1000, Path(".bench"))
    root = Path(tempfile.mkdtemp(prefix="grk-ray-bench-docs-"))
    ray = import_ray()
    result: dict[str, Any] = {"machine": common.machine(), "files": args.files,
                              "passages": len(texts), "rows": []}
    try:
        write_tree(root, texts, args.per_file)
        ray.init(include_dashboard=False, log_to_driver=False, logging_level="warning")
        result["ray_cpus"] = int(ray.cluster_resources().get("CPU", 0))
        configurations = [("one process", None),
                          ("ray, analysis in tasks", RayExecutor()),
                          ("ray, analysis in the driver", RayExecutor(analyse=False))]
        _, reference = run(root, None)  # the reference bytes; warms the page cache (not kept)
        for n in range(args.repeat):
            for name, executor in configurations[n % 3:] + configurations[:n % 3]:
                figures, files = run(root, executor)
                row = {"name": name, "run": n + 1, **figures,
                       "same_bytes_as_one_process": files == reference}
                print(row)
                result["rows"].append(row)
    finally:
        ray.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    result["machine"]["loadavg_after"] = common.load_average()
    print("wrote", common.write_result("ray_index", result))


if __name__ == "__main__":
    main()
