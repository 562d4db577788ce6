"""EPUB: a real pandoc book in spine order, synthetic packages, hostile hrefs and XML.

The fixture (``fixtures/office/PROVENANCE.md``) is three Debian Administrator's Handbook
pages converted by pandoc, one chapter per page plus pandoc's title page.
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
from groundkit.extract.epub import EXTRACTORS
from groundkit.extract.html import OPTIONS
from groundkit.extract.zipsafe import SafeZip

from .zips import members, packed

FIXTURE = Path(__file__).parent / "fixtures" / "office" / "handbook.epub"
CHAPTERS = ["EPUB/text/title_page.xhtml"] + [f"EPUB/text/ch00{i}.xhtml" for i in range(1, 5)]
CONTAINER = ('<?xml version="1.0"?><container version="1.0" '
             'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
             '<rootfile full-path="{}" media-type="application/oebps-package+xml"/>'
             "</rootfiles></container>")
XHTML = "application/xhtml+xml"






def page(body: str) -> str:
    return ('<?xml version="1.0" encoding="UTF-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
            f"<head></head><body>{body}</body></html>")


def book(files: dict[str, bytes | str], items: list[tuple[str, str, str]], spine: str,
         opf: str = "OEBPS/content.opf", prologue: str = "") -> bytes:
    """An EPUB: ``items`` are (id, href, media-type[ properties]), ``spine`` the itemrefs."""
    manifest = "".join(
        f'<item id="{i}" href="{href}" media-type="{kind.split()[0]}"'
        + (f' properties="{kind.split()[1]}"' if " " in kind else "") + "/>"
        for i, href, kind in items)
    package = (f'<?xml version="1.0"?>{prologue}<package xmlns="http://www.idpf.org/2007/opf" '
               f'version="3.0"><metadata/><manifest>{manifest}</manifest>'
               f"<spine>{spine}</spine></package>")
    return packed({"mimetype": "application/epub+zip",
                   "META-INF/container.xml": CONTAINER.format(opf), opf: package, **files})


def view_of(data: bytes, limits: Limits | None = None) -> TextView:
    return EXTRACTORS["epub"].extract(data, limits or Limits())


def refusal(data: bytes, limits: Limits | None = None) -> str:
    with pytest.raises(ExtractError) as caught:
        view_of(data, limits)
    assert "\n" not in str(caught.value)
    return str(caught.value)


def collapsed(text: str) -> str:
    return re.sub(r"[ \t\n\r\f]+", " ", text)


def test_the_handbook_chapters_come_in_spine_order() -> None:
    view = view_of(FIXTURE.read_bytes())
    assert view.format == "epub"
    assert view.text.startswith("The Debian Administrator's Handbook (excerpts)\n\n")
    order = [view.text.index(t) for t in ("3.2.\xa0How To Migrate",
                                          "2.4.\xa0Why the Debian Distribution?",
                                          "6.4.\xa0The apt-file Command")]
    assert order == sorted(order)
    assert "\nDEC Unix (OSF/1) | alpha, mipsel\n" in view.text
    assert list(dict.fromkeys(s.part for s in view.segments)) == CHAPTERS


def test_the_handbook_outline_spans_the_chapters() -> None:
    view = view_of(FIXTURE.read_bytes())
    outline = [(h.level, h.title) for h in view.headings]
    assert (2, "3.2.\xa0How To Migrate") in outline
    assert (4, "3.2.1.1.\xa0Network and Processes") in outline
    assert all(view.text.startswith(h.title, h.start) for h in view.headings)
    assert view.heading_path(view.text.index("The nmap tool"))[-1] == (
        "3.2.1.1.\xa0Network and Processes")


def test_every_segment_holds_its_text_in_its_chapter_bytes() -> None:
    data = FIXTURE.read_bytes()
    view, files = view_of(data), members(data)
    assert len(view.segments) > 200
    for seg in view.segments:
        assert seg.part is not None and seg.byte_start is not None and seg.byte_end is not None
        raw = files[seg.part][seg.byte_start:seg.byte_end].decode("utf-8")
        assert collapsed(view.text[seg.start:seg.end]) in collapsed(html.unescape(raw))


def test_spine_order_wins_and_only_markup_documents_are_read() -> None:
    files: dict[str, bytes | str] = {
        "OEBPS/Text/one.xhtml": page("<h1>One</h1><p>first</p>"),
        "OEBPS/Text/two 2.xhtml": page("<p>second</p>"),
        "OEBPS/extra/notes.html": page("<p>notes</p>"),
        "OEBPS/nav.xhtml": page("<nav><ol><li>One</li></ol></nav>"),
        "OEBPS/cover.svg": "<svg xmlns='http://www.w3.org/2000/svg'><text>cover</text></svg>",
        "OEBPS/Text/empty.xhtml": b""}
    items = [("one", "Text/one.xhtml", XHTML), ("two", "Text/two%202.xhtml#start", XHTML),
             ("notes", "extra/../extra/notes.html", "text/html"),
             ("nav", "nav.xhtml", f"{XHTML} nav"),
             ("cover", "cover.svg", "image/svg+xml"), ("empty", "Text/empty.xhtml", XHTML)]
    spine = ('<itemref idref="nav"/><itemref idref="cover"/><itemref idref="two"/>'
             '<itemref idref="empty"/><itemref idref="one"/><itemref idref="notes" linear="no"/>')
    view = view_of(book(files, items, spine))
    assert view.text == "second\n\nOne\n\nfirst\n\nnotes"
    assert [s.part for s in view.segments] == [
        "OEBPS/Text/two 2.xhtml", "OEBPS/Text/one.xhtml", "OEBPS/Text/one.xhtml",
        "OEBPS/extra/notes.html"]
    assert [(h.start, h.level, h.title) for h in view.headings] == [(8, 1, "One")]


def test_a_package_at_the_root_and_without_namespaces_is_read() -> None:
    files: dict[str, bytes | str] = {"c.xhtml": page("<p>root</p>")}
    data = book(files, [("c", "c.xhtml", XHTML)], '<itemref idref="c"/>', opf="package.opf")
    data = packed({**members(data), "package.opf": members(data)["package.opf"].replace(
        b' xmlns="http://www.idpf.org/2007/opf"', b"")})
    assert view_of(data).text == "root"


@pytest.mark.parametrize(("href", "resolved"), [
    ("../../etc/passwd", "../etc/passwd"), ("/etc/passwd", "/etc/passwd"),
    ("..%2F..%2Fx.xhtml", "../x.xhtml"), ("a\\..\\..\\x", "OEBPS/a\\..\\..\\x")])
def test_a_spine_href_leaving_the_container_is_refused_unread(
        href: str, resolved: str, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    original = SafeZip.read
    monkeypatch.setattr(SafeZip, "read", lambda self, name: read.append(name) or original(
        self, name))
    data = book({"OEBPS/ok.xhtml": page("<p>ok</p>")},
                [("ok", "ok.xhtml", XHTML), ("evil", href, XHTML)],
                '<itemref idref="ok"/><itemref idref="evil"/>')
    assert refusal(data) == f"unsafe member name {resolved!r}"
    assert read == ["META-INF/container.xml", "OEBPS/content.opf"]


def test_a_container_pointing_outside_itself_is_refused() -> None:
    data = packed({"META-INF/container.xml": CONTAINER.format("../content.opf")})
    assert refusal(data) == "unsafe member name '../content.opf'"


@pytest.mark.parametrize(("change", "reason"), [
    ({"META-INF/container.xml": "<container/>"},
     "META-INF/container.xml names no package document"),
    ({"OEBPS/content.opf": "<package><manifest/></package>"},
     "package document OEBPS/content.opf has no spine"),
    ({"OEBPS/content.opf": '<package><manifest/><spine><itemref idref="x"/></spine></package>'},
     "spine item 'x' is not in the manifest"),
    ({"OEBPS/ch.xhtml": None}, "member OEBPS/ch.xhtml is missing"),
])
def test_a_broken_package_is_refused_with_its_reason(change: dict[str, str | None],
                                                     reason: str) -> None:
    files = members(book({"OEBPS/ch.xhtml": page("<p>x</p>")}, [("c", "ch.xhtml", XHTML)],
                         '<itemref idref="c"/>'))
    changed = {k: v for k, v in {**files, **change}.items() if v is not None}
    assert refusal(packed(changed)) == reason


def test_an_epub_with_an_empty_spine_has_an_empty_view() -> None:
    assert view_of(book({}, [], "")).text == ""


@pytest.mark.parametrize(("member", "prologue"), [
    ("META-INF/container.xml", '<!DOCTYPE c [<!ENTITY a "aa"><!ENTITY b "&a;&a;&a;&a;">]>'),
    ("OEBPS/content.opf", '<!DOCTYPE p [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'),
])
def test_entities_in_the_package_xml_are_refused(member: str, prologue: str) -> None:
    files = members(book({"OEBPS/ch.xhtml": page("<p>x</p>")}, [("c", "ch.xhtml", XHTML)],
                         '<itemref idref="c"/>'))
    xml = files[member].decode()
    body = xml.index("<", xml.index("?>")) if "?>" in xml else 0
    data = packed({**files, member: xml[:body] + prologue + xml[body:]})
    assert refusal(data) == (f"unsafe XML in {member}: entities and external references are "
                             "not allowed")


def test_empty_truncated_foreign_and_bombed_containers_are_refused() -> None:
    data = FIXTURE.read_bytes()
    assert refusal(b"") == "empty file (0 bytes)"
    assert refusal(data[:-200]).startswith("not a zip file")
    assert refusal(packed({"readme.txt": "hi"})) == "member META-INF/container.xml is missing"
    with pytest.raises(ExtractError, match=r"^not an EPUB file"):
        for_file("book.epub", packed({"readme.txt": "hi"}))
    bomb = book({"OEBPS/ch.xhtml": page("<p>" + " " * (3 * 2**20) + "</p>")},
                [("c", "ch.xhtml", XHTML)], '<itemref idref="c"/>')
    assert refusal(bomb, Limits(max_unpacked=2**20)) == (
        "zip bomb: member OEBPS/ch.xhtml expands past 1 MiB")


def test_a_view_over_the_limit_is_refused() -> None:
    reason = refusal(FIXTURE.read_bytes(), Limits(max_view_chars=5000))
    assert "5000" in reason


def test_the_registry_finds_and_runs_the_extractor() -> None:
    found = extractor("epub")
    assert found is EXTRACTORS["epub"] and found.available()
    assert (found.library, found.extra, found.suffixes) == ("selectolax", "office", ("*.epub",))
    versions = ",".join(f"{lib}={importlib.metadata.version(lib)}"
                        for lib in ("selectolax", "defusedxml"))
    assert found.identity() == f"epub/{versions};v1,html-{OPTIONS}"
    assert for_file("book.epub", FIXTURE.read_bytes()) == "epub"
    assert extract("epub", FIXTURE.read_bytes()).text == view_of(FIXTURE.read_bytes()).text


TOKENS = [b"<", b"&", b'"', b"</spine>", b'<itemref idref="nav"/>', b"../", b"%2e%2e/",
          b"<!DOCTYPE x>", b"\xff", b"</p>", b"<h1>"]


@settings(max_examples=60)
@given(member=st.sampled_from(["META-INF/container.xml", "EPUB/content.opf", CHAPTERS[2]]),
       where=st.floats(0, 1), cut=st.integers(0, 30),
       insert=st.binary(max_size=12) | st.sampled_from(TOKENS))
def test_a_mutated_book_gives_a_view_or_a_reason(member: str, where: float, cut: int,
                                                 insert: bytes) -> None:
    files: dict[str, bytes | str] = dict(members(FIXTURE.read_bytes()))
    xml = bytes(files[member])
    at = int(where * len(xml))
    files[member] = xml[:at] + insert + xml[at + cut:]
    try:
        view = view_of(packed(files))
    except ExtractError as exc:
        assert "\n" not in str(exc)
        return
    assert all(s.part in files for s in view.segments)
