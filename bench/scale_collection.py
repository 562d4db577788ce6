"""``bench_scale.py``'s groundkit-only measures, on a real collection of the corpus.

The corpus's passages are written ``PER_FILE`` to a Markdown file (blank line between
them), 100 files a folder, and indexed with ``index()`` (defaults: BM25, no embedding).
Then, on that collection:

* **single-file update** (the ``grk watch`` path): one file (seeded choice) gets a new
  first line, then ``index_collection`` runs with that file as the only dirty path, as
  the watcher runs it; wall time from the write to the published generation, ``--edits``
  times (p50 and each run reported).
* **search** through the collection (``Collection.search``, top 10, the default mode),
  one reader: p50/p99; with ``verify=True`` (every hit's span re-read from its file): p50.
* **fetch_chunk** (``Collection.fetch``, which re-reads and verifies the span) of the
  chunk ids those searches returned: p50/p99.
* **8 concurrent readers**: processes, not threads, each with its own
  ``Collection.open`` (as separate ``grk`` / MCP clients and ``grk serve`` replicas read one
  generation): the collection's SQLite connection is per process, and processes show what
  the OS page cache shares between readers. Forked after the collection is built, each
  waits on a barrier, then runs its share of the queries; per-query latencies pooled
  (p50/p99) and queries per second over the whole wall time. On 2 cores, 8 readers queue
  for the CPU: the ratio to the single reader is the figure to read.
"""

from __future__ import annotations

import multiprocessing as mp
import random
import shutil
import time
from functools import partial
from pathlib import Path
from typing import Any

from bench_bm25 import load_texts
from common import latency_summary, peak_rss_mib, timed_ms

PER_FILE = 20


def write_tree(root: Path, texts: list[str], per_file: int = PER_FILE) -> list[Path]:
    paths = []
    for n, start in enumerate(range(0, len(texts), per_file)):
        path = root / f"d{n // 100:05d}" / f"f{n:07d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(texts[start:start + per_file]) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def _update(home: Path, root: Path, paths: list[Path], edits: int, seed: int) -> list[float]:
    from groundkit.collection import IndexConfig, collection_dir
    from groundkit.collection.derived import default_builders
    from groundkit.collection.indexer import index_collection

    config = IndexConfig(roots=(str(root),))
    directory = collection_dir("scale", home)
    rng = random.Random(seed)
    out = []
    for n in range(edits):
        path = rng.choice(paths)
        start = time.perf_counter()
        path.write_text(f"zqscale{n:04d}x\n\n" + path.read_text(encoding="utf-8"),
                        encoding="utf-8")
        index_collection("scale", directory, config, builders=default_builders(),
                         skip_dirs=(home,), dirty=[str(path)])
        out.append(time.perf_counter() - start)
    return out


def _single(home: Path, queries: list[str]) -> dict[str, Any]:
    from groundkit.collection import Collection

    with Collection.open("scale", home) as coll:
        for q in queries[:20]:
            coll.search(q, top_k=10)
        plain, verified, fetched, ids = [], [], [], []
        for q in queries:
            ms, hits = timed_ms(partial(coll.search, q, top_k=10))
            plain.append(ms)
            ids.extend(h.chunk.chunk_id for h in hits[:1])
        for q in queries[: max(1, len(queries) // 2)]:
            verified.append(timed_ms(partial(coll.search, q, top_k=10, verify=True))[0])
        for chunk_id in ids:
            ms, verdict = timed_ms(partial(coll.fetch, chunk_id))
            fetched.append(ms)
            assert verdict.status.value == "verified", verdict
    return {"search": latency_summary(plain, digits=None),
            "verified_search": latency_summary(verified, digits=None),
            "fetch_chunk": latency_summary(fetched, digits=None)}


def _reader(home: str, queries: list[str], barrier: Any, out: Any) -> None:
    from groundkit.collection import Collection

    with Collection.open("scale", home) as coll:
        for q in queries[:5]:
            coll.search(q, top_k=10)
        barrier.wait()
        times = [timed_ms(partial(coll.search, q, top_k=10))[0] for q in queries]
    out.put(times)


def concurrent(home: Path, queries: list[str], readers: int) -> dict[str, Any]:
    """``readers`` forked processes searching at once (module docstring)."""
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(readers + 1), ctx.Queue()
    procs = [ctx.Process(target=_reader, args=(str(home), queries[i::readers], barrier, out))
             for i in range(readers)]
    for p in procs:
        p.start()
    barrier.wait(timeout=600)
    start = time.perf_counter()
    times: list[float] = []
    for _ in procs:
        times.extend(out.get(timeout=600))
    wall = time.perf_counter() - start
    for p in procs:
        p.join(60)
    return {**latency_summary(times, digits=None), "readers": readers, "kind": "processes",
            "qps": len(times) / wall}


def measure(corpus: Path, queries: list[str], work: Path, *, readers: int = 8,
            edits: int = 3, seed: int = 13) -> dict[str, Any]:
    """Every groundkit-only figure for one corpus (module docstring); ``work`` is removed."""
    from groundkit.collection import IndexConfig, index

    shutil.rmtree(work, ignore_errors=True)
    root, home = work / "tree", work / "home"
    paths = write_tree(root, load_texts(corpus))
    start = time.perf_counter()
    report = index("scale", IndexConfig(roots=(str(root),)), home=home)
    build_s = time.perf_counter() - start
    updates = _update(home, root, paths, edits, seed)
    single = _single(home, queries)
    many = concurrent(home, queries, readers)
    shutil.rmtree(work, ignore_errors=True)
    ordered = sorted(updates)
    return {"files": len(paths), "passages_per_file": PER_FILE, "chunks": report.chunks,
            "collection_build_s": build_s, "collection_mb_s": report.bytes_read / 1e6 / build_s,
            "collection_peak_rss_mib": peak_rss_mib(),
            "update_s": ordered[(len(ordered) - 1) // 2], "update_runs_s": updates,
            "search_p50_ms": single["search"]["p50_ms"],
            "search_p99_ms": single["search"]["p99_ms"],
            "verified_search_p50_ms": single["verified_search"]["p50_ms"],
            "fetch_chunk_p50_ms": single["fetch_chunk"]["p50_ms"],
            "fetch_chunk_p99_ms": single["fetch_chunk"]["p99_ms"],
            "concurrent_p50_ms": many["p50_ms"], "concurrent_p99_ms": many["p99_ms"],
            "concurrent_qps": many["qps"], "concurrent_readers": readers,
            "concurrent_kind": many["kind"]}
