"""The reader's signal combined with the gate's own: a logistic regression fitted on the train
part, calibrated on the calibration part, decided on the test part (``python -m evals llm``).

The conformal gate needs one score per question. The reader's best judgement and the
retrieval signals each separate answerable from unanswerable questions a little; a
weighted sum may separate them better. The weights are a logistic regression
(Newton–Raphson on the standardised signals, a small ridge :data:`RIDGE` so a sample that
one signal separates perfectly still gives finite weights) fitted on the *train* sample
only: answerable questions whose gold the first stage retrieved in its top 10 against
no-answer questions, the contrast the gate's own signals were chosen on
(:mod:`evals.score.abstention`). The fitted score ``w · z`` is then just another signal:
calibrated on the calibration part's no-answer questions, decided on the test part, so
nothing about the combination is chosen on the questions it is measured on and the
conformal guarantee holds as for any fixed signal.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evals.score import abstention

RIDGE = 1.0
"""The L2 penalty on the standardised weights (not on the intercept), fixed beforehand."""
ITERATIONS = 50


@dataclass(frozen=True, slots=True)
class Logistic:
    """A fitted combination: each signal standardised by the train mean and spread, then
    weighted; :meth:`score` is the log-odds of answerable-and-retrieved."""

    signals: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    intercept: float

    def score(self, values: Mapping[str, float]) -> float:
        z = [(values[s] - m) / sd for s, m, sd in zip(self.signals, self.mean, self.scale,
                                                      strict=True)]
        return self.intercept + math.fsum(w * x for w, x in zip(self.weights, z, strict=True))

    def to_dict(self) -> dict[str, Any]:
        return {"signals": list(self.signals), "mean": list(self.mean),
                "scale": list(self.scale), "weights": list(self.weights),
                "intercept": self.intercept, "ridge": RIDGE}


def fit(rows: Sequence[Mapping[str, float]], labels: Sequence[bool],
        signals: Sequence[str]) -> Logistic:
    """The ridge logistic regression of ``labels`` on ``signals`` (Newton–Raphson)."""
    if len(rows) != len(labels):
        raise ValueError(f"{len(rows)} rows but {len(labels)} labels")
    if not any(labels) or all(labels):
        raise ValueError("fitting a combination needs both answerable and no-answer questions")
    x = np.array([[r[s] for s in signals] for r in rows], float)
    y = np.array(labels, float)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    design = np.hstack([np.ones((len(x), 1)), (x - mean) / scale])
    beta = np.zeros(design.shape[1])
    penalty = np.diag([0.0, *([RIDGE] * len(signals))])
    for _ in range(ITERATIONS):
        p = 1.0 / (1.0 + np.exp(-(design @ beta)))
        gradient = design.T @ (y - p) - penalty @ beta
        hessian = design.T @ (design * (p * (1 - p))[:, None]) + penalty
        step = np.linalg.solve(hessian, gradient)
        beta = beta + step
        if float(np.abs(step).max()) < 1e-10:
            break
    return Logistic(signals=tuple(signals), mean=tuple(float(v) for v in mean),
                    scale=tuple(float(v) for v in scale),
                    weights=tuple(float(v) for v in beta[1:]), intercept=float(beta[0]))


def fitted(train: Sequence[abstention.Item], signals: Sequence[str]) -> Logistic:
    """The combination fitted on ``train``: answerable-and-retrieved against no-answer
    (answerable questions the first stage missed are left out, as when the gate's signals
    were chosen)."""
    chosen = [i for i in train if not i.answerable or i.retrieved]
    return fit([i.signals for i in chosen], [i.answerable for i in chosen], signals)


def with_signal(items: Sequence[abstention.Item], name: str,
                model: Logistic) -> list[abstention.Item]:
    """``items`` with the combination's score added as the signal ``name``."""
    return [abstention.Item(query_id=i.query_id, answerable=i.answerable,
                            near_miss=i.near_miss, retrieved=i.retrieved, split=i.split,
                            signals={**i.signals, name: model.score(i.signals)})
            for i in items]
