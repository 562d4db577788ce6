from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.retrieval import bm25_tokens
from groundkit.retrieval.bm25_tokens import (
    ChunkTerms,
    DictChunks,
    batch_term_ids,
    chunk_batch,
    chunk_buffer,
    compiled_table,
)
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
TABLES = [True, False]
"""Each test runs on the compiled chunk table and on the Python one."""
NOT_BUILT = "the compiled chunk table is not built (make venv builds it with the C compiler)"


def _per_text_terms(texts, analyzer, chunks=None, compiled=None):
    term_ids = {} if chunks is None else chunks.term_ids
    chunks = chunks or ChunkTerms(analyzer, term_ids, compiled=compiled)
    tids, docs = batch_term_ids(texts, chunks, analyzer.lowercase)
    names = list(term_ids)
    return [Counter(names[t] for t in tids[docs == i]) for i in range(len(texts))]


def test_the_compiled_table_is_built_and_chosen_unless_the_python_one_is_asked_for(
        monkeypatch):
    monkeypatch.delenv("GROUNDKIT_BM25_BUILD", raising=False)
    assert compiled_table() is not None, NOT_BUILT
    assert type(ChunkTerms(Analyzer(), {}).table).__name__ == "CompiledChunks"
    monkeypatch.setenv("GROUNDKIT_BM25_BUILD", "python")
    assert compiled_table() is None and type(ChunkTerms(Analyzer(), {}).table) is DictChunks
    with pytest.raises(RuntimeError, match="not built"):
        ChunkTerms(Analyzer(), {}, compiled=True)


@pytest.mark.parametrize("compiled", TABLES)
@pytest.mark.parametrize("analyzer", ANALYZERS, ids=lambda a: a.identity)
@settings(max_examples=150, deadline=None)
@given(texts=st.lists(MIXED, max_size=6))
def test_a_batch_gives_each_text_exactly_the_terms_analyze_gives(analyzer, compiled, texts):
    expected = [Counter(analyzer.analyze(t)) for t in texts]
    assert _per_text_terms(texts, analyzer, compiled=compiled) == expected


@settings(max_examples=200, deadline=None)
@given(batches=st.lists(st.lists(MIXED, max_size=5), min_size=1, max_size=4),
       raw=st.binary(max_size=80))
def test_both_tables_give_the_same_codes_and_term_ids_batch_after_batch(batches, raw):
    analyzer = Analyzer()
    tables = [ChunkTerms(analyzer, {}, compiled=c) for c in TABLES]
    for texts in batches:
        got = [t.lookup(chunk_buffer(texts, True)) for t in tables]
        assert got[0].tolist() == got[1].tolist()
    assert tables[0].term_ids == tables[1].term_ids and len(tables[0]) == len(tables[1])
    # any bytes, any whitespace: chunks cut exactly as bytes.split cuts them
    table = compiled_table()
    codes, positions, new = table.lookup(raw)
    assert new == list(dict.fromkeys(raw.split()))
    assert np.frombuffer(codes, np.int32).tolist() == [new.index(c) for c in raw.split()]
    assert np.frombuffer(positions, np.int32).tolist() == list(range(len(raw.split())))


def test_the_compiled_table_grows_and_keeps_every_code():
    table = compiled_table()
    words = [f"w{i}".encode() for i in range(50_000)]  # the table starts with 1,024 slots
    codes, _, new = table.lookup(b" ".join(words))
    assert new == words and np.frombuffer(codes, np.int32).tolist() == list(range(50_000))
    table.settle(np.arange(50_000, dtype=np.int32) * 3)
    codes, positions, new = table.lookup(b" ".join(reversed(words)) + b" fresh")
    assert new == [b"fresh"] and np.frombuffer(positions, np.int32).tolist() == [50_000]
    assert np.frombuffer(codes, np.int32)[:-1].tolist() == list(range(49_999 * 3, -1, -3))
    assert len(table) == 50_001


def test_the_compiled_table_refuses_a_lookup_before_the_last_is_settled():
    table = compiled_table()
    table.lookup(b"alpha beta")
    with pytest.raises(RuntimeError, match="settled"):
        table.lookup(b"gamma")
    with pytest.raises(ValueError, match="2 int32 codes"):
        table.settle(np.array([1], dtype=np.int32))
    table.settle(np.array([4, 5], dtype=np.int32))
    codes, positions, new = table.lookup(b"beta alpha")
    assert np.frombuffer(codes, np.int32).tolist() == [5, 4] and not positions and not new


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


@pytest.mark.parametrize("compiled", TABLES)
def test_separator_bytes_inside_a_text_cannot_split_it_into_two_documents(compiled):
    texts = ["alpha\x01beta", "", "gamma \x01 delta", "\x01"]
    assert _per_text_terms(texts, Analyzer(), compiled=compiled) == [
        Counter(["alpha", "beta"]), Counter(), Counter(["gamma", "delta"]), Counter()]


@pytest.mark.parametrize("compiled", TABLES)
def test_a_non_ascii_chunk_can_hold_several_terms_and_they_all_count(compiled):
    analyzer = Analyzer()
    chunks = ChunkTerms(analyzer, {}, compiled=compiled)
    texts = ["fox\u2014dogs\u2014fox", "東京都 dogs", "plain dogs"]
    got = _per_text_terms(texts, analyzer, chunks)
    assert got == [Counter(analyzer.analyze(t)) for t in texts]
    assert got[0] == Counter({"fox": 2, "dog": 1}) and len(chunks.compounds) >= 2


def test_the_hot_table_only_caches_and_never_changes_a_term(monkeypatch):
    monkeypatch.setattr(DictChunks, "HOT_AFTER", 1)
    monkeypatch.setattr(DictChunks, "HOT_MAX", 6)
    analyzer = Analyzer()
    chunks = ChunkTerms(analyzer, {}, compiled=False)
    batches = [["the dogs run", "dogs \u00e9t\u00e9 running"],
               ["run dogs run", "zebra \u00e9t\u00e9"], ["dogs", "running zebras"]]
    for texts in batches:
        assert _per_text_terms(texts, analyzer, chunks) == [
            Counter(analyzer.analyze(t)) for t in texts]
    assert len(chunks.table.hot) == 6


@pytest.mark.parametrize("compiled", TABLES)
def test_releasing_the_tables_keeps_the_term_ids(compiled):
    term_ids = {}
    chunks = ChunkTerms(Analyzer(), term_ids, compiled=compiled)
    batch_term_ids(["dogs run"], chunks, True)
    assert len(chunks) == 3  # the separator, dogs, run
    chunks.release()
    assert len(chunks) == 1 and term_ids == {"dog": 0, "run": 1}
    assert batch_term_ids(["run"], chunks, True)[0].tolist() == [1]


@pytest.mark.parametrize("compiled", TABLES)
def test_separator_and_dropped_codes_are_reserved(compiled):
    assert (bm25_tokens.SEPARATOR, bm25_tokens.DROPPED) == (-2, -1)
    tids, docs = batch_term_ids(["the of and", "___ -- !!"],
                                ChunkTerms(Analyzer(), {}, compiled=compiled), True)
    assert len(tids) == len(docs) == 0
    assert np.asarray(tids).dtype == np.int32


def test_an_index_built_with_either_table_is_the_same_file_for_file(tmp_path, monkeypatch):
    from pathlib import Path

    from groundkit.retrieval.bm25 import BM25Index
    from groundkit.retrieval.bm25_build import Builder

    docs = Path(__file__).resolve().parents[2] / "golden" / "v2" / "docs"
    texts = [p.read_text(encoding="utf-8") for p in sorted(docs.rglob("*")) if p.is_file()]
    passages = [t[i:i + 1000] for t in texts for i in range(0, len(t), 1000)]
    assert len(passages) > 1000 and any(not p.isascii() for p in passages)
    monkeypatch.setattr(Builder, "BATCH_DOCS", 97)  # many batches: codes settle across them
    saved = {}
    for compiled in TABLES:
        monkeypatch.setattr(bm25_tokens, "compiled_table",
                            compiled_table if compiled else lambda: None)
        out = tmp_path / str(compiled)
        BM25Index.build_from_texts(passages).save(out, {"test": 1})
        saved[compiled] = {p.name: p.read_bytes() for p in sorted(out.iterdir())}
    assert saved[True] == saved[False] and "terms.bin" in saved[True]
