"""PDF through PDFium (pypdfium2): each page's text layer, its lines' boxes and the outline.

The text view
    A page's text is PDFium's text of the page (``FPDFText_GetText`` over all of its
    characters: content-stream order, with the spaces and line breaks PDFium infers),
    normalised so that it is plain text and the same on every platform:

    * a line break (PDFium's generated ``\\r\\n``) becomes ``\\n``;
    * U+FFFE, PDFium's mark for a hyphen that ended a line (it has already removed the
      line break), is dropped: ``isosur-`` / ``face`` reads ``isosurface``;
    * any other control character (C0 but tab, C1, a lone ``\\r`` or ``\\n`` that a
      font's broken Unicode map produced), a lone surrogate and U+FFFF become U+FFFD;
    * everything else, astral characters included, is kept as it is.

    The view is the texts of the pages that have a non-whitespace character, in page
    order, joined by :data:`PAGE_SEPARATOR` (a blank line, so that a page break is a
    boundary the chunker prefers). A file none of whose pages has text is refused
    (:data:`SCANNED` where its pages hold images: :mod:`groundkit.extract.ocr` reads it);
    the pages without text that hold images are listed in the view's ``scanned_pages``
    (:func:`groundkit.extract.read` has OCR read such a file where it is installed).

The source map
    One :class:`~groundkit.extract.base.Segment` per non-empty line of a page's text:
    ``page`` (1-based), ``page_offset`` (the code point of the page's text where the
    line starts: ``page_text[page_offset:][:end - start]`` is the view's run) and
    ``bbox``, the union of the rectangles PDFium reports for the line's characters
    (``FPDFText_CountRects``) in the page's unrotated user space, clipped to its visible
    box (the media box cut by the crop box) and rounded to 0.01 pt; ``None`` for a line
    of generated spaces only or one wholly outside the visible box. PDFium indexes
    characters in UTF-16 code units (an astral character is two of them): each page
    keeps the map from its text's code points to those indices while its boxes are read.

The outline
    Each bookmark of the outline (``/Outlines``, at most 64 deep; a bookmark met twice
    ends its chain, so a cyclic outline terminates) whose destination is a page with
    text becomes a :class:`~groundkit.extract.base.Heading` of level depth + 1 (top
    level 1), its title with whitespace collapsed. It starts at the first line of that
    page which begins with the title (optionally after a section number such as
    ``2.12``), else at the title's first occurrence on the page, else at the page's
    start; the title matches with any run of whitespace between its words. Headings are
    ordered by position.

Files PDFium cannot open (encrypted with a user password, malformed, empty), a page it
cannot load, more pages than :attr:`Limits.max_pages` and a view longer than
:attr:`Limits.max_view_chars` raise :class:`~groundkit.extract.base.ExtractError` with a
one-line reason. The extractor runs isolated (:mod:`groundkit.extract.sandbox`): PDFium
is native code reading untrusted bytes.
"""

from __future__ import annotations

import bisect
import ctypes
import importlib.util
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..errors import MissingDependencyError
from . import declared, furniture
from .base import ExtractError, Heading, Limits, Segment, TextView

PAGE_SEPARATOR = "\n\n"
"""What joins two pages' texts in the view."""

ALGORITHM = "v2"
"""The view's own version: bump it whenever this module would cut other text or map, or
mark other furniture (v2: furniture and page labels)."""

_SPECIAL = re.compile("\r\n|[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]"
                      "|[\U00010000-\U0010ffff]")
"""What page-text normalisation rewrites, and the astral characters it must count twice."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")
_LINE = re.compile(r"[^\n]+")
_NUMBER = r"(?:\S*\d\S*[ \t]+)?"
"""An optional section number before a heading's title at the start of its line."""
_MAX_OUTLINE_DEPTH = 64
NO_TEXT_OR_IMAGE = ("no text: no page holds text or an image (empty, drawings only, or "
                    "content PDFium cannot parse)")
"""The reason for a PDF without text that is not a scan either."""
SCANNED = "no text layer: scanned? OCR is not supported"
"""The reason for a PDF whose pages hold images but no text: :func:`groundkit.extract.read`
reads it by OCR instead where OCR is installed."""
_MAX_STRING = 32_767
"""The most characters PDFium reads of one string: a longer one is cut there, silently."""
_IMAGE_OR_FORM = (3, 5)
"""``FPDF_PAGEOBJ_IMAGE`` and ``FPDF_PAGEOBJ_FORM``: what a scanned page is made of."""

_OPEN_ERRORS = {
    1: "malformed PDF: PDFium cannot open it",
    2: "malformed PDF: cannot be read",
    3: "malformed PDF: not a PDF or corrupted",
    4: "encrypted PDF (password required)",
    5: "encrypted PDF (unsupported security handler)",
    6: "malformed PDF: page not found or content error",
}
"""PDFium's ``FPDF_GetLastError`` codes after a failed open -> the skip reason."""


class PdfExtractor:
    """PDF's extractor: see the module's description of the view and its map."""

    name = "pdf"
    library = "pypdfium2"
    extra = "pdf"
    suffixes = ("*.pdf",)

    def available(self) -> bool:
        return importlib.util.find_spec("pypdfium2") is not None

    def identity(self) -> str:
        try:
            from pypdfium2.version import PDFIUM_INFO, PYPDFIUM_INFO
        except ImportError as exc:
            raise MissingDependencyError(self.library, self.extra, "Extracting PDF") from exc
        return f"pdf/pypdfium2={PYPDFIUM_INFO.version};pdfium={PDFIUM_INFO.tag};{ALGORITHM}"

    def extract(self, data: bytes, limits: Limits) -> TextView:
        import pypdfium2 as pdfium
        import pypdfium2.raw as raw

        if not data:
            raise ExtractError("empty file (0 bytes): not a PDF")
        # Opened here, not by PdfDocument(data): its error code would be stale after a
        # document that loads but has no pages. ``data`` outlives the document.
        handle = raw.FPDF_LoadMemDocument64(data, len(data), None)
        if not handle:
            raise ExtractError(_OPEN_ERRORS.get(raw.FPDF_GetLastError(), _OPEN_ERRORS[1]))
        pdf = pdfium.PdfDocument(handle)
        try:
            return _extract(pdf, limits)
        finally:
            pdf.close()


EXTRACTORS = {"pdf": PdfExtractor()}


@dataclass(frozen=True, slots=True)
class _Page:
    """One page's normalised text and its lines (start, end, box) in that text."""

    text: str
    lines: tuple[tuple[int, int, tuple[float, float, float, float] | None], ...]


def _extract(pdf: Any, limits: Limits) -> TextView:
    count = len(pdf)
    if not count:
        raise ExtractError("malformed PDF: no pages")
    if count > limits.max_pages:
        raise ExtractError(f"PDF has {count} pages, more than the limit of {limits.max_pages}")
    texts: list[str] = []
    segments: list[Segment] = []
    page_starts: dict[int, int] = {}
    pages: dict[int, str] = {}
    laid_out: list[furniture.PageLines] = []
    scanned: list[int] = []
    size = 0
    for index in range(count):
        page = _read_page(pdf, index)
        if not page.text.strip():
            if holds_image(pdf, index):
                scanned.append(index + 1)
            continue
        if texts:
            size += len(PAGE_SEPARATOR)
        page_starts[index], pages[index] = size, page.text
        segments.extend(Segment(size + start, size + end, page=index + 1, page_offset=start,
                                bbox=bbox) for start, end, bbox in page.lines)
        laid_out.append(furniture.PageLines(size, page.text, page.lines))
        size += len(page.text)
        if size > limits.max_view_chars:
            raise ExtractError(f"PDF text longer than the limit of {limits.max_view_chars} "
                               "characters")
        texts.append(page.text)
    if not texts:
        raise ExtractError(SCANNED if scanned else NO_TEXT_OR_IMAGE)
    headings = [Heading(page_starts[index] + _find_title(pages[index], title), level, title)
                for level, title, index in _outline(pdf) if index in pages]
    headings.sort(key=lambda h: h.start)
    return TextView(PAGE_SEPARATOR.join(texts), "pdf", tuple(segments), tuple(headings),
                    declared.from_pdf(_info(pdf)), furniture.pdf_runs(laid_out),
                    _page_labels(pdf, [index + 1 for index in pages]),
                    scanned_pages=tuple(scanned))


def _page_labels(pdf: Any, numbers: list[int]) -> tuple[tuple[int, str], ...]:
    """``(page, label)`` of the given 1-based pages whose printed label (``/PageLabels``)
    is not their number; empty for a PDF without labels."""
    import pypdfium2.raw as raw

    found = []
    for number in numbers:
        size = raw.FPDF_GetPageLabel(pdf, number - 1, None, 0)
        if size <= 2:
            continue
        buffer = ctypes.create_string_buffer(size)
        raw.FPDF_GetPageLabel(pdf, number - 1, buffer, size)
        label = " ".join(_CONTROL.sub(" ", buffer.raw[: size - 2].decode("utf-16-le",
                                                                           "replace")).split())
        if label and label != str(number):
            found.append((number, label[:64]))
    return tuple(found)


def _info(pdf: Any) -> dict[str, str]:
    """The document information dictionary (empty when pdfium cannot read it)."""
    import pypdfium2 as pdfium

    try:
        return dict(pdf.get_metadata_dict(skip_empty=True))
    except (pdfium.PdfiumError, UnicodeDecodeError):
        return {}


def _read_page(pdf: Any, index: int) -> _Page:
    import pypdfium2 as pdfium

    try:
        page = pdf[index]
    except pdfium.PdfiumError:
        raise ExtractError(f"malformed PDF: page {index + 1} cannot be read") from None
    try:
        return _page_text(page)
    except pdfium.PdfiumError:
        raise ExtractError(f"malformed PDF: page {index + 1} has no readable text") from None
    finally:
        page.close()


def _page_text(page: Any) -> _Page:
    import pypdfium2.raw as raw

    textpage = page.get_textpage()
    try:
        n_chars = raw.FPDFText_CountChars(textpage)
        if n_chars <= 0:
            return _Page("", ())
        if n_chars >= _MAX_STRING and _holds_cut_string(raw, page, textpage):
            raise ExtractError(f"a PDF string reaches PDFium's limit of {_MAX_STRING:,} "
                               "characters: its text would be cut")
        buffer = (ctypes.c_ushort * (2 * n_chars + 1))()
        n_units = max(0, raw.FPDFText_GetText(textpage, 0, n_chars, buffer) - 1)
        utf16 = bytes(buffer)[: 2 * n_units].decode("utf-16-le", "surrogatepass")
        text, to_unit = _normalise(utf16)
        box = page.get_bbox()  # the media box cut by the crop box, inherited ones included
        lines = tuple((m.start(), m.end(), _line_box(raw, textpage, to_unit(m.start()),
                                                     to_unit(m.end()), box))
                      for m in _LINE.finditer(text))
        return _Page(text, lines)
    finally:
        textpage.close()


def _holds_cut_string(raw: Any, page: Any, textpage: Any) -> bool:
    """Whether a text object of ``page`` holds a string PDFium cut at :data:`_MAX_STRING`."""
    for index in range(raw.FPDFPage_CountObjects(page)):
        obj = raw.FPDFPage_GetObject(page, index)
        if raw.FPDFPageObj_GetType(obj) == raw.FPDF_PAGEOBJ_TEXT and \
                raw.FPDFTextObj_GetText(obj, textpage, None, 0) // 2 - 1 >= _MAX_STRING:
            return True
    return False


def holds_image(pdf: Any, index: int) -> bool:
    """Whether page ``index`` holds an image or a form object: a page without text that
    does is a scan; one that does not is empty, or content PDFium could not parse (a
    100,000-deep array swallows the page's text operators)."""
    import pypdfium2.raw as raw

    page = pdf[index]
    try:
        return any(raw.FPDFPageObj_GetType(raw.FPDFPage_GetObject(page, i)) in _IMAGE_OR_FORM
                   for i in range(raw.FPDFPage_CountObjects(page)))
    finally:
        page.close()


def _normalise(utf16: str) -> tuple[str, Callable[[int], int]]:
    """The page text PDFium gave (UTF-16 decoded with surrogates passed through) made
    plain (see the module), and the map from its code points to PDFium's text indices
    (UTF-16 code units of PDFium's text)."""
    out: list[str] = []
    anchors_out = [0]
    anchors_unit = [0]
    pos = written = unit = 0
    for m in _SPECIAL.finditer(utf16):
        gap = m.start() - pos
        out.append(utf16[pos:m.start()])
        written += gap
        unit += gap
        token = m.group()
        if token == "\r\n":
            replacement, width = "\n", 2
        elif token == "\ufffe":
            replacement, width = "", 1
        elif token >= "\U00010000":
            replacement, width = token, 2
        else:
            replacement, width = "\ufffd", 1
        out.append(replacement)
        written += len(replacement)
        unit += width
        pos = m.end()
        anchors_out.append(written)
        anchors_unit.append(unit)
    out.append(utf16[pos:])

    def to_unit(position: int) -> int:
        at = bisect.bisect_right(anchors_out, position) - 1
        return anchors_unit[at] + position - anchors_out[at]

    return "".join(out), to_unit


def _line_box(raw: Any, textpage: Any, unit_start: int, unit_end: int,
              page_box: tuple[float, float, float, float],
              ) -> tuple[float, float, float, float] | None:
    """The union of PDFium's rectangles for text indices ``[unit_start, unit_end)``,
    clipped to ``page_box``; ``None`` when PDFium has none (generated spaces) or the
    line lies wholly outside ``page_box``."""
    first = raw.FPDFText_GetCharIndexFromTextIndex(textpage, unit_start)
    last = raw.FPDFText_GetCharIndexFromTextIndex(textpage, unit_end - 1)
    if first < 0 or last < first:
        return None
    boxes = []
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    for index in range(raw.FPDFText_CountRects(textpage, first, last - first + 1)):
        if raw.FPDFText_GetRect(textpage, index, left, top, right, bottom):
            boxes.append((left.value, bottom.value, right.value, top.value))
    if not boxes:
        return None
    x0, y0, x1, y1 = page_box
    lo_x, lo_y = min(b[0] for b in boxes), min(b[1] for b in boxes)
    hi_x, hi_y = max(b[2] for b in boxes), max(b[3] for b in boxes)
    if hi_x < x0 or lo_x > x1 or hi_y < y0 or lo_y > y1:
        return None  # wholly outside the visible page
    return (round(max(lo_x, x0), 2), round(max(lo_y, y0), 2),
            round(min(hi_x, x1), 2), round(min(hi_y, y1), 2))


def _outline(pdf: Any) -> Iterator[tuple[int, str, int]]:
    """``(level, title, page index)`` of each bookmark with a title and a page, in
    outline order; a bookmark seen twice (a cyclic outline) ends its sibling chain."""
    import pypdfium2.raw as raw

    seen: set[int | None] = set()
    pending: list[tuple[Any, int]] = []
    node, level = raw.FPDFBookmark_GetFirstChild(pdf, None), 1
    while True:
        while not node and pending:
            node, level = pending.pop()
        if not node:
            return
        address = ctypes.cast(node, ctypes.c_void_p).value
        if address in seen:
            node = None
            continue
        seen.add(address)
        title = _title(raw, node)
        dest = raw.FPDFBookmark_GetDest(pdf, node)
        index = raw.FPDFDest_GetDestPageIndex(pdf, dest) if dest else -1
        if title and index >= 0:
            yield level, title, index
        pending.append((raw.FPDFBookmark_GetNextSibling(pdf, node), level))
        node = raw.FPDFBookmark_GetFirstChild(pdf, node) if level < _MAX_OUTLINE_DEPTH else None
        level += 1


def _title(raw: Any, node: Any) -> str:
    size = raw.FPDFBookmark_GetTitle(node, None, 0)
    if size <= 2:
        return ""
    buffer = ctypes.create_string_buffer(size)
    raw.FPDFBookmark_GetTitle(node, buffer, size)
    text = buffer.raw[: size - 2].decode("utf-16-le", "replace")
    return " ".join(_CONTROL.sub(" ", text).split())


def _find_title(text: str, title: str) -> int:
    """Where ``title`` starts on a page whose text is ``text`` (see the module)."""
    words = r"\s+".join(re.escape(word) for word in title.split())
    found = re.search(rf"(?m)^{_NUMBER}{words}", text) or re.search(words, text)
    return found.start() if found else 0
