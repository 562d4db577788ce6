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
  separator row is none); a heading is one unit without its ``#`` marks.
* A table's header row (the row just above its ``|---|`` separator) is a ``header``
  unit, and each row below it carries the header's span as its ``context``, so a row
  such as ``| Deployment logs | 30 days |`` can be read, scored and shown with the
  column names it needs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

KINDS = ("sentence", "item", "row", "header", "heading", "code")

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_ITEM = re.compile(r"^(\s*)(?:[-*+]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")
_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_TABLE_SEPARATOR = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|[。！？．｡]+[」』）\]”’]*")
_ABBREVIATIONS = frozenset({
    "e.g", "i.e", "etc", "vs", "cf", "al", "approx", "dr", "mr", "mrs", "ms", "no", "nr",
    "fig", "figs", "eq", "ch", "sec", "vol", "pp", "st", "jr", "sr", "inc", "ltd", "co",
    "resp", "ca", "z.b", "usw", "bzw"})


@dataclass(frozen=True, slots=True)
class Unit:
    start: int
    end: int
    kind: str
    context: tuple[int, int] | None = None
    """A table row's header row ``(start, end)`` in the same text, if the text has it."""


def units(text: str) -> list[Unit]:
    """Every quotable unit of ``text``, in order (see the module docstring)."""
    return list(_tables(u for u in _blocks(text) if u.end > u.start))


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
        pending = Unit(unit.start, unit.end, "row", header)
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
        if paragraph:
            yield from _prose(text, paragraph[0][0], paragraph[-1][1])
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


def _prose(text: str, start: int, end: int) -> Iterator[Unit]:
    """The sentences of the paragraph ``text[start:end]``."""
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
