"""Where a single-file update's time goes (the ``grk watch`` path), at one corpus size.

Builds (once, then reuses) a collection of ``bench_scale.py``'s corpus laid out as
``scale_collection.py`` lays it (20 passages a Markdown file, defaults: BM25, no
embedding) under ``--work`` (default ``.bench/update-profile/<n>``), then times
``--edits`` single-file updates exactly as ``scale_collection._update`` does (a new first
line in one seeded file, ``index_collection`` with that file as the only dirty path).

Every update's wall time is split by wrapping the pipeline's steps with
``time.perf_counter`` (``--steps``, module:attribute names; a step's time includes the
steps it calls); ``cpu`` is the process's CPU time over the update (less sensitive to a
loaded machine than wall time). ``--cprofile FILE`` also writes the last update's
cProfile stats (read them with ``python -m pstats``); for native frames run the script
under ``py-spy record``.
Prints one JSON line per update and a summary (median of each step).

    python bench/profile_update.py --size 100000 --edits 3
    python bench/profile_update.py --size 100000 --edits 3 --segments on   # ADR-0025
    py-spy record -o update.svg -- python bench/profile_update.py --size 1000000 --edits 1
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import importlib
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_corpus
from bench_bm25 import load_texts
from common import ROOT
from scale_collection import write_tree

STEPS = (
    "groundkit.collection.incremental:carry_clean",
    "groundkit.collection.derived:build_rowids",
    "groundkit.collection.derived:build_bm25",
    "groundkit.collection.derived:_updated_bm25",
    "groundkit.collection.integrity:intact",
    "groundkit.collection.derived:load_bm25",
    "groundkit.retrieval.bm25_update:updated",
    "groundkit.retrieval.bm25:BM25Index.save",
    "groundkit.collection.integrity:manifest",
    "groundkit.collection.indexer:_publish",
    "groundkit.collection.gc:collect",
    "groundkit.collection.bm25_segmented:write",
    "groundkit.retrieval.bm25_segment_store:update",
    "groundkit.collection.bm25_segmented:_merged",
)

TIMES: dict[str, float] = defaultdict(float)


def wrap(spec: str) -> None:
    """Replace ``module:attr`` (or ``module:Class.attr``) with a timed wrapper."""
    module_name, _, dotted = spec.partition(":")
    owner: Any = importlib.import_module(module_name)
    *outer, attr = dotted.split(".")
    for part in outer:
        owner = getattr(owner, part)
    inner: Callable[..., Any] = getattr(owner, attr)

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            TIMES[dotted] += time.perf_counter() - start

    setattr(owner, attr, timed)


def collection(n: int, work: Path, cache: Path, chars: int, seed: int,
               extra: dict[str, Any]) -> list[Path]:
    """The collection's files (built on first use: tree, then ``index()``)."""
    from groundkit.collection import IndexConfig, index

    root, home = work / "tree", work / "home"
    done = work / "built"
    if not done.exists():
        corpus = scale_corpus.scale_corpus(n, chars, seed, cache)
        paths = write_tree(root, load_texts(corpus))
        start = time.perf_counter()
        report = index("scale", IndexConfig(roots=(str(root),), extra=extra), home=home)
        print(json.dumps({"built_s": round(time.perf_counter() - start, 2),
                          "chunks": report.chunks, "files": len(paths)}), flush=True)
        done.write_text("ok\n")
    return sorted(root.rglob("*.md"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, default=100_000, help="passages")
    p.add_argument("--edits", type=int, default=3, help="single-file updates timed")
    p.add_argument("--work", type=Path, help="collection folder (default .bench/update-profile/N)")
    p.add_argument("--cache", type=Path, default=ROOT / ".bench", help="corpus cache")
    p.add_argument("--chunk-chars", type=int, default=1000)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--steps", default=",".join(STEPS), help="module:attr names to time")
    p.add_argument("--cprofile", type=Path, help="write the last update's cProfile stats here")
    p.add_argument("--segments", choices=("on", "off"), default="off",
                   help="the collection's BM25 segments setting (ADR-0025; its own folder)")
    args = p.parse_args()
    extra = {"segments": "on"} if args.segments == "on" else {}
    work = args.work or args.cache / "update-profile" / (
        str(args.size) + ("-segments" if extra else ""))
    paths = collection(args.size, work, args.cache, args.chunk_chars, args.seed, extra)
    for spec in filter(None, args.steps.split(",")):
        wrap(spec)
    from groundkit.collection import IndexConfig, collection_dir
    from groundkit.collection.derived import default_builders
    from groundkit.collection.indexer import index_collection

    home = work / "home"
    config = IndexConfig(roots=(str(work / "tree"),), extra=extra)
    directory = collection_dir("scale", home)
    rng = random.Random(args.seed)
    runs: list[dict[str, float]] = []
    for n in range(args.edits):
        TIMES.clear()
        path = rng.choice(paths)
        profiler = cProfile.Profile() if args.cprofile and n == args.edits - 1 else None
        start, cpu = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        path.write_text(f"zqprof{time.time_ns()}x\n\n" + path.read_text(encoding="utf-8"),
                        encoding="utf-8")
        index_collection("scale", directory, config, builders=default_builders(),
                         skip_dirs=(home,), dirty=[str(path)])
        if profiler:
            profiler.disable()
            profiler.dump_stats(args.cprofile)
        run = {"total": time.perf_counter() - start, "cpu": time.process_time() - cpu, **TIMES}
        runs.append(run)
        print(json.dumps({k: round(v, 3) for k, v in run.items()}), flush=True)
    summary = {k: round(statistics.median(r.get(k, 0.0) for r in runs), 3) for k in runs[0]}
    print(json.dumps({"size": args.size, "edits": args.edits, "median": summary}))


if __name__ == "__main__":
    main()
