"""Disagreement between sources, shown rather than averaged.

After an answer is chosen, each cited span is compared with the quotable units
(:mod:`.sentences`) of the other verified passages, from *other* documents. Two
spans are about the same thing when

* both hold a **value** of the same kind — a quantity with its unit (``30 days``,
  ``16MB``, ``5 min``, ``25%``, a bare number), a version (``4.6.2``), a date
  (``2024-03-14``, ``March 2024``) or a year;
* they share at least one of the question's terms; and
* what they say *around* the values matches: table rows with the same first cell
  (``| Deployment logs | … |``), or, otherwise, at least :data:`MIN_SHARED` content
  terms making :data:`OVERLAP` of the shorter one's. A bare number (no unit) counts
  only between table rows: in prose it is too often a code or a count of something
  else.

When their values of that kind differ, that is a :class:`Conflict`: each side is
listed with its values and its citation (the other document's span is cited too,
so a reader sees both), a superseded side marked with its evidence.

Without such a value, two spans that say almost the same thing in almost the same
words — :data:`SIMILAR` of their words in order, as :class:`difflib.SequenceMatcher`
matches them — but differ in a word or a name (``the default ort`` against ``git
merge-recursive is used``, ``psql -X`` against ``psql``, ``Head of Security`` against
``Head of Operations``) are the same sentence in two versions: a ``wording`` conflict,
each side listing the words only it has. This needs one of the two to be in a
superseded document: between current ones it is too often a template filled in
twice. Nothing is dropped or merged; the answer itself is unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any

from ..text.analysis import Analyzer
from .extractive import QUESTION_WORDS
from .model import Citation, Conflict, Passage, Side
from .sentences import units

OVERLAP = 0.6
MIN_SHARED = 3
SIMILAR = 0.6
"""How much of two spans' words, in order, must match for a ``wording`` conflict."""
MAX_SHOWN = 3
"""Differing stretches shown per side of a ``wording`` conflict."""
AROUND = 2
"""Units either side of a citation that are compared too, when they hold :data:`NEAR`
of the question's content terms (at least two)."""
NEAR = 0.5
_WORD = re.compile(r"[^\s|`*_>]+")
QUOTABLE = ("sentence", "item", "row", "code")
_UNITS = {
    "second": "s", "seconds": "s", "sec": "s", "secs": "s", "s": "s",
    "minute": "min", "minutes": "min", "min": "min", "mins": "min",
    "hour": "h", "hours": "h", "h": "h", "hrs": "h",
    "day": "day", "days": "day", "d": "day", "week": "week", "weeks": "week",
    "month": "month", "months": "month", "year": "year", "years": "year",
    "ms": "ms", "millisecond": "ms", "milliseconds": "ms",
    "b": "byte", "byte": "byte", "bytes": "byte", "kb": "kb", "kib": "kb", "k": "kb",
    "mb": "mb", "mib": "mb", "m": "mb", "gb": "gb", "gib": "gb", "g": "gb", "tb": "tb",
    "%": "%", "percent": "%",
}
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|"
           "november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_VALUE = re.compile(
    r"(?P<date>\b\d{4}-\d{2}-\d{2}\b)"
    rf"|(?P<month>\b(?:{_MONTHS})\.?\s+\d{{4}}\b)"
    r"|(?P<version>(?<![\w.\-/])v?\d+(?:\.\d+){2,}(?![\w\-/]))"
    r"|(?P<number>(?<![\w.\-/#])\d+(?:[.,]\d+)?(?![\w\-/]|\.\d))"
    r"(?:\s?(?P<unit>%|[A-Za-z]+\b))?",
    re.IGNORECASE)
"""Values; a number glued to a word, a hyphen or a slash (``UTF-8``, ``BL-5030``,
``CVE-2021-23017``, ``a/2``) is part of a name, not a value."""
_SECTION = re.compile(r"(?i)(?:section|chapter|§|ch\.|sect\.)\s*$")


@dataclass(frozen=True, slots=True)
class _Span:
    citation: Citation
    values: dict[str, frozenset[str]]
    """Value kind -> the values of that kind, normalised."""
    shown: dict[str, tuple[str, ...]]
    """Value kind -> the values as written."""
    context: frozenset[str]
    key: str
    """A table row's first cell, normalised ("" for other units)."""
    words: tuple[str, ...]
    """Its words, case folded, Markdown marks aside (for ``wording`` conflicts)."""


def detect(question: str, cited: Sequence[Citation], passages: Sequence[Passage],
           analyzer: Analyzer) -> tuple[Conflict, ...]:
    """The conflicts between the ``cited`` spans (each with up to :data:`AROUND` units
    either side of it in its passage, where a long answer continues) and the other
    verified passages."""
    asked = set(analyzer.analyze(question)) - set(analyzer.analyze(" ".join(QUESTION_WORDS)))
    by_number = {p.number: p for p in passages}
    near = _around(cited, by_number)
    spans = [_span(c, analyzer) for c in cited]
    nearby = [_span(c, analyzer) for c in near[len(cited):]]
    spans += [s for s in nearby if len(s.context & asked) >= max(2, NEAR * len(asked))]
    others = [_span(p.cite(u.start, u.end), analyzer) for p in passages if p.verified
              for u in units(p.text, p.chunk.furniture, p.chunk.tables) if u.kind in QUOTABLE]
    found: list[Conflict] = []
    seen: set[frozenset[tuple[str, int, int]]] = set()
    for mine in spans:
        if not mine.context & asked:
            continue
        for theirs in others:
            conflict = _compare(mine, theirs, asked)
            pair = frozenset({_where(mine.citation), _where(theirs.citation)})
            if conflict is not None and pair not in seen:
                seen.add(pair)
                found.append(conflict)
    return tuple(found)


def _around(cited: Sequence[Citation], passages: dict[int, Passage]) -> list[Citation]:
    """Each citation, then the units next to it in its passage (once each, in order)."""
    out = list(cited)
    for c in cited:
        passage = passages.get(c.passage)
        if passage is None:
            continue
        found = [u for u in units(passage.text) if u.kind in QUOTABLE]
        offset = c.start - passage.chunk.start
        at = next((i for i, u in enumerate(found) if u.start <= offset < u.end), None)
        if at is not None:
            out += [passage.cite(u.start, u.end)
                    for u in found[max(0, at - AROUND):at + AROUND + 1] if u is not found[at]]
    return list({_where(c): c for c in out}.values())


def _compare(mine: _Span, theirs: _Span, asked: set[str]) -> Conflict | None:
    if theirs.citation.path == mine.citation.path or not theirs.context & asked:
        return None
    about = _about(mine, theirs)
    if about is None:
        return None
    kinds = mine.values.keys() & theirs.values.keys()
    if not (mine.key and theirs.key):
        kinds -= {"number"}  # a bare number says what it counts only in a table's column
    for kind in sorted(kinds):
        if mine.values[kind] != theirs.values[kind]:
            return Conflict(about=about, kind=kind, sides=(
                Side(values=mine.shown[kind], citation=mine.citation),
                Side(values=theirs.shown[kind], citation=theirs.citation)))
    return None if kinds else _reworded(mine, theirs)


def _reworded(mine: _Span, theirs: _Span) -> Conflict | None:
    """A ``wording`` conflict: the same sentence in two versions (see the module), one of
    them in a superseded document (between two current ones a changed word is too often
    another topic in the same template: two changelog lines, two table rows)."""
    if mine.words == theirs.words or (mine.citation.superseded is None) == (
            theirs.citation.superseded is None):
        return None
    matcher = SequenceMatcher(None, mine.words, theirs.words, autojunk=False)
    if matcher.ratio() < SIMILAR:
        return None
    ours: list[str] = []
    others: list[str] = []
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag != "equal" and _worded(mine.words[a0:a1] + theirs.words[b0:b1]):
            ours.append(" ".join(mine.words[a0:a1]) or "(nothing)")
            others.append(" ".join(theirs.words[b0:b1]) or "(nothing)")
    if not ours:
        return None
    block = max(matcher.get_matching_blocks(), key=lambda m: m.size)
    about = " ".join(mine.words[block.a:block.a + min(block.size, 8)])
    return Conflict(about=about, kind="wording", sides=(
        Side(values=tuple(ours[:MAX_SHOWN]), citation=mine.citation),
        Side(values=tuple(others[:MAX_SHOWN]), citation=theirs.citation)))


def _worded(words: Sequence[str]) -> bool:
    """Whether a differing stretch holds a word or a number (not only punctuation)."""
    return any(any(ch.isalnum() for ch in w) for w in words)


def _about(a: _Span, b: _Span) -> str | None:
    """What two spans are both about, or ``None`` when they are about different things."""
    if a.key and b.key:
        return a.key if a.key == b.key else None
    shared = a.context & b.context
    if len(shared) >= MIN_SHARED and len(shared) >= OVERLAP * min(len(a.context),
                                                                  len(b.context)):
        return ", ".join(sorted(shared))
    return None


def _span(citation: Citation, analyzer: Analyzer) -> _Span:
    return _Span(citation, *_read(citation.text, analyzer))


@lru_cache(maxsize=16_384)  # an answer reads every unit of its passages; passages recur
def _read(text: str, analyzer: Analyzer) -> tuple[Any, ...]:
    """A span's values, values as written, context words, row key and words (the fields
    of :class:`_Span` after its citation): they depend on its text alone."""
    values: dict[str, set[str]] = {}
    shown: dict[str, list[str]] = {}
    for match in _VALUE.finditer(text):
        if _SECTION.search(text, 0, match.start()) or not text[:match.start()].strip(" |#*-"):
            continue  # a section number, or a number opening the unit (a list or heading)
        kind, value = _value(match)
        values.setdefault(kind, set()).add(value)
        written = match.group() if kind != "number" else match.group("number")
        shown.setdefault(kind, []).append(" ".join(written.split()))
    blanked = _VALUE.sub(" ", text)
    context = frozenset(t for t in analyzer.analyze(blanked) if not t.isdigit())
    key = ""
    if text.lstrip().startswith("|"):
        cells = [c.strip() for c in text.strip().strip("|").split("|")]
        key = " ".join(cells[0].split()).casefold() if cells else ""
    words = tuple(w.strip(".,;:()\"'").casefold() or w for w in _WORD.findall(text))
    return ({k: frozenset(v) for k, v in values.items()},
            {k: tuple(dict.fromkeys(v)) for k, v in shown.items()}, context, key, words)


def _value(match: re.Match[str]) -> tuple[str, str]:
    """``(kind, normalised value)`` of one value found in a span."""
    if match.group("date"):
        return "date", match.group("date")
    if match.group("month"):
        return "date", " ".join(match.group("month").casefold().replace(".", "").split())
    if match.group("version"):
        return "version", match.group("version").lstrip("vV")
    number = match.group("number").replace(",", ".")
    unit = _UNITS.get((match.group("unit") or "").casefold())
    if unit is None and len(number) == 4 and number.isdigit() and 1900 <= int(number) <= 2100:
        return "year", number
    return unit or "number", f"{float(number):g}"


def _where(c: Citation) -> tuple[str, int, int]:
    return (c.path, c.start, c.end)
