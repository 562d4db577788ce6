"""The compiled BM25 kernel's paths against each other, on one kept index, query by query.

``profile_bm25_queries.py`` times one configuration; this times several in one process, so
that a loaded machine slows them alike: for every query, every variant in turn (the order
rotated from query to query, so no variant always follows the one that warmed the caches),
the CPU caches flushed before each search (64 MB written: twice this machine's L3, so each
search reads its postings from memory, as a fresh query in the bench does), the best of
``--passes`` kept per query and variant. A variant is a value of ``bm25_blocks.WINDOWED``
(the postings per block from which the kernel sums windows): ``blocks`` never sums them
(block-max MaxScore, ADR-0003's 2026-12-04 revision), ``windowed`` is the default. Every
variant must return the same hits for every query, or the run fails.

    python bench/ab_bm25_paths.py --passages 1000000                # the kept 1M index
    python bench/ab_bm25_paths.py --passages 100000 --passes 3 --clock wall

The index and queries are ``profile_bm25_queries.py``'s (built there on first use).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import bench_bm25  # first: it pins numeric libraries to one thread
import numpy as np
import profile_bm25_queries
from common import ROOT, load_average, percentile

from groundkit.retrieval import bm25_blocks

K = 10
NEVER = 10**9


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--passages", type=int, default=1_000_000)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--windowed", type=int, nargs="*", default=[],
                   help="more WINDOWED values to compare (beside never and the default)")
    p.add_argument("--clock", choices=["wall", "cpu"], default="cpu",
                   help="this thread's CPU time (default: less noisy under load), or wall")
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    args = p.parse_args()
    variants = {"blocks": NEVER, "windowed": bm25_blocks.WINDOWED,
                **{f"windowed>={w}": w for w in args.windowed}}
    index, corpus = profile_bm25_queries.index_at(args.passages, args.cache, args.seed)
    queries = bench_bm25.make_queries(bench_bm25.load_texts(corpus), args.queries, args.seed)
    clock = time.perf_counter if args.clock == "wall" else time.thread_time
    flush = np.ones(8 * 1024 * 1024)  # 64 MB
    names = list(variants)
    best = {v: [float("inf")] * len(queries) for v in names}
    for _ in range(args.passes):
        for i, q in enumerate(queries):
            hits = []
            for j in range(len(names)):
                name = names[(i + j) % len(names)]
                bm25_blocks.WINDOWED = variants[name]
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
