"""The quote's exact boxes against PDFium's own character boxes, and the isolated drawing."""

from __future__ import annotations

import base64
import ctypes
import itertools
import random
import zlib
from pathlib import Path

import pytest

pdfium = pytest.importorskip("pypdfium2")
import pypdfium2.raw as raw  # noqa: E402

from groundkit.extract import ExtractError, Limits, extract  # noqa: E402
from groundkit.extract.pdf import _normalise  # noqa: E402
from groundkit.viewer import pdf_pages  # noqa: E402
from groundkit.viewer.pdf_pages import Piece, merge_lines, quote_boxes, render  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "extract" / "fixtures" / "pdf"
READABLE = ["gnuplot-p21-23.pdf", "r-intro-p2-p9-11.pdf", "tiny.pdf"]


def quotes(data: bytes, n: int, seed: int) -> list[tuple[int, int, int, str]]:
    """``n`` quotes of the view, each on one page, 1-4 lines long, cut mid-line:
    ``(page, page_start, page_end, text)``."""
    view = extract("pdf", data)
    rng = random.Random(seed)
    lines = [s for s in view.segments if s.bbox is not None]
    found = []
    for _ in range(n):
        first = rng.randrange(len(lines))
        same = [s for s in lines[first:first + 4] if s.page == lines[first].page]
        last = same[-1]
        start = lines[first].start + rng.randrange(max(1, (lines[first].end
                                                            - lines[first].start) // 2))
        end = last.end - rng.randrange(max(1, (last.end - last.start) // 2))
        if end <= start:
            continue
        delta = lines[first].page_offset - lines[first].start
        found.append((lines[first].page, start + delta, end + delta, view.text[start:end]))
    return found


def loose_char_boxes(pdf: object, page: int, start: int, end: int) -> list[tuple[float, ...]]:
    """PDFium's loose box of every character of the quote that is drawn (not a
    generated space or line break), ``(left, bottom, right, top)``."""
    textpage = pdf[page - 1].get_textpage()  # type: ignore[index]
    n = raw.FPDFText_CountChars(textpage)
    buffer = (ctypes.c_ushort * (2 * n + 1))()
    units = raw.FPDFText_GetText(textpage, 0, n, buffer) - 1
    _, to_unit = _normalise(bytes(buffer)[: 2 * units].decode("utf-16-le", "surrogatepass"))
    rect = raw.FS_RECTF()
    boxes = []
    for unit in range(to_unit(start), to_unit(end)):
        index = raw.FPDFText_GetCharIndexFromTextIndex(textpage, unit)
        if index < 0 or raw.FPDFText_IsGenerated(textpage, index) == 1:
            continue
        if chr(raw.FPDFText_GetUnicode(textpage, index)).isspace():
            continue
        raw.FPDFText_GetLooseCharBox(textpage, index, rect)
        boxes.append((rect.left, rect.bottom, rect.right, rect.top))
    return boxes


def count_rects(pdf: object, page: int, start: int, end: int) -> tuple[tuple[float, ...], ...]:
    """PDFium's rectangles of the quote's characters (one per run of text), merged per line."""
    textpage = pdf[page - 1].get_textpage()  # type: ignore[index]
    n = raw.FPDFText_CountChars(textpage)
    buffer = (ctypes.c_ushort * (2 * n + 1))()
    units = raw.FPDFText_GetText(textpage, 0, n, buffer) - 1
    _, to_unit = _normalise(bytes(buffer)[: 2 * units].decode("utf-16-le", "surrogatepass"))
    first = raw.FPDFText_GetCharIndexFromTextIndex(textpage, to_unit(start))
    last = raw.FPDFText_GetCharIndexFromTextIndex(textpage, to_unit(end) - 1)
    rects = []
    left, top, right, bottom = (ctypes.c_double() for _ in range(4))
    for index in range(raw.FPDFText_CountRects(textpage, first, last - first + 1)):
        raw.FPDFText_GetRect(textpage, index, left, top, right, bottom)
        if right.value - left.value > 0.5:  # a run of inferred spaces has no width
            rects.append((left.value, bottom.value, right.value, top.value))
    return merge_lines(rects)


def centre_in(box: tuple[float, ...], outer: tuple[float, ...]) -> bool:
    x, y = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
    return outer[0] <= x <= outer[2] and outer[1] <= y <= outer[3]


def iou(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    both = w * h
    return both / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - both)


@pytest.mark.parametrize("name", READABLE)
def test_a_quotes_boxes_are_its_characters_boxes_merged_per_line(name: str) -> None:
    data = (FIXTURES / name).read_bytes()
    pdf = pdfium.PdfDocument(data)
    checked = 0
    for page, start, end, text in quotes(data, 12, seed=len(name)):
        boxes = quote_boxes(pdf, page, start, end, text)
        chars = loose_char_boxes(pdf, page, start, end)
        assert boxes and chars
        # every drawn character lies in one of the boxes ...
        for char in chars:
            assert any(centre_in(char, box) for box in boxes), (name, page, text, char, boxes)
        # ... and each box is the union of the characters it holds (IoU >= 0.9)
        for box in boxes:
            held = [c for c in chars if centre_in(c, box)]
            assert held
            union = (min(c[0] for c in held), min(c[1] for c in held),
                     max(c[2] for c in held), max(c[3] for c in held))
            assert iou(box, union) >= 0.9, (name, page, text, box, union)
        # the lines span what PDFium's own rectangles of the range span (FPDFText_CountRects,
        # which also hold the drawn spaces a highlight leaves out): 90% of their width
        for box, rect in zip(boxes, count_rects(pdf, page, start, end), strict=True):
            both = min(box[2], rect[2]) - max(box[0], rect[0])
            assert both >= 0.9 * (max(box[2], rect[2]) - min(box[0], rect[0])), (box, rect)
        # one box a line: no two boxes share a line
        for a, b in itertools.pairwise(boxes):
            assert b[3] <= a[1] + 0.5 * min(a[3] - a[1], b[3] - b[1])
        checked += 1
    assert checked >= 8
    pdf.close()


def test_no_box_is_given_where_the_page_no_longer_says_the_cited_text() -> None:
    data = (FIXTURES / "tiny.pdf").read_bytes()
    pdf = pdfium.PdfDocument(data)
    page, start, end, text = quotes(data, 1, seed=3)[0]
    with pytest.raises(ExtractError, match="no longer says the cited text"):
        quote_boxes(pdf, page, start, end, "X" + text[1:])
    with pytest.raises(ExtractError, match="outside page"):
        quote_boxes(pdf, page, start, 10**6, None)
    pdf.close()


def test_rectangles_on_one_line_merge_and_lines_stay_apart() -> None:
    rects = [(10.0, 100.0, 50.0, 110.0), (60.0, 101.0, 90.0, 109.0), (10.0, 85.0, 40.0, 95.0)]
    assert merge_lines(rects) == ((10.0, 100.0, 90.0, 110.0), (10.0, 85.0, 40.0, 95.0))


def test_the_child_draws_the_page_and_maps_the_boxes_onto_its_pixels() -> None:
    data = (FIXTURES / "gnuplot-p21-23.pdf").read_bytes()
    page, start, end, text = quotes(data, 1, seed=11)[0]
    (drawn,) = render(data, [Piece(page=page, page_start=start, page_end=end, text=text)])
    png = base64.b64decode(drawn.png_base64)
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pdf = pdfium.PdfDocument(data)
    width, height = pdf[page - 1].get_size()
    assert (drawn.width, drawn.height) == (round(width * pdf_pages.SCALE),
                                           round(height * pdf_pages.SCALE))
    expected = quote_boxes(pdf, page, start, end, text)
    assert len(drawn.boxes) == len(expected)
    for (left, bottom, right, top), (x0, y0, x1, y1) in zip(expected, drawn.boxes, strict=True):
        scale = pdf_pages.SCALE
        assert abs(x0 - left * scale) <= 1.5 and abs(x1 - right * scale) <= 1.5
        assert abs(y0 - (height - top) * scale) <= 1.5
        assert abs(y1 - (height - bottom) * scale) <= 1.5
    pdf.close()


def test_the_png_encoder_writes_what_zlib_reads_back() -> None:
    pixels = bytes(range(256)) * 3 * 2  # 2 rows of 256 RGB pixels
    png = pdf_pages.encode_png(pixels, 256, 2, 768, 3)
    idat = png[png.index(b"IDAT") + 4: png.index(b"IEND") - 8]
    rows = zlib.decompress(idat)
    assert rows == b"\0" + pixels[:768] + b"\0" + pixels[768:]


def test_a_file_pdfium_cannot_open_is_a_one_line_reason() -> None:
    with pytest.raises(ExtractError, match="cannot draw the page"):
        render(b"%PDF-1.7 not really", [Piece(page=1, page_start=0, page_end=1, text="x")])


def test_a_childs_reply_is_checked_field_by_field() -> None:
    good = [1, "iVBORw0KGgo=", 10, 10, [[1, 2, 3, 4]], None]
    assert pdf_pages._checked(good).boxes == ((1.0, 2.0, 3.0, 4.0),)
    for bad in ([1, '"><script>', 10, 10, [], None], [1, "AA==", 10, 10, [["nan", 0, 1, 1]],
                                                      None], [1, "AA==", "10", 10, [], None]):
        with pytest.raises(ExtractError, match="malformed result"):
            pdf_pages._checked(bad)


def test_a_child_that_crashes_or_hangs_is_a_one_line_reason(monkeypatch) -> None:
    piece = [Piece(page=1, page_start=0, page_end=1, text="x")]
    monkeypatch.setattr(pdf_pages, "_BOOT", "import os, signal; os.kill(os.getpid(), 11)")
    with pytest.raises(ExtractError, match=r"drawing the page crashed \(signal 11\)"):
        render(b"%PDF", piece)
    monkeypatch.setattr(pdf_pages, "_BOOT", "import time; time.sleep(30)")
    with pytest.raises(ExtractError, match=r"timed out after 0\.5 s"):
        render(b"%PDF", piece, Limits(timeout_s=0.5))
    monkeypatch.setattr(pdf_pages, "_BOOT", "print('<script>')")
    with pytest.raises(ExtractError, match="no readable result"):
        render(b"%PDF", piece)


def test_the_child_caps_its_own_address_space() -> None:
    data = (FIXTURES / "gnuplot-p21-23.pdf").read_bytes()
    page, start, end, text = quotes(data, 1, seed=11)[0]
    with pytest.raises(ExtractError, match=r"out of memory|crashed"):
        render(data, [Piece(page=page, page_start=start, page_end=end, text=text)],
               Limits(memory_bytes=1 << 20), scale=8.0)
