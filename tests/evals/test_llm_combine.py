"""The logistic combination of gate signals: the fit against scikit-learn's, and its score."""

from __future__ import annotations

import math

import numpy as np
import pytest

from evals import llm_combine
from evals.score import abstention


def data() -> tuple[list[dict[str, float]], list[bool]]:
    rng = np.random.default_rng(3)
    labels = [bool(v) for v in rng.integers(0, 2, 60)]
    rows = [{"judge": float(rng.normal(1.0 if y else -0.5)), "bm25": float(rng.normal(0.3, 0.1)),
             "dense": float(rng.normal(0.2 if y else 0.1, 0.05))} for y in labels]
    return rows, labels


def test_the_fit_is_scikit_learns_ridge_logistic_regression() -> None:
    linear_model = pytest.importorskip("sklearn.linear_model")
    rows, labels = data()
    names = ["bm25", "dense", "judge"]
    model = llm_combine.fit(rows, labels, names)
    x = np.array([[r[n] for n in names] for r in rows])
    z = (x - x.mean(axis=0)) / x.std(axis=0)
    # sklearn minimises 0.5 |w|^2 + C * log-loss with an unpenalised intercept: C = 1/RIDGE
    ref = linear_model.LogisticRegression(C=1 / llm_combine.RIDGE, tol=1e-12,
                                          max_iter=10_000).fit(z, labels)
    assert model.weights == pytest.approx(tuple(ref.coef_[0]), abs=1e-6)
    assert model.intercept == pytest.approx(float(ref.intercept_[0]), abs=1e-6)
    assert model.score(rows[0]) == pytest.approx(float(ref.decision_function(z[:1])[0]),
                                                 abs=1e-6)


def test_a_perfectly_separating_signal_gets_a_finite_weight() -> None:
    rows = [{"s": float(v)} for v in (-2, -1, 1, 2)]
    model = llm_combine.fit(rows, [False, False, True, True], ["s"])
    assert math.isfinite(model.weights[0]) and model.weights[0] > 0


def test_a_fit_needs_both_kinds_of_question() -> None:
    with pytest.raises(ValueError, match="both answerable and no-answer"):
        llm_combine.fit([{"s": 1.0}, {"s": 2.0}], [True, True], ["s"])


def test_missed_answerable_questions_are_left_out_and_the_score_is_added() -> None:
    def item(qid: str, answerable: bool, retrieved: bool, s: float) -> abstention.Item:
        return abstention.Item(query_id=qid, answerable=answerable, near_miss=False,
                               retrieved=retrieved, split="train", signals={"s": s})

    train = [item("a", True, True, 2.0), item("b", False, False, -1.0),
             item("c", False, False, 0.0), item("m", True, False, -9.0)]
    model = llm_combine.fitted(train, ["s"])
    assert model == llm_combine.fit([{"s": 2.0}, {"s": -1.0}, {"s": 0.0}],
                                    [True, False, False], ["s"])
    scored = llm_combine.with_signal(train, "combined", model)
    assert [i.signals["combined"] for i in scored] == [model.score({"s": i.signals["s"]})
                                                       for i in train]
    assert scored[0].signals["s"] == 2.0
