"""Segmented BM25 (ADR-0025): edit -> searchable and query latency against the merged index.

Per size (``bench_scale.py``'s corpora, 20 passages a "file" as its collections have):

* **edit -> searchable**: one file's 20 passages replaced by edited ones (a new first line,
  as ``scale_collection``'s edit), ``--edits`` times. *Splice* is today's BM25 path
  (``bm25_update.updated`` + ``save``: every array rewritten and re-scored); *segment* is
  ``bm25_segment_store.update`` (a 20-passage segment, tombstones, a manifest) and the new
  generation opened. BM25 only: the collection's SQLite, gc and checksums are not here.
* **query latency**, 1,000 queries (``bench_bm25.make_queries``), top 10, one thread, wall
  per query, best of ``--repeat`` rounds per query: the merged index (one
  :class:`BM25Index` over the same live passages) against the segmented index with 1, 10
  and 30 segments (the base plus 9 or 29 single-file edits, no merge).
* **exactness**: every query's hits and scores from 30 segments against the merged index's.
* **merge**: the 29 edit segments merged into one (``bm25_merge.merged``), and everything
  merged into one index; **disk**: the folder of the 30-segment generation against the
  merged index saved.

    python bench/bench_segments.py --sizes 10000,100000 --out .bench/segments.json
"""

from __future__ import annotations

import argparse
import gc
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import scale_corpus
from bench_bm25 import load_texts, make_queries  # first: it pins libraries to one thread
from common import ROOT, load_average, machine, write_result

from groundkit.retrieval import bm25_segment_store as segstore
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.bm25_merge import merged
from groundkit.retrieval.bm25_segments import SegmentedBM25
from groundkit.retrieval.bm25_update import updated

FILE = 20
"""Passages a file holds (``bench_scale``'s collections: 1M passages in 50,000 files)."""


def edited(texts: list[str], number: int) -> list[str]:
    return [f"Edited line {number} of this file. {t}" for t in texts]


def splice_edits(base: BM25Index, texts: list[str], files: list[int], work: Path
                 ) -> list[float]:
    """Today's path: each edit updates the previous index and saves it whole."""
    times, previous = [], base
    for number, f in enumerate(files):
        lo = f * FILE
        old_to_new = np.arange(len(texts), dtype=np.int64)
        old_to_new[lo : lo + FILE] = -1
        start = time.perf_counter()
        index = updated(previous, old_to_new, np.arange(lo, lo + FILE, dtype=np.int64),
                        edited(texts[lo : lo + FILE], number))
        index.save(work / f"splice-{number % 2}", {"edit": number})
        times.append(time.perf_counter() - start)
        previous = index
    return times


def segment_edits(root: Path, texts: list[str], files: list[int]
                  ) -> tuple[list[float], dict[int, SegmentedBM25]]:
    """Each edit as a segment: tombstones for the file's current passages, its new ones
    appended. Returns the times and the generations with 10 and 30 segments."""
    current = segstore.open_segmented(root)
    where = {f: np.arange(f * FILE, (f + 1) * FILE) for f in files}  # positions now
    text_now = {f: texts[f * FILE : (f + 1) * FILE] for f in files}
    times, kept = [], {}
    for number, f in enumerate(files):
        new = edited(texts[f * FILE : (f + 1) * FILE], number)
        start = time.perf_counter()
        current = segstore.update(root, where[f].tolist(), new, deleted_texts=text_now[f],
                                  current=current)
        current.search("edited line", 1)  # searchable: the new generation answers
        times.append(time.perf_counter() - start)
        where[f] = np.arange(current.n_docs - FILE, current.n_docs)
        text_now[f] = new
        if len(current.segments) in (10, 30):
            kept[len(current.segments)] = current
    return times, kept


def latency(search: Any, queries: list[str], repeat: int) -> dict[str, float]:
    best = [float("inf")] * len(queries)
    for _ in range(repeat):
        for i, q in enumerate(queries):
            start = time.perf_counter()
            search(q, 10)
            best[i] = min(best[i], time.perf_counter() - start)
    ms = np.array(best) * 1000
    return {"p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99)),
            "mean_ms": float(ms.mean())}


def mismatches(segmented: SegmentedBM25, full: BM25Index, queries: list[str]) -> int:
    positions = segmented.live_positions()
    bad = 0
    for q in queries:
        got = [(int(np.searchsorted(positions, p)), s) for p, s in segmented.search(q, 10)]
        bad += got != full.search(q, 10)
    return bad


def measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    texts = load_texts(scale_corpus.scale_corpus(n, 1000, 13, args.cache))
    queries = make_queries(texts, args.queries, 13)
    work = Path(tempfile.mkdtemp(prefix=f"segments-{n}-", dir=args.cache))
    try:
        start = time.perf_counter()
        base = BM25Index.build(texts)
        build_s = time.perf_counter() - start
        rng = np.random.default_rng(13)
        n_files = len(texts) // FILE
        splice_files = rng.choice(n_files, size=args.edits, replace=False).tolist()
        splice = splice_edits(base, texts, splice_files, work)
        segstore.create(work / "segmented", base)
        one = segstore.open_segmented(work / "segmented")
        files = rng.choice(n_files, size=29, replace=False).tolist()
        seg_times, kept = segment_edits(work / "segmented", texts, files)
        thirty = kept[30]
        start = time.perf_counter()
        tail = merged(list(zip(thirty.segments[1:], thirty.tombstones[1:], strict=True)))
        merge_tail_s = time.perf_counter() - start
        start = time.perf_counter()
        full = merged(list(zip(thirty.segments, thirty.tombstones, strict=True)))
        merge_all_s = time.perf_counter() - start
        del tail
        gc.collect()
        full.save(work / "merged", {"merged": True})
        disk = {"segmented_30_mib": _mib(work / "segmented"), "merged_mib": _mib(work / "merged")}
        rows = {"merged": latency(full.search, queries, args.repeat)}
        for name, index in (("1 segment", one), ("10 segments", kept[10]),
                            ("30 segments", thirty)):
            rows[name] = latency(index.search, queries, args.repeat)
        return {
            "passages": n, "build_s": build_s,
            "edit_splice_s": splice, "edit_segment_s": seg_times,
            "edit_splice_p50_s": statistics.median(splice),
            "edit_segment_p50_s": statistics.median(seg_times),
            "merge_29_edit_segments_s": merge_tail_s, "merge_all_s": merge_all_s, "disk": disk,
            "latency": rows,
            "mismatched_queries_30_segments": mismatches(thirty, full, queries),
            "queries": len(queries), "load": load_average(),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--edits", type=int, default=5, help="splice edits timed")
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    p.add_argument("--out", type=Path, default=ROOT / ".bench" / "segments.json")
    args = p.parse_args(argv)
    report: dict[str, Any] = {"machine": machine(), "sizes": {}}
    for n in (int(s) for s in args.sizes.split(",")):
        row = measure(n, args)
        report["sizes"][str(n)] = row
        lat = row["latency"]
        print(f"{n:>9,} passages: edit->searchable p50 splice {row['edit_splice_p50_s']:.3f} s, "
              f"segment {row['edit_segment_p50_s']:.3f} s; merge 29 edits "
              f"{row['merge_29_edit_segments_s']:.3f} s, all {row['merge_all_s']:.2f} s; "
              f"mismatched queries {row['mismatched_queries_30_segments']}/{row['queries']}; "
              f"disk 30 segments {row['disk']['segmented_30_mib']:.1f} MiB, merged "
              f"{row['disk']['merged_mib']:.1f} MiB",
              flush=True)
        for name, r in lat.items():
            print(f"    {name:>12}: p50 {r['p50_ms']:.3f} ms  p99 {r['p99_ms']:.3f} ms  "
                  f"mean {r['mean_ms']:.3f} ms", flush=True)
        write_result("segments", report, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
