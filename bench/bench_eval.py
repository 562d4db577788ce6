"""Whole golden-eval wall time, warm (goal: under 30 s; stretch goal 10 s).

Runs the harness exactly as ``make eval``'s golden step does (``python -m evals run
--golden golden/v2 ... --expected evals/expected/golden-v2.json``: index golden v2 once
per index configuration, every default stage, statistics, the abstention gate, JSON and
HTML reports, the expected-value gates) in a child process, twice with the same cache
(``--cache``, default the repository's ``.cache`` as ``make eval`` uses): the first run
fills the caches (the query and chunk embeddings; it is a cold run only when the cache
was empty), the second is the warm run the goal is about. ``make eval``'s later steps
(``evals check`` and ``evals shift`` over the external datasets) are not timed. There is
no peer: the figure is checked against its goal only. A run whose expected-value gates
fail (exit 8) still counts as timed, and the result says so; any other failure is an
error.

    python bench/bench_eval.py [--stages STAGE ...] [--cache DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from common import ROOT as REPO
from common import Stopwatch, load_average, machine, write_result

GOLDEN = "golden/v2"
EXPECTED = "evals/expected/golden-v2.json"
GOAL_S = 30
STRETCH_S = 10
GATES_FAILED = 8
"""``python -m evals run``'s exit code when an expected-value gate fails."""


def run_eval(out: str, args: argparse.Namespace) -> tuple[float, int, str]:
    """Wall seconds, exit code and stderr tail of one ``python -m evals run``."""
    cmd = [sys.executable, "-m", "evals", "run", "--golden", GOLDEN, "--out", out,
           "--html", f"{out}/r.html", "--cache", str(args.cache)]
    if args.stages:
        cmd += ["--stages", *args.stages]
    else:
        cmd += ["--expected", EXPECTED]  # its gates cover the default stages
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               TOKENIZERS_PARALLELISM="false")  # as the Makefile exports them
    with Stopwatch() as sw:
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    return sw.s, proc.returncode, proc.stderr.strip()[-2000:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stages", nargs="+",
                        help="stages to run (default: the default stages, gated)")
    parser.add_argument("--cache", type=Path, default=REPO / ".cache",
                        help="the harness's cache folder (default: the repository's .cache)")
    args = parser.parse_args()
    facts = machine()
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as out:
        for label in ("first", "warm"):
            seconds, code, err = run_eval(out, args)
            if code not in (0, GATES_FAILED):
                print(f"golden eval ({label} run) failed with exit {code}:\n{err}",
                      file=sys.stderr)
                return 1
            runs.append({"run": label, "wall_s": round(seconds, 2),
                         "gates_passed": None if args.stages else code == 0})
        report = json.loads(Path(out, "latest.json").read_text())
    warm = runs[-1]["wall_s"]
    result = {"golden": GOLDEN, "stages": [s["name"] for s in report["stages"]],
              "questions": len(report["questions"]), "wall_s": warm,
              "first_run_s": runs[0]["wall_s"], "runs": runs, "goal_s": GOAL_S,
              "goal_met": warm < GOAL_S, "stretch_goal_s": STRETCH_S,
              "stretch_goal_met": warm < STRETCH_S, "cache": str(args.cache),
              "machine": {**facts, "loadavg_after": load_average()}}
    write_result("eval", result)
    print(f"golden v2 eval: {result['questions']} questions x {len(result['stages'])} stages "
          f"({', '.join(result['stages'])}), JSON + HTML")
    print(f"  first run {runs[0]['wall_s']:.1f} s (fills the cache), warm run {warm:.1f} s   "
          f"(goal < {GOAL_S} s: {'met' if result['goal_met'] else 'NOT met'}; stretch < "
          f"{STRETCH_S} s: {'met' if result['stretch_goal_met'] else 'NOT met'})")
    if runs[-1]["gates_passed"] is False:
        print("  note: the expected-value gates failed in this run (timed all the same)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
