"""SafeZip and the defused XML readers: hostile containers and hostile XML refused in one line.

Hostile zips are written by hand (:func:`raw_zip`) so that a header can say anything:
a size it does not have, an encryption flag, a name no archiver would write.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from io import BytesIO

import pytest

from groundkit.extract.base import ExtractError, Limits
from groundkit.extract.zipsafe import (
    RATIO_GRACE,
    SafeZip,
    XmlWalker,
    check_name,
    walk_xml,
    xml_tree,
)

from .zips import packed

MiB = 2**20


@dataclass
class Member:
    """A member as written: ``payload`` is the stored (compressed) bytes; the sizes and
    CRC are what the headers claim."""

    name: str
    payload: bytes
    crc: int
    size: int
    method: int = zipfile.ZIP_DEFLATED
    flags: int = 0
    packed: int | None = None


def deflated(name: str, data: bytes, **claims: int) -> Member:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    payload = c.compress(data) + c.flush()
    return Member(name, payload, zlib.crc32(data), len(data), **claims)


def raw_zip(members: list[Member]) -> bytes:
    """A zip container written field by field (local headers, central directory, end)."""
    out, central = bytearray(), bytearray()
    for m in members:
        name = m.name.encode("utf-8")
        packed = len(m.payload) if m.packed is None else m.packed
        fields = (m.flags | 0x800, m.method, 0, 0x21, m.crc, packed, m.size, len(name))
        central += struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, *fields, 0, 0, 0, 0, 0,
                               len(out))
        central += name
        out += struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, *fields, 0) + name + m.payload
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members),
                      len(central), len(out), 0)
    return bytes(out + central + end)




def refusal(data: bytes, member: str | None = None, limits: Limits | None = None) -> str:
    """The one-line reason SafeZip gives for ``data`` (or for reading ``member`` of it)."""
    with pytest.raises(ExtractError) as caught, SafeZip(data, limits or Limits()) as archive:
        archive.read(member or archive.names[0])
    reason = str(caught.value)
    assert "\n" not in reason
    return reason


def test_members_of_a_well_formed_zip_are_read_back() -> None:
    data = packed({"a.xml": b"<a/>", "dir/b.txt": b"b" * 5000})
    with SafeZip(data, Limits()) as archive:
        assert archive.names == ("a.xml", "dir/b.txt")
        assert "dir/b.txt" in archive and "c" not in archive
        assert archive.read("dir/b.txt") == b"b" * 5000


def test_a_hand_written_zip_reads_like_one_from_zipfile() -> None:
    with SafeZip(raw_zip([deflated("x.xml", b"<x>hello</x>")]), Limits()) as archive:
        assert archive.read("x.xml") == b"<x>hello</x>"


def test_an_empty_or_truncated_file_is_not_a_zip() -> None:
    data = packed({"a.xml": b"<a/>" * 100})
    assert refusal(b"") == "empty file (0 bytes)"
    assert refusal(data[: len(data) // 2]).startswith("not a zip file")
    assert refusal(b"PK\x03\x04 not really").startswith("not a zip file")


@pytest.mark.parametrize("name", ["../../x", "a/../../b", "..", "/etc/passwd", "C:\\x",
                                  "C:/windows/x", "a\\..\\b", "word\\document.xml"])
def test_an_unsafe_member_name_refuses_the_whole_file(name: str) -> None:
    data = raw_zip([deflated("ok.xml", b"<a/>"), deflated(name, b"evil")])
    assert refusal(data, "ok.xml") == f"unsafe member name {name!r}"


@pytest.mark.parametrize("name", ["a", "a/b.xml", "META-INF/container.xml", "a..b/c", "dir/"])
def test_ordinary_member_names_are_safe(name: str) -> None:
    assert check_name(name) == name


def test_a_name_listed_twice_is_refused() -> None:
    data = raw_zip([deflated("word/document.xml", b"<a/>"),
                    deflated("word/document.xml", b"<b/>")])
    assert refusal(data) == "duplicate member name 'word/document.xml'"


def test_too_many_members_are_refused_before_zipfile_lists_them() -> None:
    data = packed({f"m{i}": b"" for i in range(5)})
    assert refusal(data, limits=Limits(max_members=4)) == "zip lists more than 4 members"
    with SafeZip(data, Limits(max_members=5)) as archive:
        assert len(archive.names) == 5


def test_a_300_mb_zip_bomb_is_refused_before_it_is_inflated() -> None:
    # 300 MiB of zeros, deflated 1 MiB at a time with full flushes: each block is the same
    # ~1 KB, so the bomb is built in a blink and would take seconds to inflate.
    zeros = bytes(MiB)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(zeros) + c.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(300):
        crc = zlib.crc32(zeros, crc)
    bomb = Member("word/document.xml", block * 300 + c.flush(), crc, 300 * MiB)
    data = raw_zip([bomb])
    assert len(data) < 400_000
    assert refusal(data) == "zip bomb: member word/document.xml expands past 256 MiB"


def test_a_member_compressing_past_the_ratio_limit_is_refused() -> None:
    data = packed({"content.xml": bytes(4 * MiB)})  # zeros deflate about 1000:1
    assert refusal(data).startswith("zip bomb: member content.xml expands ")
    assert refusal(data).endswith(":1 (limit 200:1)")


def test_a_small_member_may_compress_past_the_ratio_limit() -> None:
    data = packed({"styles.xml": b" " * RATIO_GRACE})
    with SafeZip(data, Limits()) as archive:
        assert len(archive.read("styles.xml")) == RATIO_GRACE


def test_the_unpacked_budget_is_shared_by_all_members() -> None:
    data = packed({"a": b"a" * 600_000, "b": b"b" * 600_000})
    with SafeZip(data, Limits(max_unpacked=1_000_000)) as archive:
        archive.read("a")
        with pytest.raises(ExtractError, match=r"^zip bomb: member b expands past 1000000 bytes$"):
            archive.read("b")


def test_a_header_understating_the_size_gains_nothing() -> None:
    # Declared: 100 bytes (no bomb). Actual: 8 MiB of zeros. zipfile stops at the
    # declared size and the CRC (of the whole) no longer matches.
    lie = deflated("content.xml", bytes(8 * MiB))
    lie.size = 100
    assert refusal(raw_zip([lie])).startswith("corrupt member content.xml: ")


def test_a_header_overstating_the_compressed_size_cannot_hide_the_ratio() -> None:
    # Declared: 4 MiB packed for 8 MiB (2:1). The file has ~8 KB of it: the ratio is
    # taken against what the file can hold.
    lie = deflated("content.xml", bytes(8 * MiB), packed=4 * MiB)
    assert refusal(raw_zip([lie])).startswith("zip bomb: member content.xml expands ")


def test_inflated_bytes_are_counted_even_past_what_the_header_says(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # zipfile caps output at the declared size; a reader that did not would still be
    # stopped by the count of bytes actually produced.
    data = packed({"content.xml": b"<a/>"})
    monkeypatch.setattr(zipfile.ZipExtFile, "read", lambda self, n=-1: bytes(n))
    assert refusal(data).startswith("zip bomb: member content.xml expands ")


def test_an_encrypted_member_is_refused() -> None:
    data = raw_zip([deflated("content.xml", b"<a/>", flags=0x1)])
    assert refusal(data) == "member content.xml is encrypted"


@pytest.mark.parametrize("method", [zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA])
def test_methods_other_than_stored_and_deflated_are_refused(method: int) -> None:
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        archive.writestr("content.xml", b"<a/>")
    assert refusal(buffer.getvalue()) == (f"member content.xml uses unsupported compression "
                                          f"method {method} (only stored and deflated)")


def test_a_missing_member_is_named() -> None:
    assert refusal(packed({"a": b""}), "content.xml") == "member content.xml is missing"


ATTACKS = {
    "billion laughs": b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<lolz>&lol3;</lolz>""",
    "external entity": b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><r>&xxe;</r>""",
    "quadratic blowup": b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "' + b"x" * 50_000
    + b'">]><r>' + b"&a;" * 50_000 + b"</r>",
    "parameter entity": b"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY % p SYSTEM "http://example.invalid/x.dtd"> %p;]><r/>""",
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_tree_reader_refuses_entities(attack: str) -> None:
    with pytest.raises(ExtractError) as caught:
        xml_tree(ATTACKS[attack], "OEBPS/content.opf")
    assert str(caught.value) == ("unsafe XML in OEBPS/content.opf: entities and external "
                                 "references are not allowed")


@pytest.mark.parametrize("attack", ATTACKS)
def test_the_walker_refuses_any_dtd(attack: str) -> None:
    with pytest.raises(ExtractError, match=r"^unsafe XML in content\.xml: a DTD is not allowed$"):
        walk_xml(ATTACKS[attack], "content.xml", XmlWalker(ATTACKS[attack]))


def test_the_tree_reader_tolerates_a_plain_dtd_and_reads_no_external_one() -> None:
    data = b'<!DOCTYPE package SYSTEM "http://example.invalid/opf.dtd"><package a="1"/>'
    assert xml_tree(data, "content.opf").get("a") == "1"


def test_malformed_xml_is_one_line() -> None:
    with pytest.raises(ExtractError, match=r"^malformed XML in a\.xml: .*line 1, column \d+$"):
        xml_tree(b"<a><b></a>", "a.xml")
    with pytest.raises(ExtractError, match=r"^malformed XML in a\.xml: undefined entity"):
        walk_xml(b"<a>&nope;</a>", "a.xml", XmlWalker(b""))


class Runs(XmlWalker):
    """Every text run and its byte range."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.capturing = 1
        self.runs: list[tuple[str, int, int]] = []

    def on_text(self, text: str, span: tuple[int, int]) -> None:
        self.runs.append((text, *span))


@pytest.mark.parametrize("codec", ["utf-8", "utf-16-le", "utf-16-be", "utf-16"])
def test_a_run_spans_the_tags_around_it_in_the_document_s_own_encoding(codec: str) -> None:
    text = ('<?xml version="1.0" encoding="{}"?><p a=">">Tom &amp; Jerry<s/>é'
            '<b>bold</b> end</p>').format("UTF-16" if codec.startswith("utf-16") else "UTF-8")
    data = text.encode(codec)
    walker = Runs(data)
    walk_xml(data, "c.xml", walker)
    decode = "utf-16-le" if codec == "utf-16" else codec  # Python writes a little-endian BOM
    assert [run for run, _, _ in walker.runs] == ["Tom & Jerry", "é", "bold", " end"]
    assert [data[a:b].decode(decode) for _, a, b in walker.runs] == [
        '<p a=">">Tom &amp; Jerry', "é", "<b>bold</b>", "</b> end</p>"]


def test_comments_instructions_and_cdata_end_a_run() -> None:
    data = b"<p>a<!-- c -->b<?pi x?>c<![CDATA[<d>]]>e</p>"
    walker = Runs(data)
    walk_xml(data, "c.xml", walker)
    assert [(run, data[a:b].decode()) for run, a, b in walker.runs] == [
        ("a", "<p>a"), ("b", "<!-- c -->b"), ("c", "<?pi x?>c"), ("<d>", "<![CDATA[<d>]]>"),
        ("e", "]]>e</p>")]
