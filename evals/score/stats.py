"""Paired statistics for per-question scores: one procedure per function.

Every comparison is paired: two systems scored on the *same* questions, so the
unit of analysis is the per-question difference ``stage - baseline``. All
randomness comes from ``numpy.random.default_rng(seed)``, so a result is
reproducible from its inputs and seed. Resampling is vectorised in blocks whose
size is derived from the number of questions, bounding memory (~16 MiB of
scratch per block) without changing the result.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from groundkit.errors import GroundkitError

Array = npt.NDArray[np.float64]
Draws = npt.NDArray[np.integer[Any]]
"""Resampling counts or signs, kept as small integers."""

TIE_TOLERANCE = 1e-9
"""Per-question differences within this are ties in wins/ties/losses."""

_BLOCK_BYTES = 16 * 2**20
"""Scratch memory per resampling block: rows x questions x 8-byte values."""


class StatisticsError(GroundkitError, ValueError):
    """Inputs a statistical procedure cannot work with (empty, unpaired, non-finite)."""


class WinsTiesLosses(NamedTuple):
    wins: int
    ties: int
    losses: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Comparison:
    """A stage against the baseline on one measure, paired by question.

    ``delta`` is the mean of ``stage - baseline``; ``[ci_low, ci_high]`` its
    percentile bootstrap interval at ``confidence``; ``p_value`` the two-sided
    paired randomisation test; ``p_holm`` the Holm-adjusted p-value across every
    comparison of a report (``None`` until :func:`apply_holm` fills it).
    """

    n: int
    baseline_mean: float
    stage_mean: float
    delta: float
    ci_low: float
    ci_high: float
    confidence: float
    p_value: float
    wins: int
    ties: int
    losses: int
    p_holm: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Unreached:
    """A comparison not made: the stage (or the baseline) ranks less deep than the measure
    reads (:func:`evals.report.unreachable`). It says why in ``unreachable`` (``"n/a (ranks
    10 deep)"``), has no delta, interval, p-value or wins, and is out of the Holm family
    (:func:`apply_holm`). A side's mean is ``None`` where that side cannot reach it."""

    n: int
    baseline_mean: float | None
    stage_mean: float | None
    confidence: float
    unreachable: str
    delta: None = None
    ci_low: None = None
    ci_high: None = None
    p_value: None = None
    wins: None = None
    ties: None = None
    losses: None = None
    p_holm: None = None


def paired_bootstrap_ci(
    deltas: Sequence[float] | Array,
    resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean paired difference.

    Resamples questions with replacement ``resamples`` times and takes the
    ``(1 - confidence) / 2`` and ``(1 + confidence) / 2`` quantiles of the
    resampled means (Efron & Tibshirani, *An Introduction to the Bootstrap*,
    1993, ch. 13; applied to IR evaluation by Sakai, "Evaluating evaluation
    metrics based on the bootstrap", SIGIR 2006).
    """
    d = _as_deltas(deltas)
    _check_bootstrap(resamples, confidence)
    return _bootstrap_cis(d[:, None], resamples, confidence, seed)[0]


def _check_bootstrap(resamples: int, confidence: float) -> None:
    if resamples < 1:
        raise StatisticsError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < confidence < 1.0:
        raise StatisticsError(f"confidence must be in (0, 1), got {confidence}")


def _bootstrap_cis(deltas: Array, resamples: int, confidence: float,
                   seed: int) -> list[tuple[float, float]]:
    """Each column's interval: every column is resampled with the same draws."""
    n = deltas.shape[0]
    means = np.concatenate(list(_products(_resample_counts(n, resamples, seed), deltas)))
    tail = (1.0 - confidence) / 2.0
    bounds = np.quantile(means / n, [tail, 1.0 - tail], axis=0)
    return [(float(low), float(high)) for low, high in bounds.T]


@lru_cache(maxsize=2)
def _resample_counts(n: int, resamples: int, seed: int) -> tuple[Draws, ...]:
    """How often each question is drawn in each resample, drawn once per (n, resamples, seed).

    A resample's mean is then one row times the deltas: every comparison of a report
    resamples the same questions with the same seed, so one matrix product serves them
    all. The draws are ``rng.integers(0, n)`` in blocks of rows, as always.
    """
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_BYTES // (16 * n))
    out: list[Draws] = []
    for start in range(0, resamples, block):
        rows = min(block, resamples - start)
        index = rng.integers(0, n, size=(rows, n))
        index += n * np.arange(rows)[:, None]
        counts = np.bincount(index.ravel(), minlength=rows * n).reshape(rows, n)
        out.append(counts.astype(np.uint8) if counts.max() <= 255 else counts)
    return tuple(out)


def _products(blocks: Sequence[Draws], deltas: Array) -> Iterator[Array]:
    """``block @ deltas`` for each block of small integers, as float64 products.

    The blocks are kept as small integers (a count or a sign is a byte, not 8): new
    memory can cost more than the arithmetic (on the 2-core VM, 97 MB of pages its host
    had taken back took about a second to fault in), so each block is widened into one
    reused float64 buffer, and the product is the one it always was.
    """
    buffer = np.empty((max((len(b) for b in blocks), default=0), deltas.shape[0]))
    for block in blocks:
        wide = buffer[: len(block)]
        np.copyto(wide, block)
        yield wide @ deltas


def randomization_test(
    a: Sequence[float] | Array,
    b: Sequence[float] | Array,
    permutations: int = 10_000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of the paired randomisation (sign-flip) test.

    Under the null hypothesis each question's two scores are exchangeable, so
    each difference ``a - b`` keeps or flips its sign with probability 1/2; the
    statistic is ``|mean(a - b)|`` (Fisher, *The Design of Experiments*, 1935;
    for IR, Smucker, Allan & Carterette, "A comparison of statistical
    significance tests for information retrieval evaluation", CIKM 2007).

    When ``2**n <= permutations`` every sign assignment is enumerated and the
    p-value is exact. Otherwise ``permutations`` random assignments are drawn and
    ``p = (1 + hits) / (1 + permutations)``, which never reports 0 (Phipson &
    Smyth, "Permutation p-values should never be zero", 2010).
    """
    d = _paired_deltas(a, b)
    if permutations < 1:
        raise StatisticsError(f"permutations must be at least 1, got {permutations}")
    return _randomization_ps(d[:, None], permutations, seed)[0]


def _randomization_ps(deltas: Array, permutations: int, seed: int) -> list[float]:
    """Each column's p-value: every column is tested with the same sign assignments."""
    n = deltas.shape[0]
    observed = np.abs(deltas.sum(axis=0))
    # Sums equal in exact arithmetic may differ by rounding: count them as ties.
    tolerance = 8.0 * n * np.finfo(np.float64).eps * np.abs(deltas).sum(axis=0)
    threshold = observed - tolerance
    if n <= math.log2(permutations):
        signs = _all_sign_vectors(n)
        hits = (np.abs(signs @ deltas) >= threshold).sum(axis=0)
        return [int(h) / float(signs.shape[0]) for h in hits]
    hits = sum((np.abs(product) >= threshold).sum(axis=0)
               for product in _products(_sign_blocks(n, permutations, seed), deltas))
    return [(1 + int(h)) / (1 + permutations) for h in np.atleast_1d(hits)]


def _all_sign_vectors(n: int) -> Array:
    bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    return np.asarray(2.0 * bits - 1.0, dtype=np.float64)


@lru_cache(maxsize=2)
def _sign_blocks(n: int, permutations: int, seed: int) -> tuple[Draws, ...]:
    """The random sign assignments, drawn once per (n, permutations, seed) and shared."""
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_BYTES // (9 * n))
    return tuple(
        rng.integers(0, 2, size=(min(block, permutations - start), n), dtype=np.int8) * 2 - 1
        for start in range(0, permutations, block))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni step-down adjusted p-values, in the input order.

    With the p-values sorted ascending, ``p_(i)`` is adjusted to
    ``max_{j <= i} min(1, (m - j + 1) * p_(j))``: monotone and capped at 1
    (Holm, "A simple sequentially rejective multiple test procedure",
    Scandinavian Journal of Statistics 6(2), 1979). Rejecting where the adjusted
    value is ``<= alpha`` controls the family-wise error rate at ``alpha``.
    """
    p = np.asarray(p_values, dtype=np.float64)
    if p.size and (not np.isfinite(p).all() or p.min() < 0.0 or p.max() > 1.0):
        raise StatisticsError(f"p-values must lie in [0, 1], got {list(p_values)}")
    order = np.argsort(p, kind="stable")
    factors = p.size - np.arange(p.size)
    stepped = np.minimum(1.0, np.maximum.accumulate(factors * p[order]))
    adjusted = np.empty_like(p)
    adjusted[order] = stepped
    return [float(x) for x in adjusted]


def wins_ties_losses(
    a: Sequence[float] | Array, b: Sequence[float] | Array, tol: float = TIE_TOLERANCE
) -> WinsTiesLosses:
    """How many questions ``a`` scores higher, within ``tol``, or lower than ``b``."""
    d = _paired_deltas(a, b)
    wins, losses = int((d > tol).sum()), int((d < -tol).sum())
    return WinsTiesLosses(wins, d.size - wins - losses, losses)


def compare(
    baseline_scores: Mapping[str, float],
    stage_scores: Mapping[str, float],
    *,
    resamples: int = 10_000,
    permutations: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """Compare a stage to the baseline on one measure, paired by query id.

    Both mappings must hold the same query ids; they are paired in sorted id
    order, so the result does not depend on dict order.
    """
    return compare_all([(baseline_scores, stage_scores)], resamples=resamples,
                       permutations=permutations, confidence=confidence, seed=seed)[0]


def compare_all(
    pairs: Sequence[tuple[Mapping[str, float], Mapping[str, float]]],
    *,
    resamples: int = 10_000,
    permutations: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> list[Comparison]:
    """:func:`compare` for each ``(baseline_scores, stage_scores)`` pair, in order.

    Pairs over the same number of questions are resampled and sign-flipped together
    (one matrix product per block for all of them), with the draws each would get alone.
    """
    if permutations < 1:
        raise StatisticsError(f"permutations must be at least 1, got {permutations}")
    _check_bootstrap(resamples, confidence)
    paired = [_paired_scores(base, stage) for base, stage in pairs]
    results: list[Comparison | None] = [None] * len(paired)
    by_size: dict[int, list[int]] = {}
    for i, (base, _) in enumerate(paired):
        by_size.setdefault(base.size, []).append(i)
    for members in by_size.values():
        deltas = np.column_stack([paired[i][1] - paired[i][0] for i in members])
        intervals = _bootstrap_cis(deltas, resamples, confidence, seed)
        p_values = _randomization_ps(deltas, permutations, seed)
        for column, i in enumerate(members):
            base, stage = paired[i]
            record = wins_ties_losses(stage, base)
            low, high = intervals[column]
            results[i] = Comparison(
                n=base.size, baseline_mean=float(base.mean()), stage_mean=float(stage.mean()),
                delta=float(deltas[:, column].mean()), ci_low=low, ci_high=high,
                confidence=confidence, p_value=p_values[column], wins=record.wins,
                ties=record.ties, losses=record.losses)
    return [r for r in results if r is not None]


def _paired_scores(baseline_scores: Mapping[str, float],
                   stage_scores: Mapping[str, float]) -> tuple[Array, Array]:
    """Both systems' scores in sorted query-id order (the same ids, or an error)."""
    ids = sorted(baseline_scores)
    if set(ids) != set(stage_scores):
        only_base = sorted(set(baseline_scores) - set(stage_scores))[:5]
        only_stage = sorted(set(stage_scores) - set(baseline_scores))[:5]
        raise StatisticsError(
            f"scores are not paired: only in baseline {only_base}, only in stage {only_stage}"
        )
    base = _as_deltas([baseline_scores[q] for q in ids])
    stage = _as_deltas([stage_scores[q] for q in ids])
    return base, stage


def apply_holm(comparisons: Sequence[Comparison | Unreached]) -> list[Comparison | Unreached]:
    """The comparisons with ``p_holm`` filled in, adjusted across every comparison made; an
    :class:`Unreached` one has no p-value, is not in the family and is kept as it is."""
    made = [(i, c) for i, c in enumerate(comparisons) if isinstance(c, Comparison)]
    adjusted = holm([c.p_value for _, c in made])
    out = list(comparisons)
    for (i, c), p in zip(made, adjusted, strict=True):
        out[i] = replace(c, p_holm=p)
    return out


def _as_deltas(values: Sequence[float] | Array) -> Array:
    d = np.asarray(values, dtype=np.float64)
    if d.ndim != 1 or d.size == 0:
        raise StatisticsError("need a non-empty one-dimensional sequence of scores")
    if not np.isfinite(d).all():
        raise StatisticsError("scores must be finite numbers")
    return d


def _paired_deltas(a: Sequence[float] | Array, b: Sequence[float] | Array) -> Array:
    x, y = _as_deltas(a), _as_deltas(b)
    if x.shape != y.shape:
        raise StatisticsError(f"paired scores differ in length: {x.size} vs {y.size}")
    return x - y
