"""The build's memory-saving steps change no byte of the index (issue 31): a streamed corpus,
compact per-batch parts in their own maps, scores computed a slice of terms at a time."""

import mmap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.retrieval import bm25_build
from groundkit.retrieval.bm25 import METHODS, BM25Index, BM25Params
from groundkit.retrieval.bm25_build import (
    Builder,
    Part,
    posting_scores,
    score_postings,
    sliced_score_unit,
    term_slices,
)
from groundkit.retrieval.bm25_query import score_unit
from groundkit.retrieval.scoring import idf_lucene, length_lucene_byte, score_lucene_float32
from groundkit.text.analysis import Analyzer

TEXTS = [
    "The quick brown fox jumps over the lazy dog",
    "A fast brown fox leaps over sleeping dogs in the park",
    "",
    "Foxes are small omnivorous mammals of the dog family; e.g. 3.14 foxes",
    "\u6771\u4eac\u90fd dogs and caf\u00e9 foxes",
]
ARRAYS = ("indptr", "docs", "scores", "tfs", "doc_lengths", "term_hashes", "term_offsets")
WORDS = st.sampled_from([f"w{i}" for i in range(12)])
CORPORA = st.lists(st.lists(WORDS, max_size=25), min_size=1, max_size=40)


def _same_arrays(a, b):
    for name in (*ARRAYS, *(k for k in a._arrays if k.startswith(("imp_", "block_")))):
        x, y = a._arrays[name], b._arrays[name]
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert x.tobytes() == y.tobytes(), name
    assert bytes(a._blob) == bytes(b._blob)
    assert a._stats == b._stats


def test_a_generator_builds_the_same_index_as_a_list(monkeypatch):
    texts = TEXTS * 9
    monkeypatch.setattr(Builder, "BATCH_DOCS", 4)  # many parts
    _same_arrays(BM25Index.build_from_texts(texts),
                 BM25Index.build_from_texts(t for t in texts))


def test_documents_past_two_bytes_keep_their_numbers():
    corpus = [["a", f"t{i % 7}"] for i in range(70_000)]
    index = BM25Index.build(corpus, Analyzer.preset("simple"))
    a = index.term_id("a")
    docs = index.docs[index.indptr[a]:index.indptr[a + 1]]
    assert np.array_equal(docs, np.arange(70_000))


def test_a_part_is_its_arrays_in_one_map_of_its_own():
    terms, counts = np.array([2, 5], np.int32), np.array([3, 1], np.int32)
    docs, tfs = np.array([0, 1, 7, 2], np.uint16), np.array([1, 2, 1, 70_000], np.uint32)
    part = Part.mapped(terms, counts, docs, tfs, 4096)
    for got, want in zip(part[:4], (terms, counts, docs, tfs), strict=True):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert part.first_doc == 4096
    maps = {id(a.base.obj) for a in part[:4]}  # views of memoryviews of one mmap
    assert len(maps) == 1 and isinstance(part.terms.base.obj, mmap.mmap)
    empty = Part.mapped(*(np.zeros(0, a.dtype) for a in (terms, counts, docs, tfs)), 0)
    assert all(len(a) == 0 for a in empty[:4])


@settings(max_examples=60, deadline=None)
@given(df=st.lists(st.integers(0, 9), max_size=30), size=st.integers(1, 12))
def test_term_slices_cover_every_term_in_order_within_the_size(df, size):
    indptr = np.concatenate([[0], np.cumsum(df, dtype=np.int64)])
    slices = list(term_slices(indptr, size))
    assert [t for lo, hi in slices for t in range(lo, hi)] == list(range(len(df)))
    for lo, hi in slices:
        assert hi - lo == 1 or indptr[hi] - indptr[lo] <= size


def _whole_array_scores(index, params):
    """The scores as the build computed them before issue 31: every posting at once."""
    df = np.diff(index.indptr)
    lengths = index.doc_lengths.astype(np.int64)
    n, avgdl = index.n_docs_nonempty, index.avgdl
    dl = length_lucene_byte(lengths) if params.lucene_norms else lengths
    if params.method == "lucene":
        idf = idf_lucene(np.repeat(df, df).astype(np.float64), n)
        return score_lucene_float32(idf, index.tfs, dl.astype(np.int32)[index.docs], avgdl,
                                    params.k1, params.b)
    return posting_scores(params, index.tfs, dl.astype(np.int32)[index.docs],
                          np.repeat(df.astype(np.int32), df), n, avgdl)


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("lucene_norms", [True, False])
@settings(max_examples=25, deadline=None)
@given(corpus=CORPORA, size=st.integers(1, 40))
def test_scores_in_slices_are_the_whole_array_scores_bit_for_bit(method, lucene_norms,
                                                                 corpus, size):
    params = BM25Params(method=method, lucene_norms=lucene_norms)
    index = BM25Index.build(corpus, Analyzer.preset("simple"), params)
    expected = _whole_array_scores(index, params)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bm25_build, "SCORE_SLICE", size)
        vocab = bm25_build.Vocabulary(bytes(index._blob), index.term_offsets, index.term_hashes)
        postings = bm25_build.Postings(vocab, index.indptr, index.docs, index.tfs,
                                       index.doc_lengths.astype(np.int64))
        arrays, stats = score_postings(postings, params)
    assert arrays["scores"].dtype == np.float32
    assert arrays["scores"].tobytes() == expected.astype(np.float32).tobytes()
    assert stats["score_unit"] == score_unit(expected)


@settings(max_examples=80, deadline=None)
@given(values=st.lists(st.floats(-3, 1e6, width=32), max_size=60), size=st.integers(1, 9))
def test_the_score_unit_found_in_slices_is_the_whole_arrays(values, size):
    scores = np.array(values, dtype=np.float32)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bm25_build, "SCORE_SLICE", size)
        assert sliced_score_unit(scores) == score_unit(scores)
