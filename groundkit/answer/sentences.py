"""Cutting a passage into the units an extractive answer can quote, with exact offsets.

A unit is a sentence of prose, a Markdown list item, a table row, a heading or a
line of a fenced code block; its ``(start, end)`` index the passage's own text, so
``text[start:end]`` is exactly what gets cited. Rules:

* Blank lines end a paragraph; inside one a single line break is a soft wrap.
  ``\\r\\n`` and ``\\r`` count as line breaks like ``\\n`` and never end up inside a
  unit's edges.
* Prose splits after ``.``, ``!``, ``?`` or ``…`` (and any closing quotes or
  brackets) followed by whitespace, unless the word before is a known abbreviation
  (``e.g.``, ``i.e.``, ``etc.``, ``Dr.``, …), a single letter, or a number's
  decimal point; after ``。``, ``！``, ``？`` (and their full-width kin) it splits
  with no whitespace needed, as CJK text has none.
* A list item (``-``, ``*``, ``+``, ``1.``, ``1)``) is one unit without its marker,
  with its indented continuation lines; a table row is one unit (the ``|---|``
  separator row is none); a heading is one unit without its ``#`` marks, and so is a
  setext heading (a line underlined with ``===`` or ``---``: the underline is no unit)
  and an AsciiDoc or wiki heading (``== Title ==``).
* A table's header row (the row just above its ``|---|`` separator) is a ``header``
  unit, and each row below it carries the header's span as its ``context``, so a row
  such as ``| Deployment logs | 30 days |`` can be read, scored and shown with the
  column names it needs. An extracted table (a paragraph of lines with the same number
  of `` | `` cell separators, as HTML, DOCX and ODT views write a table) is read the
  same way, its first line the header.
* A table its extractor marked (a chunk's ``tables``, :mod:`groundkit.extract.tables`)
  is read from the mark instead: each line a row, the marked header rows ``header``
  units (an unmarked first row is a row), and a row whose header lies in an earlier
  chunk carries the header's text as ``header``.
* Page furniture (a chunk's ``furniture`` runs) is in no unit: a unit it cuts keeps the
  pieces on either side that hold a word, and a piece that does not open as a sentence
  does (a lower-case word, punctuation) at least :data:`CUT_WORDS` words, as does a unit
  standing alone between two runs; so a sentence that a site's menus cut after every
  keyword leaves no ``", "ca-file`` to quote.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

KINDS = ("sentence", "item", "row", "header", "heading", "code")

SHORT_LINE = 0.3
"""A line under this share of its paragraph's longest line ends a run of prose."""
LISTING_LINES = 4
"""Lines from which a paragraph without a sentence end is cut line by line."""
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_ATX_OTHER = re.compile(r"^\s{0,3}={1,6}\s+\S")
"""An AsciiDoc or MediaWiki heading (``== Title ==``), common in plain-text manuals."""
_UNDERLINE = re.compile(r"^\s{0,3}(?:=+|-+|~+|\^+)\s*$")
"""A setext (or reStructuredText) heading's underline: the line above is the heading."""
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|[。！？．｡]+[」』）\]”’]*")
_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "dr", "mr", "mrs", "ms", "no", "nr",
    "fig", "figs", "eq", "ch", "sec", "vol", "pp", "st", "jr", "sr", "inc", "ltd", "co",
    "resp", "ca", "z.b", "usw", "bzw"})


CUT_WORDS = 3
"""Words (whitespace-separated, each holding a letter or digit) that a piece of a unit
cut by furniture or a marked table, not opening as a sentence, must hold to be quoted."""


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    kind: str
    context: tuple[int, int] | None = None
    """A table row's header row ``(start, end)`` in the same text, if the text has it."""
    header: str = ""
    """A marked table row's header text when the header is not in the same text."""


def units(text: str, furniture: Sequence[tuple[int, int, str]] = (),
          tables: Sequence[tuple[int, int, int, str]] = ()) -> list[Unit]:
    """Every quotable unit of ``text``, in order (see the module docstring).

    ``furniture`` lists runs of ``text`` that are page furniture (``(start, end, kind)``,
    sorted): no unit holds any of it. A unit a run cuts through (a running header glued
    in front of a sentence, a footer inside one that crosses a page) keeps the pieces on
    either side that still hold a word; a unit wholly inside a run is gone. ``tables``
    are the marked tables of ``text`` (``(start, end, header_end, header)``, sorted).
    """
    return list(_units(text, tuple((a, b, kind) for a, b, kind in furniture),
                       tuple((a, b, h, header) for a, b, h, header in tables)))


@lru_cache(maxsize=2_048)  # passages recur: across an answer's steps, across questions
def _units(text: str, furniture: tuple[tuple[int, int, str], ...],
           tables: tuple[tuple[int, int, int, str], ...]) -> tuple[Unit, ...]:
    found = list(_tables(u for u in _blocks(text) if u.end > u.start))
    if tables:
        found = _marked(text, found, tables)
    if not furniture:
        return tuple(found)
    return tuple(piece for u in found for piece in _outside(text, u, furniture))


def _marked(text: str, found: list[Unit], tables: Sequence[tuple[int, int, int, str]]
            ) -> list[Unit]:
    """``found`` outside the marked tables, and each marked table's rows."""
    runs = [(a, b, "table") for a, b, _, _ in tables]
    kept = [piece for u in found for piece in _outside(text, u, runs)]
    for start, end, header_end, header in tables:
        context = (start, header_end) if header_end > start else None
        at = start
        while at < end:
            stop = text.find("\n", at, end)
            stop = end if stop < 0 else stop
            row = _trimmed(text, at, stop, "header" if stop <= header_end else "row")
            if row.end > row.start and row.kind == "header":
                kept.append(row)
            elif row.end > row.start:
                kept.append(Unit(row.start, row.end, "row", context,
                                 "" if context else header))
            at = stop + 1
    return sorted(kept, key=lambda u: u.start)


def _outside(text: str, unit: Unit, furniture: Sequence[tuple[int, int, str]]
             ) -> Iterator[Unit]:
    """The pieces of ``unit`` outside every furniture run, trimmed, each with its words:
    one if ``unit`` is whole and stands among text, :data:`CUT_WORDS` if a run cuts it or
    it stands alone between two runs (a menu after every keyword of a sentence)."""
    start = unit.start
    least = CUT_WORDS if _between(text, unit, furniture) else 1
    for a, b, _ in furniture:
        if b <= start or a >= unit.end:
            continue
        if a > start:
            yield from _worded(text, start, a, unit, CUT_WORDS)
        start = max(start, b)
        least = CUT_WORDS
    if start < unit.end:
        yield from _worded(text, start, unit.end, unit, least)


def _between(text: str, unit: Unit, furniture: Sequence[tuple[int, int, str]]) -> bool:
    """Whether only whitespace parts ``unit`` from a run before it and a run after it."""
    before = any(b <= unit.start and not text[b:unit.start].strip() for _, b, _ in furniture)
    return before and any(a >= unit.end and not text[unit.end:a].strip()
                          for a, _, _ in furniture)


def _worded(text: str, start: int, end: int, unit: Unit, least: int) -> Iterator[Unit]:
    """The trimmed piece ``[start, end)`` of ``unit`` if it holds a word (a
    whitespace-separated run with a letter or digit) and, unless it opens as a sentence
    does (a capital, a digit, a letter of a script without case), ``least`` of them."""
    piece = _trimmed(text, start, end, unit.kind)
    said = text[piece.start:piece.end]
    words = sum(any(ch.isalnum() for ch in w) for w in said.split())
    opens = bool(said) and said[0].isalnum() and not said[0].islower()
    if words >= (1 if opens else least):
        yield Unit(piece.start, piece.end, piece.kind, unit.context, unit.header)


def _tables(found: Iterator[Unit]) -> Iterator[Unit]:
    """Mark header rows and give the rows below a header its span as their context.
    :func:`_blocks` yields a separator row as an empty ``separator`` unit."""
    pending: Unit | None = None  # the row just before, which may be a header
    header: tuple[int, int] | None = None
    for unit in found:
        if unit.kind == "separator":
            if pending is not None:
                header = (pending.start, pending.end)
                yield Unit(pending.start, pending.end, "header")
                pending = None
            continue
        if pending is not None:
            yield pending
        if unit.kind != "row":
            pending, header = None, None
            yield unit
            continue
        pending = Unit(unit.start, unit.end, "row", unit.context or header)
    if pending is not None:
        yield pending


def _lines(text: str) -> Iterator[tuple[int, int, int]]:
    """``(start, content_end, next_start)`` of every line; content excludes the break."""
    for match in _LINE.finditer(text):
        start, stop = match.span()
        if start == stop == len(text) and start > 0:
            return
        content = match.group().rstrip("\r\n")
        yield start, start + len(content), stop
        if stop == len(text):
            return


# long: one pass over the lines, a small state machine (code fence, list item, paragraph)
def _blocks(text: str) -> Iterator[Unit]:
    paragraph: list[tuple[int, int]] = []
    item: list[tuple[int, int]] = []
    item_indent = 0
    in_code = False

    def flush() -> Iterator[Unit]:
        nonlocal paragraph, item
        if item:
            yield _trimmed(text, item[0][0], item[-1][1], "item")
        if _is_grid(text, paragraph):
            yield from _grid(text, paragraph)
        else:
            for first, last in _hard_wrapped(text, paragraph):
                yield from _prose(text, first, last)
        paragraph, item = [], []

    for start, end, _ in _lines(text):
        line = text[start:end]
        if _FENCE.match(line):
            yield from flush()
            in_code = not in_code
            continue
        if in_code:
            if line.strip():
                yield _trimmed(text, start, end, "code")
            continue
        if not line.strip():
            yield from flush()
        elif _HEADING.match(line):
            yield from flush()
            yield _trimmed(text, start + _HEADING.match(line).end(), end, "heading")  # type: ignore[union-attr]
        elif _ATX_OTHER.match(line):
            yield from flush()
            yield _trimmed(text, start, end, "heading")
        elif len(paragraph) == 1 and not item and _UNDERLINE.match(line):
            (first, last), paragraph = paragraph[0], []
            yield _trimmed(text, first, last, "heading")
        elif line.lstrip().startswith("|"):
            yield from flush()
            yield (Unit(start, start + 1, "separator") if _TABLE_SEPARATOR.match(line)
                   else _trimmed(text, start, end, "row"))
        elif (marker := _ITEM.match(line)) is not None:
            yield from flush()
            item, item_indent = [(start + marker.end(), end)], len(marker.group(1))
        elif item and len(line) - len(line.lstrip()) > item_indent:
            item.append((start, end))
        else:
            if item:
                yield from flush()
            paragraph.append((start, end))
    yield from flush()


def _is_grid(text: str, lines: list[tuple[int, int]]) -> bool:
    """Whether a paragraph is an extracted table: two lines or more, each with the same
    number (one or more) of `` | `` cell separators (HTML, DOCX and ODT views join a
    row's cells so)."""
    counts = {text.count(" | ", a, b) for a, b in lines}
    return len(lines) >= 2 and len(counts) == 1 and min(counts) > 0


def _grid(text: str, lines: list[tuple[int, int]]) -> Iterator[Unit]:
    """An extracted table: its first line the header, each other line a row with the
    header as its context (as a Markdown table's)."""
    header = _trimmed(text, *lines[0], "header")
    yield header
    for a, b in lines[1:]:
        row = _trimmed(text, a, b, "row")
        yield Unit(row.start, row.end, "row", (header.start, header.end))


def _hard_wrapped(text: str, lines: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    """The runs of a paragraph's lines that hold prose together: a line much shorter than
    the paragraph's longest (under :data:`SHORT_LINE` of it) that does not end in a
    comma or a hyphen ends its run. Text laid out in lines with no blank line between
    paragraphs (a PDF page) thus keeps a bare heading, a caption or a line of code from
    being glued to the sentence after it."""
    if len(lines) < 3:
        if lines:
            yield lines[0][0], lines[-1][1]
        return
    longest = max(len(text[a:b].strip()) for a, b in lines)
    first: int | None = None
    for a, b in lines[:-1]:
        first = a if first is None else first
        line = text[a:b].strip()
        if len(line) < SHORT_LINE * longest and not line.endswith((",", "-")):
            yield first, b
            first = None
    yield (lines[-1][0] if first is None else first), lines[-1][1]


def _prose(text: str, start: int, end: int) -> Iterator[Unit]:
    """The sentences of the paragraph ``text[start:end]``; a paragraph of
    :data:`LISTING_LINES` lines or more with no sentence end is a listing (a table or code
    laid out in lines, as a PDF gives them), one unit per line."""
    if text.count("\n", start, end) + 1 >= LISTING_LINES and not _END.search(text, start, end):
        for a, b, _ in _lines(text[start:end]):
            if text[start + a:start + b].strip():
                yield _trimmed(text, start + a, start + b, "sentence")
        return
    begin = start
    for match in _END.finditer(text, start, end):
        stop = match.end()
        if match.group()[0] == "." and not _really_ends(text, begin, match.start()):
            continue
        yield _trimmed(text, begin, stop, "sentence")
        begin = stop
    if begin < end:
        yield _trimmed(text, begin, end, "sentence")


def _really_ends(text: str, begin: int, dot: int) -> bool:
    """Whether the ``.`` at ``dot`` ends a sentence (not an abbreviation or initial)."""
    word = text[begin:dot].rsplit(None, 1)[-1] if text[begin:dot].strip() else ""
    word = word.lstrip("(\"'“‘[").lower()
    if len(word) == 1 and word.isalpha():
        return False  # an initial: "J. Smith"
    return word not in _ABBREVIATIONS


def _trimmed(text: str, start: int, end: int, kind: str) -> Unit:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return Unit(start, end, kind)
