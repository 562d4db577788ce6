"""The compiled BM25 kernel's paths against each other, on one kept index, query by query.

``profile_bm25_queries.py`` times one configuration; this times several in one process, so
that a loaded machine slows them alike: for every query, every variant in turn (the order
rotated from query to query, so no variant always follows the one that warmed the caches),
the CPU caches flushed before each search (64 MB written: twice this machine's L3, so each
search reads its postings from memory, as a fresh query in the bench does), the best of
``--passes`` kept per query and variant. A variant is a value of ``bm25_blocks.WINDOWED``
(the postings per block from which the kernel sums windows), with or without the index's
score columns: ``blocks`` never sums them (block-max MaxScore, ADR-0003's 2026-12-04
revision), ``windowed`` sums them without columns (2026-12-06), ``columns`` is the default
(2026-12-07; an index built before it has none, and the variant equals ``windowed``).
Every variant must return the same hits for every query, or the run fails.

``--against REV`` compares kernels instead: ``_bm25c.c`` as committed at git revision REV
against the working tree's, both compiled here with the interpreter's own flags (as the
install builds it) under names of their own, run with the default ``WINDOWED``. They must
speak the same interface (``_bm25c.VERSION``).

    python bench/ab_bm25_paths.py --passages 1000000                # the kept 1M index
    python bench/ab_bm25_paths.py --passages 100000 --passes 3 --clock wall
    python bench/ab_bm25_paths.py --against HEAD                    # a kernel change

The index and queries are ``profile_bm25_queries.py``'s (built there on first use).
"""

from __future__ import annotations

import argparse
import importlib.util
import shlex
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import bench_bm25  # first: it pins numeric libraries to one thread
import numpy as np
import profile_bm25_queries
from common import ROOT, load_average, percentile

from groundkit.retrieval import bm25_blocks

K = 10
NEVER = 10**9
SOURCE = "groundkit/retrieval/_bm25c.c"


def compiled(source: str, name: str, where: Path) -> ModuleType:
    """``source`` (the kernel's C text) compiled as module ``name`` in ``where``, with the
    flags this interpreter's extensions are built with, and imported."""
    c_file = where / f"{name}.c"
    c_file.write_text(source.replace("PyInit__bm25c(", f"PyInit_{name}("))
    so_file = where / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"
    cmd = [*shlex.split(sysconfig.get_config_var("CC")),
           *shlex.split(sysconfig.get_config_var("CFLAGS")),
           *shlex.split(sysconfig.get_config_var("CCSHARED")), "-shared",
           f"-I{sysconfig.get_paths()['include']}", str(c_file), "-o", str(so_file)]
    subprocess.run(cmd, check=True)
    spec = importlib.util.spec_from_file_location(name, so_file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernels_against(rev: str, where: Path) -> dict[str, ModuleType]:
    """The kernel at git revision ``rev`` and the working tree's, compiled alike."""
    old = subprocess.run(["git", "show", f"{rev}:{SOURCE}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    got = {rev: compiled(old, "_bm25c_then", where),
           "working": compiled((ROOT / SOURCE).read_text(), "_bm25c_now", where)}
    if len({m.VERSION for m in got.values()}) != 1:
        raise SystemExit(f"{rev}'s kernel speaks another interface: compare like with like")
    return got


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--windowed", type=int, nargs="*", default=[],
                   help="more WINDOWED values to compare (with the columns)")
    p.add_argument("--clock", choices=["wall", "cpu"], default="cpu",
                   help="this thread's CPU time (default: less noisy under load), or wall")
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    p.add_argument("--against", metavar="REV",
                   help="compare the kernel at this git revision with the working tree's")
    args = p.parse_args()
    index, corpus = profile_bm25_queries.index_at(args.passages, args.cache, args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            kernels = kernels_against(args.against, Path(tmp))

            def use(name: str) -> None:
                index._kernels.compiled = kernels[name]
            return compare(index, corpus, list(kernels), use, args)
        columns = index._kernels._columns
        windowed = bm25_blocks.WINDOWED
        variants = {"blocks": (NEVER, None), "windowed": (windowed, None),
                    "columns": (windowed, columns),
                    **{f"windowed>={w}": (w, columns) for w in args.windowed}}

        def setting(name: str) -> None:
            bm25_blocks.WINDOWED, index._kernels._columns = variants[name]
        return compare(index, corpus, list(variants), setting, args)


def compare(index: Any, corpus: Path, names: list[str], use: Any, args: Any) -> int:
    """Every query under every variant (``use(name)`` selects one), interleaved and
    rotated, caches flushed; the best of the passes per query and variant is printed as
    percentiles. Returns 1 when two variants give different hits."""
    queries = bench_bm25.make_queries(bench_bm25.load_texts(corpus), args.queries, args.seed)
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    flush = np.ones(8 * 1024 * 1024)  # 64 MB
    best = {v: [float("inf")] * len(queries) for v in names}
    for _ in range(args.passes):
        for i, q in enumerate(queries):
            hits = []
            for j in range(len(names)):
                name = names[(i + j) % len(names)]
                use(name)
                flush += 1.0
                t0 = clock()
                hits.append(index.search(q, K))
                best[name][i] = min(best[name][i], (clock() - t0) * 1e3)
            if any(h != hits[0] for h in hits):
                print(f"different hits for {q!r}", file=sys.stderr)
                return 1
    print(f"{args.passages} passages, {len(queries)} queries, best of {args.passes} passes, "
          f"caches flushed, {args.clock} ms, load {load_average()}; identical hits")
    for name in names:
        ms = best[name]
        print(f"  {name:14s} p50 {percentile(ms, 50):.4f}  p90 {percentile(ms, 90):.4f}  "
              f"p99 {percentile(ms, 99):.4f}  max {max(ms):.3f}  mean {sum(ms) / len(ms):.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
