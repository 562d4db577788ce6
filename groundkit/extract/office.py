"""DOCX and ODT: a word-processing document's paragraphs, each run tied to its XML bytes.

Parts read: DOCX ``word/document.xml`` (the body), then ``word/footnotes.xml`` and
``word/endnotes.xml`` when present; ODT ``content.xml``, whose inline notes are moved
after the body as DOCX's are. Left out: headers and footers (page furniture), comments
(``office:annotation``), tracked deletions and moved-from text, DOCX's ``mc:Fallback``
copies, ODT index templates, image titles and descriptions. Text boxes are kept, as
paragraphs of their own.

The text view: paragraphs (``w:p``; ``text:p``, ``text:h``) are separated by a blank
line, consecutive list items (a DOCX paragraph numbered directly or by its style; a
paragraph inside ``text:list``) by one newline; a table row is one line, its cells
separated by ``" | "`` (paragraphs in a cell by a space, nested tables flat in the
cell); a tab is ``"\\t"``, each line break ``"\\n"`` (a space inside a table cell, so a
row stays one line). Each outermost table's rows are marked
(:attr:`~groundkit.extract.base.TextView.tables`, :mod:`.tables`), its header the
leading rows with ``w:tblHeader`` (DOCX) or inside ``table:table-header-rows`` (ODT).
Separators are lazy: the strongest boundary pending between two pieces of text wins,
so empty paragraphs and cells add nothing and the view neither starts nor ends with one.
DOCX keeps ``w:t`` text as is; ODT collapses white space as ODF 1.2 section 6.1.2 says
(``text:s`` and ``text:tab`` are kept).

The source map: every run of text is a :class:`Segment` with ``part`` (the member) and
``byte_start``/``byte_end`` in that member's decompressed bytes, from the start of the
tag before the text to the end of the end tag after it: the whole ``w:t`` element in
DOCX, the text node with its neighbouring tags in ODT. The XML-unescaped slice always
contains the run. Headings: DOCX paragraphs whose style (resolved through
``word/styles.xml`` along ``w:basedOn``) is named ``heading N`` or ``Title`` or has an
outline level, or with their own ``w:outlineLvl``; ODT ``text:h`` at its outline level.

Parsing: defusedxml's ``DefusedXMLParser`` (expat) with a parser target that reads
expat's ``CurrentByteIndex`` at each tag, since ElementTree keeps no positions. DTDs,
entity declarations (billion laughs, quadratic blowup) and external references are
refused before anything expands; neither OOXML nor ODF uses a DTD. The container is
read through :class:`~groundkit.extract.zipsafe.SafeZip`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass, field, replace
from xml.etree.ElementTree import Element

from ..errors import MissingDependencyError
from . import declared
from .base import ExtractError, Extractor, Heading, Limits, Segment, TextView, join_views
from .tables import TableMarks, consistent
from .zipsafe import SafeZip, XmlWalker, walk_xml, xml_tree

ALGORITHM = "v2"
"""Bumped whenever the text view, its map or its marks would change for the same file
(v2: tables marked)."""

SPACE, CELL, LINE, PARA = 1, 2, 3, 4
"""Boundary strengths between two pieces of text; the strongest one pending wins."""
_SEPARATOR = {SPACE: " ", CELL: " | ", LINE: "\n", PARA: "\n\n"}

_W = ("{http://schemas.openxmlformats.org/wordprocessingml/2006/main}",
      "{http://purl.oclc.org/ooxml/wordprocessingml/main}")  # transitional, strict
_DOCX = {ns + local: local for ns in _W for local in (
    "p", "pPr", "pStyle", "numPr", "numId", "outlineLvl", "r", "t", "tab", "br", "cr", "tbl",
    "tc", "tr", "trPr", "tblHeader")}
_DOCX_SKIP = {"{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback",
              *(ns + "moveFrom" for ns in _W)}
_DOCX_PARTS = ("word/document.xml", "word/footnotes.xml", "word/endnotes.xml")
_HEADING_NAME = re.compile(r"(?i)heading ?([1-9])|title")

_TEXT = "{urn:oasis:names:tc:opendocument:xmlns:text:1.0}"
_TABLE = "{urn:oasis:names:tc:opendocument:xmlns:table:1.0}"
_SVG = "{urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0}"
_ODT_SKIP = {"{urn:oasis:names:tc:opendocument:xmlns:office:1.0}annotation",
             f"{_TEXT}note-citation", f"{_TEXT}tracked-changes", f"{_SVG}title", f"{_SVG}desc"}
_SPACES = re.compile(r"[ \t\r\n]+")
"""White space a heading title collapses (U+00A0 is kept, as in the view and in HTML)."""
_ODF_SPACE = " \t\r\n"
_ODF_GAP = re.compile(r"[ \t\r\n]{2,}|[\t\r\n]")
"""White space ODF collapses inside a text node: any run but a lone space."""


@dataclass(slots=True)
class _Block:
    """An open paragraph: what it is, where its text starts (view offset, piece index)."""

    heading: int | None = None
    item: bool = False
    start: int | None = None
    index: int = 0


@dataclass(slots=True)
class _Builder:
    """The text view of one XML member, assembled piece by piece with lazy separators."""

    format: str
    part: str
    limit: int
    cells: int = 0
    _pieces: list[str] = field(default_factory=list)
    _pos: int = 0
    _pending: int = 0
    _breaks: int = 0
    _blocks: list[_Block] = field(default_factory=list)
    _segments: list[Segment] = field(default_factory=list)
    _headings: list[Heading] = field(default_factory=list)
    tables: TableMarks = field(default_factory=TableMarks)
    _row: int | None = None
    """Inside an outermost table row: the view offset of its first text (-1: none yet)."""
    _header: bool = False
    """Whether that row is a header row."""

    @property
    def block(self) -> _Block | None:
        return self._blocks[-1] if self._blocks else None

    def boundary(self, level: int) -> None:
        if self.cells and level > CELL:
            level = SPACE  # a table row stays one line
        self._pending = max(self._pending, level)

    def line_break(self) -> None:
        """An explicit line break: several in a row are kept (a blank line in code)."""
        self._breaks = self._breaks + 1 if self._pending == LINE else 1
        self.boundary(LINE)

    def text(self, text: str, span: tuple[int, int] | None = None) -> None:
        """Append ``text``, mapped to bytes ``span`` of the member (or unmapped)."""
        block = self.block
        if not text:
            return
        if block is not None and block.start is None:
            self.boundary(LINE if block.item else PARA)
        if self._pending and self._pos:
            many = self._pending == LINE and self._breaks > 1
            self._append("\n" * self._breaks if many else _SEPARATOR[self._pending])
        self._pending = self._breaks = 0
        if block is not None and block.start is None:
            block.start, block.index = self._pos, len(self._pieces)
        if self._row == -1:
            self._row = self._pos
        if span is not None:
            self._segments.append(Segment(self._pos, self._pos + len(text), self.part, *span))
        self._append(text)

    def spaces(self, count: int) -> None:
        self.text(" " * min(count, self.limit - self._pos + 1))

    def _append(self, text: str) -> None:
        self._pieces.append(text)
        self._pos += len(text)
        if self._pos > self.limit:
            raise ExtractError(f"text view longer than {self.limit} characters")

    def open_table(self) -> None:
        self.tables.open()
        self.boundary(PARA)

    def close_table(self) -> None:
        self.tables.close()
        self.boundary(PARA)

    def open_row(self, header: bool = False) -> None:
        if self.tables.outermost:
            self._row, self._header = -1, header

    def header_row(self, header: bool) -> None:
        """Whether the open row is a header row (DOCX says so inside the row)."""
        if self.tables.outermost:
            self._header = header

    def close_row(self) -> None:
        if self.tables.outermost and self._row is not None:
            if self._row >= 0:
                self.tables.row(self._row, self._pos, self._header)
            self._row = None
        self.boundary(CELL if self.cells else LINE)

    def open_block(self, heading: int | None = None, item: bool = False) -> None:
        self._blocks.append(_Block(heading, item))

    def close_block(self) -> None:
        block = self._blocks.pop()
        if block.start is None:
            return
        title = _SPACES.sub(" ", "".join(self._pieces[block.index:])).strip(" ")
        if block.heading and title:
            self._headings.append(Heading(block.start, block.heading, title))
        self.boundary(LINE if block.item else PARA)

    def view(self) -> TextView:
        text = "".join(self._pieces)
        return TextView(text, self.format, tuple(self._segments),
                        tuple(sorted(self._headings, key=lambda h: h.start)),
                        tables=consistent(text, self.tables.marks, self.format))


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


Style = tuple[int | None, bool]
"""A paragraph style's heading level (``None``: body text) and whether it numbers."""


class _DocxWalker(XmlWalker):
    skip_tags = _DOCX_SKIP

    def __init__(self, data: bytes, out: _Builder, styles: dict[str, Style]) -> None:
        super().__init__(data)
        self.out, self.styles = out, styles

    def _under(self, *path: str) -> bool:
        """Whether the elements enclosing the current one are ``path``, innermost last."""
        above = [_DOCX.get(tag) for tag in self.stack[-1 - len(path):-1]]
        return above == list(path)

    def on_start(self, tag: str, attrib: dict[str, str]) -> None:
        name = _DOCX.get(tag)
        if name == "p":
            self.out.open_block()
        elif name == "t":
            self.capturing += 1
        elif name == "tc":
            self.out.cells += 1
        elif name == "tbl":
            self.out.open_table()
        elif name == "tr":
            self.out.open_row()
        elif name == "tblHeader" and self._under("tr", "trPr"):
            val = attrib.get(tag[:tag.find("}") + 1] + "val", "true")
            self.out.header_row(val.strip().casefold() not in ("false", "0", "off"))
        elif name in ("tab", "br", "cr") and self._under("r"):
            if name == "tab":
                self.out.text("\t")
            else:
                self.out.line_break()
        elif name in ("pStyle", "numId", "outlineLvl"):
            self._property(name, attrib.get(tag[:tag.find("}") + 1] + "val"))

    def _property(self, name: str, val: str | None) -> None:
        """A paragraph property (``w:pPr``) that makes it a heading or a list item."""
        block = self.out.block
        if block is None:
            return
        if name == "pStyle" and self._under("p", "pPr") and val is not None:
            block.heading, numbered = self.styles.get(val, (_heading_of(val), False))
            block.item = block.item or numbered
        elif name == "numId" and self._under("p", "pPr", "numPr"):
            block.item = val != "0"
        elif name == "outlineLvl" and self._under("p", "pPr"):
            level = _int(val, 9)
            block.heading = level + 1 if 0 <= level < 9 else None

    def on_end(self, tag: str) -> None:
        name = _DOCX.get(tag)
        if name == "p":
            self.out.close_block()
        elif name == "t":
            self.capturing -= 1
        elif name == "tc":
            self.out.cells -= 1
            self.out.boundary(CELL)
        elif name == "tr":
            self.out.close_row()
        elif name == "tbl":
            self.out.close_table()

    def on_text(self, text: str, span: tuple[int, int]) -> None:
        self.out.text(text, span)


def _heading_of(name: str) -> int | None:
    """The heading level a style name (or id) says: ``heading 2`` -> 2, ``Title`` -> 1."""
    found = _HEADING_NAME.fullmatch(name.strip())
    return None if found is None else int(found.group(1) or 1)


def _docx_styles(root: Element) -> dict[str, Style]:
    """Paragraph style id -> (heading level, numbered), inherited along ``w:basedOn``."""
    ns = root.tag[:root.tag.find("}") + 1]
    own: dict[str, tuple[str | None, int | None, bool | None]] = {}
    for style in root.iter(f"{ns}style"):
        sid = style.get(f"{ns}styleId")
        if style.get(f"{ns}type", "paragraph") != "paragraph" or sid is None:
            continue
        name, based = style.find(f"{ns}name"), style.find(f"{ns}basedOn")
        outline = style.find(f"{ns}pPr/{ns}outlineLvl")
        num = style.find(f"{ns}pPr/{ns}numPr/{ns}numId")
        level = _heading_of(sid if name is None else name.get(f"{ns}val", ""))
        if outline is not None:
            lvl = _int(outline.get(f"{ns}val"), 9)
            level = lvl + 1 if 0 <= lvl < 9 else 0  # 0: explicitly body text
        own[sid] = (None if based is None else based.get(f"{ns}val"), level,
                    None if num is None else num.get(f"{ns}val") != "0")
    resolved: dict[str, Style] = {}
    for sid in own:
        level, numbered, seen = None, None, set()
        cursor: str | None = sid
        while cursor in own and cursor not in seen and (level is None or numbered is None):
            seen.add(cursor)
            cursor, own_level, own_numbered = own[cursor]
            level = own_level if level is None else level
            numbered = own_numbered if numbered is None else numbered
        resolved[sid] = (level or None, bool(numbered))
    return resolved


class _OdtWalker(XmlWalker):
    skip_tags = _ODT_SKIP

    def __init__(self, data: bytes, body: _Builder, notes: _Builder) -> None:
        super().__init__(data)
        self.out, self.body, self.notes = body, body, notes
        self.lists = self.header_rows = 0

    def on_start(self, tag: str, attrib: dict[str, str]) -> None:
        if tag in (f"{_TEXT}p", f"{_TEXT}h"):
            level = max(1, _int(attrib.get(f"{_TEXT}outline-level"), 1))
            self.out.open_block(level if tag == f"{_TEXT}h" else None, self.lists > 0)
            self.capturing += 1
        elif tag == f"{_TEXT}list":
            self.lists += 1
        elif tag == f"{_TEXT}s":
            self.out.spaces(max(1, _int(attrib.get(f"{_TEXT}c"), 1)))
        elif tag == f"{_TEXT}tab":
            self.out.text("\t")
        elif tag == f"{_TEXT}line-break":
            self.out.line_break()
        elif tag == f"{_TABLE}table-cell":
            self.out.cells += 1
        elif tag == f"{_TABLE}table":
            self.out.open_table()
        elif tag == f"{_TABLE}table-header-rows":
            self.header_rows += 1
        elif tag == f"{_TABLE}table-row":
            self.out.open_row(self.header_rows > 0)
        elif tag == f"{_TEXT}note-body":
            self.out = self.notes
        elif tag.startswith(_TEXT) and tag.endswith("-source"):  # an index's templates
            self.skipping += 1

    def on_end(self, tag: str) -> None:
        if tag in (f"{_TEXT}p", f"{_TEXT}h"):
            self.out.close_block()
            self.capturing -= 1
        elif tag == f"{_TEXT}list":
            self.lists -= 1
        elif tag == f"{_TABLE}table-cell":
            self.out.cells -= 1
            self.out.boundary(CELL)
        elif tag == f"{_TABLE}table-row":
            self.out.close_row()
        elif tag == f"{_TABLE}table-header-rows":
            self.header_rows -= 1
        elif tag == f"{_TABLE}table":
            self.out.close_table()
        elif tag == f"{_TEXT}note-body":
            self.out = self.body

    def on_text(self, text: str, span: tuple[int, int]) -> None:
        if text[0] in _ODF_SPACE:
            self.out.boundary(SPACE)
        core = text.strip(_ODF_SPACE)
        for i, piece in enumerate(_ODF_GAP.split(core) if core else ()):
            if i:
                self.out.boundary(SPACE)
            self.out.text(piece, span)
        if text[-1] in _ODF_SPACE:
            self.out.boundary(SPACE)


class _OfficeExtractor:
    """What DOCX and ODT share: the library, its extra, the identity."""

    name = ""
    library = "defusedxml"
    extra = "office"
    suffixes: tuple[str, ...] = ()

    def available(self) -> bool:
        return importlib.util.find_spec("defusedxml") is not None

    def identity(self) -> str:
        if not self.available():
            raise MissingDependencyError(self.library, self.extra,
                                         f"Extracting {self.name.upper()}")
        return f"{self.name}/defusedxml={importlib.metadata.version('defusedxml')};{ALGORITHM}"


def _checked(view: TextView, limits: Limits) -> TextView:
    if len(view.text) > limits.max_view_chars:
        raise ExtractError(f"text view longer than {limits.max_view_chars} characters")
    return view


class DocxExtractor(_OfficeExtractor):
    name = "docx"
    suffixes: tuple[str, ...] = ("*.docx",)

    def extract(self, data: bytes, limits: Limits) -> TextView:
        views = []
        with SafeZip(data, limits) as archive:
            styles: dict[str, Style] = {}
            if "word/styles.xml" in archive:
                tree = xml_tree(archive.read("word/styles.xml"), "word/styles.xml")
                styles = _docx_styles(tree)
            for part in _DOCX_PARTS:
                if part in archive or part == _DOCX_PARTS[0]:
                    xml = archive.read(part)
                    out = _Builder("docx", part, limits.max_view_chars)
                    walk_xml(xml, part, _DocxWalker(xml, out, styles))
                    views.append(out.view())
            status = declared.from_properties("docx", declared.office_properties("docx", archive))
        return _checked(replace(join_views("docx", views), status=status), limits)


class OdtExtractor(_OfficeExtractor):
    name = "odt"
    suffixes: tuple[str, ...] = ("*.odt",)

    def extract(self, data: bytes, limits: Limits) -> TextView:
        with SafeZip(data, limits) as archive:
            xml = archive.read("content.xml")
            status = declared.from_properties("odt", declared.office_properties("odt", archive))
        body = _Builder("odt", "content.xml", limits.max_view_chars)
        notes = _Builder("odt", "content.xml", limits.max_view_chars)
        walk_xml(xml, "content.xml", _OdtWalker(xml, body, notes))
        view = join_views("odt", [body.view(), notes.view()])
        return _checked(replace(view, status=status), limits)


EXTRACTORS: dict[str, Extractor] = {"docx": DocxExtractor(), "odt": OdtExtractor()}
