"""Segmented BM25 answers exactly as a full build over its live documents (ADR-0025)."""

from __future__ import annotations

import random
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bm25_update import assert_same  # tests/retrieval is on the path

from groundkit.errors import UsageError
from groundkit.retrieval import bm25_segments
from groundkit.retrieval.bm25 import BM25Index, BM25Params
from groundkit.retrieval.bm25_merge import TieredPolicy, Tombstones, merged, tombstones
from groundkit.retrieval.bm25_segments import SegmentedBM25
from groundkit.text.analysis import Analyzer

ANALYZER = Analyzer.preset("lucene-english")
WORDS = ["alpha", "beta", "gamma", "delta", "running", "runs", "the", "E4012", "東京",
         "naïve", "fox's", "3.14", "zeta", "eta", "theta", "iota", "kappa", "lambda"]
QUERIES = ["alpha", "beta gamma", "running delta delta", "the zeta eta theta", "東京 naïve",
           "iota kappa lambda alpha", "nothing here", "run runs running"]


def _text(rng: random.Random, skew: float = 0.0) -> str:
    """A text of 0-30 words; ``skew`` favours the first words (statistics drift)."""
    n = rng.randint(0, 30)
    top = max(1, int(len(WORDS) * (1 - skew)))
    return " ".join(rng.choice(WORDS[:top]) for _ in range(n))


class Model:
    """The segments and, beside them, the texts of their documents (None: deleted)."""

    def __init__(self, texts: list[str], params: BM25Params) -> None:
        self.params = params
        self.pairs = [(BM25Index.build(texts, ANALYZER, params), Tombstones())]
        self.texts: list[list[str | None]] = [list(texts)]

    def delete(self, rng: random.Random, share: float, with_texts: bool) -> None:
        for i, (index, dead) in enumerate(self.pairs):
            docs = [d for d, t in enumerate(self.texts[i]) if t is not None
                    and rng.random() < share]
            if not docs:
                continue
            texts = [self.texts[i][d] or "" for d in docs] if with_texts else None
            self.pairs[i] = (index, tombstones(index, docs, texts, dead))
            for d in docs:
                self.texts[i][d] = None

    def add(self, texts: list[str]) -> None:
        self.pairs.append((BM25Index.build(texts, ANALYZER, self.params), Tombstones()))
        self.texts.append(list(texts))

    def merge(self, lo: int, hi: int) -> None:
        self.pairs[lo:hi] = [(merged(self.pairs[lo:hi]), Tombstones())]
        self.texts[lo:hi] = [[t for part in self.texts[lo:hi] for t in part if t is not None]]

    def live(self) -> list[str]:
        return [t for part in self.texts for t in part if t is not None]


def assert_same_hits(segmented: SegmentedBM25, full: BM25Index, k: int) -> None:
    positions = segmented.live_positions()
    for query in QUERIES:
        got = segmented.search(query, k)
        rank = np.searchsorted(positions, [p for p, _ in got]).tolist()
        assert positions[rank].tolist() == [p for p, _ in got]  # only live documents
        assert list(zip(rank, [s for _, s in got], strict=True)) == full.search(query, k), query


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["lucene", "bm25+", "robertson"]),
       st.sampled_from([0, 10**9]), st.sampled_from([0, 1024]), st.sampled_from([0, 8192]),
       st.booleans())
def test_random_edit_sequences_give_a_full_builds_hits(seed: int, method: str, exhaustive: int,
                                                       small: int, dense: int,
                                                       compiled: bool) -> None:
    """Every path: each segment its own part (``small`` 0) or small ones in the tail; large
    parts through their kernels (``exhaustive`` 0) or exhaustively, over a table of every
    document or the touched ones (``dense`` 0); candidates rescored in C or numpy."""
    rng = random.Random(seed)
    model = Model([_text(rng) for _ in range(rng.randint(1, 400))], BM25Params(method=method))
    kernel = bm25_segments.compiled_kernel() if compiled else None
    with mock.patch.object(bm25_segments, "EXHAUSTIVE_POSTINGS", exhaustive), \
            mock.patch.object(bm25_segments, "SMALL_DOCS", small), \
            mock.patch.object(bm25_segments, "DENSE_TOTALS", dense), \
            mock.patch.object(bm25_segments, "compiled_kernel", lambda: kernel):
        assert_same_hits(SegmentedBM25(model.pairs),
                         BM25Index.build(model.live(), ANALYZER, model.params), 5)
        for _ in range(rng.randint(1, 6)):
            step = rng.random()
            if step < 0.7:
                model.delete(rng, rng.choice([0.01, 0.1, 0.5]), with_texts=rng.random() < 0.5)
                model.add([_text(rng, skew=rng.random()) for _ in range(rng.randint(1, 30))])
            elif len(model.pairs) > 1:
                lo = rng.randrange(len(model.pairs) - 1)
                model.merge(lo, rng.randint(lo + 1, len(model.pairs)))
            live = model.live()
            if not live:
                continue
            full = BM25Index.build(live, ANALYZER, model.params)
            segmented = SegmentedBM25(model.pairs)
            assert segmented.n_live == len(live)
            for k in (1, 3, 10, 200):
                assert_same_hits(segmented, full, k)


@pytest.mark.parametrize(("small", "exhaustive"), [(0, 0), (1024, 100)])
def test_ties_keep_a_full_builds_order_where_stored_scores_are_exact(small: int,
                                                                     exhaustive: int) -> None:
    """Deleted documents re-added word for word leave every statistic as it was, so large
    segments answer from their stored scores; equal totals abound (repeated texts) and go
    to the lower position, across parts too: each re-added segment its own part, or all
    in the tail, scored exhaustively before the base (its equal totals lie at higher
    positions than the base's)."""
    rng = random.Random(5)
    texts = [_text(rng) for _ in range(30)] * 50
    model = Model(texts, BM25Params())
    for _ in range(3):
        gone = sorted(rng.sample(range(len(texts)), 25))
        index, dead = model.pairs[0]
        fresh = [d for d in gone if model.texts[0][d] is not None]
        model.pairs[0] = (index, tombstones(index, fresh, None, dead))
        model.add([model.texts[0][d] or "" for d in fresh])
        for d in fresh:
            model.texts[0][d] = None
    with mock.patch.object(bm25_segments, "EXHAUSTIVE_POSTINGS", exhaustive), \
            mock.patch.object(bm25_segments, "SMALL_DOCS", small):
        segmented = SegmentedBM25(model.pairs)
        part = segmented.parts[0]
        weights = segmented.weights([segmented.document_frequency("alpha")])
        spec = [(part.index.term_id("alpha"), 1, 0, weights[0])]
        assert segmented.own_weights(part, spec).tolist() == weights  # stored scores exact
        assert part.index.avgdl == segmented.stats.avgdl
        for k in (1, 2, 5, 40, 60):
            assert_same_hits(segmented, BM25Index.build(model.live(), ANALYZER), k)


def test_a_tie_with_a_later_part_goes_to_the_lower_position() -> None:
    """The base's best candidates by stored score are all deleted and re-added word for
    word in a later segment (the tail, scored first): its copies tie with the base's
    remaining ones, which lie lower and must win the tie."""
    texts = ["alpha beta"] * 200 + [f"gamma delta {i}" for i in range(1000)]
    base = BM25Index.build(texts, ANALYZER)
    gone = list(range(30))
    pairs = [(base, tombstones(base, gone)),
             (BM25Index.build(["alpha beta"] * 30, ANALYZER), Tombstones())]
    live = texts[30:] + ["alpha beta"] * 30
    with mock.patch.object(bm25_segments, "EXHAUSTIVE_POSTINGS", 100):
        segmented = SegmentedBM25(pairs)
        for k in (1, 5, 200):
            assert_same_hits(segmented, BM25Index.build(live, ANALYZER), k)
    assert segmented.search("alpha beta", 1)[0][0] == 30


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6), st.sampled_from(["lucene", "bm25+"]), st.sampled_from([0, 1024]))
def test_explain_holds_and_idf_are_a_full_builds(seed: int, method: str, small: int) -> None:
    rng = random.Random(seed)
    model = Model([_text(rng) for _ in range(rng.randint(1, 120))], BM25Params(method=method))
    for _ in range(rng.randint(1, 3)):
        model.delete(rng, 0.2, with_texts=False)
        model.add([_text(rng, skew=rng.random()) for _ in range(rng.randint(1, 20))])
    live = model.live()
    if not live:
        return
    full = BM25Index.build(live, ANALYZER, model.params)
    with mock.patch.object(bm25_segments, "SMALL_DOCS", small):
        segmented = SegmentedBM25(model.pairs)
    positions = segmented.live_positions()
    terms = sorted({t for q in QUERIES for t in ANALYZER.analyze(q)})
    ours = [segmented.term_id(t) for t in terms]
    theirs = [full.term_id(t) for t in terms]
    assert [t < 0 for t in ours] == [t < 0 for t in theirs]
    assert [segmented.idf(t) for t in ours] == [full.idf(t) for t in theirs]
    sample = sorted(rng.sample(range(len(live)), min(len(live), 15)))
    assert segmented.holds(ours, positions[sample].tolist()) == full.holds(theirs, sample)
    for query in QUERIES:
        for rank in sample:
            assert segmented.explain(query, int(positions[rank])) == full.explain(query, rank)


def test_a_deleted_position_is_explained_by_an_error_and_holds_nothing() -> None:
    index = BM25Index.build(["alpha beta", "alpha"], ANALYZER)
    segmented = SegmentedBM25([(index, tombstones(index, [0]))])
    tid = segmented.term_id("beta")
    assert tid == -1  # only the deleted document held it
    assert segmented.holds([segmented.term_id("alpha")], [0, 1]) == [[False], [True]]
    with pytest.raises(UsageError, match="not a live document"):
        segmented.explain("alpha", 0)
    with pytest.raises(UsageError, match="outside"):
        segmented.explain("alpha", 2)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_a_merge_is_array_for_array_a_full_build(seed: int) -> None:
    rng = random.Random(seed)
    model = Model([_text(rng) for _ in range(rng.randint(0, 60))], BM25Params())
    for _ in range(rng.randint(1, 4)):
        model.delete(rng, 0.3, with_texts=False)
        model.add([_text(rng) for _ in range(rng.randint(0, 20))])
    model.merge(0, len(model.pairs))
    assert_same(model.pairs[0][0], BM25Index.build(model.live(), ANALYZER, model.params))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10**6))
def test_the_bound_holds_for_every_document(seed: int) -> None:
    """No document's exact total exceeds :meth:`bound` applied to its stored total."""
    rng = random.Random(seed)
    model = Model([_text(rng) for _ in range(200)], BM25Params())
    model.delete(rng, rng.choice([0.05, 0.5]), with_texts=True)
    model.add([_text(rng, skew=0.8) for _ in range(rng.randint(1, 200))])
    with mock.patch.object(bm25_segments, "SMALL_DOCS", 0):
        segmented = SegmentedBM25(model.pairs)
    part = segmented.parts[0]
    for query in QUERIES:
        terms = list(dict.fromkeys(ANALYZER.analyze(query)))
        dfs = [segmented.document_frequency(t) for t in terms]
        spec = [(part.index.term_id(t), 1, d, w)
                for t, d, w in zip(terms, dfs, segmented.weights(dfs), strict=True)
                if part.index.term_id(t) >= 0 and d > 0]
        if not spec:
            continue
        stored = dict(part.index._kernels.top_k({t: 1 for t, *_ in spec}, part.index.n_docs))
        docs = np.array(sorted(stored), dtype=np.int64)
        exact = segmented._rescored(part, spec, docs)
        ratio, slack = segmented.bound(part, spec, segmented.own_weights(part, spec))
        assert np.all(exact <= ratio * np.array([stored[d] for d in docs.tolist()]) + slack)


def test_the_pruned_path_grows_its_candidates_until_the_bound_rules_the_rest_out() -> None:
    """Statistics far from the segment's own (most of it deleted, a skewed segment added):
    the first candidates do not suffice, and the answer is still a full build's."""
    rng = random.Random(7)
    model = Model([_text(rng) for _ in range(2000)], BM25Params())
    model.delete(rng, 0.6, with_texts=False)
    model.add([_text(rng, skew=0.9) for _ in range(300)])
    with mock.patch.object(bm25_segments, "SMALL_DOCS", 0):
        segmented = SegmentedBM25(model.pairs)
    calls = []
    kernels = segmented.segments[0]._kernels
    real = kernels.top_k

    def counting(weights: dict[int, int], k: int) -> list[tuple[int, float]]:
        calls.append(k)
        return real(weights, k)

    with mock.patch.object(bm25_segments, "EXHAUSTIVE_POSTINGS", 0), \
            mock.patch.object(kernels, "top_k", counting):
        assert_same_hits(segmented, BM25Index.build(model.live(), ANALYZER), 10)
    assert calls and max(calls) > 2 * 10 + 16


def test_tombstones_from_texts_equal_those_from_the_postings() -> None:
    rng = random.Random(3)
    texts = [_text(rng) for _ in range(80)]
    index = BM25Index.build(texts, ANALYZER)
    docs = [5, 2, 40, 79]
    a = tombstones(index, docs, [texts[d] for d in docs])
    b = tombstones(index, docs)
    wrong = tombstones(index, docs, ["alpha"] * 4)  # not what was indexed: postings used
    for x in (a, wrong):
        assert np.array_equal(x.docs, b.docs) and np.array_equal(x.terms, b.terms)
        assert np.array_equal(x.counts, b.counts)
    later = tombstones(index, [7], None, a)
    assert later.docs.tolist() == [2, 5, 7, 40, 79]
    with pytest.raises(UsageError, match="deleted before"):
        tombstones(index, [5], None, later)
    with pytest.raises(UsageError, match="lie in"):
        tombstones(index, [80])


def test_segments_must_agree_and_tombstones_must_fit() -> None:
    one = BM25Index.build(["alpha beta"], ANALYZER)
    other = BM25Index.build(["alpha"], ANALYZER, BM25Params(k1=1.2))
    with pytest.raises(UsageError, match="share"):
        SegmentedBM25([(one, Tombstones()), (other, Tombstones())])
    with pytest.raises(UsageError, match="names document 3"):
        SegmentedBM25([(one, Tombstones(docs=np.array([3])))])
    with pytest.raises(UsageError, match="ascending"):
        Tombstones(docs=np.array([2, 1]))
    for terms, counts in (([one.n_terms], [1]), ([0], [2])):  # a term it lacks; too many
        dead = Tombstones(docs=np.array([0]), terms=np.array(terms), counts=np.array(counts))
        with pytest.raises(UsageError, match="lacks"):
            SegmentedBM25([(one, dead)])


def test_the_policy_merges_ten_adjacent_segments_of_a_level_and_cascades() -> None:
    policy = TieredPolicy()
    assert policy.plan([100_000] + [50] * 9, [0] * 10) is None
    assert policy.plan([100_000] + [50] * 10, [0] * 11) == (1, 11)
    assert policy.plan([100_000] + [500] * 9 + [50] * 9, [0] * 19) is None
    assert policy.plan([100_000] + [500] * 10, [0] * 11) == (1, 11)
    assert policy.plan([300] + [2] * 13 + [24], [0] * 15) == (1, 14)  # not at the tail
    assert policy.plan([300] + [20] * 9 + [2] * 3 + [20], [0] * 14) == (1, 14)  # swept in
    assert policy.plan([1000, 10, 10], [300, 0, 0]) == (0, 1)  # over a quarter deleted
    assert [policy.level(n) for n in (0, 9, 10, 99, 100, 999, 1000)] == [0, 0, 1, 1, 2, 2, 3]


def test_the_compiled_rescoring_refuses_what_does_not_fit() -> None:
    kernel = bm25_segments.compiled_kernel()
    if kernel is None:
        pytest.skip("the C kernel is not built")
    index = BM25Index.build(["alpha beta", "alpha", "beta beta"], ANALYZER)
    ni = np.ones(3, dtype=np.float32)
    out = np.zeros(2)
    with pytest.raises(ValueError, match="ascend"):
        kernel.rescore(index.docs, index.tfs, ni, np.array([2, 1]), out, ((0, 1, 1.0, 1.0),))
    with pytest.raises(ValueError, match="outside"):
        kernel.rescore(index.docs, index.tfs, ni, np.array([0, 1]), out, ((0, 99, 1.0, 1.0),))
    with pytest.raises(ValueError, match="one per candidate"):
        kernel.rescore(index.docs, index.tfs, ni, np.array([0]), out, ())
