"""Block-max MaxScore (bm25_blocks, _bm25c) returns exactly what exhaustive scoring does.

Every test compares against the definition: each document's total is the float64 sum, in
query order, of float32(score * query count) over every posting; best first, ties to the
lower doc. Small blocks (``BLOCK_SHIFT`` 0-3) and ``DENSE`` 0 force the block path on
small corpora, so skipping, in-block essential lists, probes and laid-out blocks all run;
``WINDOWED`` 0 forces the windowed path (windows of 16 blocks summed, candidates completed
by probes or by adding the other lists, zero-total windows through plain MaxScore).
``COLUMN_SHARE`` decides which lists also store a score column (0: none; 64: every list
in 1/64 of the documents), which the kernel adds and probes instead of the lists.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundkit.errors import IndexMismatchError
from groundkit.retrieval import bm25_blocks, bm25_query
from groundkit.retrieval.bm25 import BM25Index, BM25Params
from groundkit.retrieval.bm25_update import updated
from groundkit.text.analysis import Analyzer

SIMPLE = Analyzer.preset("simple")
STAMP = {"generation": 1}
NOT_BUILT = "the C kernel groundkit.retrieval._bm25c is not built (pip install -e .)"


def exhaustive(index: BM25Index, query: list[str], k: int) -> list[tuple[int, float]]:
    counts: dict[int, int] = {}
    for term in query:
        tid = index.term_id(term)
        if tid >= 0:
            counts[tid] = counts.get(tid, 0) + 1
    totals: dict[int, float] = {}
    for tid, c in counts.items():
        lo, hi = int(index.indptr[tid]), int(index.indptr[tid + 1])
        for d, s in zip(index.docs[lo:hi].tolist(), index.scores[lo:hi].tolist(), strict=True):
            totals[d] = totals.get(d, 0.0) + (s if c == 1 else float(np.float32(s) * c))
    return sorted(totals.items(), key=lambda h: (-h[1], h[0]))[:k]


def corpus(rng: random.Random, n_docs: int, vocab: int, copies: int) -> list[list[str]]:
    """Zipf-ish documents, each repeated ``copies`` times (ties abound), shuffled."""
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    docs = [rng.choices(words, weights, k=rng.randint(0, 30)) for _ in range(n_docs)]
    docs = [d for d in docs for _ in range(copies)]
    rng.shuffle(docs)
    return docs


@pytest.fixture
def blocks(monkeypatch: pytest.MonkeyPatch):
    """Set the block size and the density the block path needs, before a build."""
    monkeypatch.delenv("GROUNDKIT_BM25_KERNEL", raising=False)
    assert bm25_query.compiled_kernel() is not None, NOT_BUILT

    def use(shift: int, dense: int = 0, windowed: int = 10**9,
            columns: int = bm25_blocks.COLUMN_SHARE) -> None:
        monkeypatch.setattr(bm25_blocks, "BLOCK_SHIFT", shift)
        monkeypatch.setattr(bm25_blocks, "DENSE", dense)
        monkeypatch.setattr(bm25_blocks, "WINDOWED", windowed)
        monkeypatch.setattr(bm25_blocks, "COLUMN_SHARE", columns)
    return use


PATHS = {"blocks": 10**9, "windows": 0}
"""``WINDOWED`` for each path the block maxima open: block by block, or windows summed."""


def counted(index: BM25Index, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the compiled calls that carried block maxima (the block path's input)."""
    calls: list[int] = []
    kernel = index._kernels.compiled
    assert kernel is not None and index._kernels._blocks is not None

    class Counting:
        VERSION = kernel.VERSION

        @staticmethod
        def maxscore(*args):
            calls.append(len(args))
            return kernel.maxscore(*args)
    monkeypatch.setattr(index._kernels, "compiled", Counting)
    return calls


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), shift=st.integers(0, 3), k=st.integers(1, 40),
       n_docs=st.integers(1, 120), copies=st.integers(1, 3),
       method=st.sampled_from(["lucene", "atire", "bm25l", "bm25+"]),
       path=st.sampled_from(sorted(PATHS)), columns=st.sampled_from([0, 4, 64]))
def test_any_corpus_and_query_equal_exhaustive_scoring(blocks, seed, shift, k, n_docs,
                                                        copies, method, path, columns):
    """Random corpora and queries: one term, repeated terms, absent terms, k beyond the
    matches; atire scores a term in every document 0 (zero totals still rank)."""
    blocks(shift, windowed=PATHS[path], columns=columns)
    rng = random.Random(seed)
    docs = corpus(rng, n_docs, rng.randint(2, 40), copies)
    index = BM25Index.build(docs, SIMPLE, BM25Params(method=method))
    vocab = [*sorted({w for d in docs for w in d}), "absent"]
    for _ in range(6):
        query = [rng.choice(vocab) for _ in range(rng.randint(1, 6))]
        assert index.search_terms(query, top_k=k) == exhaustive(index, query, k), query


@pytest.mark.parametrize("columns", [0, 16])
@pytest.mark.parametrize("path", sorted(PATHS))
@pytest.mark.parametrize("shift", [1, 3, 7])
def test_a_larger_collection_takes_the_block_path_and_agrees(blocks, monkeypatch, shift, path,
                                                             columns):
    """20k Zipf documents (lists up to ~50% of them), 2-5 word queries, k 1-200; the
    commonest lists with score columns or without."""
    blocks(shift, windowed=PATHS[path], columns=columns)
    rng = random.Random(31 + shift)
    docs = corpus(rng, 10_000, 300, 2)
    index = BM25Index.build(docs, SIMPLE)
    assert len(index._arrays["block_quanta"]) > 0
    assert (len(index._arrays["column_scores"]) > 0) == (columns > 0)
    calls = counted(index, monkeypatch)
    words = sorted({w for d in docs for w in d})
    for _ in range(150):
        query = rng.sample(words[:15], rng.randint(1, 3)) + rng.sample(words, rng.randint(0, 2))
        query += rng.sample(query, rng.randint(0, 1))  # a repeated term, sometimes
        want = exhaustive(index, query, 200)
        for k in (1, 10, 200):
            assert index.search_terms(query, top_k=k) == want[:k], query
    assert sum(n >= 10 for n in calls) > 300  # calls that carried the block maxima
    assert all(n == 12 for n in calls if n >= 10) == (columns > 0)  # ... and the columns


@pytest.mark.parametrize("columns", [0, 4])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_ties_across_blocks_go_to_the_lower_doc(blocks, path, columns):
    """Identical documents spread over many blocks: every total ties."""
    blocks(1, windowed=PATHS[path], columns=columns)
    docs = [["a", "b"] if i % 3 else ["a", "c", "b"] for i in range(60)] + [["b"]] * 7
    index = BM25Index.build(docs, SIMPLE)
    for query in (["a", "b"], ["a", "b", "c"], ["b", "a", "a"], ["c", "b"]):
        for k in (1, 5, 19, 20, 21, 100):
            assert index.search_terms(query, top_k=k) == exhaustive(index, query, k)


@pytest.mark.parametrize("shift", [0, 2])
def test_a_window_is_bounded_by_every_block_in_it(blocks, shift):
    """The windowed path skips a window whose bound cannot enter: the bound must count
    every block of the window, its last included. The first window fills the heap with
    good documents; the two best are each the last document of a later window, whose
    other documents could not enter."""
    blocks(shift, windowed=0)
    width = 16 << shift  # a window: 16 blocks of 2**shift documents
    good, best = [1, 2, 3], [2 * width - 1, 3 * width - 1]
    docs = [["a", "b", "b", "b"] if i in best else ["a", "b", "b", "y"] if i in good
            else ["a", "b", "x", "y"] for i in range(4 * width)]
    index = BM25Index.build(docs, SIMPLE)
    assert index._kernels._blocks is not None
    want = exhaustive(index, ["a", "b"], 5)
    assert [d for d, _ in want] == best + good
    for k in (1, 2, 3, 5):
        assert index.search_terms(["a", "b"], top_k=k) == want[:k]


@pytest.mark.parametrize("columns", [0, 4])
@pytest.mark.parametrize("path", sorted(PATHS))
def test_zero_scores_still_rank_when_fewer_than_k_documents_score(blocks, path, columns):
    """atire's idf is log(N / df): a term in every document scores 0 there, its block
    bounds are 0, and its documents' zero totals fill the top k behind the positive ones
    (never a document without postings: the windowed path sums a window's every doc)."""
    blocks(2, windowed=PATHS[path], columns=columns)
    docs = [["all", "some"] if i % 9 == 0 else ["all"] for i in range(90)]
    index = BM25Index.build(docs, SIMPLE, BM25Params(method="atire"))
    assert index._kernels._blocks is not None
    slot = index._arrays["block_slots"][index.term_id("all")]
    assert slot >= 0 and not index._arrays["block_quanta"][slot].any()
    for query in (["all", "some"], ["some", "all", "all"], ["all", "absent", "some"]):
        for k in (3, 10, 11, 40, 90):
            got = index.search_terms(query, top_k=k)
            assert got == exhaustive(index, query, k)
        assert [s for _, s in got].count(0.0) == 80


def test_block_bounds_bound_every_score_in_whole_power_of_two_steps(blocks):
    blocks(3)
    rng = random.Random(5)
    docs = corpus(rng, 500, 50, 1)
    index = BM25Index.build(docs, SIMPLE)
    slots, steps = index._arrays["block_slots"], index._arrays["block_steps"]
    quanta = index._arrays["block_quanta"]
    unit = index._stats["score_unit"]
    df = np.diff(index.indptr)
    assert np.array_equal(slots >= 0, df >= bm25_blocks.n_blocks(index.n_docs, 3))
    for t in np.flatnonzero(slots >= 0).tolist():
        lo, hi = int(index.indptr[t]), int(index.indptr[t + 1])
        best = np.zeros(quanta.shape[1])
        np.maximum.at(best, index.docs[lo:hi] >> 3, index.scores[lo:hi].astype(np.float64))
        step = float(steps[t])
        assert np.frexp(step)[0] == 0.5 and step >= best.max() / 255 > step / 2
        bound = quanta[slots[t]].astype(np.float64) * step
        assert np.all(bound >= best) and np.all(bound - best < step)
        assert np.all(np.mod(bound / unit, 1.0) == 0.0)  # multiples of the unit: exact sums


def test_negative_scores_store_no_block_maxima_and_numpy_answers(blocks):
    blocks(1)
    docs = corpus(random.Random(8), 80, 12, 2)
    index = BM25Index.build(docs, SIMPLE, BM25Params(method="robertson"))
    assert index._stats["negative_scores"] and index._kernels.compiled is None
    assert len(index._arrays["block_quanta"]) == 0
    for query in (["w0", "w1"], ["w1", "w5", "w5"], ["w11"]):
        assert index.search_terms(query, top_k=7) == exhaustive(index, query, 7)


def test_the_block_arrays_survive_save_and_load_and_an_older_index_answers_the_same(
        blocks, tmp_path):
    blocks(2)
    docs = corpus(random.Random(9), 400, 30, 2)
    index = BM25Index.build(docs, SIMPLE)
    index.save(tmp_path / "bm25", STAMP)
    loaded = BM25Index.load(tmp_path / "bm25", STAMP)
    assert len(index._arrays["column_scores"]) > 0
    for name in (*bm25_blocks.FILES, *bm25_blocks.COLUMN_FILES):
        assert np.array_equal(loaded._arrays[name], index._arrays[name]), name
    assert loaded._kernels._blocks is not None and loaded._kernels._columns is not None
    no_columns = BM25Index(analyzer=index.analyzer, params=index.params,  # as written before
                           arrays={k: v for k, v in index._arrays.items()
                                   if k not in bm25_blocks.COLUMN_FILES},
                           terms_blob=index._blob, stats=index._stats)
    assert no_columns._kernels._columns is None and no_columns._kernels._blocks is not None
    no_columns.save(tmp_path / "older", STAMP)
    assert BM25Index.load(tmp_path / "older", STAMP)._kernels._columns is None
    older = BM25Index(analyzer=index.analyzer, params=index.params,  # as written before
                      arrays={k: v for k, v in index._arrays.items()
                              if k not in (*bm25_blocks.FILES, *bm25_blocks.COLUMN_FILES)},
                      terms_blob=index._blob,
                      stats={k: v for k, v in index._stats.items() if k != "block_shift"})
    assert older._kernels._blocks is None
    for query in (["w0", "w1"], ["w0", "w2", "w7"], ["w3", "w3", "w1"]):
        want = exhaustive(index, query, 10)
        assert loaded.search_terms(query, top_k=10) == want
        assert older.search_terms(query, top_k=10) == want
        assert no_columns.search_terms(query, top_k=10) == want


@pytest.mark.parametrize("damage", ["quanta", "column", "starts", "slots"])
def test_damaged_block_arrays_are_refused(blocks, tmp_path, damage):
    blocks(2)
    index = BM25Index.build(corpus(random.Random(10), 200, 20, 1), SIMPLE)
    bad = dict(index._arrays)
    if damage == "quanta":
        bad["block_quanta"] = bad["block_quanta"][:, :-1]  # one block short
    elif damage == "column":
        bad["column_scores"] = bad["column_scores"][:, :-1]  # one document short
    elif damage == "starts":
        bad["column_starts"] = bad["column_starts"] + 1  # the list's length is wrong
    else:
        bad["column_slots"] = np.roll(bad["column_slots"], 1)  # columns of other terms
    BM25Index(analyzer=index.analyzer, params=index.params, arrays=bad,
              terms_blob=index._blob, stats=index._stats).save(tmp_path / "bm25", STAMP)
    with pytest.raises(IndexMismatchError, match="damaged"):
        BM25Index.load(tmp_path / "bm25", STAMP)


def test_an_update_produces_the_block_arrays_a_full_build_does(blocks):
    blocks(2)
    rng = random.Random(12)
    docs = [" ".join(d) for d in corpus(rng, 300, 25, 1)]
    previous = BM25Index.build_from_texts(docs, SIMPLE)
    keep = np.array([i if i % 7 else -1 for i in range(len(docs))], dtype=np.int64)
    survivors = np.flatnonzero(keep >= 0)
    keep[survivors] = np.arange(len(survivors))
    added = ["w1 w2 w2 w3", "w0 w0 w9"]
    got = updated(previous, keep, np.arange(len(survivors), len(survivors) + 2), added)
    full = BM25Index.build_from_texts([docs[i] for i in survivors] + added, SIMPLE)
    assert len(full._arrays["column_scores"]) > 0
    for name in (*bm25_blocks.FILES, *bm25_blocks.COLUMN_FILES):
        x, y = got._arrays[name], full._arrays[name]
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert got._stats["block_shift"] == full._stats["block_shift"] == 2


def tiny_index():
    """The compiled kernel and three postings, docs 0, 2, 5 scoring 1, 2, 3, with no impact
    prefix and one row of block maxima over two blocks of four documents."""
    c = bm25_query.compiled_kernel()
    assert c is not None, NOT_BUILT
    docs, scores = np.array([0, 2, 5], np.int32), np.array([1.0, 2.0, 3.0], np.float32)
    return c, docs, scores, np.zeros(0, np.float32), np.array([[2, 3]], np.uint8)


def test_the_kernel_refuses_block_input_that_does_not_fit():
    c, docs, scores, imp, quanta = tiny_index()

    def top(spec, quanta=quanta, shift=2, k=2):
        return c.maxscore(docs, scores, imp, spec, k, 1e9, quanta, shift, 0)

    both = [(0, 3, 1.0, 0, 0, 0, 1.0), (0, 3, 1.0, 0, 0, -1, 0.0)]
    assert top(both) == [(5, 6.0), (2, 4.0)]
    with pytest.raises(ValueError, match="block maxima"):
        top([(0, 3, 1.0, 0, 0, 1, 1.0)] * 2)  # no slot 1
    with pytest.raises(ValueError, match="block maxima"):
        top([(0, 3, 1.0, 0, 0, 0, 0.0)] * 2)  # no step
    with pytest.raises(ValueError, match="outside the blocks"):
        top(both, shift=1)  # doc 5 would lie in block 2 of 2
    with pytest.raises(ValueError, match="uint8"):
        top(both, quanta=quanta.astype(np.int16))
    with pytest.raises(ValueError, match="uint8"):
        top(both, quanta=quanta.reshape(-1))
    with pytest.raises(TypeError):
        c.maxscore(docs, scores, imp, both, 2, 1e9, quanta, 2)


def test_the_kernel_refuses_score_columns_that_do_not_fit():
    c, docs, scores, imp, quanta = tiny_index()
    column = np.array([[1.0, 0, 2.0, 0, 0, 3.0]], np.float32)  # six documents
    starts = np.array([[0, 2, 3]], np.int32)  # block 0 from posting 0, block 1 from 2; 3 in all

    def top(spec, column=column, starts=starts):
        return c.maxscore(docs, scores, imp, spec, 2, 1e9, quanta, 2, 0, 0, column, starts)

    plain = (0, 3, 1.0, 0, 0, -1, 0.0, -1)
    assert top([(0, 3, 1.0, 0, 0, 0, 1.0, 0), plain]) == [(5, 6.0), (2, 4.0)]
    with pytest.raises(ValueError, match="score column"):
        top([(0, 3, 1.0, 0, 0, 0, 1.0, 1), plain])  # no column 1
    with pytest.raises(ValueError, match="score column"):
        top([(0, 2, 1.0, 0, 0, 0, 1.0, 0), plain])  # its starts say three postings
    with pytest.raises(ValueError, match="score column"):
        top([(0, 3, 1.0, 0, 0, 0, 1.0, 0), plain], column=column[:, :5])  # doc 5 beyond
    with pytest.raises(ValueError, match="columns are float32"):
        top([plain, plain], starts=starts[:, :2])  # n_blocks + 1 starts a row
    with pytest.raises(ValueError, match="columns are float32"):
        top([plain, plain], column=np.zeros((1, 9), np.float32))  # beyond the blocks
