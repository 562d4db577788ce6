"""Foundation benchmark: ingest + chunk + store throughput, and fetch_chunk latency.

Indexes the Python standard library's sources (present on any machine with
Python) into a throwaway collection, in a child process so its peak memory is
its own, then times ``fetch_chunk`` on a fixed sample of chunk ids.

    python bench/bench_index.py [--tree DIR] [--fetches N]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import sysconfig
import tempfile
from functools import partial
from pathlib import Path

from common import latency_summary, timed_ms, write_result

HERE = Path(__file__).resolve().parent

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[4])
from common import peak_rss_mib, timed_ms
from groundkit.collection import IndexConfig, index
from groundkit.collection.derived import default_builders
builders = default_builders() if sys.argv[3] == "all" else []
ms, r = timed_ms(lambda: index("bench", IndexConfig(roots=(sys.argv[1],), include=("*.py",)),
                               home=sys.argv[2], builders=builders))
print(json.dumps({"seconds": ms / 1e3, "bytes": r.bytes_read, "chunks": r.chunks,
                  "files": r.added + r.changed + r.unchanged, "skipped": len(r.skipped),
                  "peak_rss_mib": peak_rss_mib()}))
"""


def run_index(tree: str, home: str, builders: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, tree, home, builders, str(HERE)],
                         capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def time_fetches(home: str, count: int) -> dict[str, float]:
    from groundkit.collection import Collection

    with Collection.open("bench", home) as coll:
        ids = [c.chunk_id for c in coll.chunks()]
        sample = random.Random(7).sample(ids, min(count, len(ids)))
        coll.fetch(sample[0])  # warm the page cache for the store
        times = []
        for chunk_id in sample:
            ms, verdict = timed_ms(partial(coll.fetch, chunk_id))
            times.append(ms)
            assert verdict.status.value == "verified", verdict
    s = latency_summary(times, digits=None)
    return {"fetches": s["n"], "p50_ms": s["p50_ms"], "p99_ms": s["p99_ms"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", default=sysconfig.get_paths()["stdlib"],
                        help="folder to index (default: the Python standard library)")
    parser.add_argument("--fetches", type=int, default=2000, help="fetch_chunk calls to time")
    parser.add_argument("--repeat", type=int, default=3,
                        help="ingest runs, each in a fresh process; the fastest is reported "
                        "with the median beside it (default 3)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        runs = sorted((run_index(args.tree, f"{home}/a{i}", "none")
                       for i in range(max(1, args.repeat))), key=lambda r: r["seconds"])
        store_only = runs[0]
        median_s = runs[len(runs) // 2]["seconds"]
        full = run_index(args.tree, home + "/b", "all")
        fetch = time_fetches(home + "/b", args.fetches)
    mb = store_only["bytes"] / 1e6
    result = {
        "tree": args.tree, "mb": round(mb, 1), "files": store_only["files"],
        "chunks": store_only["chunks"],
        "ingest_chunk_store_mb_per_s": round(mb / store_only["seconds"], 2),
        "ingest_runs": len(runs),
        "ingest_median_mb_per_s": round(mb / median_s, 2),
        "ingest_chunk_store_chunks_per_s": round(store_only["chunks"] / store_only["seconds"]),
        "ingest_peak_rss_mib": round(store_only["peak_rss_mib"], 1),
        "with_derived_mb_per_s": round(mb / full["seconds"], 2),
        "with_derived_peak_rss_mib": round(full["peak_rss_mib"], 1),
        "fetch_chunk_p50_ms": round(fetch["p50_ms"], 4),
        "fetch_chunk_p99_ms": round(fetch["p99_ms"], 4),
        "goals": {"ingest_mb_per_s": ">= 20", "fetch_p50_ms": "< 1"},
    }
    write_result("index", result)
    print(f"index {result['files']} files, {result['mb']} MB, {result['chunks']} chunks "
          f"({args.tree})")
    print(f"  ingest+chunk+store: {result['ingest_chunk_store_mb_per_s']} MB/s, "
          f"{result['ingest_chunk_store_chunks_per_s']} chunks/s, "
          f"peak {result['ingest_peak_rss_mib']} MiB   (goal >= 20 MB/s; best of "
          f"{len(runs)}, median {result['ingest_median_mb_per_s']} MB/s)")
    print(f"  with derived indexes: {result['with_derived_mb_per_s']} MB/s, "
          f"peak {result['with_derived_peak_rss_mib']} MiB")
    print(f"  fetch_chunk: p50 {result['fetch_chunk_p50_ms']} ms, "
          f"p99 {result['fetch_chunk_p99_ms']} ms over {fetch['fetches']}   (goal p50 < 1 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
