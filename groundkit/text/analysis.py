"""Text analysis: raw text in, index terms out, the same way for documents and queries.

The default preset ``lucene-english`` reproduces Lucene's ``EnglishAnalyzer`` as
Anserini uses it for BEIR ("bm25-flat"): StandardTokenizer, EnglishPossessiveFilter,
LowerCaseFilter, StopFilter (Lucene's 33-word English set), PorterStemFilter.

Tokenisation approximates Unicode word segmentation (UAX #29), as Lucene's
StandardTokenizer does: a token is a run of letters, digits, combining marks and
underscores of any script; ``don't``, ``u.s.a``, ``3.14`` and ``1,000`` stay whole
(a mid-word ``'``/``.``/``:`` joins letters, a mid-number ``.``/``,``/``;`` joins
digits); everything else splits. Han, Hiragana, Katakana and Hangul runs become
overlapping character bigrams (a lone character stays a unigram), as Lucene's
CJKBigramFilter does, so CJK text is findable without a dictionary.

Stemming is :mod:`groundkit.text.porter` (Lucene's Porter by default).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import UsageError
from .porter import STEMMERS, load_bulk_stemmer, load_stemmer

MAX_QUERY_CHARS = 10_000
"""Queries longer than this are refused by :func:`check_query` (the caller decides)."""

TOKENIZER_VERSION = "uax29-approx-1"
"""Bumped whenever tokenisation changes, so persisted indexes are detected as stale."""

LUCENE_STOPWORDS = frozenset(
    {
        "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
        "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
        "these", "they", "this", "to", "was", "will", "with",
    }
)
"""Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET`` (33 words)."""

STOPWORD_LISTS: dict[str, tuple[frozenset[str], str]] = {
    "lucene": (LUCENE_STOPWORDS, "Lucene EnglishAnalyzer default set (33 words)"),
    "none": (frozenset(), "keep every token"),
}


def register_stopwords(name: str, words: frozenset[str], description: str) -> None:
    """Add a stopword list to :data:`STOPWORD_LISTS` (an analyzer may then name it).

    Lists whose words cannot ship with groundkit (Terrier's, say) are registered at
    run time by whoever loads them; registering a name again with other words is
    an error, so an analyzer's identity always means one list.
    """
    known = STOPWORD_LISTS.get(name)
    if known is not None and known[0] != words:
        raise UsageError(f"stopword list {name!r} is already registered with other words")
    STOPWORD_LISTS[name] = (frozenset(words), description)
CJK_MODES: dict[str, str] = {
    "bigram": "overlapping character bigrams, unigram when isolated (Lucene CJKBigramFilter)",
    "unigram": "one token per character",
}

_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303b\u3041-\u30fa"
    "\u30fc-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7af\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_MID_LETTER = ":'.\u00b7\u0387\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a"
_MID_NUM = ",;.'\u037e\u0589\u060c\u060d\u066c\u07f8\u2018\u2019\u2024\u2044\ufe10\ufe14\ufe50"
_MID_NUM += "\ufe52\ufe54\uff07\uff0c\uff0e\uff1b"
_APOSTROPHES = "'\u2019\uff07"
_CJK_SEARCH = re.compile(f"[{_CJK}]").search
_TOKEN_RE: re.Pattern[str] | None = None


def _mark_class() -> str:
    """Combining marks (Mn, Mc, Me) plus ZWNJ/ZWJ as a regex class body.

    Python's ``\\w`` omits marks, which would cut Devanagari or Arabic words apart.
    """
    ranges: list[str] = []
    start = -1
    category = unicodedata.category
    for cp in range(0x20001):
        is_mark = cp < 0x20000 and category(chr(cp))[0] == "M"
        if is_mark and start < 0:
            start = cp
        elif not is_mark and start >= 0:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(cp - 1))}")
            start = -1
    return "".join(ranges) + "\u200c\u200d\U000e0100-\U000e01ef"


def token_pattern() -> re.Pattern[str]:
    """The Unicode tokeniser regex (built on first use: it scans the marks)."""
    global _TOKEN_RE
    if _TOKEN_RE is None:
        marks = _mark_class()
        word, letter = f"[^\\W{_CJK}]", f"[^\\W\\d_{_CJK}]"
        body = f"(?:{word}+[{marks}]*)*"
        joins = (
            f"(?:[{_MID_LETTER}](?<=(?:{letter}|[{marks}])[{_MID_LETTER}])(?={letter}){body}"
            f"|[{_MID_NUM}](?<=\\d[{_MID_NUM}])(?=\\d){body})*"
        )
        _TOKEN_RE = re.compile(f"_*[^\\W_{_CJK}][{marks}]*{body}{joins}|[{_CJK}]+")
    return _TOKEN_RE


_ASCII_FINDALL = re.compile(
    r"[A-Za-z0-9_]*[A-Za-z0-9][A-Za-z0-9_]*"
    r"(?:[:'.](?<=[A-Za-z][:'.])(?=[A-Za-z])[A-Za-z0-9_]+"
    r"|[,;.'](?<=[0-9][,;.'])(?=[0-9])[A-Za-z0-9_]+)*"
).findall
"""The same tokeniser specialised to ASCII text (most passages): about 4x faster."""


def _cjk_grams(run: str, bigram: bool) -> list[str]:
    if not bigram or len(run) == 1:
        return list(run)
    return [run[i : i + 2] for i in range(len(run) - 1)]


def split_tokens(text: str, *, lowercase: bool = True, cjk: str = "bigram") -> list[str]:
    """Surface tokens of ``text`` (tokenised, lowercased, CJK n-grammed; not filtered)."""
    if lowercase:
        text = text.lower()
    if text.isascii():
        return _ASCII_FINDALL(text)  # type: ignore[no-any-return]
    if text.isalnum() and _CJK_SEARCH(text) is None:
        return [text]  # one word of letters and digits (every char \w, none CJK): one token
    tokens = token_pattern().findall(text)
    if _CJK_SEARCH(text) is None:
        return tokens
    out: list[str] = []
    for tok in tokens:
        if _CJK_SEARCH(tok[0]) is None:
            out.append(tok)
        else:
            out.extend(_cjk_grams(tok, cjk == "bigram"))
    return out


class _TermCache(dict[str, str]):
    """surface token -> index term ("" for a dropped token); fills itself on a miss."""

    __slots__ = ("_possessive", "_stem", "_stop")

    def __init__(self, possessive: bool, stop: frozenset[str], stem: Callable[[str], str]):
        super().__init__()
        self._possessive = possessive
        self._stop = stop
        self._stem = stem

    def __missing__(self, token: str) -> str:
        if len(self) > 2_000_000:
            self.clear()
        term = token
        if self._possessive and len(term) > 2 and term[-1] in "sS" and term[-2] in _APOSTROPHES:
            term = term[:-2]
        term = "" if term in self._stop else self._stem(term)
        self[token] = term
        return term


_CACHES: dict[str, _TermCache] = {}


def _choice(kind: str, value: str, registry: dict[str, Any]) -> None:
    if value not in registry:
        raise UsageError(
            f"unknown {kind} {value!r}; valid choices: {', '.join(sorted(registry))}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Analyzer:
    """How text becomes index terms. Documents and queries must share one analyzer.

    Build one from a preset with :meth:`preset`; ``identity`` is the string an
    index records so a query never runs through a different analyzer silently.
    """

    lowercase: bool = True
    possessive: bool = True
    stopwords: str = "lucene"
    stemmer: str = "porter"
    cjk: str = "bigram"

    def __post_init__(self) -> None:
        _choice("stopword list", self.stopwords, STOPWORD_LISTS)
        _choice("stemmer", self.stemmer, STEMMERS)
        _choice("CJK mode", self.cjk, CJK_MODES)

    @classmethod
    def preset(cls, name: str) -> Analyzer:
        """The analyzer a registry preset names (``UsageError`` lists the valid ones)."""
        _choice("analyzer preset", name, PRESETS)
        return PRESETS[name][0]

    @property
    def identity(self) -> str:
        """A stable string naming this exact analysis (tokeniser version included)."""
        return (
            f"{TOKENIZER_VERSION};lowercase={int(self.lowercase)};possessive="
            f"{int(self.possessive)};stopwords={self.stopwords};stemmer={self.stemmer};"
            f"cjk={self.cjk}"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Analyzer:
        known = {"lowercase", "possessive", "stopwords", "stemmer", "cjk"}
        unknown = set(data) - known
        if unknown:
            raise UsageError(f"unknown analyzer settings: {', '.join(sorted(unknown))}")
        return cls(**data)

    def term_cache(self) -> dict[str, str]:
        """The shared surface-token -> term mapping ("" = dropped); grows as it is used."""
        cache = _CACHES.get(self.identity)
        if cache is None:
            cache = _CACHES[self.identity] = _TermCache(
                self.possessive, STOPWORD_LISTS[self.stopwords][0], load_stemmer(self.stemmer)
            )
        return cache

    def new_term_cache(self) -> dict[str, str]:
        """A private surface-token -> term mapping (an index build uses and drops one)."""
        stop = STOPWORD_LISTS[self.stopwords][0]
        return _TermCache(self.possessive, stop, load_stemmer(self.stemmer))

    def new_bulk_terms(self) -> Callable[[list[str]], list[str]]:
        """A private function: surface tokens -> their index terms ("" = dropped), at once.

        Gives what :meth:`new_term_cache` gives token by token, without a cache (an
        index build analyses each distinct token once, in batches).
        """
        possessive, stop = self.possessive, STOPWORD_LISTS[self.stopwords][0]
        stem = load_bulk_stemmer(self.stemmer)

        def terms(tokens: list[str]) -> list[str]:
            if possessive:
                tokens = [t[:-2] if len(t) > 2 and t[-1] in "sS" and t[-2] in _APOSTROPHES
                          else t for t in tokens]
            stems = iter(stem([t for t in tokens if t not in stop]))
            return ["" if t in stop else next(stems) for t in tokens]

        return terms

    def split(self, text: str) -> list[str]:
        """Surface tokens before possessive removal, stopwords and stemming."""
        return split_tokens(text, lowercase=self.lowercase, cjk=self.cjk)

    def analyze(self, text: str) -> list[str]:
        """Index terms of ``text``, in order; repeated terms repeat. Never raises on text."""
        cache = self.term_cache()
        return [t for t in map(cache.__getitem__, self.split(text)) if t]


def check_query(query: str) -> str:
    """``query`` if it is a string of at most ``MAX_QUERY_CHARS``, else ``UsageError``."""
    if not isinstance(query, str):
        raise UsageError(f"a query must be a string, got {type(query).__name__}")
    if len(query) > MAX_QUERY_CHARS:
        raise UsageError(
            f"query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}. "
            "Shorten it or search for its key phrases."
        )
    return query


PRESETS: dict[str, tuple[Analyzer, str]] = {
    "lucene-english": (
        Analyzer(),
        "Lucene EnglishAnalyzer as in Anserini: possessive, lowercase, stopwords, Porter",
    ),
    "snowball-english": (
        Analyzer(stemmer="english"),
        "as lucene-english but with the Snowball English (Porter2) stemmer",
    ),
    "simple": (
        Analyzer(possessive=False, stopwords="none", stemmer="none"),
        "lowercase only: no stopwords, no stemming",
    ),
}
DEFAULT_PRESET = "lucene-english"
