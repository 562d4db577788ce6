"""Random-effects pooling of per-suite effects, the prediction interval, the verdict word.

The numerics are statsmodels' :func:`~statsmodels.stats.meta_analysis.combine_effects`
(DerSimonian & Laird 1986, or Paule & Mandel's iterated estimator); this module adds what
it leaves out:

- DerSimonian–Laird's τ² truncated at 0 (statsmodels returns the raw moment estimate,
  negative when Cochran's Q < k − 1; then every weight is 1/vᵢ, the fixed-effect model,
  which is what Paule–Mandel returns in that case, so that result is used);
- I² as ``max(0, (Q − df) / Q)`` (Higgins & Thompson 2002);
- the prediction interval for the effect in a new collection (Higgins, Thompson &
  Spiegelhalter 2009, eq. 12): ``μ̂ ± t_{k−2} · sqrt(τ̂² + SE(μ̂)²)``, from scipy's t
  quantile on k − 2 degrees of freedom (statsmodels has no prediction interval);
- the verdict word (:func:`verdict`).

Each suite's effect is the mean paired difference stage − baseline over its judged
questions; its variance, the squared standard error of that mean: the sample variance of
the differences (ddof 1) over n (:func:`suite_effect`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from groundkit.errors import UsageError

METHODS = {
    "dl": "DerSimonian-Laird moment estimator of tau^2, truncated at 0",
    "pm": "Paule-Mandel iterated estimator of tau^2 (statsmodels' 'iterated')",
}
MIN_SUITES = 3
"""The prediction interval needs k − 2 ≥ 1 degrees of freedom."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Effect:
    """One suite's effect: the mean paired difference and its sampling variance."""

    n: int
    effect: float
    variance: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True, slots=True, kw_only=True)
class Pooled:
    """A random-effects pooled estimate over ``k`` suites."""

    k: int
    method: str
    estimate: float
    se: float
    ci_low: float
    ci_high: float
    tau2: float
    i2: float
    q: float
    q_p_value: float
    pi_low: float | None
    pi_high: float | None
    fixed_estimate: float


def suite_effect(differences: Sequence[float], *, confidence: float = 0.95) -> Effect:
    """The mean of ``differences`` (stage − baseline per question) and its variance.

    The interval is the normal one the pooling assumes (mean ± z·SE); fewer than two
    differences have no variance and raise ``UsageError``.
    """
    d = np.asarray(differences, dtype=float)
    if d.size < 2:
        raise UsageError(f"a suite needs at least 2 paired questions, has {d.size}")
    mean = float(d.mean())
    variance = float(d.var(ddof=1) / d.size)
    half = float(stats.norm.isf((1 - confidence) / 2)) * math.sqrt(variance)
    return Effect(n=int(d.size), effect=mean, variance=variance, ci_low=mean - half,
                  ci_high=mean + half)


def pool(effects: Sequence[float], variances: Sequence[float], *, method: str = "dl",
         confidence: float = 0.95) -> Pooled:
    """The random-effects pooled estimate of ``effects`` with sampling ``variances``.

    The pooled interval is the normal one (μ̂ ± z·SE(μ̂), metafor's default); the
    prediction interval needs :data:`MIN_SUITES` suites and is ``None`` below.
    """
    from statsmodels.stats.meta_analysis import combine_effects

    if method not in METHODS:
        raise UsageError(f"unknown pooling method {method!r}; valid: {', '.join(METHODS)}")
    eff, var = np.asarray(effects, dtype=float), np.asarray(variances, dtype=float)
    if eff.size < 2 or eff.shape != var.shape:
        raise UsageError(f"pooling needs at least 2 suites with one variance each, has "
                         f"{eff.size} effects and {var.size} variances")
    if not np.all(var > 0):
        raise UsageError("every suite's variance must be positive (identical paired "
                         "differences carry no weight: leave the suite out)")
    alpha = 1 - confidence
    res = combine_effects(eff, var, method_re="iterated" if method == "pm" else "dl",
                          alpha=alpha)
    if res.tau2 < 0:  # DL's raw moment estimate; truncated, it is PM's tau^2 = 0 result
        res = combine_effects(eff, var, method_re="iterated", alpha=alpha)
    tau2 = max(0.0, float(res.tau2))
    estimate, se = float(res.mean_effect_re), float(res.sd_eff_w_re)
    ci_low, ci_high = (float(v) for v in res.conf_int(alpha=alpha, use_t=False)[1])
    k, q = int(eff.size), float(res.q)
    pi_low = pi_high = None
    if k >= MIN_SUITES:
        half = float(stats.t.isf(alpha / 2, k - 2)) * math.sqrt(tau2 + se**2)
        pi_low, pi_high = estimate - half, estimate + half
    return Pooled(k=k, method=method, estimate=estimate, se=se, ci_low=ci_low,
                  ci_high=ci_high, tau2=tau2, i2=max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0,
                  q=q, q_p_value=float(stats.chi2.sf(q, k - 1)), pi_low=pi_low,
                  pi_high=pi_high, fixed_estimate=float(res.mean_effect_fe))


VERDICTS = {
    "robust": "the prediction interval for a new collection lies above 0: expect it to "
              "help on the next collection too",
    "robustly worse": "the prediction interval for a new collection lies below 0: expect "
                      "it to hurt on the next collection too",
    "helps on average": "the pooled interval lies above 0, the prediction interval "
                        "includes 0: better on average, not on every collection",
    "hurts on average": "the pooled interval lies below 0, the prediction interval "
                        "includes 0: worse on average, not on every collection",
    "collection-dependent": "the pooled interval includes 0, yet the suites differ "
                            "(Cochran's Q p < 1 − confidence) and at least one suite's own "
                            "interval lies above 0 and another's below 0",
    "no evidence": "none of the above: no difference shown on average or by collection",
    "too few suites": f"fewer than {MIN_SUITES} suites: no prediction interval",
}
"""Each verdict word and its rule, checked in this order (the first that holds)."""


def verdict(pooled: Pooled, suites: Sequence[Effect], *, confidence: float = 0.95) -> str:
    """The verdict word for ``pooled`` over ``suites`` (:data:`VERDICTS`)."""
    if pooled.k < MIN_SUITES or pooled.pi_low is None or pooled.pi_high is None:
        return "too few suites"
    if pooled.pi_low > 0:
        return "robust"
    if pooled.pi_high < 0:
        return "robustly worse"
    if pooled.ci_low > 0:
        return "helps on average"
    if pooled.ci_high < 0:
        return "hurts on average"
    split = any(s.ci_low > 0 for s in suites) and any(s.ci_high < 0 for s in suites)
    if split and pooled.q_p_value < 1 - confidence:
        return "collection-dependent"
    return "no evidence"
