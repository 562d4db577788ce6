"""Stemmers: Lucene's Porter stemmer (ported), Snowball English, or none.

``porter`` is Lucene's PorterStemmer: the original algorithm with the three
departures of Porter's reference implementation (words of one or two letters
are left alone; ``-bli`` becomes ``-ble``; ``-logi`` becomes ``-log``).
PyStemmer's Snowball ``porter`` implements the published algorithm without them
(``biology`` -> ``biologi``, Lucene: ``biolog``), so words the departures can touch
go through :func:`porter_lucene`, a port of Lucene's code; the rest through PyStemmer.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import MissingDependencyError

STEMMERS: dict[str, str] = {
    "porter": "Porter (1980) as in Lucene's PorterStemFilter",
    "english": "Snowball English (Porter2), PyStemmer",
    "none": "no stemming",
}


def load_stemmer(name: str) -> Callable[[str], str]:
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


def load_bulk_stemmer(name: str) -> Callable[[list[str]], list[str]]:
    """``load_stemmer`` over a list at once (PyStemmer's ``stemWords``): the same stems."""
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
