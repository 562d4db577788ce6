"""The update's array surgery (bm25_splice) equals numpy's delete/insert and table lookups,
on both of its paths (runs and steps; masks and tables past the thresholds), and an update
through either path equals a full build."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import pairwise

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_bm25_update import _edit, _text, assert_same  # tests/retrieval is on the path

from groundkit.retrieval import bm25_splice
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.bm25_splice import (
    dropped_positions,
    renumbering,
    segment_search,
    splice,
)
from groundkit.retrieval.bm25_update import updated
from groundkit.text.analysis import Analyzer


def _monotone_map(rng: random.Random, n_old: int) -> np.ndarray:
    """old -> new positions: removals (-1) and insertions anywhere, survivors in order."""
    out, at = [], 0
    for _ in range(n_old):
        while rng.random() < 0.1:
            at += 1  # an inserted document takes this position
        if rng.random() < 0.15:
            out.append(-1)
        else:
            out.append(at)
            at += 1
    return np.array(out, dtype=np.int64)


PATHS = pytest.mark.parametrize("path", ["runs", "numpy"])


@contextmanager
def through(path: str) -> Iterator[None]:
    """``runs``: the thresholds as shipped; ``numpy``: past every threshold (masks, tables)."""
    saved = bm25_splice.MANY_EVENTS, bm25_splice.FEW
    if path == "numpy":
        bm25_splice.MANY_EVENTS = bm25_splice.FEW = 0
    try:
        yield
    finally:
        bm25_splice.MANY_EVENTS, bm25_splice.FEW = saved


@PATHS
@given(seed=st.integers(0, 10_000))
def test_splice_is_delete_then_insert(path: str, seed: int) -> None:
    rng = random.Random(seed)
    n_docs = rng.randint(1, 30)
    src = np.array([rng.randrange(n_docs) for _ in range(rng.randint(0, 60))], dtype=np.int32)
    old_to_new = _monotone_map(rng, n_docs)
    gone = old_to_new < 0
    drop = np.flatnonzero(gone[src])
    n_kept = len(src) - len(drop)
    at = np.array(sorted(rng.randint(0, n_kept) for _ in range(rng.randint(0, 8))),
                  dtype=np.int64)
    values = np.array([rng.randrange(1000) for _ in at], dtype=np.int32)
    kept = np.delete(src, drop)
    with through(path):
        plain = splice(src, drop, at, values, np.int32)
        got = splice(src, drop, at, values, np.int32, renumbering(old_to_new))
    assert np.array_equal(plain, np.insert(kept, at, values))
    mapped = np.insert(old_to_new.astype(np.int32)[kept], at, values)
    assert got.dtype == np.int32 and np.array_equal(got, mapped)


@PATHS
@given(seed=st.integers(0, 10_000))
def test_renumbering_maps_every_survivor(path: str, seed: int) -> None:
    rng = random.Random(seed)
    old_to_new = _monotone_map(rng, rng.randint(1, 200))
    survivors = np.flatnonzero(old_to_new >= 0).astype(np.int32)
    values = survivors.copy()
    with through(path):
        remap = renumbering(old_to_new)
        if remap is not None:
            remap(values)
    if remap is None:
        assert np.array_equal(old_to_new[survivors], survivors)
    else:
        assert np.array_equal(values, old_to_new[survivors])


@PATHS
@given(seed=st.integers(0, 10_000))
def test_dropped_positions_are_the_removed_documents_postings(path: str, seed: int) -> None:
    rng = random.Random(seed)
    n_docs = rng.randint(1, 50)
    gone = np.array([rng.random() < 0.2 for _ in range(n_docs)])
    docs = np.array([rng.randrange(n_docs) for _ in range(rng.randint(0, 300))],
                    dtype=np.int32)
    with through(path):
        got = dropped_positions(docs, gone)
    assert got.dtype == np.int64 and np.array_equal(got, np.flatnonzero(gone[docs]))


@given(seed=st.integers(0, 10_000))
def test_segment_search_is_searchsorted_per_segment(seed: int) -> None:
    rng = random.Random(seed)
    bounds = sorted(rng.randint(0, 100) for _ in range(rng.randint(2, 10)))
    values = np.zeros(bounds[-1], dtype=np.int32)
    for a, b in pairwise(bounds):  # each segment sorted on its own
        values[a:b] = sorted(rng.randrange(50) for _ in range(b - a))
    segs = [rng.randrange(len(bounds) - 1) for _ in range(20)]
    lo = np.array([bounds[s] for s in segs], dtype=np.int64)
    hi = np.array([bounds[s + 1] for s in segs], dtype=np.int64)
    targets = np.array([rng.randrange(-1, 52) for _ in segs], dtype=np.int64)
    want = [a + int(np.searchsorted(values[a:b], t)) for a, b, t in zip(lo, hi, targets,
                                                                         strict=True)]
    assert segment_search(values, lo, hi, targets).tolist() == want


def test_terms_with_one_hash_are_ordered_by_the_term() -> None:
    """"plumless" and "buckeroo" share their CRC-32: a new one goes before or after the
    old one by the term, as a full build orders them."""
    analyzer = Analyzer.preset("lucene-english")
    for old, new in [("plumless", "buckeroo"), ("buckeroo", "plumless")]:
        docs = [f"alpha {old}", "beta gamma", f"{old} delta"]
        previous = BM25Index.build_from_texts(docs, analyzer)
        new_docs = [docs[0], f"{new} beta", docs[1], docs[2], f"{new} {old}"]
        got = updated(previous, np.array([0, 2, 3]), np.array([1, 4]),
                      [new_docs[1], new_docs[4]])
        assert_same(got, BM25Index.build_from_texts(new_docs, analyzer))


@PATHS
def test_updates_through_either_path_equal_a_full_build(path: str) -> None:
    rng = random.Random(11)
    analyzer = Analyzer.preset("lucene-english")
    docs = [_text(rng) for _ in range(400)]
    index = BM25Index.build_from_texts(docs, analyzer)
    for _ in range(8):
        docs, old_to_new, added = _edit(rng, docs)
        with through(path):
            index = updated(index, old_to_new, np.array(added, dtype=np.int64),
                            [docs[i] for i in added])
        assert_same(index, BM25Index.build_from_texts(docs, analyzer))


def test_removing_every_document_and_adding_into_an_empty_index() -> None:
    analyzer = Analyzer.preset("lucene-english")
    previous = BM25Index.build_from_texts(["alpha beta", "gamma"], analyzer)
    empty = updated(previous, np.array([-1, -1]), np.zeros(0, dtype=np.int64), [])
    assert_same(empty, BM25Index.build_from_texts([], analyzer))
    again = updated(empty, np.zeros(0, dtype=np.int64), np.array([0, 1]), ["zeta", ""])
    assert_same(again, BM25Index.build_from_texts(["zeta", ""], analyzer))
