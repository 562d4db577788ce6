"""The plain-text rendering of :func:`evals.meta.meta_analysis`'s result: the decisions
table (one row per comparison, its verdict word), then each comparison's suites."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _interval(low: float | None, high: float | None) -> str:
    return "—" if low is None or high is None else f"[{low:+.3f}, {high:+.3f}]"


def decisions_table(result: Mapping[str, Any]) -> str:
    """One line per comparison: k, pooled estimate and interval, τ², I², the prediction
    interval and the verdict word."""
    lines = [
        f"{result['measure']}: each stage − {result['baseline']}, random effects "
        f"({result['method_description']}), {100 * result['confidence']:g}% intervals; "
        "PI: prediction interval for a new collection (t, k−2 df)",
        "",
        f"{'stage':<18} {'k':>3} {'pooled':>8} {'CI':>18} {'tau2':>8} {'I2':>5} "
        f"{'PI':>18}  verdict",
    ]
    for c in result["comparisons"]:
        p = c["pooled"]
        if p is None:
            lines.append(f"{c['stage']:<18} {c['k']:>3} {'':>8} {'':>18} {'':>8} {'':>5} "
                         f"{'':>18}  {c['verdict']}")
            continue
        lines.append(
            f"{c['stage']:<18} {c['k']:>3} {p['estimate']:>+8.3f} "
            f"{_interval(p['ci_low'], p['ci_high']):>18} {p['tau2']:>8.5f} "
            f"{100 * p['i2']:>4.0f}% {_interval(p['pi_low'], p['pi_high']):>18}  "
            f"{c['verdict']}")
    return "\n".join(lines) + "\n"


def suites_table(result: Mapping[str, Any]) -> str:
    """The suites read (pooled or left out, and why), then each comparison's per-suite
    effects with their intervals and weights."""
    lines = ["suites:"]
    for s in result["suites"]:
        state = "pooled" if s["pooled"] else f"left out: {s['excluded']}"
        lines.append(f"  {s['name']:<28} {s['kind']:<15} {s['judged']:>5} judged  {state}")
    for c in result["comparisons"]:
        lines += ["", f"{c['stage']} − {c['baseline']}:"]
        for row in c["suites"]:
            weight = f"{100 * row['weight']:5.1f}%" if "weight" in row else "     "
            lines.append(f"  {row['suite']:<28} n={row['n']:<5} {row['effect']:>+8.3f} "
                         f"{_interval(row['ci_low'], row['ci_high']):>18}  w {weight}")
        lines += [f"  {x['suite']:<28} left out: {x['reason']}" for x in c["left_out"]]
    return "\n".join(lines) + "\n"


def regression_table(result: Mapping[str, Any]) -> str:
    """Each comparison's exploratory meta-regression: slope per feature, its interval."""
    lines = ["EXPLORATORY meta-regression (one feature at a time; a description, not a "
             "decision): slope of the effect per unit of the feature"]
    for c in result["comparisons"]:
        for name, fit in (c.get("regression") or {}).items():
            if not fit["fitted"]:
                lines.append(f"  {c['stage']:<18} {name:<18} not fitted: {fit['reason']}")
                continue
            lines.append(f"  {c['stage']:<18} {name:<18} k={fit['k']:<3} slope "
                         f"{fit['slope']:>+8.4f} {_interval(fit['ci_low'], fit['ci_high']):>18}"
                         f"  p {fit['p_value']:.3f}  tau2_res {fit['tau2_res']:.5f}")
    return "\n".join(lines) + "\n"
