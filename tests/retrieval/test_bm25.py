import math
import random
import zlib

import numpy as np
import pytest

from groundkit.errors import IndexMismatchError, UsageError
from groundkit.retrieval.bm25 import METHODS, BM25Index, BM25Params
from groundkit.retrieval.bm25_build import Builder, lucene_scores
from groundkit.retrieval.scoring import idf_lucene, length_lucene_byte, score_lucene_float32
from groundkit.text.analysis import Analyzer

DOCS = [
    "The quick brown fox jumps over the lazy dog",
    "A fast brown fox leaps over sleeping dogs in the park",
    "Lazy afternoons in the park with a good book",
    "Foxes are small omnivorous mammals of the dog family",
    "Reading books about dogs and foxes on lazy afternoons",
    "Quantum chromodynamics describes the strong interaction",
]
STAMP = {"generation": 3, "collection": "x"}


def _random_corpus(seed, n_docs=60, vocab=40):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]
    return [rng.choices(words, weights, k=rng.randint(3, 30)) for _ in range(n_docs)]


def _plain(**kw):
    return BM25Params(lucene_norms=False, **kw)


def test_scores_match_rank_bm25_okapi_for_the_robertson_variant():
    rank_bm25 = pytest.importorskip("rank_bm25")
    corpus = _random_corpus(1, n_docs=80, vocab=300)
    corpus = [[w for w in doc if w not in {"w0", "w1", "w2"}] or ["w9"] for doc in corpus]
    reference = rank_bm25.BM25Okapi(corpus, k1=1.2, b=0.75)
    assert all(v > 0 for v in reference.idf.values())  # no epsilon floor in play
    index = BM25Index.build(corpus, Analyzer.preset("simple"), _plain(k1=1.2, b=0.75,
                                                                        method="robertson"))
    for query in (["w3"], ["w5", "w17"], ["w4", "w4", "w40"], ["w250", "w7", "w8", "w9"]):
        expected = reference.get_scores(query)
        got = dict(index.search_terms(query, top_k=len(corpus)))
        for doc, score in enumerate(expected):
            assert math.isclose(got.get(doc, 0.0), score, rel_tol=1e-6, abs_tol=1e-6), doc


def test_scores_match_bm25s_lucene_method():
    bm25s = pytest.importorskip("bm25s")
    corpus = _random_corpus(2, n_docs=100, vocab=80)
    reference = bm25s.BM25(k1=0.9, b=0.4, method="lucene")
    reference.index(corpus, show_progress=False)
    index = BM25Index.build(corpus, Analyzer.preset("simple"), _plain())
    for query in (["w0"], ["w1", "w30"], ["w2", "w2", "w50", "w79"]):
        expected = sum(reference.get_scores([t]) for t in query)
        got = dict(index.search_terms(query, top_k=len(corpus)))
        for doc, score in enumerate(expected):
            assert math.isclose(got.get(doc, 0.0), score, rel_tol=1e-6, abs_tol=1e-6), doc


def test_lucene_method_uses_quantised_lengths_and_counts_only_nonempty_documents():
    corpus = [["a"] * 1 + ["b"] * 99, ["a", "c"], []]
    index = BM25Index.build(corpus, Analyzer.preset("simple"))
    n, avgdl = 2, (100 + 2) / 2
    dl = length_lucene_byte([100])[0]
    expected = idf_lucene(2.0, n) * 1 / (1 + 0.9 * (1 - 0.4 + 0.4 * dl / avgdl))
    assert math.isclose(dict(index.search_terms(["a"]))[0], expected, rel_tol=1e-6)


def test_every_method_ranks_the_matching_document_first():
    for method in METHODS:
        index = BM25Index.build_from_texts(DOCS, params=BM25Params(method=method))
        assert index.search("quantum interaction")[0][0] == 5, method


def test_a_query_matching_nothing_abstains():
    index = BM25Index.build_from_texts(DOCS)
    assert index.search("zebra xylophone") == []
    assert index.search("") == []
    assert index.search("the and of") == []
    assert index.search("?!") == []


def test_score_threshold_drops_hits_below_it_and_keeps_equal_ones():
    index = BM25Index.build_from_texts(DOCS)
    hits = index.search("lazy dog", top_k=10)
    cut = hits[1][1]
    assert index.search("lazy dog", top_k=10, score_threshold=cut) == hits[:2]
    assert index.search("lazy dog", score_threshold=1e9) == []


def test_top_k_bounds_the_number_of_hits_and_must_be_positive():
    index = BM25Index.build_from_texts(DOCS)
    assert len(index.search("dog fox lazy park", top_k=2)) == 2
    assert len(index.search("dog fox lazy park", top_k=100)) == 5
    for bad in (0, -1, 1.5):
        with pytest.raises(UsageError, match="top_k"):
            index.search("dog", top_k=bad)


def test_hits_are_sorted_best_first_and_ties_go_to_the_lower_doc_index():
    index = BM25Index.build_from_texts(["same text here", "other", "same text here"] * 5)
    hits = index.search("same text", top_k=4)
    assert [d for d, _ in hits] == [0, 2, 3, 5]
    assert len({s for _, s in hits}) == 1
    big = _random_corpus(3, n_docs=3000, vocab=30)
    index = BM25Index.build(big, Analyzer.preset("simple"))
    for query in (["w0"], ["w1", "w2"], ["w3", "w4", "w5", "w6"]):
        hits = index.search_terms(query, top_k=50)
        keys = [(-s, d) for d, s in hits]
        assert keys == sorted(keys)
        assert hits == _brute_force(index, query, 50)


def _brute_force(index, query, k):
    totals = {}
    for term in query:
        tid = index.term_id(term)
        lo, hi = index.indptr[tid], index.indptr[tid + 1]
        for d, s in zip(index.docs[lo:hi], index.scores[lo:hi], strict=True):
            totals[int(d)] = totals.get(int(d), 0.0) + float(s)
    return sorted(totals.items(), key=lambda x: (-x[1], x[0]))[:k]


def test_repeated_query_terms_add_like_anserini_boosts():
    index = BM25Index.build_from_texts(DOCS)
    once = dict(index.search("quantum"))[5]
    twice = dict(index.search("quantum quantum"))[5]
    assert math.isclose(twice, 2 * once, rel_tol=1e-6)


def test_explain_breaks_a_score_into_per_term_contributions():
    index = BM25Index.build_from_texts(DOCS)
    doc, score = index.search("lazy brown dog")[0]
    parts = index.explain("lazy brown dog", doc)
    assert [p.term for p in parts] == ["lazi", "brown", "dog"]
    assert math.isclose(sum(p.score for p in parts), score, rel_tol=1e-6)
    assert all(p.tf >= 1 and p.doc_length == 7 for p in parts)
    assert parts[0].idf == pytest.approx(idf_lucene(3.0, 6))
    absent = index.explain("quantum", doc)[0]
    assert absent.tf == 0 and absent.score == 0.0
    with pytest.raises(UsageError):
        index.explain("dog", 99)


def test_rebuilding_from_scratch_gives_identical_arrays_and_results():
    a = BM25Index.build_from_texts(DOCS * 20)
    b = BM25Index.build_from_texts(DOCS * 20)
    for name in ("indptr", "docs", "scores", "tfs", "doc_lengths", "term_hashes"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.search("lazy fox park", top_k=30) == b.search("lazy fox park", top_k=30)


def test_save_and_load_round_trip_with_memory_mapped_arrays(tmp_path):
    index = BM25Index.build_from_texts(DOCS)
    index.save(tmp_path / "bm25", STAMP)
    loaded = BM25Index.load(tmp_path / "bm25", STAMP, analyzer=Analyzer())
    assert isinstance(loaded.scores.base, np.memmap) and isinstance(loaded.docs.base, np.memmap)
    for query in ("lazy dog", "quantum", "fox park book", "zebra"):
        assert loaded.search(query, top_k=10) == index.search(query, top_k=10)
    assert [loaded.term(i) for i in range(loaded.n_terms)] == [
        index.term(i) for i in range(index.n_terms)]


def test_saving_over_an_existing_index_replaces_it(tmp_path):
    BM25Index.build_from_texts(DOCS).save(tmp_path / "bm25", STAMP)
    BM25Index.build_from_texts(["only zebras"]).save(tmp_path / "bm25", {"generation": 4})
    loaded = BM25Index.load(tmp_path / "bm25", {"generation": 4})
    assert loaded.n_docs == 1 and loaded.search("zebra") == [(0, pytest.approx(loaded.search(
        "zebra")[0][1]))]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bm25"]


def test_a_stamp_mismatch_is_refused(tmp_path):
    BM25Index.build_from_texts(DOCS).save(tmp_path / "bm25", STAMP)
    with pytest.raises(IndexMismatchError, match="generation"):
        BM25Index.load(tmp_path / "bm25", {"generation": 4, "collection": "x"})


def test_an_analyzer_mismatch_is_refused(tmp_path):
    BM25Index.build_from_texts(DOCS).save(tmp_path / "bm25", STAMP)
    with pytest.raises(IndexMismatchError, match="analyzer"):
        BM25Index.load(tmp_path / "bm25", STAMP, analyzer=Analyzer.preset("simple"))


def test_a_missing_index_is_refused(tmp_path):
    with pytest.raises(IndexMismatchError, match="no BM25 index"):
        BM25Index.load(tmp_path / "nothing", STAMP)


@pytest.mark.parametrize("damage", ["truncate", "delete", "garbage", "meta", "shape"])
def test_damaged_files_are_refused(tmp_path, damage):
    root = tmp_path / "bm25"
    BM25Index.build_from_texts(DOCS).save(root, STAMP)
    if damage == "truncate":
        data = (root / "scores.npy").read_bytes()
        (root / "scores.npy").write_bytes(data[:-8])
    elif damage == "delete":
        (root / "docs.npy").unlink()
    elif damage == "garbage":
        size = (root / "indptr.npy").stat().st_size
        (root / "indptr.npy").write_bytes(b"x" * size)
    elif damage == "meta":
        (root / "meta.json").write_text("{not json")
    else:
        np.save(root / "docs.npy", np.zeros(3, dtype=np.int64))
    with pytest.raises(IndexMismatchError, match=r"damaged|no BM25"):
        BM25Index.load(root, STAMP)


def test_an_empty_collection_builds_saves_and_abstains(tmp_path):
    index = BM25Index.build_from_texts([])
    assert index.search("anything") == []
    index.save(tmp_path / "e", STAMP)
    assert BM25Index.load(tmp_path / "e", STAMP).search("anything") == []


def test_overlong_queries_are_refused():
    index = BM25Index.build_from_texts(DOCS)
    with pytest.raises(UsageError, match="limit"):
        index.search("dog " * 5000)


def test_invalid_parameters_name_the_valid_choices():
    with pytest.raises(UsageError, match="lucene"):
        BM25Params(method="bm26")
    with pytest.raises(UsageError, match="k1"):
        BM25Params(b=1.5)


@pytest.mark.parametrize("method", ["lucene", "robertson", "bm25+"])
def test_pruned_search_equals_exhaustive_scoring_on_random_queries(method):
    corpus = _random_corpus(4, n_docs=4000, vocab=600)
    index = BM25Index.build(corpus, Analyzer.preset("simple"), BM25Params(method=method))
    rng = random.Random(5)
    vocab = [f"w{i}" for i in range(600)]
    for _ in range(150):
        query = rng.sample(vocab[:8], rng.randint(0, 2)) + rng.sample(vocab, rng.randint(1, 4))
        for k in (1, 10, 37, 150):
            assert index.search_terms(query, top_k=k) == _brute_force(index, query, k), (query, k)


ARRAYS = ("indptr", "docs", "scores", "tfs", "doc_lengths", "term_hashes", "term_offsets")


def _same_index(a, b):
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert bytes(a._blob) == bytes(b._blob)
    assert (a.n_docs_nonempty, a.avgdl) == (b.n_docs_nonempty, b.avgdl)


def test_batch_size_and_key_width_never_change_the_index(monkeypatch):
    texts = DOCS * 7 + ["\u6771\u4eac\u90fd dogs", "", "x", "fox\u2014dogs e.g. 3.14"] * 3
    one_batch = BM25Index.build_from_texts(texts)
    monkeypatch.setattr(Builder, "BATCH_DOCS", 3)
    _same_index(one_batch, BM25Index.build_from_texts(texts))
    monkeypatch.setattr(Builder, "KEY_LIMIT", 1)  # int64 (term, doc) keys
    _same_index(one_batch, BM25Index.build_from_texts(texts))
    monkeypatch.setattr(Builder, "BATCH_CHARS", 50)
    _same_index(one_batch, BM25Index.build_from_texts(texts))


def test_texts_and_term_lists_can_be_mixed_in_one_corpus(monkeypatch):
    analyzer = Analyzer()
    mixed = [d if i % 2 else analyzer.analyze(d) for i, d in enumerate(DOCS * 3)]
    monkeypatch.setattr(Builder, "BATCH_DOCS", 4)
    _same_index(BM25Index.build(mixed, analyzer), BM25Index.build_from_texts(DOCS * 3))


def test_term_frequencies_beyond_two_bytes_are_kept_exactly():
    index = BM25Index.build([["a"] * 70_000 + ["b"], ["b"]], Analyzer.preset("simple"))
    assert index.tfs.dtype == np.uint32
    assert [p.tf for p in index.explain("a b", 0)] == [70_000, 1]


def test_in_place_lucene_scores_equal_the_reference_formula_bit_for_bit():
    rng = np.random.default_rng(3)
    df = rng.integers(1, 50, size=200)
    docs = rng.integers(0, 500, size=int(df.sum())).astype(np.int32)
    tfs = rng.integers(1, 3000, size=len(docs)).astype(np.uint16)
    dl = length_lucene_byte(rng.integers(1, 5000, size=500))
    avgdl = float(dl.mean())
    idf = idf_lucene(np.repeat(df, df).astype(np.float64), 500)
    expected = score_lucene_float32(idf, tfs, dl.astype(np.int32)[docs], avgdl, 0.9, 0.4)
    got = lucene_scores(df, dl, docs, tfs, 500, avgdl, 0.9, 0.4)
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32),
                                                      expected.view(np.uint32))


@pytest.mark.parametrize("kernel", ["compiled", "python"])
def test_the_vocabulary_is_ordered_by_crc32_then_by_term(kernel, monkeypatch):
    if kernel == "python":  # the lookup without the C extension: bisect in Python
        monkeypatch.setenv("GROUNDKIT_BM25_KERNEL", "numpy")
    words = ["plumless", "buckeroo", "codding", "gnu", "zebra", "dog", "café", "日本"]
    index = BM25Index.build([words], Analyzer.preset("simple"))  # two CRC-32 collisions above
    assert (index._compiled is None) == (kernel == "python")
    terms = [index.term(i) for i in range(index.n_terms)]
    assert terms == sorted(words, key=lambda t: (zlib.crc32(t.encode()), t))
    assert [index.term_id(t) for t in terms] == list(range(len(terms)))
    assert [index._find_term(t) for t in ["plumles", "gnus", "", "cafe", "\udc80"]] == [-1] * 5
    with pytest.raises(UsageError, match="term_hash order"):
        BM25Index.from_postings(
            terms=terms[::-1], indptr=index.indptr, docs=index.docs, tfs=index.tfs,
            doc_lengths=index.doc_lengths.astype(np.int64), analyzer=Analyzer.preset("simple"),
            params=BM25Params())


def test_holds_says_which_terms_each_document_contains() -> None:
    rng = random.Random(4)
    vocabulary = [f"w{i}" for i in range(40)]
    docs = [rng.sample(vocabulary, 6) for _ in range(300)]
    index = BM25Index.build(docs, Analyzer(), BM25Params())
    terms = ["w1", "w7", "w39", "absent"]
    ids = [index.term_id(t) for t in terms]
    positions = [0, 17, 150, 299]
    expected = [[t in docs[p] for t in terms] for p in positions]
    assert index.holds(ids, positions) == expected
    assert [index.contains(ids[0], p) for p in positions] == [row[0] for row in expected]
