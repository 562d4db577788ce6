"""HTML: the visible text of a page, each run of it mapped to the bytes of the file.

The view is the text a reader sees. selectolax (lexbor) parses the page the way a
browser does, and a walk over its tree writes the text of the visible nodes:

- blocks (``p``, ``div``, ``section``, ``table``, ``h1``-``h6``, ``pre``, ``ul``, ...)
  are paragraphs, separated by a blank line; list items, ``dt``/``dd``, table rows,
  captions and options are lines; ``<br>`` is a line break;
- table cells of a row are separated by `` | `` (after a cell with text; an empty
  leading cell adds nothing). A *data table* (:mod:`.tables`: not ``role="presentation"``
  or ``"none"``, holding no other table, heading or verbatim element) keeps each row on
  one line: the blocks and ``<br>`` inside its cells are spaces; its rows are marked
  (:attr:`~groundkit.extract.base.TextView.tables`), the leading rows in ``<thead>`` or
  made of ``<th>`` cells as its header. In any other (layout) table the blocks inside a
  cell are lines of it and nothing is marked;
- whitespace is collapsed to one space outside ``<pre>``, ``<textarea>``, ``<xmp>``,
  ``<listing>`` and ``<plaintext>``, whose text is kept verbatim; character references
  are decoded (``&amp;`` is ``&``); U+00A0 is kept;
- not in the view: ``<head>``, ``<script>``, ``<style>``, ``<template>``,
  ``<iframe>``, ``<noscript>``, ``<noembed>``, ``<noframes>``, ``<datalist>``,
  comments, inline ``<svg>`` and ``<math>``; nor image ``alt`` texts, attributes, or
  what an element's own attributes hide (``hidden``, ``aria-hidden="true"``, an inline
  ``style`` of ``display: none`` or ``visibility: hidden``); a style sheet's rules are
  not applied, so what only a class hides is still read;
- navigation is in the view but marked as furniture (:mod:`.furniture`): a ``nav``, a
  ``header``, ``footer`` or ``aside`` outside ``article`` and ``main``, an ARIA role of
  navigation, banner, contentinfo or search, navigation classes such as DocBook's
  ``docnav``, and the classes Bootstrap's style sheets hide (``dropdown-menu``,
  ``sr-only``, ``visually-hidden``); an answer never quotes it;
- ``h1``-``h6`` are the outline: :class:`~groundkit.extract.base.Heading` entries at
  their text's offset, titled with their collapsed text. A page without any of them
  starts with its ``<title>``, as a level-1 heading; a page with headings has its title
  among them, or a title naming the site, so the title is left out.

A page without visible text has an empty view (the indexer has nothing to chunk); a
0-byte file, undecodable bytes (:mod:`.html_encoding`) and a view over
``Limits.max_view_chars`` are :class:`~groundkit.extract.base.ExtractError`.

Each run of the view has a :class:`~groundkit.extract.base.Segment` giving the raw
bytes of the file that hold it (a segment per text node and raw text run; character
references and collapsed whitespace included): decoded, unescaped and collapsed, those
bytes are exactly the run's text. :mod:`.html_map` finds them; text of malformed markup
it cannot place has no segment rather than a wrong one.
"""

from __future__ import annotations

import bisect
import importlib.util
import re
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Any

from ..errors import MissingDependencyError
from . import declared
from .base import ExtractError, Extractor, Heading, Limits, Segment, TextView
from .furniture import is_navigation, merged
from .html_encoding import decode_html
from .html_map import NON_WHITESPACE, WHITESPACE, Stream, align, raw_stream
from .tables import TableMarks, consistent

if TYPE_CHECKING:
    from selectolax.lexbor import LexborNode

OPTIONS = "v5"
"""Bumped whenever the view, its map or its marks could change for the same bytes (by
a change here, in :mod:`.html_map`, :mod:`.html_encoding`, :mod:`.furniture` or
:mod:`.tables`; v2: hidden attributes and inline styles, navigation marked; v3: a data
table's row is one line, its rows and header marked; v4: a row's trailing empty cells
add no `` | `` before the next row's text; v5: ``dropdown-menu``, ``sr-only`` and
``visually-hidden`` are navigation)."""

_WS_RUN = re.compile(r"[\t\n\f\r ]+")

# --- the tree walk -------------------------------------------------------------------

_TEXT, _BLOCK, _BR, _CELL, _OPEN, _CLOSE, _FURNITURE, _SPACE, _TABLE, _ROW = range(10)
_VISIBLE, _VERBATIM, _HIDDEN = range(3)
_Event = tuple[int, int, str]

_SKIPPED = frozenset(("script", "style", "iframe", "noembed", "noframes"))
"""Elements the walk does not enter: raw text, which the stream does not hold either."""
_HIDDEN_TAGS = frozenset(("head", "title", "svg", "math", "noscript", "datalist", "template"))
"""Elements whose text is walked (the stream holds it) but not shown."""
_VERBATIM_TAGS = frozenset(("pre", "listing", "xmp", "plaintext", "textarea"))
_LINE_TAGS = frozenset(("li", "dt", "dd", "tr", "caption", "figcaption", "summary", "legend",
                        "option", "optgroup", "thead", "tbody", "tfoot"))
_PARAGRAPH_TAGS = frozenset((
    "address", "article", "aside", "blockquote", "body", "center", "details", "dialog",
    "dir", "div", "dl", "fieldset", "figure", "footer", "form", "header", "hgroup", "hr",
    "html", "listing", "main", "menu", "nav", "ol", "p", "plaintext", "pre", "search",
    "section", "table", "textarea", "ul", "xmp", "h1", "h2", "h3", "h4", "h5", "h6",
))
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_NOT_IN_DATA_TABLES = "pre, listing, xmp, plaintext, textarea, h1, h2, h3, h4, h5, h6"
"""What makes a table a layout table (besides a nested table or a presentation role):
a cell that holds a heading or verbatim lines is a page's layout, not a row of data."""
_HEADER, _BODY = 1, 2
"""The values of a ``_ROW`` event that opens a row (0 closes it)."""


def _data_tables(root: LexborNode) -> tuple[frozenset[int], frozenset[int]]:
    """The ``mem_id`` of each data table (see the module) and of its leading header rows
    (in ``<thead>``, or made of ``<th>`` cells only)."""
    tables: set[int] = set()
    headers: set[int] = set()
    for table in root.css("table"):
        role = (table.attributes.get("role") or "").strip().casefold()
        if (role in ("presentation", "none") or table.css_first(_NOT_IN_DATA_TABLES)
                or any(inner.mem_id != table.mem_id for inner in table.css("table"))):
            continue
        tables.add(table.mem_id)
        for row in table.css("tr"):
            cells = [cell.tag for cell in row.iter() if cell.tag in ("td", "th")]
            in_head = row.parent is not None and row.parent.tag == "thead"
            if not (in_head or (cells and all(tag == "th" for tag in cells))):
                break
            headers.add(row.mem_id)
    return frozenset(tables), frozenset(headers)


@dataclass(slots=True)
class _Walker:
    """Turns the tree into a flat list of events: text (with its mode), breaks, cells
    and headings. ``title_id`` is the ``<title>`` to show as the level-1 heading, if any.
    """

    title_id: int | None
    data_tables: frozenset[int] = frozenset()
    header_rows: frozenset[int] = frozenset()
    events: list[_Event] = field(default_factory=list)
    rows: list[bool] = field(default_factory=list)
    """Open table rows: whether each has text yet (a cell after it gets a bar)."""
    bar: int = 0
    """The open row (its depth in :attr:`rows`) whose next text starts a cell after text
    of its own: a `` | `` comes before that text, if the row still has any (0: none)."""
    cells: int = 0
    """Open table cells: a block inside a cell is a line, not a paragraph."""
    data: bool = False
    """Inside a data table (they never nest)."""
    data_cells: int = 0
    """Open cells of the data table: a block inside one is a space."""

    # long: one iterative walk; the state saved per open element is what it changes
    def walk(self, root: LexborNode) -> list[_Event]:
        stack: list[tuple[LexborNode, str, int, int, int, int, bool, bool]] = []
        hidden = verbatim = furniture = content = 0
        node = root.first_child
        while True:
            if node is None:
                if not stack:
                    return self.events
                element, tag, hidden, verbatim, furniture, content, shown, marks = stack.pop()
                if shown:
                    self._leave(tag)
                if marks:
                    self.events.append((_FURNITURE, 0, ""))
                node = element.next
                continue
            tag = node.tag or ""
            if tag == "-text":
                self._text(node.text_content or "", hidden, verbatim)
            elif tag == "br":
                if not hidden:
                    self.events.append((_SPACE if self.data_cells else _BR, 0, ""))
            elif tag not in _SKIPPED and not tag.startswith(("-", "!")):
                saved = hidden, verbatim, furniture, content
                shown = tag == "title" and node.mem_id == self.title_id
                marks = False
                if shown:
                    hidden = 0
                    self.events.append((_OPEN, 1, ""))
                elif tag in _HIDDEN_TAGS or (not hidden and _hidden(attributes := node.attributes)):
                    hidden += 1
                elif not hidden:  # attributes were read once, just above
                    shown = True
                    verbatim += tag in _VERBATIM_TAGS
                    content += tag in ("article", "main")
                    if not furniture and is_navigation(tag, attributes, content > 0):
                        furniture, marks = 1, True
                        self.events.append((_FURNITURE, 1, ""))
                    self._enter(tag, node.mem_id)
                child = node.first_child if tag != "template" else _content(node)
                if child is not None:
                    stack.append((node, tag, *saved, shown, marks))
                    node = child
                    continue
                hidden, verbatim, furniture, content = saved
                if shown:
                    self._leave(tag)
                if marks:
                    self.events.append((_FURNITURE, 0, ""))
            node = node.next

    def _text(self, data: str, hidden: int, verbatim: int) -> None:
        if not data:
            return
        shown = not hidden and (verbatim or NON_WHITESPACE.search(data) is not None)
        if shown and self.bar:  # the text the builder writes next: the bar goes before it
            self.events.append((_CELL, 0, ""))
            self.bar = 0
        self.events.append((_TEXT, _HIDDEN if hidden else _VERBATIM if verbatim else _VISIBLE,
                            data))
        if not hidden and self.rows and not self.rows[-1] and NON_WHITESPACE.search(data):
            self.rows[-1] = True

    def _enter(self, tag: str, mem_id: int) -> None:
        if self.data_cells and (tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS):
            self.events.append((_SPACE, 0, ""))
        elif tag == "table" and mem_id in self.data_tables:
            self.data = True
            self.events.append((_BLOCK, 1 if self.cells else 2, ""))
            self.events.append((_TABLE, 1, ""))
        elif tag in _PARAGRAPH_TAGS:
            self.events.append((_BLOCK, 1 if self.cells else 2, ""))
            if tag in _HEADINGS:
                self.events.append((_OPEN, _HEADINGS[tag], ""))
        elif tag in _LINE_TAGS:
            self.events.append((_BLOCK, 1, ""))
            if tag == "tr":
                self.rows.append(False)
                if self.data:
                    self.events.append((_ROW, _HEADER if mem_id in self.header_rows else _BODY,
                                        ""))
        elif tag in ("td", "th"):
            self.cells += 1
            self.data_cells += self.data
            if self.rows and self.rows[-1]:
                self.bar = len(self.rows)

    def _leave(self, tag: str) -> None:
        if self.data_cells and (tag in _PARAGRAPH_TAGS or tag in _LINE_TAGS):
            self.events.append((_SPACE, 0, ""))
            return
        if tag == "table" and self.data:  # the data table itself: it holds no other
            self.data = False
            self.events.append((_TABLE, 0, ""))
        if tag in _HEADINGS or tag == "title":
            self.events.append((_CLOSE, 0, ""))
        if tag in _PARAGRAPH_TAGS or tag == "title":
            self.events.append((_BLOCK, 1 if self.cells else 2, ""))
        elif tag in _LINE_TAGS:
            self.events.append((_BLOCK, 1, ""))
            if tag == "tr" and self.rows:
                if self.bar == len(self.rows):  # its last cells were empty: no bar
                    self.bar = 0
                self.rows.pop()
                if self.data:
                    self.events.append((_ROW, 0, ""))
        elif tag in ("td", "th"):
            self.cells -= 1
            self.data_cells -= self.data


_HIDING_STYLE = re.compile(r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*"
                           r"(?:!\s*important\s*)?(?:;|$)", re.I)


def _hidden(attributes: dict[str, str | None]) -> bool:
    """Whether an element's own attributes hide it: ``hidden``, ``aria-hidden="true"``, or
    an inline style of ``display: none`` or ``visibility: hidden``. (A style sheet that
    hides it is not read: see docs/formats.md.)"""
    if "hidden" in attributes:
        return True
    if (attributes.get("aria-hidden") or "").strip().casefold() == "true":
        return True
    return bool(_HIDING_STYLE.search(attributes.get("style") or ""))


def _content(template: LexborNode) -> LexborNode | None:
    """The first node of a ``<template>``'s content, which lexbor keeps out of the tree."""
    fragments = template.template_fragments()
    return fragments[0].first_child if fragments else None


# --- the view ----------------------------------------------------------------------


@dataclass(slots=True)
class _Builder:
    """Writes the view: text with collapsed whitespace, breaks, segments, headings."""

    stream: Stream
    out: list[str] = field(default_factory=list)
    size: int = 0
    newlines: int = 0
    """How many line breaks the view ends with."""
    block: int = 0
    breaks: int = 0
    cell: bool = False
    space: bool = False
    segments: list[tuple[int, int, int, int]] = field(default_factory=list)
    open: list[list[int]] = field(default_factory=list)
    """Open headings: level, index in ``out`` and view offset of their first text."""
    headings: list[Heading] = field(default_factory=list)
    furniture: list[tuple[int, int, str]] = field(default_factory=list)
    navigation: int | None = None
    """Inside navigation: the view offset of its first text (-1 before it has any)."""
    tables: TableMarks = field(default_factory=TableMarks)
    row: int | None = None
    """Inside a data table's row: the view offset of its first text (-1 before any)."""
    header: bool = False
    """Whether that row is a header row."""

    def event(self, kind: int, value: int) -> None:
        if kind == _BLOCK:
            self.block = max(self.block, value)
        elif kind == _BR:
            self.breaks += 1
        elif kind == _CELL:
            self.cell = True
        elif kind == _SPACE:
            self.space = True
        elif kind == _TABLE:
            self.tables.open() if value else self.tables.close()
        elif kind == _ROW:
            if value:
                self.row, self.header = -1, value == _HEADER
            else:
                if self.row is not None and self.row >= 0:
                    self.tables.row(self.row, self.size, self.header)
                self.row = None
        elif kind == _OPEN:
            self.open.append([value, -1, -1])
        elif kind == _FURNITURE:
            if value:
                self.navigation = -1
            else:
                if self.navigation is not None and 0 <= self.navigation < self.size:
                    self.furniture.append((self.navigation, self.size, "navigation"))
                self.navigation = None
        elif kind == _CLOSE and self.open:
            level, index, start = self.open.pop()
            title = _WS_RUN.sub(" ", "".join(self.out[index:])).strip() if index >= 0 else ""
            if title:
                self.headings.append(Heading(start, level, title))

    def text(self, text: str, at: int, verbatim: bool) -> None:
        """Add a text node's ``text``, found at stream offset ``at`` (-1: not found)."""
        if at < 0:
            self._piece(text, -1, verbatim)
            return
        runs, end = self.stream.runs, at + len(text)
        i = bisect.bisect_right(runs, at) - 1
        k = at
        while k < end:
            stop = min(end, runs[i + 1]) if i + 1 < len(runs) else end
            if stop > k:
                self._piece(text[k - at:stop - at], k, verbatim)
            k, i = stop, i + 1

    def _piece(self, text: str, at: int, verbatim: bool) -> None:
        if verbatim:
            lead, tail, core = 0, len(text), text
        else:
            stripped = text.lstrip(WHITESPACE)
            if not stripped:
                self.space = True
                return
            core = stripped.rstrip(WHITESPACE)
            lead = len(text) - len(stripped)
            tail = lead + len(core)
            self.space = self.space or lead > 0
            core = _WS_RUN.sub(" ", core)
        self._prefix()
        start = self.size
        self._append(core)
        if at >= 0:
            self.segments.append((start, self.size, self.stream.source_start(at + lead),
                                  self.stream.source_end(at + tail - 1)))
        self.space = tail < len(text)

    def _prefix(self) -> None:
        breaks = max(self.block, self.breaks)
        if self.size:
            if self.cell:  # the next cell of a row that has text: its blocks are in it
                self._append(" | ")
            elif breaks:
                if breaks > self.newlines:
                    self._append("\n" * (breaks - self.newlines))
            elif self.space and self.out[-1][-1] not in WHITESPACE:
                self._append(" ")
        self.block = self.breaks = 0
        self.cell = self.space = False
        for heading in self.open:
            if heading[1] < 0:
                heading[1], heading[2] = len(self.out), self.size
        if self.navigation == -1:
            self.navigation = self.size
        if self.row == -1:
            self.row = self.size

    def _append(self, text: str) -> None:
        self.out.append(text)
        self.size += len(text)
        if text[-1] != "\n":
            self.newlines = 0
        else:
            kept = len(text.rstrip("\n"))
            self.newlines = self.newlines + len(text) if not kept else len(text) - kept


def markup_view(data: bytes, *, part: str | None = None, limits: Limits) -> TextView:
    """The text view of an HTML or XHTML document; ``part`` is set on every segment
    (the EPUB member the document is). Raises :class:`ExtractError` for an empty file,
    an undecodable one, or a view longer than ``limits.max_view_chars``."""
    from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser, SelectolaxError

    if not data:
        raise ExtractError("empty file")
    source = decode_html(data)
    try:
        parser = LexborHTMLParser(source.text, options=LexborDocumentOptions.WO_EVENTS)
    except (SelectolaxError, ValueError) as exc:
        raise ExtractError(f"unparsable HTML ({type(exc).__name__})") from None
    root = parser.root
    if root is None:
        return TextView("", "html")
    title = parser.head.css_first("title") if parser.head is not None else None
    has_heading = root.css_first("h1, h2, h3, h4, h5, h6") is not None
    shown = title.mem_id if title is not None and not has_heading else None
    events = _Walker(shown, *_data_tables(root)).walk(root)
    stream = raw_stream(source.text)
    texts = [e[2] for e in events if e[0] == _TEXT]
    places = iter(align("".join(stream.parts), texts))
    view = _Builder(stream)
    for kind, value, text in events:
        if kind == _TEXT:
            at = next(places)
            if value != _HIDDEN:
                view.text(text, at, value == _VERBATIM)
        else:
            view.event(kind, value)
    text = "".join(view.out)
    if len(text) > limits.max_view_chars:
        raise ExtractError(f"text view of {len(text)} characters exceeds the limit of "
                           f"{limits.max_view_chars}")
    offsets = source.byte_offsets([p for s in view.segments for p in s[2:]])
    segments = tuple(Segment(start, end, part, offsets[a], offsets[b])
                     for start, end, a, b in view.segments)
    headings = tuple(sorted(view.headings, key=lambda h: (h.start, h.level)))
    return TextView(text, "html", segments, headings, _declared(parser),
                    merged(view.furniture), tables=consistent(text, view.tables.marks, "html"))


def _declared(parser: Any) -> str:
    """What the page's ``<meta>`` and ``<link>`` elements say about its standing."""
    return declared.from_html((node.tag, node.attributes) for node in parser.css("meta, link"))


class HtmlExtractor:
    """HTML pages (and XHTML) read with selectolax's lexbor parser: see the module."""

    name = "html"
    library = "selectolax"
    extra = "html"
    suffixes: tuple[str, ...] = ("*.html", "*.htm", "*.xhtml")

    def available(self) -> bool:
        return importlib.util.find_spec("selectolax") is not None

    def identity(self) -> str:
        try:
            version = metadata.version("selectolax")
        except metadata.PackageNotFoundError:
            raise MissingDependencyError("selectolax", self.extra, "Extracting HTML") from None
        return f"{self.name}/selectolax={version};{OPTIONS}"

    def extract(self, data: bytes, limits: Limits) -> TextView:
        return markup_view(data, limits=limits)


EXTRACTORS: dict[str, Extractor] = {"html": HtmlExtractor()}
