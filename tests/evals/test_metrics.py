"""Metrics: hand computations, every judged query counting, and ir_measures agreement."""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_measures import RR, R, Success, nDCG

from evals.score.metrics import (
    DEFAULT_MEASURES,
    MeasureError,
    abstention,
    aggregate,
    canonical_measure,
    per_query,
    per_query_reference,
    run_from_ranking,
)

QRELS = {"q1": {"a": 1, "b": 2, "c": 0}, "q2": {"x": 1}}
RUN = {"q1": {"c": 3.0, "b": 2.0, "a": 1.0, "d": 0.5}, "q2": {"y": 1.0, "x": 0.5}}


def random_case(seed: int, queries: int = 60, depth: int = 30) -> tuple[dict, dict]:
    rng = random.Random(seed)
    qrels = {}
    for i in range(queries):
        judged = [f"d{rng.randrange(80)}" for _ in range(rng.randint(1, 5))]
        qrels[f"q{i}"] = {d: rng.choice([0, 1, 1, 2]) for d in judged}
    run = {}
    for i in range(queries):
        docs = rng.sample([f"d{j}" for j in range(80)], rng.randint(1, depth))
        run[f"q{i}"] = {d: round(rng.random(), 6) for d in docs}
    return qrels, run


def test_per_query_matches_a_hand_computation():
    scores = per_query(QRELS, RUN)

    ndcg_q1 = (2 / math.log2(3) + 1 / math.log2(4)) / (2 / math.log2(2) + 1 / math.log2(3))
    assert scores["nDCG@10"]["q1"] == pytest.approx(ndcg_q1)
    assert scores["nDCG@10"]["q2"] == pytest.approx((1 / math.log2(3)) / 1)
    assert scores["Success@1"] == {"q1": 0.0, "q2": 0.0}
    assert scores["Success@5"] == {"q1": 1.0, "q2": 1.0}
    assert scores["RR@10"] == {"q1": 1 / 2, "q2": 1 / 2}
    assert scores["R@100"] == {"q1": 1.0, "q2": 1.0}


def test_report_keys_are_ir_measures_strings_in_the_order_given():
    scores = per_query(QRELS, RUN)

    assert list(scores) == list(DEFAULT_MEASURES)
    assert canonical_measure("nDCG@10") == "nDCG@10"
    assert str(Success @ 5) in scores


def test_a_judged_query_missing_from_the_run_scores_zero_and_counts_in_the_mean():
    run = {"q1": RUN["q1"]}

    scores = per_query(QRELS, run)

    assert all(scores[m]["q2"] == 0.0 for m in DEFAULT_MEASURES)
    assert aggregate(scores)["Success@5"] == (1.0 + 0.0) / 2


def test_a_judged_query_with_an_empty_result_list_scores_zero():
    scores = per_query(QRELS, {"q1": RUN["q1"], "q2": {}})

    assert {m: scores[m]["q2"] for m in DEFAULT_MEASURES} == dict.fromkeys(DEFAULT_MEASURES, 0.0)


def test_queries_given_explicitly_count_even_without_judgments():
    scores = per_query(QRELS, RUN, ["Success@5"], query_ids=["q1", "q2", "q3"])

    assert scores["Success@5"] == {"q1": 1.0, "q2": 1.0, "q3": 0.0}


def test_unjudged_queries_in_the_run_are_ignored():
    run = {**RUN, "unjudged": {"a": 1.0}}

    assert per_query(QRELS, run) == per_query(QRELS, RUN)


def test_success_counts_any_positive_grade_and_ndcg_uses_linear_gains():
    qrels = {"q": {"low": 1, "high": 2}}

    low_first = per_query(qrels, {"q": {"low": 2.0}}, ["Success@1", "nDCG@10"])
    high_first = per_query(qrels, {"q": {"high": 2.0}}, ["Success@1", "nDCG@10"])

    ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert low_first["Success@1"]["q"] == high_first["Success@1"]["q"] == 1.0
    assert low_first["nDCG@10"]["q"] == pytest.approx(1 / ideal)
    assert high_first["nDCG@10"]["q"] == pytest.approx(2 / ideal)


def test_ties_are_broken_by_doc_id_descending_like_trec_eval():
    qrels = {"q": {"a": 1}}
    run = {"q": {"a": 1.0, "b": 1.0, "c": 1.0}}

    scores = per_query(qrels, run, ["Success@1", "RR@10", "nDCG@10"])

    trec = ir_measures.pytrec_eval.calc_aggregate([Success @ 1, nDCG @ 10, RR], qrels, run)
    assert scores["RR@10"]["q"] == 1 / 3 == trec[RR]
    assert scores["Success@1"]["q"] == 0.0 == trec[Success @ 1]
    assert scores["nDCG@10"]["q"] == pytest.approx(trec[nDCG @ 10])


def test_run_from_ranking_keeps_the_given_order_whatever_the_ids():
    qrels = {"q": {"a": 1}}
    run = run_from_ranking({"q": ["a", "z", "b"]})

    assert per_query(qrels, run, ["Success@1"])["Success@1"]["q"] == 1.0
    assert run["q"] == {"a": 3.0, "z": 2.0, "b": 1.0}


def test_run_from_ranking_rejects_a_repeated_doc_id():
    with pytest.raises(MeasureError, match="repeats"):
        run_from_ranking({"q": ["a", "a"]})


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_measures_agree_with_ir_measures_per_query(seed):
    qrels, run = random_case(seed)
    run.pop("q3")
    run["q4"] = {}
    measures = [*DEFAULT_MEASURES, "P@5", "Success(rel=2)@10", "R@5"]

    fast = per_query(qrels, run, measures)
    reference = per_query_reference(qrels, run, measures)

    assert fast.keys() == reference.keys()
    for measure in fast:
        assert fast[measure].keys() == reference[measure].keys() == qrels.keys()
        for query_id, value in fast[measure].items():
            expected = reference[measure][query_id]
            assert value == pytest.approx(expected, abs=1e-12), (measure, query_id)


def test_means_equal_the_pytrec_eval_aggregate_when_no_query_is_missing():
    qrels, run = random_case(7, depth=10)
    trec_measures = [Success @ 1, Success @ 5, Success @ 10, nDCG @ 10, R @ 100, RR]

    ours = aggregate(per_query(qrels, run))
    theirs = ir_measures.pytrec_eval.calc_aggregate(trec_measures, qrels, run)

    for measure in trec_measures[:-1]:
        assert ours[str(measure)] == pytest.approx(theirs[measure], abs=1e-12)
    # with at most 10 results per query, RR equals RR@10
    assert ours["RR@10"] == pytest.approx(theirs[RR], abs=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    judgments=st.dictionaries(
        st.sampled_from(["q1", "q2", "q3"]),
        st.dictionaries(st.sampled_from("abcdef"), st.integers(0, 2), max_size=4),
        min_size=1,
    ),
    results=st.dictionaries(
        st.sampled_from(["q1", "q2", "q3", "q4"]),
        st.dictionaries(st.sampled_from("abcdefgh"), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
    ),
)
def test_vectorised_measures_agree_with_ir_measures_on_any_small_input(judgments, results):
    fast = per_query(judgments, results)
    reference = per_query_reference(judgments, results)

    for measure in fast:
        for query_id, value in fast[measure].items():
            assert value == pytest.approx(reference[measure][query_id], abs=1e-12)


def test_other_measures_fall_back_to_ir_measures():
    scores = per_query(QRELS, RUN, ["AP"])

    assert scores["AP"]["q1"] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_an_unknown_measure_is_rejected_with_the_valid_examples():
    with pytest.raises(MeasureError, match="nDCG@10"):
        per_query(QRELS, RUN, ["NotAMeasure@3"])


def test_negative_or_non_integer_relevance_is_rejected():
    with pytest.raises(MeasureError, match="non-negative int"):
        per_query({"q": {"a": -1}}, RUN)
    with pytest.raises(MeasureError, match="non-negative int"):
        per_query({"q": {"a": 0.5}}, RUN)


def test_non_finite_scores_are_rejected():
    with pytest.raises(MeasureError, match="finite"):
        per_query(QRELS, {"q1": {"a": math.nan}})


def test_the_mean_of_no_judged_queries_is_refused_not_invented():
    with pytest.raises(MeasureError, match="no judged queries"):
        aggregate(per_query({}, RUN))


def test_abstention_counts_empty_result_lists_per_kind_of_question():
    run = {"a1": {"x": 1.0}, "a2": {}, "n1": {}, "n2": {"y": 0.1}}

    counts = abstention(run, ["a1", "a2", "a3"], ["n1", "n2", "n3"])

    assert counts == {
        "answerable_total": 3,
        "answerable_abstained": 2,
        "no_answer_total": 3,
        "no_answer_abstained": 2,
    }


def test_abstention_refuses_a_question_that_is_both_kinds():
    with pytest.raises(MeasureError, match="both"):
        abstention({}, ["q"], ["q"])
