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

Stemming ``porter`` is Lucene's PorterStemmer: the original algorithm with the
three departures of Porter's reference implementation (words of one or two
letters are left alone; ``-bli`` becomes ``-ble``; ``-logi`` becomes ``-log``).
PyStemmer's Snowball ``porter`` implements the published algorithm without them
(``biology`` -> ``biologi``, Lucene: ``biolog``), so words the departures can touch
go through :func:`porter_lucene`, a port of Lucene's code; the rest through PyStemmer.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from .errors import MissingDependencyError, UsageError

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
STEMMERS: dict[str, str] = {
    "porter": "Porter (1980) as in Lucene's PorterStemFilter",
    "english": "Snowball English (Porter2), PyStemmer",
    "none": "no stemming",
}
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


def _load_stemmer(name: str) -> Callable[[str], str]:
    if name == "none":
        return lambda word: word
    try:
        import Stemmer
    except ImportError as exc:  # pragma: no cover - PyStemmer is a core dependency
        raise MissingDependencyError("PyStemmer", "bm25", f"the {name!r} stemmer") from exc
    stemmer = Stemmer.Stemmer("english" if name == "english" else "porter")
    stemmer.maxCacheSize = 0  # our term cache is in front of it; its own costs 3 us a word
    if name == "english":
        return stemmer.stemWord  # type: ignore[no-any-return]
    snowball_porter = stemmer.stemWord

    def stem(word: str) -> str:
        if len(word) < 3:
            return word
        if "bl" in word or "log" in word:
            return porter_lucene(word)
        return snowball_porter(word)  # type: ignore[no-any-return]

    return stem


def _load_bulk_stemmer(name: str) -> Callable[[list[str]], list[str]]:
    """``_load_stemmer`` over a list at once (PyStemmer's ``stemWords``): the same stems."""
    if name == "none":
        return lambda words: list(words)
    import Stemmer

    stemmer = Stemmer.Stemmer("english" if name == "english" else "porter")
    stemmer.maxCacheSize = 0
    if name == "english":
        return stemmer.stemWords  # type: ignore[no-any-return]

    def stem_all(words: list[str]) -> list[str]:
        out: list[str] = stemmer.stemWords(words)
        for i in [i for i, w in enumerate(words) if len(w) < 3 or "bl" in w or "log" in w]:
            word = words[i]
            out[i] = word if len(word) < 3 else porter_lucene(word)
        return out

    return stem_all


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
                self.possessive, STOPWORD_LISTS[self.stopwords][0], _load_stemmer(self.stemmer)
            )
        return cache

    def new_term_cache(self) -> dict[str, str]:
        """A private surface-token -> term mapping (an index build uses and drops one)."""
        stop = STOPWORD_LISTS[self.stopwords][0]
        return _TermCache(self.possessive, stop, _load_stemmer(self.stemmer))

    def new_bulk_terms(self) -> Callable[[list[str]], list[str]]:
        """A private function: surface tokens -> their index terms ("" = dropped), at once.

        Gives what :meth:`new_term_cache` gives token by token, without a cache (an
        index build analyses each distinct token once, in batches).
        """
        possessive, stop = self.possessive, STOPWORD_LISTS[self.stopwords][0]
        stem = _load_bulk_stemmer(self.stemmer)

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


# --- Lucene's PorterStemmer (org.apache.lucene.analysis.en), ported --------------------

_STEP3 = {
    "a": (("ational", "ate"), ("tional", "tion")),
    "c": (("enci", "ence"), ("anci", "ance")),
    "e": (("izer", "ize"),),
    "l": (("bli", "ble"), ("alli", "al"), ("entli", "ent"), ("eli", "e"), ("ousli", "ous")),
    "o": (("ization", "ize"), ("ation", "ate"), ("ator", "ate")),
    "s": (("alism", "al"), ("iveness", "ive"), ("fulness", "ful"), ("ousness", "ous")),
    "t": (("aliti", "al"), ("iviti", "ive"), ("biliti", "ble")),
    "g": (("logi", "log"),),
}
_STEP4 = {
    "e": (("icate", "ic"), ("ative", ""), ("alize", "al")),
    "i": (("iciti", "ic"),),
    "l": (("ical", "ic"), ("ful", "")),
    "s": (("ness", ""),),
}
_STEP5 = {
    "a": ("al",), "c": ("ance", "ence"), "e": ("er",), "i": ("ic",), "l": ("able", "ible"),
    "n": ("ant", "ement", "ment", "ent"), "o": ("ion", "ou"), "s": ("ism",),
    "t": ("ate", "iti"), "u": ("ous",), "v": ("ive",), "z": ("ize",),
}


def _cons(w: str, i: int) -> bool:
    ch = w[i]
    if ch in "aeiou":
        return False
    if ch == "y":
        return i == 0 or not _cons(w, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    n, prev_vowel = 0, False
    for i in range(len(stem)):
        vowel = not _cons(stem, i)
        if prev_vowel and not vowel:
            n += 1
        prev_vowel = vowel
    return n


def _vowel_in(stem: str) -> bool:
    return any(not _cons(stem, i) for i in range(len(stem)))


def _double_c(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _cons(w, len(w) - 1)


def _cvc(w: str) -> bool:
    i = len(w) - 1
    if i < 2 or not _cons(w, i) or _cons(w, i - 1) or not _cons(w, i - 2):
        return False
    return w[i] not in "wxy"


def _replace(w: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, repl in rules:
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            return stem + repl if _measure(stem) > 0 else w
    return w


def _step1(w: str) -> str:
    if w.endswith("s"):
        if w.endswith("sses") or w.endswith("ies"):
            w = w[:-2]
        elif len(w) > 1 and w[-2] != "s":
            w = w[:-1]
    if w.endswith("eed"):
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _vowel_in(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _double_c(w):
                return w if w[-1] in "lsz" else w[:-1]
            return w + "e" if _measure(w) == 1 and _cvc(w) else w
    return w


def _step5(w: str) -> str:
    if len(w) < 2:
        return w
    for suffix in _STEP5.get(w[-2], ()):
        if w.endswith(suffix):
            stem = w[: len(w) - len(suffix)]
            if suffix == "ion" and not stem.endswith(("s", "t")):
                continue
            return stem if _measure(stem) > 1 else w
    return w


def porter_lucene(word: str) -> str:
    """Lucene's PorterStemmer on one lowercased word (departures included)."""
    if len(word) < 3:
        return word
    w = _step1(word)
    if w.endswith("y") and _vowel_in(w[:-1]):
        w = w[:-1] + "i"
    if len(w) > 1:
        w = _replace(w, _STEP3.get(w[-2], ()))
    w = _replace(w, _STEP4.get(w[-1], ()))
    w = _step5(w)
    if w.endswith("e"):
        m = _measure(w[:-1])
        if m > 1 or (m == 1 and not _cvc(w[:-1])):
            w = w[:-1]
    if w.endswith("l") and _double_c(w) and _measure(w) > 1:
        w = w[:-1]
    return w
