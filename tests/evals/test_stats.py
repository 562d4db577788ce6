"""Statistics: scipy as the reference, exact enumeration on tiny inputs, hand-worked Holm."""

from __future__ import annotations

import itertools
import math
import tracemalloc

import numpy as np
import pytest
from scipy import stats as sps

from evals.score.stats import (
    Comparison,
    StatisticsError,
    apply_holm,
    compare,
    holm,
    paired_bootstrap_ci,
    randomization_test,
    wins_ties_losses,
)


def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x - y, axis=axis)


def paired_scores(n: int, shift: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    base = rng.random(n)
    return base + rng.normal(shift, 0.2, n), base


@pytest.mark.parametrize("seed", [1, 2])
def test_bootstrap_interval_agrees_with_scipy_paired_percentile_bootstrap(seed):
    stage, base = paired_scores(200, 0.03, seed)

    ours = paired_bootstrap_ci(stage - base, resamples=10_000, seed=seed)
    scipy = sps.bootstrap(
        (stage, base),
        mean_difference,
        paired=True,
        vectorized=True,
        n_resamples=10_000,
        method="percentile",
        random_state=np.random.default_rng(seed + 100),
    ).confidence_interval

    # Monte-Carlo error of a 2.5% quantile from 10,000 resamples is ~0.03 bootstrap SDs.
    bootstrap_sd = np.std(stage - base, ddof=1) / math.sqrt(stage.size)
    assert ours[0] == pytest.approx(scipy.low, abs=0.15 * bootstrap_sd)
    assert ours[1] == pytest.approx(scipy.high, abs=0.15 * bootstrap_sd)


def test_bootstrap_interval_is_reproducible_from_its_seed_and_brackets_the_mean():
    stage, base = paired_scores(100, 0.05, 3)
    deltas = stage - base

    first = paired_bootstrap_ci(deltas, seed=11)

    assert first == paired_bootstrap_ci(deltas, seed=11)
    assert first != paired_bootstrap_ci(deltas, seed=12)
    assert first[0] < deltas.mean() < first[1]


def test_bootstrap_interval_of_constant_deltas_is_a_point():
    assert paired_bootstrap_ci([0.25] * 30) == (0.25, 0.25)


def test_bootstrap_of_ten_thousand_resamples_over_a_thousand_questions_stays_small():
    deltas = np.random.default_rng(0).normal(size=1_000)

    tracemalloc.start()
    try:
        paired_bootstrap_ci(deltas, resamples=10_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    assert peak < 40 * 2**20  # the draws kept as bytes: 32 MiB measured (float64: 100+)


@pytest.mark.parametrize("n", [1, 7, 1_211, 3_000])
def test_draws_kept_as_bytes_give_the_float64_products(n):
    """The resampling counts and the sign flips are stored as bytes and widened block by
    block; the means and hits are bit for bit those of float64 draws multiplied whole."""
    from evals.score import stats

    rng = np.random.default_rng(n)
    deltas = rng.normal(size=(n, 3))
    deltas[:, 0] = np.round(deltas[:, 0], 1)  # ties
    resamples = 2_000
    draws = np.random.default_rng(5)
    block = max(1, stats._BLOCK_BYTES // (16 * n))
    expected = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        index = draws.integers(0, n, size=(rows, n)) + n * np.arange(rows)[:, None]
        counts = np.bincount(index.ravel(), minlength=rows * n).reshape(rows, n)
        expected.append(counts.astype(np.float64) @ deltas)
    counts = stats._resample_counts(n, resamples, 5)
    signs = stats._sign_blocks(n, resamples, 5)

    assert all(c.dtype == np.uint8 for c in counts) and all(s.dtype == np.int8 for s in signs)
    got = list(stats._products(counts, deltas))
    assert all(a.tobytes() == b.tobytes() for a, b in zip(got, expected, strict=True))
    assert [p.tobytes() for p in stats._products(signs, deltas)] == [
        (s.astype(np.float64) @ deltas).tobytes() for s in signs]


def test_bootstrap_rejects_bad_arguments():
    with pytest.raises(StatisticsError, match="non-empty"):
        paired_bootstrap_ci([])
    with pytest.raises(StatisticsError, match="finite"):
        paired_bootstrap_ci([0.1, math.inf])
    with pytest.raises(StatisticsError, match="confidence"):
        paired_bootstrap_ci([0.1], confidence=1.0)


def test_randomization_test_enumerates_all_sign_flips_exactly_for_four_questions():
    deltas = [0.2, 0.5, -0.1, 0.3]  # observed |sum| = 0.9, sum of magnitudes 1.1

    p = randomization_test(deltas, [0.0] * 4)

    # |sum| >= 0.9 needs flipped weight <= 0.1 ({}, {0.1}) or >= 1.0 (their complements)
    assert p == 4 / 16


def test_randomization_exact_p_matches_a_brute_force_enumeration():
    stage, base = paired_scores(8, 0.05, 4)
    d = stage - base
    observed = abs(d.sum())
    flips = [
        abs(sum(s * x for s, x in zip(signs, d, strict=True)))
        for signs in itertools.product([1, -1], repeat=d.size)
    ]

    expected = sum(f >= observed - 1e-12 for f in flips) / len(flips)

    assert randomization_test(stage, base) == expected


@pytest.mark.parametrize("n", [4, 10])
def test_randomization_exact_p_equals_scipy_exact_permutation_test(n):
    stage, base = paired_scores(n, 0.1, n)

    scipy = sps.permutation_test(
        (stage, base), mean_difference, permutation_type="samples", vectorized=True
    ).pvalue

    assert randomization_test(stage, base) == pytest.approx(scipy, abs=1e-12)


@pytest.mark.parametrize("shift", [0.0, 0.05])
def test_randomization_monte_carlo_p_agrees_with_scipy_within_sampling_error(shift):
    stage, base = paired_scores(60, shift, 5)

    ours = randomization_test(stage, base, permutations=10_000, seed=5)
    scipy = sps.permutation_test(
        (stage, base),
        mean_difference,
        permutation_type="samples",
        vectorized=True,
        n_resamples=10_000,
        random_state=np.random.default_rng(6),
    ).pvalue

    sampling_sd = math.sqrt(max(scipy * (1 - scipy), 1e-4) / 10_000)
    assert ours == pytest.approx(scipy, abs=5 * math.sqrt(2) * sampling_sd)


def test_randomization_p_is_never_zero_and_is_one_for_identical_systems():
    stage, base = paired_scores(500, 1.0, 7)

    assert randomization_test(stage, base, permutations=999) == 1 / (1 + 999)
    assert randomization_test(base, base) == 1.0


def test_randomization_is_reproducible_from_its_seed():
    stage, base = paired_scores(50, 0.02, 8)

    assert randomization_test(stage, base, seed=3) == randomization_test(stage, base, seed=3)


def test_randomization_rejects_unpaired_inputs():
    with pytest.raises(StatisticsError, match="differ in length"):
        randomization_test([0.1, 0.2], [0.1])


def test_holm_adjusts_a_hand_worked_example():
    p = [0.01, 0.04, 0.03, 0.005]

    # sorted: 0.005*4 = 0.02, 0.01*3 = 0.03, 0.03*2 = 0.06, max(0.06, 0.04*1) = 0.06
    assert holm(p) == pytest.approx([0.01 * 3, 0.03 * 2, 0.03 * 2, 0.005 * 4])


def test_holm_is_monotone_in_the_raw_p_values_and_capped_at_one():
    p = [0.2, 0.6, 0.01, 0.5, 0.9]

    adjusted = holm(p)

    ranked = [a for _, a in sorted(zip(p, adjusted, strict=True))]
    assert ranked == sorted(ranked)
    assert max(adjusted) == 1.0
    assert all(a >= raw for a, raw in zip(adjusted, p, strict=True))


def test_holm_of_nothing_is_nothing_and_bad_p_values_are_rejected():
    assert holm([]) == []
    with pytest.raises(StatisticsError, match=r"\[0, 1\]"):
        holm([0.1, 1.5])


def test_wins_ties_losses_count_within_the_tolerance():
    record = wins_ties_losses([1.0, 0.5, 0.2, 0.3 + 1e-12], [0.0, 0.5, 0.4, 0.3])

    assert record == (1, 2, 1)
    assert record.wins == 1 and record.ties == 2 and record.losses == 1


def test_compare_pairs_by_query_id_whatever_the_dict_order():
    baseline = {"q1": 0.0, "q2": 1.0, "q3": 0.5}
    stage = {"q3": 1.0, "q1": 1.0, "q2": 1.0}

    result = compare(baseline, stage, resamples=500, permutations=500)

    assert result.n == 3
    assert result.delta == pytest.approx((1.0 + 0.0 + 0.5) / 3)
    assert result.stage_mean - result.baseline_mean == pytest.approx(result.delta)
    assert (result.wins, result.ties, result.losses) == (2, 1, 0)
    assert result.ci_low <= result.delta <= result.ci_high
    # exact over 2**3 sign flips: |±1 ± 0 ± 0.5| reaches 1.5 whenever the two signs agree
    assert result.p_value == 4 / 8
    assert result.p_holm is None
    reordered = dict(reversed(baseline.items()))
    assert result == compare(reordered, stage, resamples=500, permutations=500)


def test_compare_refuses_scores_that_are_not_paired():
    with pytest.raises(StatisticsError, match="only in baseline"):
        compare({"q1": 0.1, "q2": 0.2}, {"q1": 0.3})


def test_apply_holm_fills_adjusted_p_values_across_all_comparisons():
    comparisons = [
        Comparison(
            n=3,
            baseline_mean=0.0,
            stage_mean=0.0,
            delta=0.0,
            ci_low=0.0,
            ci_high=0.0,
            confidence=0.95,
            p_value=p,
            wins=0,
            ties=3,
            losses=0,
        )
        for p in (0.01, 0.04, 0.03)
    ]

    adjusted = apply_holm(comparisons)

    assert [c.p_holm for c in adjusted] == pytest.approx([0.03, 0.06, 0.06])
    assert [c.p_value for c in adjusted] == [0.01, 0.04, 0.03]
