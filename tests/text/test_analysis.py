import re

import pytest
import Stemmer
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.errors import UsageError
from groundkit.text.analysis import (
    DEFAULT_PRESET,
    LUCENE_STOPWORDS,
    MAX_QUERY_CHARS,
    PRESETS,
    Analyzer,
    check_query,
    split_tokens,
    token_pattern,
)
from groundkit.text.porter import porter_lucene

lucene = Analyzer.preset("lucene-english")


def test_the_default_preset_is_lucene_english():
    assert DEFAULT_PRESET == "lucene-english"
    assert Analyzer() == lucene


def test_lucene_stop_set_has_its_33_words_and_they_are_dropped():
    assert len(LUCENE_STOPWORDS) == 33
    assert lucene.analyze("the cat and the hat") == ["cat", "hat"]
    assert lucene.analyze("To be or not to be") == []


def test_possessive_s_is_removed_before_stemming():
    assert lucene.analyze("Einstein's theory") == ["einstein", "theori"]
    assert lucene.analyze("Einstein\u2019s theory") == ["einstein", "theori"]
    assert lucene.analyze("EINSTEIN'S") == ["einstein"]


def test_porter_stemming_conflates_inflections():
    assert lucene.analyze("running runs ran") == ["run", "run", "ran"]
    assert lucene.analyze("generalizations") == ["gener"]


def test_porter_follows_lucene_departures_from_the_published_algorithm():
    # Lucene's PorterStemmer keeps Porter's reference-code departures.
    assert porter_lucene("technology") == "technolog"  # -logi -> -log
    assert porter_lucene("possibly") == "possibl"  # -bli -> -ble, then -e dropped
    assert porter_lucene("as") == "as"  # words of two letters are not stemmed
    assert Stemmer.Stemmer("porter").stemWord("technology") == "technologi"


def test_lucene_porter_port_agrees_with_snowball_porter_where_no_departure_applies():
    snowball = Stemmer.Stemmer("porter")
    words = ["caresses", "ponies", "ties", "caress", "cats", "feed", "agreed", "disabled",
             "matting", "mating", "meeting", "milling", "messing", "meetings", "happy",
             "relational", "conditional", "rational", "valenci", "hesitanci", "digitizer",
             "conformabli", "radicalli", "differentli", "vileli", "analogousli", "vietnamization",
             "predication", "operator", "feudalism", "decisiveness", "hopefulness",
             "callousness", "formaliti", "sensitiviti", "triplicate", "formative", "formalize",
             "electriciti", "electrical", "hopeful", "goodness", "revival", "allowance",
             "inference", "airliner", "gyroscopic", "adjustable", "defensible", "irritant",
             "replacement", "adjustment", "dependent", "adoption", "homologou", "communism",
             "activate", "angulariti", "homologous", "effective", "bowdlerize", "probate",
             "rate", "cease", "controll", "roll", "sky", "dying", "yelling", "agreement"]
    for word in words:
        if "bl" not in word and "log" not in word:
            assert porter_lucene(word) == snowball.stemWord(word), word


def test_standard_tokenizer_keeps_apostrophes_dots_and_number_separators_inside_tokens():
    assert split_tokens("Don't stop U.S.A. now") == ["don't", "stop", "u.s.a", "now"]
    assert split_tokens("pi is 3.14, about 1,000.5 cm") == ["pi", "is", "3.14", "about",
                                                             "1,000.5", "cm"]
    assert split_tokens("see e.g. hello.world") == ["see", "e.g", "hello.world"]


def test_standard_tokenizer_splits_on_hyphens_and_keeps_underscored_identifiers():
    assert split_tokens("state-of-the-art __init__ foo_bar") == [
        "state", "of", "the", "art", "__init__", "foo_bar",
    ]
    assert split_tokens("___ -- !!") == []


def test_non_latin_scripts_tokenise_into_words():
    assert split_tokens("Ελληνικά κείμενα") == ["ελληνικά", "κείμενα"]
    assert split_tokens("Русский язык") == ["русский", "язык"]
    assert split_tokens("اللغة العربية") == ["اللغة", "العربية"]
    # Devanagari vowel signs and viramas are combining marks: the word stays whole.
    assert split_tokens("हिन्दी भाषा") == ["हिन्दी", "भाषा"]


def test_cjk_text_becomes_overlapping_bigrams_and_isolated_characters_unigrams():
    assert split_tokens("東京都") == ["東京", "京都"]
    assert split_tokens("猫 です") == ["猫", "です"]
    assert split_tokens("한국어") == ["한국", "국어"]
    assert split_tokens("東京都", cjk="unigram") == ["東", "京", "都"]


def test_cjk_text_is_found_by_a_query_in_the_same_script():
    from groundkit.retrieval.bm25 import BM25Index

    docs = ["東京都は日本の首都です", "北京是中国的首都", "서울은 한국의 수도입니다",
            "Paris is French"]
    index = BM25Index.build_from_texts(docs)
    assert index.search("日本の首都")[0][0] == 0
    assert index.search("中国首都")[0][0] == 1
    assert index.search("한국의 수도")[0][0] == 2


def test_ascii_fast_path_matches_the_unicode_tokeniser():
    text = "Don't U.S.A. 3.14 1,000 a:b __x__ x_1 9am it's e.g. a.5 5.a ' . , foo'bar"
    assert split_tokens(text) == token_pattern().findall(text.lower())
    assert split_tokens(text, lowercase=False) == token_pattern().findall(text)


def test_odd_queries_give_tokens_or_nothing_never_an_error():
    assert lucene.analyze("") == []
    assert lucene.analyze("   \t\n") == []
    assert lucene.analyze("the of and") == []
    assert lucene.analyze("?!.,;:()[]{}") == []
    assert lucene.analyze("x\x00y\x07z\x1b") == ["x", "y", "z"]
    assert len(lucene.analyze("word " * 2000)) == 2000


def test_queries_longer_than_the_limit_are_refused_with_the_limit_named():
    assert check_query("a" * MAX_QUERY_CHARS) == "a" * MAX_QUERY_CHARS
    with pytest.raises(UsageError, match=str(MAX_QUERY_CHARS)):
        check_query("a" * (MAX_QUERY_CHARS + 1))


def test_invalid_settings_name_the_valid_choices():
    with pytest.raises(UsageError, match="porter"):
        Analyzer(stemmer="krovetz")
    with pytest.raises(UsageError, match="lucene-english"):
        Analyzer.preset("nope")
    with pytest.raises(ValueError, match="none"):
        Analyzer(stopwords="french")


def test_presets_are_registered_with_descriptions():
    for name, (analyzer, description) in PRESETS.items():
        assert isinstance(analyzer, Analyzer) and description, name
    assert Analyzer.preset("simple").analyze("The Running") == ["the", "running"]
    assert Analyzer.preset("snowball-english").analyze("generously") == ["generous"]


def test_settings_round_trip_through_a_dict_and_identity_tells_them_apart():
    for analyzer, _ in PRESETS.values():
        assert Analyzer.from_dict(analyzer.to_dict()) == analyzer
    identities = {a.identity for a, _ in PRESETS.values()}
    assert len(identities) == len(PRESETS)
    with pytest.raises(UsageError, match="unknown analyzer settings"):
        Analyzer.from_dict({"lowercase": True, "colour": "red"})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_analyses_without_error_into_nonempty_terms(text):
    terms = lucene.analyze(text)
    assert all(isinstance(t, str) and t for t in terms)
    assert all(not re.search(r"\s", t) for t in terms)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=200))
def test_any_text_tokenises_the_same_way_with_or_without_the_ascii_fast_path(text):
    assert split_tokens(text) == _slow_split(text)


def _slow_split(text):
    from groundkit.text.analysis import _CJK_SEARCH, _cjk_grams

    out = []
    for tok in token_pattern().findall(text.lower()):
        if _CJK_SEARCH(tok[0]):
            out.extend(_cjk_grams(tok, True))
        else:
            out.append(tok)
    return out


WORDS = st.text(alphabet="ablogsy'\u2019S_1", min_size=0, max_size=12)


@pytest.mark.parametrize("preset", sorted(PRESETS))
@settings(max_examples=150, deadline=None)
@given(tokens=st.lists(WORDS, max_size=30))
def test_bulk_terms_equal_the_term_cache_token_by_token(preset, tokens):
    analyzer = Analyzer.preset(preset)
    cache = analyzer.new_term_cache()
    assert analyzer.new_bulk_terms()(tokens) == [cache[t] for t in tokens]


def test_bulk_terms_keep_lucene_porter_departures_and_short_words():
    terms = Analyzer().new_bulk_terms()
    assert terms(["technology", "possibly", "us", "the", "einstein's", "runs"]) == [
        "technolog", "possibl", "us", "", "einstein", "run"]
