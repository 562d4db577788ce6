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
  terms making :data:`OVERLAP` of the shorter one's.

When their values of that kind differ, that is a :class:`Conflict`: each side is
listed with its values and its citation (the other document's span is cited too,
so a reader sees both), a superseded side marked with its evidence. Nothing is
dropped or merged; the answer itself is unchanged. Names (a default that changed
from one option to another) are not compared yet: only values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..text.analysis import Analyzer
from .model import Citation, Conflict, Passage, Side
from .sentences import units

OVERLAP = 0.6
MIN_SHARED = 2
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
    r"|(?P<version>\bv?\d+(?:\.\d+){2,}\b)"
    r"|(?P<number>(?<![\w.])\d+(?:[.,]\d+)?)(?:\s?(?P<unit>%|[A-Za-z]+\b))?",
    re.IGNORECASE)


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


def detect(question: str, cited: Sequence[Citation], passages: Sequence[Passage],
           analyzer: Analyzer) -> tuple[Conflict, ...]:
    """The conflicts between the ``cited`` spans and the other verified passages."""
    asked = set(analyzer.analyze(question))
    spans = [_span(c, analyzer) for c in cited]
    others = [_span(p.cite(u.start, u.end), analyzer) for p in passages if p.verified
              for u in units(p.text) if u.kind in QUOTABLE]
    found: list[Conflict] = []
    seen: set[frozenset[tuple[str, int, int]]] = set()
    for mine in spans:
        if not mine.values or not mine.context & asked:
            continue
        for theirs in others:
            conflict = _compare(mine, theirs, asked)
            pair = frozenset({_where(mine.citation), _where(theirs.citation)})
            if conflict is not None and pair not in seen:
                seen.add(pair)
                found.append(conflict)
    return tuple(found)


def _compare(mine: _Span, theirs: _Span, asked: set[str]) -> Conflict | None:
    if theirs.citation.path == mine.citation.path or not theirs.context & asked:
        return None
    about = _about(mine, theirs)
    if about is None:
        return None
    for kind in sorted(mine.values.keys() & theirs.values.keys()):
        if mine.values[kind] != theirs.values[kind]:
            return Conflict(about=about, kind=kind, sides=(
                Side(values=mine.shown[kind], citation=mine.citation),
                Side(values=theirs.shown[kind], citation=theirs.citation)))
    return None


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
    text = citation.text
    values: dict[str, set[str]] = {}
    shown: dict[str, list[str]] = {}
    for match in _VALUE.finditer(text):
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
    return _Span(citation, {k: frozenset(v) for k, v in values.items()},
                 {k: tuple(dict.fromkeys(v)) for k, v in shown.items()}, context, key)


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
