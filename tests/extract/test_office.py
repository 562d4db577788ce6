"""DOCX and ODT: real pandoc documents, synthetic edge cases, hostile XML and containers.

The fixtures (``fixtures/office/PROVENANCE.md``) are three pages of the Debian
Administrator's Handbook converted by pandoc; the same HTML gives the same table line
and the same headings in both formats.
"""

from __future__ import annotations

import html
import importlib.metadata
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.extract import extract, extractor, for_file
from groundkit.extract.base import ExtractError, Limits, TextView
from groundkit.extract.office import EXTRACTORS

from .zips import members, packed

FIXTURES = Path(__file__).parent / "fixtures" / "office"
MAIN = {"docx": "word/document.xml", "odt": "content.xml"}
W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
MC = 'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"'
ODF = " ".join(f'xmlns:{p}="urn:oasis:names:tc:opendocument:xmlns:{n}"' for p, n in (
    ("office", "office:1.0"), ("text", "text:1.0"), ("table", "table:1.0"),
    ("draw", "drawing:1.0"), ("svg", "svg-compatible:1.0")))






def docx(body: str, styles: str = "", **notes: str) -> bytes:
    files: dict[str, bytes | str] = {
        "[Content_Types].xml": "<Types/>",
        "word/document.xml": f"<w:document {W} {MC}><w:body>{body}</w:body></w:document>"}
    if styles:
        files["word/styles.xml"] = f"<w:styles {W}>{styles}</w:styles>"
    for kind, xml in notes.items():
        files[f"word/{kind}.xml"] = f"<w:{kind} {W}>{xml}</w:{kind}>"
    return packed(files)


def para(*runs: str, ppr: str = "") -> str:
    props = f"<w:pPr>{ppr}</w:pPr>" if ppr else ""
    return f"<w:p>{props}{''.join(f'<w:r><w:t>{r}</w:t></w:r>' for r in runs)}</w:p>"


def odt(body: str) -> bytes:
    return packed({"mimetype": "application/vnd.oasis.opendocument.text",
                   "content.xml": f"<office:document-content {ODF}><office:body><office:text>"
                                  f"{body}</office:text></office:body></office:document-content>"})


def fixture(fmt: str) -> bytes:
    return (FIXTURES / f"handbook.{fmt}").read_bytes()


def view_of(fmt: str, data: bytes, limits: Limits | None = None) -> TextView:
    return EXTRACTORS[fmt].extract(data, limits or Limits())


def refusal(fmt: str, data: bytes, limits: Limits | None = None) -> str:
    with pytest.raises(ExtractError) as caught:
        view_of(fmt, data, limits)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def assert_mapped(view: TextView, data: bytes, codec: str = "utf-8") -> None:
    """Every segment's bytes, decoded and unescaped, hold its text; between segments
    there are only separators."""
    parts = members(data)
    covered = 0
    for seg in view.segments:
        assert seg.part is not None and seg.byte_start is not None and seg.byte_end is not None
        raw = html.unescape(parts[seg.part][seg.byte_start:seg.byte_end].decode(codec))
        assert view.text[seg.start:seg.end] in raw
        assert re.fullmatch(r"[ \t\n|]*", view.text[covered:seg.start])
        covered = seg.end
    assert view.text[covered:] == ""


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_the_handbook_reads_as_paragraphs_a_table_and_code(fmt: str) -> None:
    view = view_of(fmt, fixture(fmt))
    assert view.format == fmt
    assert view.text.startswith("The Debian Administrator's Handbook (excerpts)\n\n")
    assert ("\n\nIn order to guarantee continuity of the services, each computer migration "
            "must be planned and executed according to the plan.") in view.text
    assert ("\n\nOperating System | Architecture(s)\nDEC Unix (OSF/1) | alpha, mipsel\n"
            "HP Unix | ia64, hppa\n") in view.text
    assert "\nPrev\nThe Debian Administrator's Handbook\nNext\n\n" in view.text  # a list
    assert "\n\n$ apt-file search bin/axi-cache" in view.text


def test_docx_line_breaks_keep_the_blank_line_of_a_code_block() -> None:
    view = view_of("docx", fixture("docx"))
    assert "$ nmap mirwiz\nStarting Nmap 7.80" in view.text
    assert "9999/tcp open  abyss\n\nNmap done: 1 IP address" in view.text


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_the_handbook_outline_is_its_headings(fmt: str) -> None:
    view = view_of(fmt, fixture(fmt))
    outline = [(h.level, h.title) for h in view.headings if h.level > 1]
    assert outline[:3] == [(2, "3.2.\xa0How To Migrate"),
                           (3, "3.2.1.\xa0Survey and Identify Services"),
                           (4, "3.2.1.1.\xa0Network and Processes")]
    assert (2, "2.4.\xa0Why the Debian Distribution?") in outline
    assert all(view.text.startswith(h.title, h.start) for h in view.headings)
    position = view.text.index("The nmap tool")
    assert view.heading_path(position)[-3:] == (
        "3.2.\xa0How To Migrate", "3.2.1.\xa0Survey and Identify Services",
        "3.2.1.1.\xa0Network and Processes")


def test_both_formats_give_the_same_outline_below_the_title() -> None:
    def outline(fmt: str) -> list[tuple[int, str]]:
        return [(h.level, h.title) for h in view_of(fmt, fixture(fmt)).headings if h.level > 1]

    assert outline("docx") == outline("odt")


def test_a_docx_title_paragraph_is_a_level_one_heading() -> None:
    first = view_of("docx", fixture("docx")).headings[0]
    assert (first.start, first.level) == (0, 1)
    assert first.title == "The Debian Administrator's Handbook (excerpts)"


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_every_segment_holds_its_text_in_the_member_bytes(fmt: str) -> None:
    view = view_of(fmt, fixture(fmt))
    assert len(view.segments) > 200
    assert {s.part for s in view.segments} == {MAIN[fmt]}
    assert_mapped(view, fixture(fmt))


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_a_quote_locates_to_a_byte_range_of_the_member(fmt: str) -> None:
    view = view_of(fmt, fixture(fmt))
    quote = "DEC Unix (OSF/1) | alpha, mipsel"
    start = view.text.index(quote)
    locator = view.locate(start, start + len(quote))
    assert locator is not None and len(locator.spans) == 1
    span = locator.spans[0]
    assert span.part == MAIN[fmt] and span.byte_start is not None and span.byte_end is not None
    raw = members(fixture(fmt))[MAIN[fmt]][span.byte_start:span.byte_end].decode()
    assert "DEC Unix (OSF/1)" in raw and "alpha, mipsel" in raw and raw.count("<") < 40


def test_a_utf16_document_maps_into_its_own_bytes() -> None:
    files: dict[str, bytes | str] = dict(members(fixture("docx")))
    xml = bytes(files["word/document.xml"]).decode("utf-8")
    files["word/document.xml"] = xml.replace('encoding="UTF-8"', 'encoding="UTF-16"').encode(
        "utf-16")
    data = packed(files)
    view = view_of("docx", data)
    assert view.text == view_of("docx", fixture("docx")).text
    assert_mapped(view, data, codec="utf-16-le")  # after the BOM every slice is LE


def test_docx_lists_tabs_breaks_and_tables() -> None:
    numbered = "<w:numPr><w:ilvl w:val='0'/><w:numId w:val='3'/></w:numPr>"
    table = ("<w:tbl><w:tr><w:tc>" + para("x") + para("y") + "</w:tc><w:tc/><w:tc>" + para("z")
             + "</w:tc></w:tr><w:tr><w:tc><w:tbl><w:tr><w:tc>" + para("in1") + "</w:tc><w:tc>"
             + para("in2") + "</w:tc></w:tr></w:tbl></w:tc><w:tc>" + para("w")
             + "</w:tc></w:tr></w:tbl>")
    body = (para("Intro") + para("one", ppr=numbered) + para("two", ppr=numbered)
            + "<w:tbl><w:tr><w:tc>" + para("t") + "</w:tc></w:tr></w:tbl>"
            + para("three", ppr=numbered) + para("Outro")
            + "<w:p><w:r><w:t>a</w:t><w:tab/><w:t>b</w:t><w:br/><w:t>c</w:t></w:r></w:p>"
            + table + para("After"))
    view = view_of("docx", docx(body))
    assert view.text == ("Intro\n\none\ntwo\n\nt\n\nthree\n\nOutro\n\na\tb\nc\n\n"
                         "x y | z\nin1 | in2 | w\n\nAfter")


def test_docx_headings_follow_styles_xml_names_outline_levels_and_based_on() -> None:
    styles = ("<w:style w:type='paragraph' w:styleId='berschrift1'><w:name w:val='heading 1'/>"
              "</w:style><w:style w:type='paragraph' w:styleId='Mine'><w:basedOn "
              "w:val='berschrift1'/></w:style><w:style w:type='paragraph' w:styleId='Deep'>"
              "<w:name w:val='Deep'/><w:pPr><w:outlineLvl w:val='4'/></w:pPr></w:style>"
              "<w:style w:type='paragraph' w:styleId='Bullet'><w:name w:val='List Bullet'/>"
              "<w:pPr><w:numPr><w:numId w:val='2'/></w:numPr></w:pPr></w:style>")
    body = (para("Top", ppr="<w:pStyle w:val='berschrift1'/>")
            + para("Derived", ppr="<w:pStyle w:val='Mine'/>")
            + para("Five", ppr="<w:pStyle w:val='Deep'/>")
            + para("Direct", ppr="<w:outlineLvl w:val='1'/>")
            + para("Body", ppr="<w:pStyle w:val='berschrift1'/><w:outlineLvl w:val='9'/>")
            + para("Heading3", ppr="<w:pStyle w:val='Heading3'/>")
            + para("b1", ppr="<w:pStyle w:val='Bullet'/>")
            + para("b2", ppr="<w:pStyle w:val='Bullet'/>"))
    view = view_of("docx", docx(body, styles))
    assert [(h.level, h.title) for h in view.headings] == [
        (1, "Top"), (1, "Derived"), (5, "Five"), (2, "Direct"), (3, "Heading3")]
    assert view.text.endswith("Heading3\n\nb1\nb2")


def test_docx_notes_follow_the_body_each_mapped_to_its_part() -> None:
    body = para("Body", "text") + "<w:p><w:r><w:footnoteReference w:id='1'/></w:r></w:p>"
    data = docx(body, footnotes="<w:footnote w:id='1'>" + para("A footnote.") + "</w:footnote>",
                endnotes="<w:endnote w:id='1'>" + para("An endnote.") + "</w:endnote>")
    view = view_of("docx", data)
    assert view.text == "Bodytext\n\nA footnote.\n\nAn endnote."
    assert [s.part for s in view.segments] == ["word/document.xml"] * 2 + [
        "word/footnotes.xml", "word/endnotes.xml"]
    assert_mapped(view, data)


def test_docx_fallbacks_deletions_and_field_codes_are_left_out() -> None:
    box = para("box text")
    body = ("<w:p><w:r><w:t>Before </w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires='wps'>"
            f"<w:drawing><w:txbxContent>{box}</w:txbxContent></w:drawing></mc:Choice>"
            f"<mc:Fallback><w:pict><w:txbxContent>{box}</w:txbxContent></w:pict></mc:Fallback>"
            "</mc:AlternateContent></w:r><w:del><w:r><w:delText>gone</w:delText></w:r></w:del>"
            "<w:moveFrom><w:r><w:t>moved</w:t></w:r></w:moveFrom><w:r><w:instrText>PAGE"
            "</w:instrText></w:r><w:r><w:t>after</w:t></w:r></w:p>")
    view = view_of("docx", docx(body))
    assert view.text == "Before \n\nbox text\n\nafter"  # w:t text is kept as it is


def test_a_docx_without_text_has_an_empty_view() -> None:
    view = view_of("docx", docx("<w:p/><w:p><w:r><w:t></w:t></w:r></w:p><w:tbl/>"))
    assert (view.text, view.segments, view.headings) == ("", (), ())


def test_odt_white_space_collapses_as_odf_says() -> None:
    body = ('<text:p>  a \n  b<text:s text:c="2"/>c <text:span> d</text:span>'
            "<text:tab/>e<text:line-break/>f </text:p><text:p>\n</text:p>")
    view = view_of("odt", odt(body))
    assert view.text == "a b  c d\te\nf"
    assert [view.text[s.start:s.end] for s in view.segments] == ["a", "b", "c", "d", "e", "f"]


def test_comments_and_cdata_inside_text_keep_every_segment_mapped() -> None:
    data = odt("<text:p>Tom <!-- x --> &amp; <?pi?><![CDATA[Jerry <3]]></text:p>")
    view = view_of("odt", data)
    assert view.text == "Tom & Jerry <3"
    assert_mapped(view, data)
    data = docx("<w:p><w:r><w:t>a<!-- x -->b<![CDATA[ & c]]></w:t></w:r></w:p>")
    view = view_of("docx", data)
    assert view.text == "ab & c"
    assert_mapped(view, data)


def test_odt_lists_tables_headings_and_notes() -> None:
    body = ('<text:h text:outline-level="2">Part</text:h><text:list><text:list-item><text:p>'
            "one</text:p></text:list-item><text:list-item><text:p>two</text:p></text:list-item>"
            "</text:list><table:table><table:table-row><table:table-cell><text:p>x</text:p>"
            "</table:table-cell><table:table-cell><text:p>y</text:p></table:table-cell>"
            "</table:table-row></table:table><text:h>Plain h</text:h>"
            '<text:p>Body<text:note text:note-class="footnote"><text:note-citation>1'
            "</text:note-citation><text:note-body><text:p>The note.</text:p></text:note-body>"
            "</text:note> goes on.<office:annotation><text:p>a comment</text:p>"
            "</office:annotation></text:p>")
    data = odt(body)
    view = view_of("odt", data)
    assert view.text == "Part\n\none\ntwo\n\nx | y\n\nPlain h\n\nBody goes on.\n\nThe note."
    assert [(h.level, h.title) for h in view.headings] == [(2, "Part"), (1, "Plain h")]
    assert_mapped(view, data)


def test_odt_index_templates_and_image_descriptions_are_left_out() -> None:
    body = ("<text:table-of-content><text:table-of-content-source><text:index-title-template>"
            "Contents</text:index-title-template></text:table-of-content-source><text:index-body>"
            "<text:p>Chapter 1</text:p></text:index-body></text:table-of-content>"
            "<text:p>See<draw:frame><svg:title>alt</svg:title><svg:desc>long</svg:desc>"
            "</draw:frame> this</text:p>")
    assert view_of("odt", odt(body)).text == "Chapter 1\n\nSee this"


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_entity_attacks_and_dtds_are_refused(fmt: str) -> None:
    attacks = [
        '<!DOCTYPE d [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">'
        '<!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;"><!ENTITY d "&c;&c;&c;&c;&c;&c;&c;">]>',
        '<!DOCTYPE d [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>',
        '<!DOCTYPE d [<!ENTITY big "' + "x" * 20_000 + '">]>',
        '<!DOCTYPE d SYSTEM "http://example.invalid/evil.dtd">']
    files = members(fixture(fmt))
    for attack in attacks:
        xml = files[MAIN[fmt]].decode("utf-8")
        root = xml.index("<", xml.index("?>"))
        files_now: dict[str, bytes | str] = {**files, MAIN[fmt]: xml[:root] + attack + xml[root:]}
        assert refusal(fmt, packed(files_now)) == f"unsafe XML in {MAIN[fmt]}: a DTD is not allowed"


def test_malformed_styles_or_body_xml_is_one_line() -> None:
    assert refusal("docx", docx("<w:p>")).startswith("malformed XML in word/document.xml: ")
    files: dict[str, bytes | str] = {**members(docx(para("a"))), "word/styles.xml": "<w:styles"}
    assert refusal("docx", packed(files)).startswith("malformed XML in word/styles.xml: ")


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_empty_truncated_and_foreign_containers_are_refused(fmt: str) -> None:
    data = fixture(fmt)
    assert refusal(fmt, b"") == "empty file (0 bytes)"
    assert refusal(fmt, data[: len(data) - 300]).startswith("not a zip file")
    foreign = packed({"readme.txt": "a zip, but not a document"})
    assert refusal(fmt, foreign) == f"member {MAIN[fmt]} is missing"
    with pytest.raises(ExtractError, match=f"^not an? {fmt.upper()} file"):
        for_file(f"x.{fmt}", foreign)
    with pytest.raises(ExtractError, match=r"^empty file \(0 bytes\)"):
        for_file(f"x.{fmt}", b"")


def test_a_zip_bomb_body_is_refused() -> None:
    bomb = packed({"[Content_Types].xml": "<Types/>",
                   "word/document.xml": b"<w:document " + W.encode() + b">" + bytes(3 * 2**20)})
    assert refusal("docx", bomb, Limits(max_unpacked=2 * 2**20)) == (
        "zip bomb: member word/document.xml expands past 2 MiB")
    assert refusal("docx", bomb).startswith("zip bomb: member word/document.xml expands ")


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_a_view_over_the_limit_is_refused(fmt: str) -> None:
    assert refusal(fmt, fixture(fmt), Limits(max_view_chars=1000)) == (
        "text view longer than 1000 characters")


def test_a_huge_space_count_is_refused_not_allocated() -> None:
    data = odt('<text:p>a<text:s text:c="999999999999"/>b</text:p>')
    assert refusal("odt", data, Limits(max_view_chars=10_000)) == (
        "text view longer than 10000 characters")
    assert view_of("odt", odt('<text:p>a<text:s text:c="-3"/>b</text:p>')).text == "a b"


@pytest.mark.parametrize("fmt", ["docx", "odt"])
def test_the_registry_finds_and_runs_the_extractors(fmt: str) -> None:
    found = extractor(fmt)
    assert found is EXTRACTORS[fmt] and found.available()
    assert (found.library, found.extra) == ("defusedxml", "office")
    assert found.suffixes == (f"*.{fmt}",)
    assert found.identity() == f"{fmt}/defusedxml={importlib.metadata.version('defusedxml')};v2"
    assert for_file(f"book.{fmt}", fixture(fmt)) == fmt
    assert extract(fmt, fixture(fmt)).text == view_of(fmt, fixture(fmt)).text


def outcome(fmt: str, data: bytes) -> None:
    """A view whose segments fit it, or a one-line ExtractError; nothing else."""
    try:
        view = view_of(fmt, data)
    except ExtractError as exc:
        assert "\n" not in str(exc)
        return
    assert all(0 <= s.start < s.end <= len(view.text) for s in view.segments)


TOKENS = [b"<", b">", b"&", b"&amp;", b"</w:p>", b"<w:p>", b"<w:tc>", b"<text:p>", b"</text:h>",
          b'<text:s text:c="x"/>', b"<!DOCTYPE x>", b"<![CDATA[<]]>", b"\xff\xfe", b"\x00"]


@settings(max_examples=60)
@given(fmt=st.sampled_from(["docx", "odt"]), where=st.floats(0, 1), cut=st.integers(0, 40),
       insert=st.binary(max_size=16) | st.sampled_from(TOKENS))
def test_a_mutated_member_gives_a_view_or_a_reason(fmt: str, where: float, cut: int,
                                                   insert: bytes) -> None:
    files: dict[str, bytes | str] = dict(members(fixture(fmt)))
    xml = bytes(files[MAIN[fmt]])
    at = int(where * len(xml))
    files[MAIN[fmt]] = xml[:at] + insert + xml[at + cut:]
    outcome(fmt, packed(files))


@settings(max_examples=60)
@given(fmt=st.sampled_from(["docx", "odt"]), where=st.floats(0, 1),
       insert=st.binary(min_size=1, max_size=8), cut=st.integers(0, 8))
def test_a_mutated_container_gives_a_view_or_a_reason(fmt: str, where: float, insert: bytes,
                                                      cut: int) -> None:
    data = fixture(fmt)
    at = int(where * len(data))
    outcome(fmt, data[:at] + insert + data[at + cut:])
