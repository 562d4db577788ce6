"""The encoding of an HTML page: BOM, ``<meta charset>``, XML declaration, UTF-8; byte
offsets of the raw file; undecodable bytes refused with their offset."""

from __future__ import annotations

import pytest

from groundkit.extract import ExtractError, Limits, TextView
from groundkit.extract.html import EXTRACTORS

pytest.importorskip("selectolax")

HTML = EXTRACTORS["html"]


def view_of(data: bytes) -> TextView:
    return HTML.extract(data, Limits())


def reason(data: bytes) -> str:
    with pytest.raises(ExtractError) as caught:
        view_of(data)
    return str(caught.value)


def runs(data: bytes, view: TextView, codec: str) -> list[tuple[str, str]]:
    """Each segment's raw bytes decoded, beside its text in the view."""
    return [(data[s.byte_start:s.byte_end].decode(codec), view.text[s.start:s.end])
            for s in view.segments]


def test_a_declared_latin1_page_decodes_with_raw_byte_offsets() -> None:
    data = '<meta charset="iso-8859-1"><p>caf\xe9 cr\xe8me</p><p>\xfcber</p>'.encode("latin-1")
    view = view_of(data)
    assert view.text == "caf\xe9 cr\xe8me\n\n\xfcber"
    assert runs(data, view, "latin-1") == [("caf\xe9 cr\xe8me",) * 2, ("\xfcber",) * 2]


def test_latin1_means_windows_1252_as_in_browsers() -> None:
    data = (b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">'
            b"<p>\x93quoted\x94 \x81</p>")
    assert view_of(data).text == "\u201cquoted\u201d \x81"


def test_a_legacy_multibyte_page_maps_to_its_bytes() -> None:
    data = '<meta charset="shift_jis"><p>日本語のテキスト</p><p>二つ目</p>'.encode("cp932")
    view = view_of(data)
    assert view.text == "日本語のテキスト\n\n二つ目"
    assert runs(data, view, "cp932") == [("日本語のテキスト",) * 2, ("二つ目",) * 2]


@pytest.mark.parametrize(("bom", "codec"), [(b"\xef\xbb\xbf", "utf-8"),
                                            (b"\xff\xfe", "utf-16-le"),
                                            (b"\xfe\xff", "utf-16-be")])
def test_a_byte_order_mark_wins_and_offsets_count_it(bom: bytes, codec: str) -> None:
    data = bom + '<meta charset="iso-8859-2"><p>h\xe9llo \U0001f600 w\xf6rld</p>'.encode(codec)
    view = view_of(data)
    assert view.text == "h\xe9llo \U0001f600 w\xf6rld"
    assert runs(data, view, codec) == [(view.text, view.text)]


def test_an_xml_declaration_names_the_encoding_of_xhtml() -> None:
    data = ('<?xml version="1.0" encoding="ISO-8859-15"?>'
            '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>\u20ac 5</p></body></html>'
            ).encode("iso-8859-15")
    assert view_of(data).text == "\u20ac 5"


def test_a_declaration_inside_a_comment_is_ignored() -> None:
    assert view_of('<!-- <meta charset="koi8-r"> --><p>caf\xe9</p>'.encode()).text == "caf\xe9"


def test_undecodable_bytes_are_refused_with_their_offset() -> None:
    assert reason(b"<p>ok \xff\xfe\xfd</p>") == "not valid utf-8 (invalid byte at offset 6)"
    assert reason(b'<meta charset="euc-jp"><p>\xff\xff</p>').startswith("not valid euc-jp")


def test_an_unknown_or_non_text_charset_falls_back_to_utf8() -> None:
    for label in (b"x-klingon", b"base64", b"rot13", b"idna", b"unicode-escape", b"utf-16"):
        data = b'<meta charset="' + label + b'"><p>caf\xc3\xa9</p>'
        assert view_of(data).text == "caf\xe9", label


def test_a_stateful_encoding_is_refused() -> None:
    assert "stateful" in reason(b'<meta charset="iso-2022-jp"><p>x</p>')


def test_a_nul_byte_is_refused_as_binary() -> None:
    assert reason(b"<p>a\x00b</p>") == "binary file (NUL character)"


def test_a_charset_label_with_a_nul_is_ignored_not_a_traceback() -> None:
    """Found by fuzzing through EPUB: ``codecs.lookup`` raises ValueError on a NUL."""
    from groundkit.extract import ExtractError, extract

    with pytest.raises(ExtractError, match="binary file"):
        extract("html", b'<meta charset="utf\x00-8"><p>caf\xc3\xa9</p>')
