"""Pinned meta-analysis values: ``evals/expected/meta.json``, the gates' file for ``meta``.

::

    {"measure": "nDCG@10", "method": "dl", "source": "make eval, 2026-12-04",
     "comparisons": {"dense-minilm": {"k": 18, "verdict": "no evidence",
                                      "estimate": {"value": 0.01, "tolerance": 0.005}, ...}}}

Each pinned comparison must reappear with the same number of pooled suites and the same
verdict word, and its pooled estimate, pooled interval, prediction interval and I² within
``value ± tolerance``. Written by ``python -m evals meta ... --write-expected`` from a
result, never by hand; changing them is a deliberate commit (as :mod:`evals.score.gates`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evals.score import gates as score_gates
from evals.score.gates import DEFAULT_TOLERANCE, GateFailure, write

PINNED = ("estimate", "ci_low", "ci_high", "pi_low", "pi_high", "i2")

__all__ = ["PINNED", "GateFailure", "check", "expected_from", "load", "write"]


def expected_from(result: Mapping[str, Any], *, tolerance: float = DEFAULT_TOLERANCE,
                  source: str = "") -> dict[str, Any]:
    comparisons: dict[str, Any] = {}
    for c in result["comparisons"]:
        pinned: dict[str, Any] = {"k": c["k"], "verdict": c["verdict"]}
        for key in PINNED:
            value = (c["pooled"] or {}).get(key)
            if value is not None:
                pinned[key] = {"value": value, "tolerance": tolerance}
        comparisons[c["stage"]] = pinned
    return {"measure": result["measure"], "method": result["method"], "source": source,
            "comparisons": comparisons}


def check(result: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """Every way ``result`` misses ``expected``, one line each; empty when all pass."""
    failures = [f"{key}: pinned {expected.get(key)!r}, this result {result[key]!r}"
                for key in ("measure", "method") if expected.get(key) != result[key]]
    got = {c["stage"]: c for c in result["comparisons"]}
    for stage, pinned in expected.get("comparisons", {}).items():
        c = got.get(stage)
        if c is None:
            failures.append(f"{stage}: pinned, but no suite ran it")
            continue
        for key in ("k", "verdict"):
            if c[key] != pinned[key]:
                failures.append(f"{stage}: {key} = {c[key]!r}, expected {pinned[key]!r}")
        for key in PINNED:
            if key not in pinned:
                continue
            value = (c["pooled"] or {}).get(key)
            band = pinned[key]
            if value is None or abs(value - band["value"]) > band["tolerance"] + 1e-12:
                failures.append(f"{stage}: {key} = {value}, expected {band['value']:.4f} "
                                f"± {band['tolerance']:g}")
    return failures


def load(path: str | Path) -> dict[str, Any]:
    """A pinned meta file (``GroundkitError`` if unreadable or without ``comparisons``)."""
    return score_gates.load(path, table="comparisons", what="pinned meta values")
