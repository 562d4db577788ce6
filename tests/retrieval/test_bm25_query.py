import json
import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.errors import IndexMismatchError
from groundkit.retrieval import bm25_query
from groundkit.retrieval.bm25 import METHODS, BM25Index, BM25Params
from groundkit.text.analysis import Analyzer

SIMPLE = Analyzer.preset("simple")
STAMP = {"generation": 1}


def exhaustive(index, query, k, threshold=None):
    """The definition: every posting; a total is the float64 sum, in query order, of
    float32(score * query count); best first, ties to the lower doc."""
    counts = {}
    for term in query:
        tid = index.term_id(term)
        if tid >= 0:
            counts[tid] = counts.get(tid, 0) + 1
    totals = {}
    for tid, c in counts.items():
        lo, hi = int(index.indptr[tid]), int(index.indptr[tid + 1])
        for d, s in zip(index.docs[lo:hi].tolist(), index.scores[lo:hi].tolist(), strict=True):
            totals[d] = totals.get(d, 0.0) + (s if c == 1 else float(np.float32(s) * c))
    hits = sorted(totals.items(), key=lambda h: (-h[1], h[0]))[:k]
    return [h for h in hits if threshold is None or h[1] >= threshold]


def corpus(seed, n_docs=400, vocab=60, copies=3):
    """Zipf-ish random documents, each repeated ``copies`` times so that ties abound."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    docs = [rng.choices(words, weights, k=rng.randint(1, 25)) for _ in range(n_docs)]
    docs = [d for d in docs for _ in range(copies)]
    rng.shuffle(docs)
    return docs, words


NOT_BUILT = ("the C kernel groundkit.retrieval._bm25c is not built: "
             "pip install -e . with a C compiler and the Python headers")


@pytest.fixture(params=["compiled", "numpy"])
def kernel(request, monkeypatch):
    """The equality tests run on both kernels: MaxScore in C, and numpy's."""
    if request.param == "numpy":
        monkeypatch.setenv("GROUNDKIT_BM25_KERNEL", "numpy")
    else:
        monkeypatch.delenv("GROUNDKIT_BM25_KERNEL", raising=False)
        assert bm25_query.compiled_kernel() is not None, NOT_BUILT
    return request.param


@pytest.fixture
def numpy_kernel(monkeypatch):
    """Tests of the numpy kernel's own paths."""
    monkeypatch.setenv("GROUNDKIT_BM25_KERNEL", "numpy")


@pytest.fixture(params=["tiny-prefixes", "defaults", "no-scan", "touched"])
def sizes(request, monkeypatch):
    if request.param == "touched":  # candidates always read from the touched documents
        monkeypatch.setattr(bm25_query, "GATHER_RATIO", 0)
        return request.param
    if request.param == "tiny-prefixes":  # prefixes cut at depth 8, lists over 3 long
        monkeypatch.setattr(bm25_query, "SHORT", 3)
        monkeypatch.setattr(bm25_query, "DEPTH", 8)
    if request.param != "defaults":  # select as in a large collection
        monkeypatch.setattr(bm25_query, "SCAN_DOCS", 0)
        monkeypatch.setattr(bm25_query, "SCAN_RATIO", 0)
    return request.param


def test_impact_prefixes_are_exact_tops_of_each_terms_ranking(sizes):
    docs, _ = corpus(1)
    index = BM25Index.build(docs, SIMPLE)
    a = index._arrays
    for tid in range(index.n_terms):
        lo, hi = int(index.indptr[tid]), int(index.indptr[tid + 1])
        ranking = sorted(zip(index.scores[lo:hi].tolist(), index.docs[lo:hi].tolist(),
                             strict=True), key=lambda p: (-p[0], p[1]))
        ilo, ihi = int(a["imp_ptr"][tid]), int(a["imp_ptr"][tid + 1])
        prefix = list(zip(a["imp_scores"][ilo:ihi].tolist(), a["imp_docs"][ilo:ihi].tolist(),
                          strict=True))
        nxt = float(a["imp_next"][tid])
        if hi - lo <= bm25_query.SHORT:
            assert prefix == [] and nxt == 0.0
            continue
        assert len(prefix) <= bm25_query.DEPTH and prefix == ranking[: len(prefix)]
        if hi - lo <= bm25_query.DEPTH:
            assert len(prefix) == hi - lo and nxt == 0.0
        else:
            assert all(s > nxt for s, _ in prefix)
            assert all(s <= nxt for s, _ in ranking[len(prefix) :])


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_query_equals_exhaustive_scoring(sizes, kernel, method):
    docs, words = corpus(2)
    index = BM25Index.build(docs, SIMPLE, BM25Params(method=method))
    rng = random.Random(3)
    for _ in range(120):
        query = rng.sample(words[:6], rng.randint(0, 2)) + rng.sample(words, rng.randint(1, 4))
        if rng.random() < 0.2:
            query += [rng.choice(query)] * rng.randint(1, 2)  # repeated terms: counts 2, 3
        for k in (1, 2, 10, 37, 2000):
            assert index.search_terms(query, top_k=k) == exhaustive(index, query, k), (query, k)


def test_no_candidate_is_lost_when_one_term_proposes_them(sizes, kernel):
    docs, words = corpus(12, copies=1)
    index = BM25Index.build(docs, SIMPLE)
    rng = random.Random(13)
    for _ in range(300):
        query = rng.sample(words[:8], 1) + rng.sample(words, rng.randint(1, 3))
        for k in (1, 3, 10):
            assert index.search_terms(query, top_k=k) == exhaustive(index, query, k), (query, k)


def test_single_term_queries_equal_exhaustive_scoring_at_every_depth(sizes):
    docs, words = corpus(4, copies=5)
    index = BM25Index.build(docs, SIMPLE)
    for word in words:
        for k in (1, 3, 7, 8, 9, 50, 5000):
            assert index.search_terms([word], top_k=k) == exhaustive(index, [word], k)
        assert index.search_terms([word, word, word], top_k=5) == exhaustive(
            index, [word] * 3, 5)


def test_score_threshold_filters_exactly_what_exhaustive_scoring_would(sizes, kernel):
    docs, words = corpus(5)
    index = BM25Index.build(docs, SIMPLE)
    rng = random.Random(6)
    for _ in range(60):
        query = rng.sample(words, rng.randint(1, 4))
        full = exhaustive(index, query, 40)
        for threshold in {full[0][1], full[len(full) // 2][1], full[-1][1], 0.0, 1e9}:
            got = index.search_terms(query, top_k=40, score_threshold=threshold)
            assert got == exhaustive(index, query, 40, threshold)


@settings(max_examples=120, deadline=None)
@given(docs=st.lists(st.lists(st.sampled_from("abcdefg"), max_size=12), max_size=40),
       query=st.lists(st.sampled_from("abcdefgh"), min_size=1, max_size=6),
       k=st.integers(1, 12), kernel=st.sampled_from(["compiled", "numpy"]))
def test_any_small_corpus_and_query_equal_exhaustive_scoring(docs, query, k, kernel):
    index = BM25Index.build(docs, SIMPLE)
    if kernel == "numpy":
        index._kernels.compiled = None
    else:
        assert index._kernels.compiled is not None, NOT_BUILT
    assert index.search_terms(query, top_k=k) == exhaustive(index, query, k)


def test_every_selection_path_is_exercised(monkeypatch, numpy_kernel):
    monkeypatch.setattr(bm25_query, "SHORT", 3)
    monkeypatch.setattr(bm25_query, "DEPTH", 8)
    monkeypatch.setattr(bm25_query, "SCAN_DOCS", 0)
    monkeypatch.setattr(bm25_query, "SCAN_RATIO", 0)
    monkeypatch.setattr(bm25_query, "GATHER_RATIO", 10**9)  # never read the touched docs
    seen = set()
    at_least, select = bm25_query._Term.at_least, bm25_query.Kernels._select
    touched = bm25_query._best_touched

    def spy_at_least(self, floor, docs, scores):
        seen.add("prefix" if self._in_prefix(floor) else "filter")
        return at_least(self, floor, docs, scores)

    def spy_touched(*args):
        seen.add("touched")
        return touched(*args)

    def spy_select(self, *args):
        before = set(seen)
        out = select(self, *args)
        seen.add("proposed" if seen - before - {"touched"} else "scan-or-all")
        return out

    monkeypatch.setattr(bm25_query._Term, "at_least", spy_at_least)
    monkeypatch.setattr(bm25_query.Kernels, "_select", spy_select)
    monkeypatch.setattr(bm25_query, "_best_touched", spy_touched)
    docs, words = corpus(7, n_docs=600)
    index = BM25Index.build([*docs, ["rare1", "w0"], ["rare1", "rare2"]], SIMPLE)
    rng = random.Random(8)
    queries = [["rare1", "w0"], ["rare1", "rare2", "w1"], ["w0", "w1", "w2"]]
    queries += [rng.sample(words, rng.randint(2, 4)) for _ in range(100)]
    queries += [["rare1", "rare2"], ["rare2", "w59"]]  # few postings: read the touched docs

    def check_all(ks=(1, 10, 50)):
        for query in queries:
            for k in ks:
                assert index.search_terms(query, top_k=k) == exhaustive(index, query, k)

    check_all()
    assert seen == {"prefix", "filter", "proposed", "scan-or-all"}
    seen.clear()
    monkeypatch.setattr(bm25_query, "SCAN_DOCS", 10**9)  # small collection: always a scan
    check_all((10,))
    assert seen == {"scan-or-all"}
    seen.clear()
    monkeypatch.setattr(bm25_query, "GATHER_RATIO", 0)  # every query reads its touched docs
    check_all()
    assert "touched" in seen and "scan-or-all" in seen


@pytest.mark.parametrize("gather", [0, 10**9])
@pytest.mark.parametrize("fill", [0, 10**9])
def test_the_accumulator_is_clean_after_every_reset_and_selection_path(monkeypatch, gather, fill,
                                                                      numpy_kernel):
    monkeypatch.setattr(bm25_query, "GATHER_RATIO", gather)
    monkeypatch.setattr(bm25_query, "FILL_RATIO", fill)  # 0: scatter zeros; huge: memset
    docs, words = corpus(14, n_docs=300)
    index = BM25Index.build(docs, SIMPLE)
    rng = random.Random(15)
    for _ in range(80):
        query = rng.sample(words, rng.randint(2, 4))
        for k in (1, 10):
            assert index.search_terms(query, top_k=k) == exhaustive(index, query, k)
        acc = index._kernels.scratch(1)[0]
        assert not acc.any()


def test_threads_searching_at_once_get_the_same_answers(kernel):
    docs, words = corpus(9, n_docs=2000, vocab=200)
    index = BM25Index.build(docs, SIMPLE)
    rng = random.Random(10)
    queries = [rng.sample(words, rng.randint(1, 4)) for _ in range(200)]
    expected = [index.search_terms(q, top_k=10) for q in queries]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda q: index.search_terms(q, top_k=10), queries * 3))
    assert got == expected * 3


def test_impact_arrays_survive_save_and_load(tmp_path):
    docs, words = corpus(11)
    index = BM25Index.build(docs, SIMPLE)
    index.save(tmp_path / "bm25", STAMP)
    loaded = BM25Index.load(tmp_path / "bm25", STAMP)
    for name in ("imp_ptr", "imp_docs", "imp_scores", "imp_next"):
        assert np.array_equal(loaded._arrays[name], index._arrays[name]), name
    for word in words[:20]:
        assert loaded.search_terms([word, "w1"], top_k=7) == index.search_terms([word, "w1"],
                                                                                top_k=7)


def test_an_index_in_the_previous_format_is_refused_with_a_rebuild_hint(tmp_path):
    BM25Index.build([["a", "b"]], SIMPLE).save(tmp_path / "bm25", STAMP)
    meta = json.loads((tmp_path / "bm25" / "meta.json").read_text())
    meta["format"] = "groundkit-bm25/1"
    (tmp_path / "bm25" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(IndexMismatchError, match="rebuild"):
        BM25Index.load(tmp_path / "bm25", STAMP)


# -- the compiled kernel ---------------------------------------------------------------


def test_the_compiled_kernel_agrees_with_numpy_on_a_larger_collection(monkeypatch):
    """MaxScore's skipping (non-essential terms probed, documents dropped early) only
    pays on long lists and a rising threshold: 24k Zipf documents, 300 queries."""
    monkeypatch.delenv("GROUNDKIT_BM25_KERNEL", raising=False)
    assert bm25_query.compiled_kernel() is not None, NOT_BUILT
    docs, words = corpus(16, n_docs=8000, vocab=400)
    index = BM25Index.build(docs, SIMPLE)
    reference = BM25Index.build(docs, SIMPLE)
    reference._kernels.compiled = None
    rng = random.Random(17)
    calls = []
    maxscore = index._kernels._maxscore
    monkeypatch.setattr(index._kernels, "_maxscore",
                        lambda terms, k: calls.append(k) or maxscore(terms, k))
    for _ in range(300):
        query = rng.sample(words[:12], rng.randint(0, 3)) + rng.sample(words, rng.randint(1, 3))
        for k in (1, 10, 100):
            assert index.search_terms(query, top_k=k) == reference.search_terms(query, top_k=k)
    assert len(calls) > 600  # several-term queries went through C


def test_scores_are_multiples_of_the_exactness_unit_recorded_at_build():
    docs, _ = corpus(18)
    index = BM25Index.build(docs, SIMPLE)
    unit = index._stats["score_unit"]
    scores = index.scores.astype(np.float64)
    assert unit > 0 and np.all(np.mod(scores / unit, 1.0) == 0.0)
    assert unit == bm25_query.score_unit(index.scores)
    assert index._kernels.exact_limit == 2.0**53 * unit
    assert bm25_query.score_unit(np.zeros(3, np.float32)) == 0.0  # none positive: no sums


def test_an_index_saved_without_its_score_unit_derives_it_and_answers_the_same(tmp_path):
    docs, words = corpus(20)
    index = BM25Index.build(docs, SIMPLE)
    index.save(tmp_path / "bm25", STAMP)
    assert BM25Index.load(tmp_path / "bm25", STAMP)._stats["score_unit"] == index._stats[
        "score_unit"]
    meta_path = tmp_path / "bm25" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["score_unit"]  # as written before the unit was recorded
    meta_path.write_text(json.dumps(meta))
    older = BM25Index.load(tmp_path / "bm25", STAMP)
    assert "score_unit" not in older._stats
    assert older._kernels.exact_limit == index._kernels.exact_limit
    for query in (words[:2], words[2:5]):
        assert older.search_terms(query, top_k=10) == index.search_terms(query, top_k=10)
    meta["score_unit"] = "tiny"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(IndexMismatchError):
        BM25Index.load(tmp_path / "bm25", STAMP)


def test_where_a_sum_might_round_the_numpy_kernel_answers(monkeypatch):
    monkeypatch.delenv("GROUNDKIT_BM25_KERNEL", raising=False)
    docs, words = corpus(19)
    index = BM25Index.build(docs, SIMPLE)
    kernels = index._kernels
    assert kernels.compiled is not None, NOT_BUILT
    kernels.__dict__["exact_limit"] = 1e-6  # below any two terms' maxima
    results = []
    maxscore = kernels._maxscore
    monkeypatch.setattr(kernels, "_maxscore",
                        lambda terms, k: results.append(maxscore(terms, k)) or results[-1])
    for query in (words[:2], words[3:6], [words[0], words[0], words[9]]):
        assert index.search_terms(query, top_k=10) == exhaustive(index, query, 10)
    assert results == [None, None, None]


def test_the_compiled_kernel_refuses_bad_input():
    c = bm25_query.compiled_kernel()
    assert c is not None, NOT_BUILT
    docs, scores = np.array([0, 2, 5], np.int32), np.array([1.0, 2.0, 3.0], np.float32)
    imp_scores = np.array([3.0, 2.0], np.float32)  # the list's impact prefix: its best first

    def top(spec, k=2, docs=docs):
        return c.maxscore(docs, scores, imp_scores, spec, k, 1e9)

    assert top([(0, 3, 1.0, 0, 0)]) == [(5, 3.0), (2, 2.0)]
    assert top([(0, 3, 1.0, 0, 2)]) == [(5, 3.0), (2, 2.0)]  # with its impact prefix
    assert top([(0, 3, 1.0, 0, 0)], k=10**12) == [
        (5, 3.0), (2, 2.0), (0, 1.0)]  # a huge k allocates no more than the postings
    assert c.maxscore(docs, scores, imp_scores, [(0, 3, 1.0, 0, 0)], 2, 3.0) is None
    for outside in ((0, 4, 1.0, 0, 0), (0, 3, 1.0, 0, 3), (2, 1, 1.0, 0, 0), (0, 3, 0.0, 0, 0)):
        with pytest.raises(ValueError, match="outside"):
            top([outside])
    with pytest.raises(ValueError, match="must match"):
        top([(0, 3, 1.0, 0, 0)], docs=docs.astype(np.int64))
    with pytest.raises(ValueError, match="positive"):
        top([(0, 3, 1.0, 0, 0)], k=0)
    with pytest.raises(TypeError):
        top([(0, 3, 1.0, 0)])

    hashes, offsets = np.array([7, 9], np.uint32), np.array([0, 2, 5], np.int64)
    assert c.find_term(hashes, offsets, b"abxyz", b"xyz", 9) == 1
    assert c.find_term(hashes, offsets, b"abxyz", b"xyz", 7) == -1  # bytes decide, not hash
    assert c.find_term(hashes[:0], offsets[:1], b"", b"xyz", 9) == -1
    with pytest.raises(ValueError, match="outside the blob"):
        c.find_term(hashes, offsets, b"abxy", b"xyz", 9)
    with pytest.raises(ValueError, match="uint32"):
        c.find_term(hashes.astype(np.int64), offsets, b"abxyz", b"xyz", 9)
    with pytest.raises(ValueError, match="uint32"):
        c.find_term(hashes, offsets, b"abxyz", b"xyz", 2**32)
    with pytest.raises(TypeError):
        c.find_term(hashes, offsets, b"abxyz", "xyz", 9)


def test_the_numpy_kernel_can_be_chosen_and_a_foreign_build_is_not_used(monkeypatch):
    monkeypatch.setenv("GROUNDKIT_BM25_KERNEL", "numpy")
    assert bm25_query.compiled_kernel() is None
    assert BM25Index.build([["a", "b"], ["b"]], SIMPLE)._kernels.compiled is None
    monkeypatch.delenv("GROUNDKIT_BM25_KERNEL")
    module = bm25_query.compiled_kernel()
    assert module is not None, NOT_BUILT
    monkeypatch.setattr(module, "VERSION", bm25_query.COMPILED_VERSION + 1)
    assert bm25_query.compiled_kernel() is None
