"""``python -m evals meta REPORT...``: its options and what it prints and writes."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import pooling
from .analysis import DEFAULT_MEASURE, meta_analysis


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    meta = sub.add_parser("meta", help="pool every stage's difference from the baseline "
                          "across suites: prediction interval and verdict",
                          description=cmd_meta.__doc__)
    meta.add_argument("reports", nargs="+", metavar="REPORT",
                      help="saved reports (JSON): golden, external or your own")
    meta.add_argument("--measure", default=DEFAULT_MEASURE,
                      help=f"the measure pooled (default {DEFAULT_MEASURE})")
    meta.add_argument("--method", choices=sorted(pooling.METHODS), default="dl",
                      help="the tau^2 estimator: " + "; ".join(
                          f"{k}: {v}" for k, v in sorted(pooling.METHODS.items())))
    meta.add_argument("--confidence", type=float, default=0.95,
                      help="confidence of every interval (default 0.95)")
    meta.add_argument("--stages", nargs="+", metavar="STAGE",
                      help="only these stages (default: every one beside the baseline)")
    meta.add_argument("--whole", action="store_true",
                      help="keep a report with domains as one suite instead of one per domain")
    meta.add_argument("--regression", action="store_true",
                      help="also fit the exploratory meta-regression of each stage's effect "
                      "on suite features (one at a time; described, never gated)")
    meta.add_argument("--html", metavar="FILE", help="also write the HTML page (forest plots)")
    meta.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    meta.add_argument("--expected", metavar="FILE",
                      help="gate on pinned pooled estimates and verdicts (exit 8 on a miss)")
    meta.add_argument("--write-expected", metavar="FILE",
                      help="pin this result's pooled estimates and verdicts here (deliberate)")
    meta.set_defaults(handler=cmd_meta)


def cmd_meta(args: argparse.Namespace) -> int:
    """Pool each stage's paired difference from the baseline across the suites of the
    given reports (a golden report splits into its domains): per-suite effects, a
    random-effects estimate with tau^2, I^2 and the prediction interval for a new
    collection, and a verdict word per comparison."""
    from . import gates
    from .text import decisions_table, regression_table, suites_table

    result = meta_analysis(args.reports, measure=args.measure, method=args.method,
                           confidence=args.confidence, domains=not args.whole,
                           stages=args.stages, regression=args.regression)
    sys.stdout.write(decisions_table(result) + "\n" + suites_table(result))
    if args.regression:
        sys.stdout.write("\n" + regression_table(result))
    if args.json:
        out = Path(args.json)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        print(f"\njson: {out}")
    if args.html:
        from .html import write_html

        print(f"html: {write_html(result, args.html)}")
    if args.write_expected:
        source = "python -m evals meta " + " ".join(args.reports)
        gates.write(args.write_expected, gates.expected_from(result, source=source))
        print(f"wrote {args.write_expected}; commit it deliberately")
    if args.expected:
        failures = gates.check(result, gates.load(args.expected))
        if failures:
            print("\nMETA GATES FAILED:", file=sys.stderr)
            for line in failures:
                print(f"  {line}", file=sys.stderr)
            return gates.GateFailure.exit_code
        print(f"meta gates: passed ({args.expected})")
    return 0
