"""Reciprocal Rank Fusion and convex fusion: formulas, ties, explanations, ranx agreement."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pytest

from groundkit.errors import UsageError
from groundkit.retrieval.fusion import DEFAULT_K, FusedHit, convex, rrf

BM25 = [("a", 12.0), ("b", 9.5), ("c", 3.25)]
DENSE = [("c", 0.91), ("d", 0.80), ("a", 0.42)]


def scores(hits: list[FusedHit]) -> dict[str, float]:
    return {hit.chunk_id: hit.score for hit in hits}


def test_rrf_sums_one_over_k_plus_rank_over_the_lists_that_returned_a_chunk() -> None:
    fused = scores(rrf({"bm25": BM25, "dense": DENSE}, top_k=10))

    assert fused == {
        "a": pytest.approx(1 / (60 + 1) + 1 / (60 + 3)),
        "b": pytest.approx(1 / (60 + 2)),
        "c": pytest.approx(1 / (60 + 3) + 1 / (60 + 1)),
        "d": pytest.approx(1 / (60 + 2)),
    }


def test_rrf_uses_k_60_by_default_and_honours_another_k() -> None:
    assert DEFAULT_K == 60
    fused = scores(rrf({"bm25": BM25, "dense": DENSE}, k=0, top_k=10))

    assert fused["a"] == pytest.approx(1 / (0 + 1) + 1 / (0 + 3))
    assert fused["d"] == pytest.approx(1 / (0 + 2))


def test_rrf_breaks_equal_fused_scores_by_chunk_id() -> None:
    hits = rrf({"bm25": BM25, "dense": DENSE}, top_k=10)

    assert [h.chunk_id for h in hits] == ["a", "c", "b", "d"]
    assert [h.rank for h in hits] == [1, 2, 3, 4]
    assert hits[0].score == hits[1].score  # fsum: the same ranks give exactly the same score


def test_rrf_is_independent_of_the_order_the_lists_are_given_in() -> None:
    one = rrf({"bm25": BM25, "dense": DENSE}, top_k=10)
    other = rrf({"dense": DENSE, "bm25": BM25}, top_k=10)

    assert one == other


def test_rrf_ignores_scores_and_uses_only_ranks() -> None:
    rescaled = [(cid, score * 1000 - 7) for cid, score in BM25]

    assert scores(rrf({"bm25": rescaled, "dense": DENSE}, top_k=10)) == scores(
        rrf({"bm25": BM25, "dense": DENSE}, top_k=10)
    )


def test_each_fused_hit_explains_rank_score_and_contribution_per_retriever() -> None:
    top = rrf({"bm25": BM25, "dense": DENSE}, top_k=1)[0]

    assert top.chunk_id == "a"
    bm25, dense = top.contribution("bm25"), top.contribution("dense")
    assert bm25 is not None and dense is not None
    assert (bm25.rank, bm25.score, bm25.detail["contribution"]) == (1, 12.0, 1 / (60 + 1))
    assert (dense.rank, dense.score, dense.detail["contribution"]) == (3, 0.42, 1 / (60 + 3))
    assert [c.retriever for c in top.contributions] == ["bm25", "dense"]


def test_a_chunk_missed_by_one_retriever_has_no_contribution_from_it() -> None:
    hits = {h.chunk_id: h for h in rrf({"bm25": BM25, "dense": DENSE}, top_k=10)}

    assert hits["b"].contribution("dense") is None
    assert hits["d"].contribution("bm25") is None


def test_rrf_returns_at_most_top_k_hits() -> None:
    assert len(rrf({"bm25": BM25, "dense": DENSE}, top_k=2)) == 2


def test_rrf_over_empty_lists_returns_nothing() -> None:
    assert rrf({"bm25": [], "dense": []}, top_k=5) == []


def test_rrf_has_no_score_threshold_parameter() -> None:
    with pytest.raises(TypeError):
        rrf({"bm25": BM25}, top_k=5, score_threshold=0.5)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("lists", "options"),
    [
        ({}, {"top_k": 5}),
        ({"bm25": BM25}, {"top_k": 0}),
        ({"bm25": BM25}, {"top_k": 5, "k": -1}),
        ({"bm25": [("a", 1.0), ("a", 0.5)]}, {"top_k": 5}),
        ({"bm25": [("a", math.nan)]}, {"top_k": 5}),
    ],
)
def test_rrf_rejects_bad_input_with_a_usage_error(lists: dict, options: dict) -> None:
    with pytest.raises(UsageError):
        rrf(lists, **options)


def test_convex_combines_min_max_normalised_scores_with_the_weights() -> None:
    fused = scores(convex({"bm25": BM25, "dense": DENSE}, {"bm25": 0.3, "dense": 0.7}, 10))

    assert fused == {
        "a": pytest.approx(0.3 * 1.0 + 0.7 * (0.42 - 0.42) / (0.91 - 0.42)),
        "b": pytest.approx(0.3 * (9.5 - 3.25) / (12.0 - 3.25)),
        "c": pytest.approx(0.3 * 0.0 + 0.7 * 1.0),
        "d": pytest.approx(0.7 * (0.80 - 0.42) / (0.91 - 0.42)),
    }


def test_convex_normalises_a_list_of_equal_scores_to_one() -> None:
    fused = scores(convex({"x": [("a", 2.0), ("b", 2.0)]}, {"x": 1.0}, 10))

    assert fused == {"a": 1.0, "b": 1.0}


@pytest.mark.parametrize(
    "weights",
    [{"bm25": 0.5}, {"bm25": 0.5, "dense": 0.6}, {"bm25": -0.5, "dense": 1.5}],
)
def test_convex_needs_non_negative_weights_for_every_list_summing_to_one(weights: dict) -> None:
    with pytest.raises(UsageError):
        convex({"bm25": BM25, "dense": DENSE}, weights, 10)


def _ranx_fuse(lists: dict[str, list[tuple[str, float]]], **options: Any) -> dict[str, float]:
    """ranx's fusion of ``lists`` for one query (its numba JIT warnings silenced)."""
    ranx = pytest.importorskip("ranx")
    runs = [ranx.Run({"q": dict(ranked)}, name=name) for name, ranked in sorted(lists.items())]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = ranx.fuse(runs, **options)
    return dict(fused["q"])


@pytest.mark.slow  # ranx JIT-compiles its kernels with numba on first use
def test_rrf_agrees_with_ranx() -> None:
    lists = {
        "bm25": [(f"d{i}", 30.0 - i) for i in range(0, 20)],
        "dense": [(f"d{i}", 1.0 - i / 100) for i in range(10, 35)],
    }
    expected = _ranx_fuse(lists, norm=None, method="rrf", params={"k": 60})

    ours = scores(rrf(lists, top_k=100))

    assert ours.keys() == expected.keys()
    for chunk_id, value in expected.items():
        assert ours[chunk_id] == pytest.approx(value, rel=1e-12)


@pytest.mark.slow
def test_convex_agrees_with_ranx_weighted_sum_of_min_max_scores() -> None:
    lists = {
        "bm25": [(f"d{i}", 30.0 - i * 1.5) for i in range(0, 20)],
        "dense": [(f"d{i}", 0.9 - i / 97) for i in range(10, 35)],
    }
    expected = _ranx_fuse(lists, norm="min-max", method="wsum", params={"weights": [0.4, 0.6]})

    ours = scores(convex(lists, {"bm25": 0.4, "dense": 0.6}, 100))

    assert ours.keys() == expected.keys()
    for chunk_id, value in expected.items():
        assert ours[chunk_id] == pytest.approx(value, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("fuse", [lambda lists, **kw: rrf(lists, top_k=4, **kw),
                                  lambda lists, **kw: convex(lists, {"a": 0.5, "b": 0.5}, 4,
                                                             **kw)])
def test_explained_spells_out_only_the_top_hits_and_changes_nothing_else(fuse: Any) -> None:
    lists = {"a": [("x", 3.0), ("y", 2.0), ("z", 1.0)], "b": [("z", 0.9), ("w", 0.5)]}
    full, lean = fuse(lists), fuse(lists, explained=2)
    assert [(h.chunk_id, h.score, h.rank) for h in lean] == [
        (h.chunk_id, h.score, h.rank) for h in full]
    assert [h.contributions for h in lean[:2]] == [h.contributions for h in full[:2]]
    assert all(h.contributions == () for h in lean[2:]) and len(full) == 4
