from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.retrieval import bm25_tokens
from groundkit.retrieval.bm25_tokens import ChunkTerms, batch_term_ids, chunk_batch
from groundkit.text.analysis import Analyzer, token_pattern

ANALYZERS = [
    Analyzer(),
    Analyzer.preset("simple"),
    Analyzer(lowercase=False),
    Analyzer(cjk="unigram", stemmer="english"),
]
JOINER_HEAVY = st.text(alphabet="aZ9_:'.,;-x ", max_size=60)
ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=200)
ANY = st.text(alphabet=st.characters(codec="utf-8"), max_size=120)
MIXED = st.one_of(ANY, JOINER_HEAVY, ASCII, st.text(alphabet="東京都é’—\u00a0a.'1 ", max_size=40))


def _per_text_terms(texts, analyzer, chunks=None):
    term_ids = {} if chunks is None else chunks.term_ids
    chunks = chunks or ChunkTerms(analyzer, term_ids)
    tids, docs = batch_term_ids(texts, chunks, analyzer.lowercase)
    names = list(term_ids)
    return [Counter(names[t] for t in tids[docs == i]) for i in range(len(texts))]


@pytest.mark.parametrize("analyzer", ANALYZERS, ids=lambda a: a.identity)
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(MIXED, max_size=6))
def test_a_batch_gives_each_text_exactly_the_terms_analyze_gives(analyzer, texts):
    expected = [Counter(analyzer.analyze(t)) for t in texts]
    assert _per_text_terms(texts, analyzer) == expected


@settings(max_examples=300, deadline=None)
@given(text=st.one_of(ASCII, JOINER_HEAVY))
def test_ascii_chunks_are_exactly_the_unicode_tokenisers_tokens(text):
    for lowercase in (True, False):
        chunks = [c.decode() for c in chunk_batch([text], lowercase) if c != b"\x01"]
        expected = token_pattern().findall(text.lower() if lowercase else text)
        assert [c for c in chunks if c.strip("_")] == expected


def test_joiners_follow_uax29_between_letters_and_between_digits():
    text = "Don't U.S.A. 3.14 1,000.5 a:b 1:2 a,b x'1 __x__ e.g. it's"
    chunks = [c.decode() for c in chunk_batch([text], True)]
    assert chunks == ["\x01", "don't", "u.s.a", "3.14", "1,000.5", "a:b", "1", "2", "a", "b",
                      "x", "1", "__x__", "e.g", "it's", "\x01"]


def test_separator_bytes_inside_a_text_cannot_split_it_into_two_documents():
    texts = ["alpha\x01beta", "", "gamma \x01 delta", "\x01"]
    assert _per_text_terms(texts, Analyzer()) == [
        Counter(["alpha", "beta"]), Counter(), Counter(["gamma", "delta"]), Counter()]


def test_a_non_ascii_chunk_can_hold_several_terms_and_they_all_count():
    analyzer = Analyzer()
    chunks = ChunkTerms(analyzer, {})
    texts = ["fox\u2014dogs\u2014fox", "東京都 dogs", "plain dogs"]
    got = _per_text_terms(texts, analyzer, chunks)
    assert got == [Counter(analyzer.analyze(t)) for t in texts]
    assert got[0] == Counter({"fox": 2, "dog": 1}) and len(chunks.compounds) >= 2


def test_the_hot_table_only_caches_and_never_changes_a_term(monkeypatch):
    monkeypatch.setattr(ChunkTerms, "HOT_AFTER", 1)
    monkeypatch.setattr(ChunkTerms, "HOT_MAX", 6)
    analyzer = Analyzer()
    chunks = ChunkTerms(analyzer, {})
    batches = [["the dogs run", "dogs \u00e9t\u00e9 running"],
               ["run dogs run", "zebra \u00e9t\u00e9"], ["dogs", "running zebras"]]
    for texts in batches:
        assert _per_text_terms(texts, analyzer, chunks) == [
            Counter(analyzer.analyze(t)) for t in texts]
    assert len(chunks.hot) == 6


def test_releasing_the_tables_keeps_the_term_ids():
    term_ids = {}
    chunks = ChunkTerms(Analyzer(), term_ids)
    batch_term_ids(["dogs run"], chunks, True)
    chunks.release()
    assert len(chunks) == 0 and not chunks.hot and term_ids == {"dog": 0, "run": 1}


def test_separator_and_dropped_codes_are_reserved():
    assert (bm25_tokens.SEPARATOR, bm25_tokens.DROPPED) == (-2, -1)
    tids, docs = batch_term_ids(["the of and", "___ -- !!"], ChunkTerms(Analyzer(), {}), True)
    assert len(tids) == len(docs) == 0
    assert np.asarray(tids).dtype == np.int32
