"""Every stage against the baseline across suites: :func:`meta_analysis`'s result dict.

For each stage that some suite ran beside the baseline: the suites that ran it (the
overlapping ones left out, :func:`.suites.disjoint`), each with its mean paired
difference, variance and interval (:func:`.pooling.suite_effect`) and its random-effects
weight; the pooled estimate with τ², I², Cochran's Q, the prediction interval for a new
collection (:func:`.pooling.pool`) and the verdict word (:func:`.pooling.verdict`). A suite
whose paired differences are all equal (:data:`SAME`; zero variance: the stage ranked
every question as the baseline did, or equally better) carries no weight in an
inverse-variance model and is listed as left out with that reason, never given a made-up
variance.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from evals.report import DECIMALS, ReportError, canonical
from groundkit.errors import UsageError

from . import pooling
from .suites import Excluded, Suite, disjoint, load_suites

DEFAULT_MEASURE = "nDCG@10"
SAME = 2 * 10.0**-DECIMALS
"""Paired differences this close are equal: a report's scores are rounded to
:data:`~evals.report.DECIMALS` decimals, so their differences carry that much noise (a
variance from it alone would give a suite near-infinite weight)."""


def meta_analysis(paths: Sequence[str | Path], *, measure: str = DEFAULT_MEASURE,
                  method: str = "dl", confidence: float = 0.95, domains: bool = True,
                  stages: Sequence[str] | None = None, regression: bool = False
                  ) -> dict[str, Any]:
    """The comparisons of every stage (or of ``stages``) with the baseline over the suites
    of the reports at ``paths``, canonical (rounded floats, stable order); ``regression``
    adds each comparison's exploratory meta-regression (:mod:`.regression`)."""
    if not paths:
        raise UsageError("meta needs at least one report")
    if not 0 < confidence < 1:
        raise UsageError(f"--confidence must lie between 0 and 1, got {confidence}")
    every = load_suites(paths, measure, domains=domains)
    baselines = sorted({s.baseline for s in every})
    if len(baselines) > 1:
        raise ReportError(f"the reports have different baselines ({', '.join(baselines)}): "
                          "effects against different baselines cannot be pooled")
    kept, excluded = disjoint(every)
    names = list(dict.fromkeys(n for s in kept for n in s.scores if n != baselines[0]))
    if stages:
        unknown = [n for n in stages if n not in names]
        if unknown:
            raise UsageError(f"no pooled suite ran stage(s) {', '.join(unknown)}; stages "
                             f"found: {', '.join(names) or 'none'}")
        names = list(stages)
    comparisons = [_comparison(kept, name, baselines[0], method=method,
                               confidence=confidence) for name in names]
    if regression:
        from .regression import explore

        features = {s.name: s.features for s in kept}
        for c in comparisons:
            c["regression"] = explore(c, features, confidence=confidence)
    result: dict[str, Any] = canonical({
        "measure": measure,
        "method": method,
        "method_description": pooling.METHODS[method],
        "confidence": confidence,
        "baseline": baselines[0],
        "reports": [str(p) for p in paths],
        "suites": [_suite_row(s, any(s is k for k in kept), excluded) for s in every],
        "comparisons": comparisons,
        "verdicts": pooling.VERDICTS,
    })
    return result


def _suite_row(suite: Suite, pooled: bool, excluded: Sequence[Excluded]) -> dict[str, Any]:
    reason = next((x.reason for x in excluded if x.suite is suite), None)
    return {"name": suite.name, "report": suite.report, "kind": suite.kind,
            "judged": len(suite.scores[suite.baseline]), "pooled": pooled,
            "excluded": reason, "documents": sorted(suite.documents),
            "features": dict(suite.features)}


def _comparison(suites: Sequence[Suite], stage: str, baseline: str, *, method: str,
                confidence: float) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    effects: list[pooling.Effect] = []
    left_out: list[dict[str, str]] = []
    for suite in suites:
        if stage not in suite.scores:
            continue
        base, other = suite.scores[baseline], suite.scores[stage]
        paired = sorted(base.keys() & other.keys())
        diffs = [other[q] - base[q] for q in paired]
        if len(paired) < 2:
            left_out.append({"suite": suite.name, "reason": f"{len(paired)} paired question"})
            continue
        if max(diffs) - min(diffs) <= SAME:
            left_out.append({"suite": suite.name, "reason": "every paired difference is "
                             f"{diffs[0]:+.4f}: no variance, no weight"})
            continue
        effect = pooling.suite_effect(diffs, confidence=confidence)
        effects.append(effect)
        rows.append({"suite": suite.name, "kind": suite.kind, **asdict(effect)})
    block: dict[str, Any] = {"stage": stage, "baseline": baseline, "suites": rows,
                             "left_out": left_out, "k": len(rows)}
    if len(rows) < 2:
        return {**block, "pooled": None, "verdict": "too few suites"}
    pooled = pooling.pool([e.effect for e in effects], [e.variance for e in effects],
                          method=method, confidence=confidence)
    weights = [1 / (e.variance + pooled.tau2) for e in effects]
    for row, w in zip(rows, weights, strict=True):
        row["weight"] = w / sum(weights)
    return {**block, "pooled": asdict(pooled),
            "verdict": pooling.verdict(pooled, effects, confidence=confidence)}
