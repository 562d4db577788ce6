"""Measuring the abstention gate: how well each confidence signal separates, and whether
the conformal guarantee holds on questions the calibration never saw.

For one stage, given every question's confidence signals, whether it is answerable,
whether it is a near miss, whether the stage retrieved its gold in the top 10 (the
answers worth giving) and its part of the split:

* **signals** — every candidate's AUROC: answerable-and-retrieved against no-answer on
  the *train* part (how the gate's signal is chosen), answerable against no-answer and
  near-miss no-answer alone on the *test* part (how it is reported).
* **shipped** — calibrate on the calibration part's no-answer questions, decide the test
  part at each alpha: the false-answer rate on no-answer questions (Clopper–Pearson 95%
  interval), on near misses, wrongful abstentions on answerable questions split into
  retrieved and not, coverage of the retrieved answerable ones, AURC and excess AURC.
* **resplits** — the same over :data:`RESPLITS` re-splits of calibration and test
  (train stays out): the shipped split, then seeded random ones; mean and 5–95%
  band, so no lucky split decides.

Risk for the risk–coverage curve: answering a question is an error when it has no
answer or its gold was not retrieved (a wrong citation either way).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import betaincinv

from groundkit.retrieval import gate

ALPHAS = (0.05, 0.1, 0.2)
RESPLITS = 500
SEED = 0
CURVE_POINTS = 40


@dataclass(frozen=True, slots=True)
class Item:
    """One question as the gate analysis sees it."""

    query_id: str
    answerable: bool
    near_miss: bool
    retrieved: bool
    split: str
    signals: Mapping[str, float]


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float | None:
    """P(a positive scores above a negative), ties counting half (Mann–Whitney)."""
    if not positive or not negative:
        return None
    scores = np.concatenate([np.asarray(positive, float), np.asarray(negative, float)])
    ranks = _average_ranks(scores)
    n_pos = len(positive)
    return float((ranks[:n_pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * len(negative)))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, tied values sharing their mean rank (equal as ``==`` says)."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    n = len(values)
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], n] - 1
    ranks = np.empty(n)
    ranks[order] = np.repeat((starts + ends) / 2 + 1, ends - starts + 1)
    return ranks


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The exact binomial interval of k successes in n."""
    if n == 0:
        return (0.0, 1.0)
    tail = (1 - confidence) / 2
    # the beta quantiles; ``scipy.special`` is what ``scipy.stats.beta.ppf`` computes
    # them with (equal on 83,000 cases) and imports in a third of the time
    low = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, tail))
    high = 1.0 if k == n else float(betaincinv(k + 1, n - k, 1 - tail))
    return (low, high)


def signal_table(items: Sequence[Item]) -> dict[str, dict[str, float | None]]:
    """Every signal's AUROCs (see the module docstring)."""
    names = sorted({name for item in items for name in item.signals})
    train = [i for i in items if i.split == "train"]
    test = [i for i in items if i.split == "test"]

    def values(group: Sequence[Item], name: str) -> list[float]:
        return [i.signals[name] for i in group if name in i.signals]

    out = {}
    for name in names:
        out[name] = {
            "train_retrieved_vs_no_answer": auroc(
                values([i for i in train if i.answerable and i.retrieved], name),
                values([i for i in train if not i.answerable], name)),
            "test_answerable_vs_no_answer": auroc(
                values([i for i in test if i.answerable], name),
                values([i for i in test if not i.answerable], name)),
            "test_answerable_vs_near_miss": auroc(
                values([i for i in test if i.answerable], name),
                values([i for i in test if not i.answerable and i.near_miss], name)),
            "test_retrieved_vs_no_answer": auroc(
                values([i for i in test if i.answerable and i.retrieved], name),
                values([i for i in test if not i.answerable], name)),
        }
    return out


@dataclass(frozen=True, slots=True)
class _Arrays:
    """Items as arrays: one row per item."""

    answerable: np.ndarray
    near_miss: np.ndarray
    retrieved: np.ndarray
    signals: dict[str, np.ndarray]

    @classmethod
    def of(cls, items: Sequence[Item], names: Sequence[str]) -> _Arrays:
        return cls(answerable=np.array([i.answerable for i in items], bool),
                   near_miss=np.array([i.near_miss for i in items], bool),
                   retrieved=np.array([i.retrieved for i in items], bool),
                   signals={n: np.array([i.signals[n] for i in items], float) for n in names})


def p_values(scorer: gate.Scorer, calibration: _Arrays, target: _Arrays) -> np.ndarray:
    """The combined conformal p-value of each target row, calibrated on ``calibration``.

    Vectorised :func:`groundkit.retrieval.gate.p_value`: ``(1 + #{c >= s}) / (n0 + 1)``.
    """
    per = []
    for signal in scorer.signals.values():
        cal = np.sort(calibration.signals[signal][~calibration.answerable])
        at_least = len(cal) - np.searchsorted(cal, target.signals[signal], side="left")
        per.append((1 + at_least) / (len(cal) + 1))
    return _combined(scorer.rule, per)


def _combined(rule: str, per: Sequence[np.ndarray]) -> np.ndarray:
    """The scorer's ``rule`` over its signals' p-values (one array each, same shape)."""
    stacked = np.stack(per)
    if rule in ("single", "both"):
        return np.asarray(stacked.max(axis=0))
    if rule == "mean2":
        return np.asarray(np.minimum(1.0, 2.0 * stacked.mean(axis=0)))
    raise ValueError(f"unknown rule {rule!r}")


def at_alpha(items: _Arrays, p: np.ndarray, alpha: float) -> dict[str, Any]:
    """What deciding ``items`` with p-values ``p`` at ``alpha`` does."""
    answered = p <= alpha
    groups = {
        "no_answer": ~items.answerable,
        "near_miss": ~items.answerable & items.near_miss,
        "retrieved": items.answerable & items.retrieved,
        "missed": items.answerable & ~items.retrieved,
        "answerable": items.answerable,
    }
    count = {k: int(v.sum()) for k, v in groups.items()}
    hit = {k: int((answered & v).sum()) for k, v in groups.items()}
    low, high = clopper_pearson(hit["no_answer"], count["no_answer"])
    # CRAG-style score (Yang et al. 2024): +1 a good answer, 0 an abstention, -1 a wrong one.
    good = hit["retrieved"]
    crag = (good - (int(answered.sum()) - good)) / len(p) if len(p) else None
    return {
        "alpha": alpha,
        "false_answer_rate": _rate(hit["no_answer"], count["no_answer"]),
        "false_answer_interval": [low, high],
        "near_miss_false_answer_rate": _rate(hit["near_miss"], count["near_miss"]),
        "coverage_retrieved": _rate(hit["retrieved"], count["retrieved"]),
        "coverage_answerable": _rate(hit["answerable"], count["answerable"]),
        "wrongful_abstentions_retrieved": count["retrieved"] - hit["retrieved"],
        "crag_score": crag,
        "abstentions_not_retrieved": count["missed"] - hit["missed"],
        "counts": count,
    }


def _rate(k: int, n: int) -> float | None:
    return k / n if n else None


def risk_coverage(items: _Arrays, p: np.ndarray) -> dict[str, Any]:
    """AURC, excess AURC (Geifman et al. 2019) and the curve, answering by ascending p-value."""
    n = len(p)
    if n == 0:
        return {"aurc": None, "excess_aurc": None, "risk_at_full_coverage": None, "curve": []}
    order = np.argsort(p, kind="mergesort")
    errors = (~(items.answerable & items.retrieved))[order].astype(float)
    risks = np.cumsum(errors) / np.arange(1, n + 1)
    aurc = float(risks.mean())
    r = float(errors.mean())
    optimal = r + (1 - r) * math.log(1 - r) if r < 1 else 1.0
    picks = np.unique(np.linspace(0, n - 1, min(n, CURVE_POINTS)).astype(int))
    curve = [[float((k + 1) / n), float(risks[k])] for k in picks]
    return {"aurc": aurc, "excess_aurc": aurc - optimal, "risk_at_full_coverage": r,
            "curve": curve}


def evaluate(items: Sequence[Item], scorer: gate.Scorer, *, resplits: int = RESPLITS,
             seed: int = SEED) -> dict[str, Any]:
    """The shipped split's results and the re-split bands for one scorer."""
    names = sorted(set(scorer.signals.values()))
    calibration = [i for i in items if i.split == "calibration"]
    test = [i for i in items if i.split == "test"]
    shipped = apply(scorer, calibration, test)
    pool = _Arrays.of([*calibration, *test], names)
    return {"signals": dict(scorer.signals), "rule": scorer.rule, "shipped": shipped,
            "resplits": _resplits(pool, len(calibration), scorer, resplits, seed)}


def apply(scorer: gate.Scorer, calibration: Sequence[Item],
          target: Sequence[Item]) -> dict[str, Any]:
    """Calibrate on ``calibration``'s no-answer items, decide ``target`` at every alpha."""
    names = sorted(set(scorer.signals.values()))
    cal, test = _Arrays.of(calibration, names), _Arrays.of(target, names)
    p = p_values(scorer, cal, test)
    return {
        "n0": int((~cal.answerable).sum()),
        "auroc": auroc(list(-p[test.answerable]), list(-p[~test.answerable])),
        "auroc_near_miss": auroc(list(-p[test.answerable]),
                                 list(-p[~test.answerable & test.near_miss])),
        "at_alpha": [at_alpha(test, p, a) for a in ALPHAS],
        **risk_coverage(test, p),
    }


def _resplits(pool: _Arrays, n_calibration: int, scorer: gate.Scorer, resplits: int,
              seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    n = len(pool.answerable)
    # The first draw is the shipped split itself (the pool lists calibration first).
    orders = np.stack([rng.permutation(n) if draw else np.arange(n) for draw in range(resplits)])
    p = _resplit_p_values(pool, orders, n_calibration, scorer)
    test = orders[:, n_calibration:]
    no_answer, good = ~pool.answerable[test], (pool.answerable & pool.retrieved)[test]
    out = []
    for a in ALPHAS:
        answered = p <= a
        f = (answered & no_answer).sum(axis=1) / np.maximum(1, no_answer.sum(axis=1))
        c = (answered & good).sum(axis=1) / np.maximum(1, good.sum(axis=1))
        out.append({"alpha": a, "false_answer_rate_mean": float(f.mean()),
                    "false_answer_rate_band": [float(np.quantile(f, 0.05)),
                                               float(np.quantile(f, 0.95))],
                    "coverage_retrieved_mean": float(c.mean()),
                    "coverage_retrieved_band": [float(np.quantile(c, 0.05)),
                                                float(np.quantile(c, 0.95))]})
    return {"count": resplits, "seed": seed, "at_alpha": out}


def _resplit_p_values(pool: _Arrays, orders: np.ndarray, n_calibration: int,
                      scorer: gate.Scorer) -> np.ndarray:
    """:func:`p_values` for every re-split at once: row ``r`` holds the p-values of the test
    part of ``orders[r]`` (its first ``n_calibration`` items calibrate), in that order.

    ``#{c >= s}`` over a split's calibration no-answer items is a suffix count over the
    pool sorted by the signal, read at the first position of ``s``'s tie group.
    """
    rows = np.arange(len(orders))[:, None]
    calibrating = np.zeros(orders.shape, bool)
    calibrating[rows, orders[:, :n_calibration]] = True
    counted = calibrating & ~pool.answerable  # (resplits, pool) calibration no-answer items
    n0 = counted.sum(axis=1)[:, None]
    test = orders[:, n_calibration:]
    per = []
    for signal in scorer.signals.values():
        values = pool.signals[signal]
        order = np.argsort(values, kind="mergesort")
        first = np.searchsorted(values[order], values, side="left")
        suffix = np.zeros((len(orders), len(values) + 1), np.int64)
        suffix[:, :-1] = np.cumsum(counted[:, order][:, ::-1], axis=1)[:, ::-1]
        at_least = suffix[rows, first[test]]
        per.append((1 + at_least) / (n0 + 1))
    return _combined(scorer.rule, per)


def alternatives(mode: str) -> dict[str, gate.Scorer]:
    """The scorers measured for a mode: its default, and for hybrid the measured rivals."""
    default = gate.SCORERS[mode]
    if mode != "hybrid":
        return {"default": default}
    lexical, dense = default.signals["bm25"], default.signals["dense"]
    return {
        "both": default,
        "mean2": gate.Scorer(signals=default.signals, rule="mean2"),
        "both+agreement": gate.Scorer(signals={**default.signals, "agreement":
                                               "agreement.top10"}, rule="both"),
        "bm25 alone": gate.Scorer(signals={"bm25": lexical}),
        "dense alone": gate.Scorer(signals={"dense": dense}),
    }


def default_label(mode: str) -> str:
    """The label of a mode's default scorer among :func:`alternatives`."""
    return "both" if mode == "hybrid" else "default"


def stage_block(mode: str, items: Sequence[Item]) -> dict[str, Any] | None:
    """One stage's entry in the ``gate`` block: its signals and its default scorer
    (``None`` when it has no calibration part to calibrate on: a person's own questions)."""
    if not any(i.split == "calibration" for i in items):
        return None
    default = default_label(mode)
    return {"mode": mode, "signals": signal_table(items),
            "scorers": {default: evaluate(items, alternatives(mode)[default])}}


def rival_scorers(mode: str, items: Sequence[Item]) -> dict[str, Any]:
    """The measured rivals of a mode's default scorer (hybrid has four; the others none)."""
    return {label: evaluate(items, s) for label, s in alternatives(mode).items()
            if label != default_label(mode)}


def gate_block(stages: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The report's ``gate`` block around the stages' entries (:func:`stage_block`)."""
    return {"alphas": list(ALPHAS), "resplits": RESPLITS, "seed": SEED,
            "risk": "answering is an error when the question has no answer or its gold is not "
                    "in the stage's top 10",
            "stages": dict(stages)}


def report_block(items_by_stage: Mapping[str, tuple[str, Sequence[Item]]]) -> dict[str, Any]:
    """The report's ``gate`` block: per measured stage, its signals and its scorers.

    Only the first hybrid stage gets the hybrid rivals (they share its evidence).
    """
    stages: dict[str, Any] = {}
    rivals_done = False
    for name, (mode, items) in items_by_stage.items():
        block = stage_block(mode, items)
        if block is None:
            continue
        if mode == "hybrid" and not rivals_done:
            block["scorers"].update(rival_scorers(mode, items))
            rivals_done = True
        stages[name] = block
    return gate_block(stages)
