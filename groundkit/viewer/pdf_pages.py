"""A cited PDF page drawn for the viewer: the page as a PNG and the quote's exact boxes.

Exact boxes
    A PDF locator carries page offsets (code points of the page's text, as the extractor
    normalised it: :mod:`groundkit.extract.pdf`) and the box of the chunk's whole lines.
    :func:`quote_boxes` finds the *quote's* own boxes: it reads the page's text again the
    way the extractor does, checks that the text at ``[page_start, page_end)`` is the
    cited text (else no box at all: a highlight never lands on other words), maps the
    offsets to PDFium's text indices through the same normalisation map, and takes
    PDFium's box of each character drawn there (``FPDFText_GetLooseCharBox``: the
    glyph's advance by the font's ascent and descent, the box a text selection paints;
    spaces and line breaks PDFium inferred are skipped); boxes on one line are merged,
    and every box is clipped to the page's visible box. Boxes are ``(left, bottom,
    right, top)`` in PDF points, the page's unrotated user space.

Rendering
    :func:`render_page` draws a page with PDFium at a scale, encodes it as PNG (zlib, no
    image library) and maps each box to the bitmap's pixels with ``FPDF_PageToDevice``
    (so a rotated or cropped page maps as it is drawn).

Isolation
    PDFium is native code reading the user's file, and the extractor's rule holds here
    too: it never parses file bytes in the calling process. :func:`render` runs this
    module in a fresh interpreter (:data:`_BOOT`): a fresh process, not a fork, so a
    threaded caller (``grk serve``) is safe. The child caps its
    own address space at its size plus ``Limits.memory_bytes`` before it opens the file,
    and is killed at ``Limits.timeout_s``; the parent accepts only a JSON object whose
    every field it checks (base64 alphabet, finite numbers), so a subverted child can
    make it show a wrong picture at worst, never markup.
"""

from __future__ import annotations

import base64
import ctypes
import json
import math
import re
import struct
import subprocess
import sys
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..extract import DEFAULT_LIMITS, ExtractError, Limits
from ..extract.pdf import _normalise as normalise_page_text
from ..extract.sandbox import limit_memory

Box = tuple[float, float, float, float]
"""``(left, bottom, right, top)`` in PDF points, or ``(left, top, right, bottom)`` in
pixels once mapped onto a rendered bitmap."""

SCALE = 1.5
"""Pixels per PDF point of a rendered page (108 dpi): sharp on a laptop screen, and a
letter page is 918 x 1188 pixels."""
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_PACKAGE = str(Path(__file__).resolve().parent.parent)
_BOOT = ("import sys, types; package = types.ModuleType('groundkit'); "
         "package.__path__ = [sys.argv[1]]; sys.modules['groundkit'] = package; "
         "from groundkit.viewer.pdf_pages import _child_main; _child_main()")
"""The child's program: this module, imported without the package's ``__init__`` (which
loads the collection layer and numpy: 0.3 s of a child's start) and without any
``PYTHON*`` variable or the user's site folder (``-I``)."""
_SAME_LINE = 0.5
"""Two rectangles are on one line when their vertical overlap is at least this share of
the shorter one's height."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Piece:
    """What to draw of one page: its 1-based number and the quote's offsets on it."""

    page: int
    page_start: int
    page_end: int
    text: str
    """The cited text at those offsets: boxes are drawn only where the page still says it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderedPage:
    """One page drawn: a PNG (base64), its pixel size and the quote's boxes in pixels."""

    page: int
    png_base64: str
    width: int
    height: int
    boxes: tuple[Box, ...]
    label: str | None


def quote_boxes(pdf: Any, page: int, page_start: int, page_end: int,
                expected: str | None = None) -> tuple[Box, ...]:
    """The quote's boxes on 1-based ``page`` of an open ``pypdfium2.PdfDocument``, merged
    per line, in reading order; :class:`ExtractError` when the page's text at the
    offsets is not ``expected`` (when given) or the offsets fall outside it."""
    import pypdfium2.raw as raw

    handle = pdf[page - 1]
    textpage = handle.get_textpage()
    try:
        n_chars = raw.FPDFText_CountChars(textpage)
        buffer = (ctypes.c_ushort * (2 * max(n_chars, 0) + 1))()
        n_units = max(0, raw.FPDFText_GetText(textpage, 0, max(n_chars, 0), buffer) - 1)
        utf16 = bytes(buffer)[: 2 * n_units].decode("utf-16-le", "surrogatepass")
        text, to_unit = normalise_page_text(utf16)
        if not 0 <= page_start < page_end <= len(text):
            raise ExtractError(f"offsets [{page_start}, {page_end}) are outside page {page}'s "
                               f"text ({len(text)} characters)")
        if expected is not None and text[page_start:page_end] != expected:
            raise ExtractError(f"page {page} no longer says the cited text at its offsets")
        rects = []
        box = raw.FS_RECTF()
        for unit in range(to_unit(page_start), to_unit(page_end)):
            index = raw.FPDFText_GetCharIndexFromTextIndex(textpage, unit)
            if index < 0 or raw.FPDFText_IsGenerated(textpage, index) == 1:
                continue  # a space or line break PDFium inferred: nothing is drawn there
            if chr(raw.FPDFText_GetUnicode(textpage, index)).isspace():
                continue
            if raw.FPDFText_GetLooseCharBox(textpage, index, box):
                rects.append((box.left, box.bottom, box.right, box.top))
        return _clipped(merge_lines(rects), handle.get_bbox())
    finally:
        textpage.close()
        handle.close()


def merge_lines(rects: list[Box]) -> tuple[Box, ...]:
    """PDF-space rectangles merged into one per line (vertical overlap of at least
    :data:`_SAME_LINE` of the shorter height), lines top to bottom."""
    lines: list[list[float]] = []
    for x0, y0, x1, y1 in rects:
        for line in lines:
            overlap = min(y1, line[3]) - max(y0, line[1])
            if overlap >= _SAME_LINE * min(y1 - y0, line[3] - line[1]):
                line[:] = [min(x0, line[0]), min(y0, line[1]), max(x1, line[2]),
                           max(y1, line[3])]
                break
        else:
            lines.append([x0, y0, x1, y1])
    return tuple((a, b, c, d) for a, b, c, d in sorted(lines, key=lambda line: -line[3]))


def _clipped(boxes: tuple[Box, ...], page_box: Box) -> tuple[Box, ...]:
    x0, y0, x1, y1 = page_box
    kept = []
    for left, bottom, right, top in boxes:
        if right < x0 or left > x1 or top < y0 or bottom > y1:
            continue  # wholly outside the visible page
        kept.append((round(max(left, x0), 2), round(max(bottom, y0), 2),
                     round(min(right, x1), 2), round(min(top, y1), 2)))
    return tuple(kept)


def render_page(pdf: Any, page: int, boxes: tuple[Box, ...], scale: float = SCALE,
                ) -> tuple[bytes, int, int, tuple[Box, ...]]:
    """Page ``page`` (1-based) of an open document drawn at ``scale``: the PNG, its
    width and height in pixels, and ``boxes`` mapped to ``(left, top, right, bottom)``
    pixels of it."""
    import pypdfium2.raw as raw

    handle = pdf[page - 1]
    try:
        bitmap = handle.render(scale=scale, rev_byteorder=True)
        width, height = bitmap.width, bitmap.height
        png = encode_png(bytes(bitmap.buffer), width, height, bitmap.stride, bitmap.n_channels)
        mapped = []
        x, y = ctypes.c_int(), ctypes.c_int()
        for left, bottom, right, top in boxes:
            corners = []
            for px, py in ((left, top), (right, bottom)):
                raw.FPDF_PageToDevice(handle, 0, 0, width, height, 0, px, py, x, y)
                corners.append((x.value, y.value))
            (ax, ay), (bx, by) = corners
            mapped.append((float(min(ax, bx)), float(min(ay, by)), float(max(ax, bx)),
                           float(max(ay, by))))
        return png, width, height, tuple(mapped)
    finally:
        handle.close()


def encode_png(pixels: bytes, width: int, height: int, stride: int, channels: int) -> bytes:
    """An 8-bit RGB (3 channels) or RGBA (4) PNG of ``pixels``, rows ``stride`` bytes
    apart."""
    kind = {3: 2, 4: 6}[channels]
    row = width * channels
    raw_rows = b"".join(b"\0" + pixels[y * stride: y * stride + row] for y in range(height))

    def chunk(tag: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + tag + body
                + struct.pack(">I", zlib.crc32(tag + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, kind, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(raw_rows, 3)) + chunk(b"IEND", b""))


def render(data: bytes, pieces: list[Piece], limits: Limits = DEFAULT_LIMITS,
           scale: float = SCALE) -> list[RenderedPage]:
    """The pages of ``pieces`` drawn with their quotes' boxes, by a child process (see
    the module); :class:`ExtractError` with a one-line reason when it fails."""
    request = json.dumps({"scale": scale, "memory_bytes": limits.memory_bytes,
                          "pieces": [[p.page, p.page_start, p.page_end, p.text]
                                     for p in pieces]}).encode()
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _BOOT, _PACKAGE],
                              input=request + b"\n" + data, capture_output=True,
                              timeout=limits.timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise ExtractError(f"drawing the page timed out after {limits.timeout_s:g} s") from None
    if done.returncode < 0:
        raise ExtractError(f"drawing the page crashed (signal {-done.returncode})")
    try:
        reply = json.loads(done.stdout)
    except ValueError:
        raise ExtractError("drawing the page failed: no readable result") from None
    if not isinstance(reply, dict) or "error" in reply:
        raise ExtractError(f"cannot draw the page: {_reason(reply)}")
    return [_checked(item) for item in reply.get("pages", ())]


def _reason(reply: Any) -> str:
    reason = reply.get("error") if isinstance(reply, dict) else None
    return " ".join(str(reason)[:200].split()) if reason else "unreadable result"


def _checked(item: Any) -> RenderedPage:
    """A page of the child's reply, every field checked (the child read hostile bytes)."""
    try:
        page, png, width, height, boxes, label = item
        if not (isinstance(png, str) and _BASE64.fullmatch(png) and isinstance(page, int)
                and isinstance(width, int) and isinstance(height, int)
                and (label is None or isinstance(label, str))):
            raise ValueError
        checked = tuple(_finite_box(box) for box in boxes)
    except (TypeError, ValueError):
        raise ExtractError("drawing the page failed: a malformed result") from None
    return RenderedPage(page=page, png_base64=png, width=width, height=height, boxes=checked,
                        label=label[:64] if label else None)


def _finite_box(box: Any) -> Box:
    left, top, right, bottom = (float(v) for v in box)
    if not all(math.isfinite(v) for v in (left, top, right, bottom)):
        raise ValueError
    return left, top, right, bottom


def _child_main() -> None:
    """The child: read the request and the file on stdin, draw, write JSON on stdout."""
    request_line, _, data = sys.stdin.buffer.read().partition(b"\n")
    request = json.loads(request_line)
    import pypdfium2 as pdfium

    limit_memory(int(request["memory_bytes"]))
    try:
        pdf = pdfium.PdfDocument(data)
        try:
            pages = [_draw(pdf, int(page), int(start), int(end), str(text),
                           float(request["scale"]))
                     for page, start, end, text in request["pieces"]]
        finally:
            pdf.close()
        reply: dict[str, Any] = {"pages": pages}
    except MemoryError:
        reply = {"error": "out of memory"}
    except (ExtractError, pdfium.PdfiumError, IndexError, ValueError) as exc:
        reply = {"error": str(exc) or type(exc).__name__}
    sys.stdout.write(json.dumps(reply))


def _draw(pdf: Any, page: int, start: int, end: int, text: str, scale: float) -> list[Any]:
    from ..extract.pdf import _page_labels

    boxes = quote_boxes(pdf, page, start, end, text)
    png, width, height, mapped = render_page(pdf, page, boxes, scale)
    labels = dict(_page_labels(pdf, [page]))
    return [page, base64.b64encode(png).decode("ascii"), width, height,
            [list(box) for box in mapped], labels.get(page)]


