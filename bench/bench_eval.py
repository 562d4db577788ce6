"""Whole golden-eval wall time (goal: under 30 s with a warm venv).

Runs the harness exactly as ``make eval`` does (index golden v1 once per index
configuration, every default stage, statistics, JSON report) in a child process,
and reports wall time, with and without the HTML rendering.

    python bench/bench_eval.py [--stages STAGE ...]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from common import ROOT as REPO
from common import timed_ms, write_result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stages", nargs="+", help="stages to run (default: default stages)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as out:
        cmd = [sys.executable, "-m", "evals", "run", "--out", out, "--html", f"{out}/r.html"]
        if args.stages:
            cmd += ["--stages", *args.stages]
        ms, _ = timed_ms(lambda: subprocess.run(cmd, check=True, capture_output=True, cwd=REPO))
        wall = ms / 1e3
        report = json.loads(Path(out, "latest.json").read_text())
    result = {"stages": [s["name"] for s in report["stages"]],
              "questions": len(report["questions"]), "wall_s": round(wall, 2),
              "goal_s": 30}
    write_result("eval", result)
    print(f"golden eval: {result['questions']} questions x {len(result['stages'])} stages "
          f"({', '.join(result['stages'])}): {wall:.1f} s wall, JSON + HTML   (goal < 30 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
