"""evals.meta.pooling: the random-effects estimator against published worked examples,
the prediction interval by its formula, and the verdict rules."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evals.meta.pooling import MIN_SUITES, Effect, Pooled, pool, suite_effect, verdict
from groundkit.errors import UsageError

# The BCG vaccine trials (Colditz et al. 1994; metafor's dat.bcg): vaccinated TB+, TB-,
# control TB+, TB-.
BCG = [(4, 119, 11, 128), (6, 300, 29, 274), (3, 228, 11, 209), (62, 13536, 248, 12619),
       (33, 5036, 47, 5761), (180, 1361, 372, 1079), (8, 2537, 10, 619),
       (505, 87886, 499, 87892), (29, 7470, 45, 7232), (17, 1699, 65, 1600),
       (186, 50448, 141, 27197), (5, 2493, 3, 2338), (27, 16886, 29, 17825)]


def bcg_log_risk_ratios() -> tuple[list[float], list[float]]:
    """escalc(measure="RR"): log risk ratio and its variance 1/a − 1/(a+b) + 1/c − 1/(c+d)."""
    y = [math.log((a / (a + b)) / (c / (c + d))) for a, b, c, d in BCG]
    v = [1 / a - 1 / (a + b) + 1 / c - 1 / (c + d) for a, b, c, d in BCG]
    return y, v


def test_dersimonian_laird_matches_the_published_bcg_example_to_four_decimals():
    # metafor, rma(measure="RR", ai=tpos, bi=tneg, ci=cpos, di=cneg, data=dat.bcg,
    # method="DL"): estimate -0.7141, se 0.1787, CI [-1.0644, -0.3638], tau^2 0.3088,
    # I^2 92.12%, Q(df = 12) = 152.2330 (Viechtbauer 2010, J Stat Softw 36(3), and the
    # metafor documentation).
    y, v = bcg_log_risk_ratios()

    p = pool(y, v, method="dl")

    assert p.k == 13
    assert round(p.estimate, 4) == -0.7141
    assert round(p.se, 4) == 0.1787
    assert (round(p.ci_low, 4), round(p.ci_high, 4)) == (-1.0644, -0.3638)
    assert round(p.tau2, 4) == 0.3088
    assert round(100 * p.i2, 2) == 92.12
    assert round(p.q, 4) == 152.2330


def test_paule_mandel_matches_metafor_on_kackers_example_to_four_decimals():
    # Kacker 2004; metafor rma(y, v, method="PM") as recorded in statsmodels' own tests
    # (statsmodels/stats/tests/results/results_meta.py, exk1_metafor).
    y = [61.00, 61.40, 62.21, 62.30, 62.34, 62.60, 62.70, 62.84, 65.90]
    v = [0.2025, 1.2100, 0.0900, 0.2025, 0.3844, 0.5625, 0.0676, 0.0225, 1.8225]

    p = pool(y, v, method="pm")

    assert round(p.estimate, 4) == round(62.4076199113286, 4)
    assert round(p.se, 4) == round(0.338030602684471, 4)
    assert round(p.tau2, 4) == round(0.705395309224248, 4)
    assert (round(p.ci_low, 4), round(p.ci_high, 4)) == (61.7451, 63.0701)


def test_the_prediction_interval_is_higgins_thompson_spiegelhalter_with_t_on_k_minus_2():
    y, v = bcg_log_risk_ratios()

    p = pool(y, v, method="dl")

    half = stats.t.ppf(0.975, 13 - 2) * math.sqrt(p.tau2 + p.se**2)
    assert p.pi_low == pytest.approx(p.estimate - half, abs=1e-12)
    assert p.pi_high == pytest.approx(p.estimate + half, abs=1e-12)
    assert (round(p.pi_low, 4), round(p.pi_high, 4)) == (-1.9988, 0.5706)


def test_dersimonian_laird_is_truncated_at_zero_when_q_is_below_its_degrees_of_freedom():
    y, v = [0.10, 0.11, 0.09, 0.10], [0.01, 0.01, 0.01, 0.01]  # Q far below k - 1

    p = pool(y, v, method="dl")

    assert p.tau2 == 0.0
    assert p.i2 == 0.0
    assert p.estimate == pytest.approx(np.mean(y))
    assert p.se == pytest.approx(math.sqrt(1 / sum(1 / x for x in v)))


def test_a_suite_effect_is_the_mean_difference_with_the_variance_of_that_mean():
    d = [0.2, -0.1, 0.0, 0.5, 0.1]

    e = suite_effect(d)

    assert e.n == 5
    assert e.effect == pytest.approx(sum(d) / 5)
    assert e.variance == pytest.approx(np.var(d, ddof=1) / 5)
    z = stats.norm.ppf(0.975)
    assert e.ci_low == pytest.approx(e.effect - z * math.sqrt(e.variance))


def test_pooling_refuses_a_suite_without_variance_and_a_single_suite():
    with pytest.raises(UsageError, match="variance must be positive"):
        pool([0.1, 0.2, 0.3], [0.01, 0.0, 0.02])
    with pytest.raises(UsageError, match="at least 2 suites"):
        pool([0.1], [0.01])
    with pytest.raises(UsageError, match="unknown pooling method"):
        pool([0.1, 0.2], [0.01, 0.01], method="reml")


def test_two_suites_have_a_pooled_interval_but_no_prediction_interval():
    p = pool([0.1, 0.2], [0.001, 0.001])

    assert p.pi_low is None and p.pi_high is None
    assert verdict(p, []) == "too few suites"
    assert MIN_SUITES == 3


def _pooled(**kw: float | None) -> Pooled:
    base = dict(k=5, method="dl", estimate=0.0, se=0.01, ci_low=-0.02, ci_high=0.02,
                tau2=0.01, i2=0.9, q=40.0, q_p_value=1e-6, pi_low=-0.3, pi_high=0.3,
                fixed_estimate=0.0)
    return Pooled(**{**base, **kw})  # type: ignore[arg-type]


def _effect(low: float, high: float) -> Effect:
    return Effect(n=50, effect=(low + high) / 2, variance=0.001, ci_low=low, ci_high=high)


def test_the_verdict_words_follow_their_rules_in_order():
    split = [_effect(0.05, 0.2), _effect(-0.2, -0.05), _effect(-0.1, 0.1)]
    same_side = [_effect(0.05, 0.2), _effect(-0.1, 0.1)]

    assert verdict(_pooled(pi_low=0.01, ci_low=0.05, ci_high=0.1), split) == "robust"
    assert verdict(_pooled(pi_high=-0.01, ci_low=-0.1, ci_high=-0.05), split) == (
        "robustly worse")
    assert verdict(_pooled(ci_low=0.01, ci_high=0.05), split) == "helps on average"
    assert verdict(_pooled(ci_low=-0.05, ci_high=-0.01), split) == "hurts on average"
    assert verdict(_pooled(), split) == "collection-dependent"
    assert verdict(_pooled(q_p_value=0.2), split) == "no evidence"  # suites agree enough
    assert verdict(_pooled(), same_side) == "no evidence"  # no suite significantly below
    assert verdict(_pooled(k=2, pi_low=None, pi_high=None), split) == "too few suites"


def test_the_meta_regression_recovers_a_known_slope_and_with_no_feature_is_dersimonian_laird():
    from evals.meta.regression import fit, residual_tau2

    feature = np.linspace(0, 1, 8)
    exact = fit(0.1 + 0.3 * feature, np.full(8, 0.001), feature)
    y, v = bcg_log_risk_ratios()

    assert exact["slope"] == pytest.approx(0.3) and exact["intercept"] == pytest.approx(0.1)
    assert exact["tau2_res"] == 0.0
    assert exact["se"] == pytest.approx(math.sqrt(0.001 / np.sum((feature - 0.5) ** 2)))
    assert residual_tau2(np.array(y), np.array(v), np.ones((13, 1))) == pytest.approx(
        pool(y, v).tau2, abs=1e-12)
    assert fit([0.1] * 4, [0.01] * 4, [1, 2, 3, 4])["fitted"] is False
