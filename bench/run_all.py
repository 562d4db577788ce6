"""``make bench``: every benchmark in one run, each in its own process.

Each script prints its figures and writes ``.bench/<name>.json``; ratios are
against a named peer measured in the same run. A failing benchmark is reported
and the others still run; the exit status is non-zero if any failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from common import Stopwatch

HERE = Path(__file__).resolve().parent
ORDER = ["bench_index.py", "bench_bm25.py", "bench_gate.py", "bench_answers.py", "bench_eval.py",
         "bench_eval_stats.py", "bench_external.py", "bench_dense.py", "bench_mcp.py",
         "bench_mcp_load.py", "bench_watch.py", "bench_kills.py",
         "bench_rerank.py"]
ARGS = {"bench_scale.py": ["--sizes", "10000,100000", "--out", ".bench/scale-small.json"]}
"""The small version of a benchmark whose full run is its own target (``make bench-scale``)."""


def main() -> int:
    scripts = [HERE / name for name in ORDER if (HERE / name).is_file()]
    scripts += sorted(p for p in HERE.glob("bench_*.py") if p.name not in ORDER)
    failed = []
    for script in scripts:
        print(f"\n=== {script.name} ===", flush=True)
        with Stopwatch() as sw:
            code = subprocess.run([sys.executable, str(script), *ARGS.get(script.name, [])],
                                  cwd=HERE.parent).returncode
        print(f"--- {script.name}: {'ok' if code == 0 else f'FAILED ({code})'} "
              f"in {sw.s:.0f}s", flush=True)
        if code:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
