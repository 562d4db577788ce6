"""The PDF extractor: page texts, their line map and boxes, the outline, hostile files.

Real pages (gnuplot's and R's manuals, cut by ``fixtures/pdf/make_fixtures.py``) are
checked against PDFium's own page text under the documented normalisation; hand-written
PDFs pin what real files rarely show (astral characters, an outline, a cyclic outline,
a page without text).
"""

from __future__ import annotations

import re
from io import BytesIO
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.extract import ExtractError, Limits, TextView, extract
from groundkit.extract.pdf import EXTRACTORS, NO_TEXT_OR_IMAGE, PAGE_SEPARATOR
from groundkit.testing import hostile

pdfium = pytest.importorskip("pypdfium2")

FIXTURES = Path(__file__).parent / "fixtures" / "pdf"
REAL = ("gnuplot-p21-23.pdf", "r-intro-p2-p9-11.pdf")
PDF = EXTRACTORS["pdf"]
LIMITS = Limits(timeout_s=30)


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def direct(data: bytes, limits: Limits = LIMITS) -> TextView:
    return PDF.extract(data, limits)


def reason(data: bytes, limits: Limits = LIMITS) -> str:
    with pytest.raises(ExtractError) as caught:
        direct(data, limits)
    return str(caught.value)


def pdfium_pages(data: bytes) -> list[str]:
    """Each page's text as the module's docstring defines it, from pypdfium2's text."""
    pdf = pdfium.PdfDocument(data)
    pages = []
    for page in pdf:
        lines = page.get_textpage().get_text_range(errors="strict").split("\r\n")
        pages.append("\n".join(re.sub("[\x00-\x08\x0a-\x1f\x7f-\x9f\uffff]", "\ufffd",
                                      line.replace("\ufffe", "")) for line in lines))
    return pages


# Hand-written PDFs -----------------------------------------------------------------------

def build(objects: dict[int, bytes]) -> bytes:
    """A PDF of ``objects`` (object 1 the catalog) with a correct cross-reference table."""
    out = bytearray(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    size = max(objects) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    out += b"".join(b"%010d 00000 n \n" % offsets[n] if n in offsets else b"0000000000 65535 f \n"
                    for n in range(1, size))
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def stream(data: bytes) -> bytes:
    return b"<< /Length %d >>\nstream\n%s\nendstream" % (len(data), data)


def lines_content(*lines: str) -> bytes:
    shown = b" T* ".join(b"(%s) Tj" % line.encode("latin-1") for line in lines)
    return b"BT /F1 12 Tf 14 TL 72 720 Td " + shown + b" ET"


def document(contents: list[bytes], extra: dict[int, bytes] | None = None, *,
             catalog: bytes = b"", font: bytes = b"", tree: bytes = b"",
             page: bytes = b"/MediaBox [0 0 612 792]") -> bytes:
    """Pages 10, 11, ... with content streams 20, 21, ...; font F1 (object 3) Helvetica;
    ``catalog``, ``font``, ``tree`` and ``page`` add entries to those dictionaries."""
    kids = b" ".join(b"%d 0 R" % (10 + i) for i in range(len(contents)))
    objects = {
        1: b"<< /Type /Catalog /Pages 2 0 R %s >>" % catalog,
        2: b"<< /Type /Pages /Kids [%s] /Count %d %s >>" % (kids, len(contents), tree),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica %s >>" % font,
    }
    for i, content in enumerate(contents):
        objects[10 + i] = (b"<< /Type /Page /Parent 2 0 R %s /Resources << /Font << /F1 3 0 R >> "
                           b">> /Contents %d 0 R >>" % (page, 20 + i))
        objects[20 + i] = stream(content)
    return build({**objects, **(extra or {})})


def outline_item(title: str, page: int, parent: int, *, prev: int | None = None,
                 next_: int | None = None, children: tuple[int, int] | None = None) -> bytes:
    links = b"".join(b" /%s %d 0 R" % (key, value) for key, value in
                     ((b"Prev", prev), (b"Next", next_)) if value is not None)
    if children:
        links += b" /First %d 0 R /Last %d 0 R /Count 1" % children
    return (b"<< /Title (%s) /Parent %d 0 R /Dest [%d 0 R /Fit]%s >>"
            % (title.encode("latin-1"), parent, 10 + page, links))


# Real pages ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", REAL)
def test_the_view_is_the_normalised_page_texts_joined_by_the_separator(name: str) -> None:
    data = fixture(name)
    view = direct(data)
    pages = pdfium_pages(data)
    assert view.format == "pdf"
    assert view.text == PAGE_SEPARATOR.join(p for p in pages if p.strip())
    assert "\r" not in view.text
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]", view.text)


@pytest.mark.parametrize("name", REAL)
def test_every_line_maps_back_to_its_page_offset_and_box(name: str) -> None:
    data = fixture(name)
    view = direct(data)
    pages = pdfium_pages(data)
    pdf = pdfium.PdfDocument(data)
    covered = set()
    for seg in view.segments:
        assert seg.page is not None and seg.page_offset is not None
        run = view.text[seg.start:seg.end]
        assert pages[seg.page - 1][seg.page_offset:seg.page_offset + len(run)] == run
        assert "\n" not in run
        assert view.text[seg.end:seg.end + 1] in ("", "\n")
        assert seg.bbox is not None
        left, bottom, right, top = pdf[seg.page - 1].get_bbox()
        assert left <= seg.bbox[0] <= seg.bbox[2] <= right
        assert bottom <= seg.bbox[1] <= seg.bbox[3] <= top
        covered.update(range(seg.start, seg.end))
    assert {i for i, ch in enumerate(view.text) if ch != "\n"} == covered


def test_a_line_box_is_the_union_of_its_characters_boxes() -> None:
    data = fixture("r-intro-p2-p9-11.pdf")
    view = direct(data)
    pdf = pdfium.PdfDocument(data)
    pages = pdfium_pages(data)
    checked = 0
    for seg in view.segments[::5]:
        textpage = pdf[seg.page - 1].get_textpage()
        if "\ufffe" in textpage.get_text_range() or seg.bbox is None:
            continue  # past a dropped hyphen mark the page text is not PDFium's 1:1
        breaks = pages[seg.page - 1].count("\n", 0, seg.page_offset)  # each was "\r\n"
        first = seg.page_offset + breaks
        boxes = [textpage.get_charbox(i) for i in range(first, first + seg.end - seg.start)]
        boxes = [b for b in boxes if b[2] > b[0]]
        union = (min(b[0] for b in boxes), min(b[1] for b in boxes),
                 max(b[2] for b in boxes), max(b[3] for b in boxes))
        assert seg.bbox == pytest.approx(union, abs=0.006)
        checked += 1
    assert checked > 20


def test_a_hyphen_that_ended_a_line_joins_the_word() -> None:
    text = direct(fixture("gnuplot-p21-23.pdf")).text
    assert "isosurface" in text
    assert "\ufffe" not in text


def test_a_glyph_mapped_to_a_control_character_reads_as_the_replacement_character() -> None:
    data = fixture("gnuplot-p21-23.pdf")
    assert "\x88" in pdfium.PdfDocument(data)[2].get_textpage().get_text_range()
    assert "\ufffd All evaluation of expressions" in direct(data).text
    assert "Copyright \ufffdc 1990 W. N. Venables" in direct(fixture("r-intro-p2-p9-11.pdf")).text


def test_a_chunk_span_locates_its_pages_offsets_and_box() -> None:
    view = direct(fixture("gnuplot-p21-23.pdf"))
    second = next(s for s in view.segments if s.page == 2)
    locator = view.locate(second.start - 30, second.end)
    assert locator is not None and locator.pages == (1, 2)
    first_page, second_page = locator.spans
    assert first_page.page == 1 and first_page.page_start is not None
    assert first_page.page_end == first_page.page_start + 30 - len(PAGE_SEPARATOR)
    assert second_page.page_start == 0 and second_page.page_end == second.end - second.start
    assert second_page.bbox == second.bbox


def test_extraction_is_deterministic_and_the_same_isolated() -> None:
    data = fixture("r-intro-p2-p9-11.pdf")
    view = direct(data)
    assert direct(data) == view
    isolated = extract("pdf", data, LIMITS)
    assert isolated == view
    assert [s.bbox for s in isolated.segments] == [s.bbox for s in view.segments]


def test_identity_names_both_library_versions_and_the_algorithm() -> None:
    assert re.fullmatch(r"pdf/pypdfium2=\d+\.\d+\.\d+\S*;pdfium=\d+(\.\d+)+;v\d+", PDF.identity())
    assert PDF.available()


# Hand-written pages ----------------------------------------------------------------------

ASTRAL_CMAP = b"""/CIDInit /ProcSet findresource begin 12 dict begin begincmap
/CMapName /Astral def 1 begincodespacerange <00> <FF> endcodespacerange
2 beginbfchar <41> <D835DC00> <42> <0042> endbfchar
endcmap CMapName currentdict /CMap defineresource pop end end"""


def test_astral_characters_count_as_one_code_point_in_page_offsets() -> None:
    data = document([lines_content("AB AxB", "BBA")], {4: stream(ASTRAL_CMAP)},
                    font=b"/ToUnicode 4 0 R")
    view = direct(data)
    assert view.text == "\U0001d400B \U0001d400xB\nBB\U0001d400"
    first, second = view.segments
    assert (second.start, second.end, second.page_offset) == (7, 10, 7)
    assert first.bbox is not None and second.bbox is not None
    assert first.bbox[2] > second.bbox[2] > second.bbox[0] >= 72  # "BB𝐀" is narrower
    assert second.bbox[3] < first.bbox[1]  # and on the line below


def test_boxes_are_clipped_to_the_visible_page_its_media_box_inherited() -> None:
    top_line = b"BT /F1 12 Tf 72 820 Td (Near the top of an A4 page) Tj ET"
    a4 = direct(document([top_line], tree=b"/MediaBox [0 0 595 842]", page=b""))
    assert a4.segments[0].bbox is not None and a4.segments[0].bbox[3] > 820
    crop = b"/MediaBox [0 0 595 842] /CropBox [%d 0 300 300]"
    outside = direct(document([top_line], page=crop % 0))
    assert outside.text == "Near the top of an A4 page" and outside.segments[0].bbox is None
    cut = direct(document([b"BT /F1 12 Tf 72 200 Td (Cut by the crop box) Tj ET"],
                          page=crop % 100))
    box = cut.segments[0].bbox
    assert box is not None and box[0] == 100 and 72 < box[2] < 300


def test_a_page_without_text_is_left_out_and_a_file_without_any_is_refused() -> None:
    rectangle = b"0 0 1 rg 100 100 200 300 re f"
    view = direct(document([rectangle, lines_content("Only page two has text."), b""]))
    assert view.text == "Only page two has text."
    assert {s.page for s in view.segments} == {2}
    assert reason(document([rectangle, b""])) == NO_TEXT_OR_IMAGE  # a drawing is no scan


@pytest.mark.parametrize(("data", "said"), [
    (hostile.deep_array_pdf(), NO_TEXT_OR_IMAGE),
    (hostile.long_string_pdf(), "a PDF string reaches PDFium's limit of 32,767 characters: "
                                "its text would be cut"),
], ids=["100k-deep-array", "70M-character-string"])
def test_what_pdfium_cannot_read_whole_is_refused_with_what_happened(
        data: bytes, said: str) -> None:
    assert reason(data) == said


def test_a_page_of_an_image_only_is_no_text_layer() -> None:
    pdf = pdfium.PdfDocument.new()
    page = pdf.new_page(200, 200)
    image = pdfium.PdfImage.new(pdf)
    image.set_bitmap(pdfium.PdfBitmap.new_native(20, 20, pdfium.raw.FPDFBitmap_BGR))
    image.set_matrix(pdfium.PdfMatrix().scale(100, 100))
    page.insert_obj(image)
    page.gen_content()
    buffer = BytesIO()
    pdf.save(buffer)
    assert reason(buffer.getvalue()) == "no text layer: scanned? OCR is not supported"


OUTLINE = {
    4: b"<< /Type /Outlines /First 30 0 R /Last 33 0 R /Count 4 >>",
    30: outline_item("Intro", 0, 4, next_=32, children=(31, 31)),
    31: outline_item("Details", 1, 30),
    32: outline_item("Long heading title", 1, 4, prev=30, next_=33),
    33: outline_item("Not on its page", 1, 4, prev=32, next_=34),
    34: outline_item("Empty page", 2, 4, prev=33),
}
PAGES = [lines_content("Preamble mentions Intro", "1 Intro", "Words."),
         lines_content("We say Details early", "2.1 Details", "Long heading", "title"), b""]


def test_outline_entries_become_headings_at_their_title_on_the_page() -> None:
    view = direct(document(PAGES, OUTLINE, catalog=b"/Outlines 4 0 R"))
    page2 = view.text.index("We say")
    assert [(h.title, h.level) for h in view.headings] == [
        ("Intro", 1), ("Not on its page", 1), ("Details", 2), ("Long heading title", 1)]
    starts = {h.title: h.start for h in view.headings}
    assert starts["Intro"] == view.text.index("1 Intro")  # the line, not the first mention
    assert starts["Details"] == view.text.index("2.1 Details")
    assert starts["Long heading title"] == view.text.index("Long heading\ntitle")
    assert starts["Not on its page"] == page2  # not found: the page's start
    assert view.heading_path(view.text.index("Words")) == ("Intro",)
    assert view.heading_path(view.text.index("2.1 Details") + 5) == ("Not on its page",
                                                                     "Details")


def test_a_cyclic_outline_ends_and_lists_each_entry_once() -> None:
    cyclic = {**OUTLINE, 34: outline_item("Empty page", 2, 4, prev=33, next_=30)}
    view = direct(document(PAGES, cyclic, catalog=b"/Outlines 4 0 R"))
    titles = [h.title for h in view.headings]
    assert sorted(titles) == sorted(["Intro", "Details", "Long heading title",
                                     "Not on its page"])


# Hostile files ---------------------------------------------------------------------------

def test_an_empty_file_is_refused() -> None:
    assert reason(b"") == "empty file (0 bytes): not a PDF"


def test_an_encrypted_file_needs_its_password_unless_only_an_owner_set_one() -> None:
    assert reason(fixture("encrypted-user-password.pdf")) == "encrypted PDF (password required)"
    assert direct(fixture("encrypted-owner-only.pdf")) == direct(fixture("tiny.pdf"))


def test_garbage_after_a_pdf_header_is_malformed() -> None:
    assert reason(b"%PDF-1.7\n" + bytes(range(256)) * 8).startswith("malformed PDF: ")
    assert reason(b"%PDF-") == "malformed PDF: not a PDF or corrupted"


def test_a_document_without_pages_is_malformed() -> None:
    assert reason(document([])) == "malformed PDF: no pages"


@pytest.mark.parametrize("fraction", [0.001, 0.01, 0.1, 0.5, 0.9, 0.999])
def test_a_truncated_file_gives_a_view_or_a_one_line_reason(fraction: float) -> None:
    data = fixture("gnuplot-p21-23.pdf")
    try:
        view = extract("pdf", data[: int(len(data) * fraction)], LIMITS)
    except ExtractError as exc:
        assert "\n" not in str(exc) and str(exc)
    else:
        assert view.text.strip()


def test_too_many_pages_and_too_much_text_are_refused() -> None:
    data = fixture("gnuplot-p21-23.pdf")
    assert reason(data, Limits(max_pages=2)) == "PDF has 3 pages, more than the limit of 2"
    assert reason(data, Limits(max_view_chars=1000)) == (
        "PDF text longer than the limit of 1000 characters")


MUTATION = st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(max_size=8),
                              st.sampled_from([0, 1, 8, 4096])), min_size=1, max_size=6)
CUT = st.one_of(st.just(1.0), st.floats(0.05, 1))


@pytest.mark.parametrize("name", ["tiny.pdf", "r-intro-p2-p9-11.pdf"])
@settings(max_examples=60)
@given(edits=MUTATION, cut=CUT)
def test_a_mutated_file_gives_a_view_or_a_reason_never_a_crash(
        name: str, edits: list[tuple[float, bytes, int]], cut: float) -> None:
    data = bytearray(fixture(name))
    for where, insert, remove in edits:
        at = int(where * len(data))
        data[at:at + remove] = insert
    try:
        extract("pdf", bytes(data[: max(1, int(len(data) * cut))]), LIMITS)
    except ExtractError as exc:
        assert str(exc) and "\n" not in str(exc)
