"""Exploratory: which suite features go with a stage's effect (a meta-regression).

For one comparison, each suite's effect is regressed on one suite feature at a time
(:data:`FEATURES`) in a mixed-effects meta-regression: the residual heterogeneity τ²_res is
the method-of-moments estimate of DerSimonian & Laird generalised to a design matrix
(Raudenbush 2009, eq. 16.43),
``τ²_res = max(0, (Q_E − (k − p)) / (tr W − tr((XᵀWX)⁻¹ XᵀW²X)))`` with ``W = diag(1/vᵢ)``;
then statsmodels' WLS with weights ``1/(vᵢ + τ²_res)`` and the scale fixed at 1 (the
known-variance model; statsmodels' own meta-analysis tests fit it so) gives the slope, its
standard error, interval and p-value. With an intercept only, it is the DerSimonian–Laird
pooled estimate. Few suites, features chosen after the fact, suites that differ in many
ways at once: this is a description with its uncertainty, never a gate or a decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

FEATURES = {
    "query_words": "mean question length in words",
    "identifier_share": "share of questions with the exact_identifier trait (golden only; "
                        "0 where a suite has no traits)",
    "non_english_share": "share of non-English or cross-language questions",
}
MIN_SUITES = 5
"""Below this many suites (three more than the two parameters) no slope is fitted."""


def residual_tau2(y: np.ndarray, v: np.ndarray, x: np.ndarray) -> float:
    """The method-of-moments τ²_res of the module doc for design matrix ``x``."""
    w = 1 / v
    xtwx_inv = np.linalg.inv(x.T @ (w[:, None] * x))
    beta = xtwx_inv @ (x.T @ (w * y))
    q_e = float(np.sum(w * (y - x @ beta) ** 2))
    k, p = x.shape
    denom = float(np.sum(w) - np.trace(xtwx_inv @ (x.T @ ((w**2)[:, None] * x))))
    return float(max(0.0, (q_e - (k - p)) / denom))


def fit(y: Sequence[float], v: Sequence[float], feature: Sequence[float], *,
        confidence: float = 0.95) -> dict[str, Any]:
    """The slope of the effect on ``feature`` (with intercept), its SE, interval, p-value
    and τ²_res; ``{"fitted": False, ...}`` with the reason when it cannot be fitted."""
    from statsmodels.regression.linear_model import WLS

    yy, vv, f = (np.asarray(a, dtype=float) for a in (y, v, feature))
    if yy.size < MIN_SUITES:
        return {"fitted": False, "reason": f"{yy.size} suites (needs {MIN_SUITES})"}
    if float(np.ptp(f)) == 0.0:
        return {"fitted": False, "reason": "the feature is the same on every suite"}
    x = np.column_stack([np.ones_like(f), f])
    tau2 = residual_tau2(yy, vv, x)
    res = WLS(yy, x, weights=1 / (vv + tau2)).fit(cov_type="fixed scale")
    low, high = res.conf_int(alpha=1 - confidence)[1]
    return {"fitted": True, "k": int(yy.size), "intercept": float(res.params[0]),
            "slope": float(res.params[1]), "se": float(res.bse[1]), "ci_low": float(low),
            "ci_high": float(high), "p_value": float(res.pvalues[1]), "tau2_res": tau2}


def explore(comparison: Mapping[str, Any], features: Mapping[str, Mapping[str, float]], *,
            confidence: float = 0.95) -> dict[str, Any]:
    """One fit per feature for ``comparison`` (its pooled suites), ``features`` being each
    suite's (suite name -> feature -> value)."""
    rows = comparison["suites"]
    y = [r["effect"] for r in rows]
    v = [r["variance"] for r in rows]
    return {name: {"description": what,
                   **fit(y, v, [features[r["suite"]][name] for r in rows],
                         confidence=confidence)}
            for name, what in FEATURES.items()}
