"""The abstention gate's arithmetic: conformal p-values, combination rules, failing closed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from groundkit.errors import CalibrationError
from groundkit.retrieval import gate, signals
from groundkit.retrieval.signals import DenseEvidence, Evidence, LexicalEvidence


def calibration(scores: list[float], mode: str = "bm25", alpha: float = 0.1) -> gate.Calibration:
    scorer = gate.SCORERS[mode]
    return gate.Calibration(mode=mode, signals=dict(scorer.signals), rule=scorer.rule,
                            scores={k: tuple(sorted(scores)) for k in scorer.signals},
                            alpha=alpha)


@pytest.mark.parametrize(("score", "expected"), [
    (0.5, 1 / 4),      # above every calibration score: the smallest p, 1/(n0+1)
    (0.3, 2 / 4),      # ties count as "at least as high"
    (0.25, 2 / 4),
    (0.1, 4 / 4),
    (0.0, 4 / 4),
])
def test_p_value_is_one_plus_the_calibration_scores_at_least_as_high_over_n0_plus_one(
        score: float, expected: float) -> None:
    assert gate.p_value([0.1, 0.2, 0.3], score) == pytest.approx(expected)


def test_answering_unanswerable_questions_happens_at_most_alpha_of_the_time() -> None:
    """The conformal guarantee, checked by simulation: exchangeable no-answer scores."""
    rng = np.random.default_rng(0)
    alpha, n0, rates = 0.1, 14, []
    for _ in range(4000):
        cal = sorted(rng.normal(size=n0))
        rates.append(gate.p_value(cal, float(rng.normal())) <= alpha)
    # p <= 0.1 needs the new score above all 14: probability 1/15 exactly (a p-value
    # without the +1s would answer whenever at most one is higher, 2/15 > alpha).
    assert np.mean(rates) == pytest.approx(1 / 15, abs=0.015)


def test_both_takes_the_larger_p_value_and_mean2_twice_the_mean() -> None:
    assert gate.combine({"bm25": 0.02, "dense": 0.3}, "both") == 0.3
    assert gate.combine({"bm25": 0.02, "dense": 0.08}, "mean2") == pytest.approx(0.1)
    assert gate.combine({"bm25": 0.8, "dense": 0.9}, "mean2") == 1.0
    with pytest.raises(CalibrationError, match="unknown combination rule"):
        gate.combine({"bm25": 0.1}, "vote")


def test_an_alpha_the_calibration_cannot_honour_fails_closed_saying_how_many_more() -> None:
    few = calibration([0.1] * 9)
    few.check_alpha(0.1)  # 1/(9+1) is reachable
    with pytest.raises(CalibrationError, match=r"add at least 10 more"):
        few.check_alpha(0.05)  # needs n0 >= 19
    for bad in (0.0, 1.0, -0.1):
        with pytest.raises(CalibrationError, match="between 0 and 1"):
            few.check_alpha(bad)


def test_a_damaged_stored_calibration_is_an_error_not_a_default() -> None:
    data = calibration([0.1, 0.2]).to_dict()
    assert gate.Calibration.from_dict(data) == calibration([0.1, 0.2])
    del data["scores"]
    with pytest.raises(CalibrationError, match="damaged"):
        gate.Calibration.from_dict(data)


def lexical(idf: list[float], top: list[float], present: list[list[bool]]) -> Evidence:
    return Evidence(lexical=LexicalEvidence(
        idf=tuple(idf), known=tuple(i > 0 for i in idf),
        top=tuple(enumerate(top)), present=tuple(tuple(row) for row in present)))


def test_decide_answers_below_alpha_and_abstains_above_with_its_evidence() -> None:
    cal = calibration([i / 20 for i in range(10)])  # no-answer coverage 0 .. 0.45
    strong = lexical([2.0, 1.0], [5.0], [[True, True]])          # coverage 1.0
    weak = lexical([2.0, 1.0], [1.0], [[False, True]])           # coverage 1/3
    yes, no = gate.decide(cal, strong), gate.decide(cal, weak)
    assert yes.answer and yes.p_value == pytest.approx(1 / 11)
    assert yes.scores == {"bm25": 1.0} and yes.n0 == 10 and yes.alpha == 0.1
    assert no.abstained and no.p_value > 0.1 and "nothing in this collection" in no.reason
    assert gate.decide(cal, weak, alpha=0.9).answer  # alpha is the user's knob


def test_a_query_no_term_of_which_occurs_is_a_hard_abstain() -> None:
    nothing = Evidence(lexical=LexicalEvidence(idf=(3.0,), known=(False,), top=(), present=()))
    decision = gate.decide(calibration([0.0] * 30), nothing)
    assert decision.abstained and decision.p_value == 1.0
    assert decision.reason == "no query term occurs in the collection"


def test_hybrid_answers_only_when_both_retrievers_are_confident() -> None:
    scorer = gate.SCORERS["hybrid"]
    cal = gate.Calibration(mode="hybrid", signals=dict(scorer.signals), rule="both",
                           scores={"bm25": tuple(i / 20 for i in range(19)),
                                   "dense": tuple(i / 100 for i in range(19))})
    strong_lexical = lexical([1.0], [4.0], [[True]]).lexical

    def ev(top: float, mean: float) -> Evidence:
        return Evidence(lexical=strong_lexical,
                        dense=DenseEvidence(top=((0, top),), mean=mean, std=0.1))

    assert gate.decide(cal, ev(0.9, 0.1)).answer            # both p = 1/20
    lonely = gate.decide(cal, ev(0.2, 0.1))                  # dense margin 0.1 is ordinary
    assert lonely.abstained and lonely.p_values["bm25"] == pytest.approx(1 / 20)


def test_signals_read_the_evidence_as_documented() -> None:
    e = lexical([3.0, 1.0], [6.0, 2.0], [[False, True], [True, True]])
    got = signals.compute(e)
    assert got["bm25.idf_coverage"] == pytest.approx(1 / 4)   # top chunk holds the idf-1 term
    assert got["bm25.best_coverage"] == 1.0                    # the second holds both
    assert got["bm25.top1_attainable"] == pytest.approx(6 / 4)
    assert got["bm25.missing_rarest"] == 0.0                   # some top chunk lacks nothing
    smv = (6 * math.log(6 / 4) + 2 * abs(math.log(2 / 4))) / 2 / 4
    assert got["bm25.smv"] == pytest.approx(smv)               # Tao & Wu, around the mean 4
    assert "dense.top1" not in got                             # no dense evidence, no dense signal
    dense = Evidence(dense=DenseEvidence(top=((0, 0.8), (1, 0.5)), mean=0.3, std=0.25))
    assert signals.compute(dense) == pytest.approx(
        {"dense.top1": 0.8, "dense.margin": 0.5, "dense.z": 2.0, "dense.gap": 0.3})


def test_overshoot_is_the_beta_tail_of_the_delivered_false_answer_rate() -> None:
    from scipy.stats import beta

    for n0 in (9, 19, 45, 82, 200):
        m = int((n0 + 1) * 0.1)
        assert gate.overshoot(n0, 0.1) == pytest.approx(1 - beta(m, n0 + 1 - m).cdf(0.15))
    assert gate.overshoot(5, 0.1) == 0.0          # 1/(5+1) > 0.1: nothing is answered
    assert gate.overshoot(2000, 0.1) < 1e-6       # many questions: the rate is close to alpha
