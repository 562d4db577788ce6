"""What the extractor fuzz campaign found (``bench/fuzz_extract.py``, ``make fuzz``).

Each kept input (``fixtures/fuzz``, PROVENANCE.md there) runs as the indexer runs a
file, ``for_file`` then ``extract``: it gives the view or the one-line reason it gave
when it was kept, within a time bound, and its view keeps the extractor contract's
invariants. Two of them were bugs, also rebuilt here from nothing:

- a zip whose ``mimetype`` member is corrupt made ``for_file`` raise ``zlib.error`` (or
  ``lzma.LZMAError``) while sniffing the format: a traceback in ``grk index``;
- an EPUB's chapters were parsed in the indexer's own process whatever their unpacked
  size, and lexbor's time grows with the square of the nesting depth: an 18 KB book ran
  for 84 s. Every extraction now runs in the sandbox (ADR 0018).
"""

from __future__ import annotations

import html
import time
import zipfile
from io import BytesIO
from pathlib import Path

import pytest

from groundkit.extract import ExtractError, Limits, TextView, extract, extractor, for_file
from groundkit.extract.html_encoding import decode_html

from .test_epub import book, page
from .test_html_map import collapse, unescape

pytest.importorskip("selectolax")
pytest.importorskip("pypdfium2")

FUZZ = Path(__file__).parent / "fixtures" / "fuzz"
HANDBOOK = Path(__file__).parent / "fixtures" / "office" / "handbook.epub"
BOUND_S = 15.0
"""Seconds any kept input may take (the deep-nesting book stops at its 1 s limit)."""
LIMITS = Limits(timeout_s=1)
EXPECTED = {
    "odt-28-00009-zlib-error.odt": "not an ODT file (its content does not say so)",
    "epub-28-00293-deep-nesting.epub": "extraction timed out after 1 s",
    "pdf-28-00232.pdf": "no text: no page holds text or an image",
    "pdf-28-00434.pdf": "Every span can be verified.",
    "pdf-28-01237.pdf": "Grounded retrieval quotes its sources.\nEvery span can be verified.",
    "html-28-00295.html": "8.4. ユーザとグループのデータベース",
    "html-28-00331.html": "Download the ebook\n\nIndietro\nIl Manuale",
    "html-28-00456.html": "㰿硭氠癥牳楯渽",
    "docx-28-00104.docx": "The Debian Administrator's Handbook (excerpts)\n\nDownload",
    "docx-28-00157.docx": "corrupt member word/styles.xml: ",
    "epub-28-00138.epub": "2.4.\xa0Why the Debian Distribution?\n\nOnce the Linux family",
}
"""File -> the start of its view, or of its reason."""


def outcome(name: str) -> TextView | str:
    """The file's view, or its reason (a one-line ExtractError), within the bound."""
    data = (FUZZ / name).read_bytes()
    start = time.monotonic()
    try:
        found = for_file(name, data)
        assert found is not None
        result: TextView | str = extract(found, data, LIMITS)
    except ExtractError as exc:
        result = str(exc)
        assert result.strip() and "\n" not in result
    assert time.monotonic() - start < BOUND_S
    return result


def assert_invariants(name: str, view: TextView) -> None:
    view.text.encode("utf-8")  # every chunk offset is also a UTF-8 byte offset
    last = 0
    for seg in view.segments:
        assert last <= seg.start < seg.end <= len(view.text)
        last = seg.end
    assert [h.start for h in view.headings] == sorted(h.start for h in view.headings)
    assert all(0 <= h.start <= len(view.text) and h.level >= 1 and h.title
               for h in view.headings)
    data = (FUZZ / name).read_bytes()
    for seg in view.segments:
        text = view.text[seg.start:seg.end]
        if view.format == "pdf":
            assert seg.page is not None and seg.page >= 1 and "\n" not in text
            continue
        member = data
        if seg.part is not None:
            with zipfile.ZipFile(BytesIO(data)) as archive:
                member = archive.read(seg.part)
        raw = member[seg.byte_start:seg.byte_end]
        if view.format in ("html", "epub"):
            decoded = raw.decode(decode_html(member).codec)
            assert collapse(text) in (collapse(unescape(decoded)), collapse(decoded))
        else:
            assert text in html.unescape(raw.decode("utf-8"))


def test_every_kept_input_is_pinned() -> None:
    assert sorted(p.name for p in FUZZ.iterdir() if p.suffix != ".md") == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_kept_input_gives_its_view_or_its_reason_in_time(name: str) -> None:
    result = outcome(name)
    if isinstance(result, str):
        assert result.startswith(EXPECTED[name])
        return
    assert result.text.startswith(EXPECTED[name])
    assert_invariants(name, result)


def test_a_kept_pdf_outline_gives_its_headings() -> None:
    view = outcome("pdf-28-01237.pdf")
    assert isinstance(view, TextView)
    assert [(h.level, h.title, h.start) for h in view.headings] == [
        (2, "Introduction", 0), (2, "Copyright", 0)]


# The two bugs, rebuilt -----------------------------------------------------------------


def with_mimetype(mimetype: bytes, method: int, corrupt: bytes = b"") -> bytes:
    """A zip of one ``mimetype`` member, its packed bytes' start overwritten by
    ``corrupt``."""
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("mimetype", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = method
        archive.writestr(info, mimetype)
    data = bytearray(buffer.getvalue())
    start = 30 + len("mimetype")  # after the local header and the name
    data[start:start + len(corrupt)] = corrupt
    return bytes(data)


@pytest.mark.parametrize(("method", "corrupt"), [
    (zipfile.ZIP_DEFLATED, b"\xff\xff"),  # zlib.error: invalid block type
    (zipfile.ZIP_DEFLATED, b"\x00\x00\x00"),  # zlib.error: invalid stored block lengths
    (zipfile.ZIP_LZMA, b"\x00\x00\x00"),  # lzma.LZMAError: invalid options
], ids=["deflate-block-type", "deflate-stored-length", "lzma-options"])
@pytest.mark.parametrize(("suffix", "mimetype"), [
    ("epub", b"application/epub+zip"), ("odt", b"application/vnd.oasis.opendocument.text")],
    ids=["epub", "odt"])
def test_a_corrupt_mimetype_member_is_a_reason_not_a_traceback(
        method: int, corrupt: bytes, suffix: str, mimetype: bytes) -> None:
    if method == zipfile.ZIP_DEFLATED:
        assert for_file(f"book.{suffix}", with_mimetype(mimetype, method)) == suffix
    else:  # the sniff never decompresses LZMA (or bzip2), however honest (ADR 0018)
        with pytest.raises(ExtractError, match=f"not an? {suffix.upper()} file"):
            for_file(f"book.{suffix}", with_mimetype(mimetype, method))
    with pytest.raises(ExtractError, match=f"not an? {suffix.upper()} file"):
        for_file(f"book.{suffix}", with_mimetype(mimetype, method, corrupt))


def test_deeply_nested_epub_chapters_are_parsed_under_the_time_limit() -> None:
    depth = 30_000  # about 4 s of lexbor in-process; the limit stops it at 0.5 s
    chapter = page("<ul><li>" * depth + "deep" + "</li></ul>" * depth)
    data = book({"OEBPS/c.xhtml": chapter}, [("c", "c.xhtml", "application/xhtml+xml")],
                '<itemref idref="c"/>')
    assert len(data) < 20_000 < len(chapter)
    start = time.monotonic()
    with pytest.raises(ExtractError, match=r"^extraction timed out after 0.5 s$"):
        extract("epub", data, Limits(timeout_s=0.5))
    assert time.monotonic() - start < BOUND_S


def test_an_epub_parsed_in_the_sandbox_gives_the_same_view() -> None:
    data = HANDBOOK.read_bytes()
    isolated = extract("epub", data, Limits())
    in_process = extractor("epub").extract(data, Limits())
    assert (isolated.text, isolated.segments, isolated.headings) == (
        in_process.text, in_process.segments, in_process.headings)
