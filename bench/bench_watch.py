"""``grk watch``: edit-to-searchable latency, an idle watcher's CPU, store size with and
without gc.

Three figures, each against its goal:

* **Edit-to-searchable** (goal: p50 <= 1 s, p99 <= 3 s for a single-file edit in a
  10,000-file collection). ``--files`` passages of ``bench_bm25.py``'s corpus (real text
  from this machine's /usr/share/doc and man pages, ~1,000 characters each) are written
  one per file into 100 folders and indexed (``index()``, defaults). ``grk watch`` runs as
  a subprocess with its default debounce (0.2 s). Each of ``--edits`` rounds rewrites one
  file (seeded choice) with a new unique marker word, then searches the collection from
  this process (``Collection.open`` + ``search``, every 10 ms) until the marker's file is
  the top hit: the latency is from just before the write to that search's return. The
  peer, measured in the same run on the same edits: a full ``index()`` re-run after the
  edit (what a user without a watcher runs); reported as a ratio.
* **Idle CPU** (goal: < 1% of one core). With no edits, the watcher process's user+system
  CPU time (``/proc/PID/stat``) over ``--idle-seconds`` of wall time.
* **Store size after ``--gc-edits`` edits** with auto-gc (the default) and without
  (``--no-auto-gc``): a ``--gc-files``-file collection, one file rewritten per indexing
  run (``index_collection`` with that file as the dirty path, as the watcher runs it);
  bytes of the collection folder (SQLite store, WAL and generation folders) after every
  run; the ratio with/without gc at the end.

Run: ``python bench/bench_watch.py`` (defaults above; ``--files 2000 --edits 10`` for a
quick look). Writes ``.bench/watch.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench_bm25 import make_corpus  # also pins numeric libraries to one thread
from common import (
    ROOT,
    disk_bytes,
    latency_summary,
    load_average,
    machine,
    ratio,
    write_result,
)

from groundkit.collection import Collection, IndexConfig, collection_dir, index
from groundkit.collection.derived import default_builders
from groundkit.collection.indexer import index_collection

GOALS = {"p50_ms": 1000.0, "p99_ms": 3000.0, "idle_cpu_pct": 1.0}


def write_tree(root: Path, texts: list[str]) -> list[Path]:
    paths = []
    for i, text in enumerate(texts):
        path = root / f"d{i % 100:02d}" / f"f{i:05d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def edit(path: Path, marker: str) -> None:
    text = path.read_text(encoding="utf-8")
    path.write_text(f"{marker}\n\n{text}", encoding="utf-8")


def found(home: Path, marker: str, doc_id: str) -> bool:
    with Collection.open("watched", home) as coll:
        hits = coll.search(marker, top_k=1)
    return bool(hits) and hits[0].chunk.doc_id == doc_id


def start_watcher(home: Path) -> tuple[subprocess.Popen[str], list[dict[str, Any]]]:
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", "watch", "-c", "watched",
                             "--json"], env=env, stdout=subprocess.PIPE, text=True)
    events: list[dict[str, Any]] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            events.append(json.loads(line))
            if events[-1]["event"] == "watching":
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(600):
        raise SystemExit("the watcher did not start")
    return proc, events


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_latency(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    texts = make_corpus(args.files, args.chunk_chars, args.cache)
    root, home = work / "tree", work / "home"
    paths = write_tree(root, texts)
    t0 = time.perf_counter()
    report = index("watched", IndexConfig(roots=(str(root),)), home=home)
    build_s = time.perf_counter() - t0
    print(f"collection: {len(paths)} files, {report.chunks} chunks, built in {build_s:.1f} s",
          flush=True)
    rng = random.Random(args.seed)
    proc, events = start_watcher(home)
    latencies, peer = [], []
    try:
        for n in range(args.edits):
            path = rng.choice(paths)
            doc_id = path.relative_to(root).as_posix()
            marker = f"zqmarker{n:04d}x"
            start = time.perf_counter()
            edit(path, marker)
            while not found(home, marker, doc_id):
                if time.perf_counter() - start > 60:
                    raise SystemExit(f"edit {n} not searchable after 60 s")
                time.sleep(0.01)
            latencies.append(1000 * (time.perf_counter() - start))
            time.sleep(0.3)  # let the watcher go idle between edits
        idle_cpu = measure_idle(proc, args.idle_seconds)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
    for n in range(args.peer_edits):  # the peer: a full re-index after the same kind of edit
        path = rng.choice(paths)
        edit(path, f"zqpeer{n:04d}x")
        t0 = time.perf_counter()
        index("watched", IndexConfig(roots=(str(root),)), home=home)
        peer.append(1000 * (time.perf_counter() - t0))
    runs = [e for e in events if e["event"] == "indexed" and e["reason"] == "change"]
    return {"files": len(paths), "chunks": report.chunks, "build_s": round(build_s, 2),
            "edit_to_searchable": latency_summary(latencies),
            "watcher_run": latency_summary([1000 * e["seconds"] for e in runs]),
            "peer_full_reindex": latency_summary(peer),
            "ratio_p50_vs_full_reindex": ratio(latency_summary(latencies)["p50_ms"],
                                               latency_summary(peer)["p50_ms"]),
            "idle_cpu": idle_cpu}


def measure_idle(proc: subprocess.Popen[str], seconds: float) -> dict[str, Any]:
    time.sleep(1.0)
    cpu0, t0 = proc_cpu_s(proc.pid), time.perf_counter()
    time.sleep(seconds)
    cpu1, t1 = proc_cpu_s(proc.pid), time.perf_counter()
    pct = 100.0 * (cpu1 - cpu0) / (t1 - t0)
    return {"seconds": round(t1 - t0, 1), "cpu_s": round(cpu1 - cpu0, 3),
            "pct_of_a_core": round(pct, 3)}


def bench_store(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    texts = make_corpus(args.gc_files, args.chunk_chars, args.cache)
    out: dict[str, Any] = {"files": args.gc_files, "edits": args.gc_edits}
    for label, auto in (("with_gc", True), ("without_gc", False)):
        root, home = work / f"store-{label}", work / f"home-{label}"
        paths = write_tree(root, texts)
        config = IndexConfig(roots=(str(root),), extra={"gc": {"auto": auto}})
        index("s", config, home=home)
        directory = collection_dir("s", home)
        rng = random.Random(args.seed)
        sizes = []
        t0 = time.perf_counter()
        for n in range(args.gc_edits):
            path = rng.choice(paths)
            edit(path, f"zqstore{n:05d}x")
            index_collection("s", directory, config, builders=default_builders(),
                             skip_dirs=(home,), dirty=[str(path)])
            if (n + 1) % max(1, args.gc_edits // 10) == 0:
                sizes.append(disk_bytes(directory))
        elapsed = time.perf_counter() - t0
        out[label] = {"bytes_after": disk_bytes(directory), "bytes_every_tenth": sizes,
                      "seconds": round(elapsed, 1)}
        print(f"store {label}: {out[label]['bytes_after'] / 2**20:.1f} MiB after "
              f"{args.gc_edits} edits ({elapsed:.0f} s)", flush=True)
        shutil.rmtree(root)
    out["ratio_with_vs_without"] = ratio(out["with_gc"]["bytes_after"],
                                         out["without_gc"]["bytes_after"])
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=10_000)
    p.add_argument("--chunk-chars", type=int, default=1_000)
    p.add_argument("--edits", type=int, default=50, help="timed single-file edits")
    p.add_argument("--peer-edits", type=int, default=5, help="full re-index runs (the peer)")
    p.add_argument("--idle-seconds", type=float, default=30.0)
    p.add_argument("--gc-files", type=int, default=300)
    p.add_argument("--gc-edits", type=int, default=1_000)
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--cache", type=Path, default=ROOT / ".bench")
    args = p.parse_args(argv)
    before = machine()
    with tempfile.TemporaryDirectory(prefix="bench-watch-") as tmp:
        latency = bench_latency(args, Path(tmp))
        store = bench_store(args, Path(tmp))
    e2s, idle = latency["edit_to_searchable"], latency["idle_cpu"]
    goals = {"p50": e2s["p50_ms"] <= GOALS["p50_ms"], "p99": e2s["p99_ms"] <= GOALS["p99_ms"],
             "idle_cpu": idle["pct_of_a_core"] < GOALS["idle_cpu_pct"]}
    print(f"edit-to-searchable at {latency['files']} files: p50 {e2s['p50_ms']:.0f} ms, "
          f"p99 {e2s['p99_ms']:.0f} ms (goal {GOALS['p50_ms']:.0f} / {GOALS['p99_ms']:.0f} ms); "
          f"watcher run p50 {latency['watcher_run']['p50_ms']:.0f} ms; "
          f"full re-index p50 {latency['peer_full_reindex']['p50_ms']:.0f} ms "
          f"(ratio {latency['ratio_p50_vs_full_reindex']})")
    print(f"idle watcher: {idle['pct_of_a_core']:.3f}% of a core over {idle['seconds']} s "
          f"(goal < {GOALS['idle_cpu_pct']}%)")
    print(f"store after {store['edits']} edits: with gc {store['with_gc']['bytes_after']:,} B, "
          f"without {store['without_gc']['bytes_after']:,} B "
          f"(ratio {store['ratio_with_vs_without']})")
    write_result("watch", {"machine": before, "loadavg_after": load_average(),
                           "latency": latency, "store": store, "goals": GOALS,
                           "goals_met": goals})
    return 0


if __name__ == "__main__":
    sys.exit(main())
