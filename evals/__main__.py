"""``python -m evals``: run the harness, pin expected values, compare reports."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from evals import gates, stages
from evals.cli_main import dispatch

REPO = Path(__file__).resolve().parent.parent


def _run(args: argparse.Namespace) -> int:
    from evals import html, report, runner

    t = time.perf_counter()
    settings = report.Settings(seed=args.seed, resamples=args.resamples,
                               permutations=args.permutations, hits_shown=args.hits_shown)
    built = runner.evaluate(args.golden, args.out, stage_names=args.stages, settings=settings)
    print(runner.summary_table(built, ["Success@1", "Success@10", "nDCG@10", "R@100"]))
    print(f"\nreport: {Path(args.out) / 'latest.json'}")
    if args.html:
        html.write_html(built, args.html)
        print(f"html:   {args.html}")
    print(f"wall time: {time.perf_counter() - t:.1f}s")
    return _gate(built, args.expected)


def _gate(built: dict[str, object], expected_path: str | None) -> int:
    if not expected_path:
        return 0
    expected = gates.load(expected_path)
    failures = gates.check(built, expected)  # type: ignore[arg-type]
    if failures:
        print(f"\nGATES FAILED ({expected_path}):", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return gates.GateFailure.exit_code
    print(f"gates: passed ({expected_path}: {', '.join(gates.checked_stages(expected))})")
    return 0


def _expect(args: argparse.Namespace) -> int:
    from evals import report

    built = report.load_json(args.report)
    expected = gates.expected_from(built, tolerance=args.tolerance, source=args.source)
    gates.write(args.out, expected)
    print(f"wrote {args.out}: {len(expected['stages'])} stages; commit it deliberately")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="index the golden corpus, run stages, write reports")
    run.add_argument("--golden", default=str(REPO / "golden" / "v1"), help="golden version")
    run.add_argument("--out", default=str(REPO / "evals" / "results"),
                     help="folder for latest.json and runs/*.trec")
    run.add_argument("--html", help="also write the HTML report here")
    run.add_argument("--stages", nargs="+", metavar="STAGE",
                     help=f"stages to run (default: every default stage). {stages.describe()}")
    run.add_argument("--expected", help="expected-values file to gate on")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--resamples", type=int, default=10_000)
    run.add_argument("--permutations", type=int, default=10_000)
    run.add_argument("--hits-shown", type=int, default=5,
                     help="hits per question kept in the drill-down (default 5)")
    run.set_defaults(handler=_run)
    expect = sub.add_parser("expect", help="pin a report's values as expected (deliberate)")
    expect.add_argument("--report", default=str(REPO / "evals" / "results" / "latest.json"))
    expect.add_argument("--out", required=True, help="e.g. evals/expected/golden-v1.json")
    expect.add_argument("--tolerance", type=float, default=gates.DEFAULT_TOLERANCE)
    expect.add_argument("--source", default="", help="how the values were produced")
    expect.set_defaults(handler=_expect)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
