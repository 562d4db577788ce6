"""An updated BM25 index is, array for array, the index a full build gives."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundkit.errors import UsageError
from groundkit.retrieval.bm25 import _FILES, BM25Index, BM25Params
from groundkit.retrieval.bm25_update import updated
from groundkit.text.analysis import Analyzer

WORDS = ["alpha", "beta", "gamma", "delta", "running", "runs", "the", "E4012", "東京",
         "naïve", "fox's", "3.14", "zeta", "eta", "theta", "iota"]


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 25)))


def _edit(rng: random.Random, docs: list[str]) -> tuple[list[str], np.ndarray, list[int]]:
    """Remove some documents, insert some new ones anywhere (survivors keep their order)."""
    old_to_new, new_docs, added = [], [], []
    for text in docs:
        while rng.random() < 0.15:
            added.append(len(new_docs))
            new_docs.append(_text(rng))
        if rng.random() < 0.2:
            old_to_new.append(-1)
        else:
            old_to_new.append(len(new_docs))
            new_docs.append(text)
    while rng.random() < 0.3:
        added.append(len(new_docs))
        new_docs.append(_text(rng))
    return new_docs, np.array(old_to_new, dtype=np.int64), added


def assert_same(a: BM25Index, b: BM25Index) -> None:
    assert a.n_docs == b.n_docs and a.n_terms == b.n_terms
    for name in _FILES:
        x, y = a._arrays[name], b._arrays[name]
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert bytes(a._blob) == bytes(b._blob)
    assert a._stats == b._stats


@given(st.integers(0, 10_000), st.sampled_from(["lucene", "robertson", "bm25+"]))
def test_an_update_equals_a_full_build(seed: int, method: str) -> None:
    rng = random.Random(seed)
    analyzer, params = Analyzer.preset("lucene-english"), BM25Params(method=method)
    docs = [_text(rng) for _ in range(rng.randint(0, 40))]
    previous = BM25Index.build_from_texts(docs, analyzer, params)
    new_docs, old_to_new, added = _edit(rng, docs)
    got = updated(previous, old_to_new, np.array(added, dtype=np.int64),
                  [new_docs[i] for i in added])
    assert_same(got, BM25Index.build_from_texts(new_docs, analyzer, params))


def test_a_run_of_updates_stays_equal_to_a_full_build() -> None:
    rng = random.Random(7)
    analyzer = Analyzer.preset("lucene-english")
    docs = [_text(rng) for _ in range(300)]
    index = BM25Index.build_from_texts(docs, analyzer)
    for _ in range(20):
        docs, old_to_new, added = _edit(rng, docs)
        index = updated(index, old_to_new, np.array(added, dtype=np.int64),
                        [docs[i] for i in added])
    assert_same(index, BM25Index.build_from_texts(docs, analyzer))
    assert index.search("running alpha", 3) == BM25Index.build_from_texts(
        docs, analyzer).search("running alpha", 3)


def test_bad_position_maps_are_refused() -> None:
    index = BM25Index.build_from_texts(["a b", "c d", "e f"])
    with pytest.raises(UsageError, match="entries"):
        updated(index, np.array([0, 1]), np.array([], dtype=np.int64), [])
    with pytest.raises(UsageError, match="relative order"):
        updated(index, np.array([1, 0, 2]), np.array([], dtype=np.int64), [])
    with pytest.raises(UsageError, match="exactly once"):
        updated(index, np.array([0, 1, 3]), np.array([], dtype=np.int64), [])
    with pytest.raises(UsageError, match="added texts"):
        updated(index, np.array([0, 1, 2]), np.array([3]), [])
