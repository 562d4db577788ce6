"""200 SIGKILLs during re-indexing: the collection always opens, checks, verifies, recovers.

``groundkit/testing/kills.py`` runs the campaign: each round rewrites about 30% of a
2,000-file tree, starts ``grk index`` as a subprocess and kills it after a random delay
drawn between 0 and the length of an undisturbed run (seeded), then opens the
collection, runs ``Collection.check`` and a verified search. A round whose run finished
before its kill is counted apart; rounds continue until ``--kills`` runs were killed.
Goal: no problem after any kill, and the run after the campaign succeeds.
(``tests/collection/test_kills.py`` runs a short campaign of 8 kills in ``make test``.)

Run: ``python bench/bench_kills.py [--kills 200]``. Writes ``.bench/kills.json``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from common import load_average, machine, write_result

from groundkit.testing.kills import campaign


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kills", type=int, default=200)
    p.add_argument("--files", type=int, default=2000)
    p.add_argument("--seed", type=int, default=20261201)
    args = p.parse_args(argv)
    before = machine()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-kills-") as tmp:
        result = campaign(Path(tmp) / "tree", Path(tmp) / "home", kills=args.kills,
                          files=args.files, seed=args.seed)
    wall = time.perf_counter() - started
    out = {"machine": before, "loadavg_after": load_average(), "kills": result.kills,
           "finished_before_kill": result.finished_before_kill,
           "undisturbed_run_s": round(result.run_s, 2), "problems": result.problems,
           "generations_first_last": [result.generations[0], result.generations[-1]]
           if result.generations else None, "wall_s": round(wall, 1),
           "goal": "no problem after any kill"}
    print(f"{result.kills} kills ({result.finished_before_kill} runs finished first), "
          f"undisturbed run {result.run_s:.2f} s: {len(result.problems)} problems "
          f"in {wall:.0f} s")
    for problem in result.problems[:10]:
        print(f"  {problem}")
    write_result("kills", out)
    return 1 if result.problems else 0


if __name__ == "__main__":
    sys.exit(main())
