"""Hostile inputs made on demand: the cases of issue 45, never checked in as files.

Each builder returns bytes (or writes a tree) that took a groundkit process past its
bounds before the one boundary for untrusted bytes (ADR 0018): zip members that lie
about their size, a small HTML page that is quadratic for lexbor, PDFs that are deep
or hold one enormous string. Tests, ``make fuzz`` (as seeds) and hand reproductions
share them, so every case is built the same way everywhere.

The zip writer is written out here rather than taken from :mod:`zipfile`, because the
point is to write headers that lie: a declared size that is not the real one, and
compression methods (bzip2, LZMA) that :mod:`zipfile` then inflates in one call.
"""

from __future__ import annotations

import bz2
import lzma
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

STORED, DEFLATED, BZIP2, LZMA = 0, 8, 12, 14
"""Zip compression method numbers."""
_MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Member:
    """One zip member as written: its packed bytes and the claims its headers make."""

    name: str
    packed: bytes
    method: int = STORED
    declared: int | None = None
    """The uncompressed size the headers claim (``None``: the true size)."""
    crc: int = 0
    size: int = 0
    """The true uncompressed size."""


def member(name: str, data: bytes, method: int = STORED) -> Member:
    """``data`` packed honestly with ``method``."""
    crc = zlib.crc32(data)
    if method == STORED:
        return Member(name, data, STORED, None, crc, len(data))
    if method == DEFLATED:
        squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
        return Member(name, squeeze.compress(data) + squeeze.flush(), DEFLATED, None, crc,
                      len(data))
    if method == BZIP2:
        return Member(name, bz2.compress(data, 9), BZIP2, None, crc, len(data))
    return Member(name, _lzma_member(data), LZMA, None, crc, len(data))


def _lzma_member(data: bytes) -> bytes:
    """LZMA as zip method 14 packs it: version, properties size, properties, raw LZMA1."""
    filters = [{"id": lzma.FILTER_LZMA1}]
    props: bytes = lzma._encode_filter_properties(filters[0])  # type: ignore[attr-defined]
    raw = lzma.compress(data, format=lzma.FORMAT_RAW, filters=filters)
    return struct.pack("<BBH", 9, 4, len(props)) + props + raw


def zeros_bomb(name: str, mib: int, method: int, declared: int = 20) -> Member:
    """A member of ``mib`` MiB of NUL bytes whose headers claim ``declared`` bytes.

    Deflate is built from one 16 MiB block closed by a full flush, repeated (a full
    flush byte-aligns the stream and resets its window, so copies concatenate), which
    makes a GiB in a tenth of a second; bzip2 and LZMA are compressed for real (about
    9 s and 20 s a GiB), so keep those small.
    """
    if method == DEFLATED:
        block = 16 * _MIB
        squeeze = zlib.compressobj(9, zlib.DEFLATED, -15)
        body = squeeze.compress(bytes(block)) + squeeze.flush(zlib.Z_FULL_FLUSH)
        tail = squeeze.flush(zlib.Z_FINISH)
        copies, rest = divmod(mib * _MIB, block)
        if rest:
            raise ValueError("a deflate bomb is made of whole 16 MiB blocks")
        crc = 0
        for _ in range(copies):
            crc = zlib.crc32(bytes(block), crc)
        return Member(name, body * copies + tail, DEFLATED, declared, crc, mib * _MIB)
    honest = member(name, bytes(mib * _MIB), method)
    return Member(name, honest.packed, method, declared, honest.crc, honest.size)


def zip_bytes(members: Sequence[Member]) -> bytes:
    """A zip archive of ``members``, headers written exactly as each claims."""
    local = bytearray()
    central = bytearray()
    for item in members:
        name = item.name.encode("utf-8")
        size = item.size if item.declared is None else item.declared
        fields = (20, 0, item.method, 0, 0x21, item.crc, len(item.packed), size, len(name))
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, *fields, 0, 0, 0,
                               0, 0, len(local)) + name
        local += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", *fields, 0) + name + item.packed
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members),
                      len(central), len(local), 0)
    return bytes(local + central + end)


def mimetype_bomb(mib: int, method: int) -> bytes:
    """A zip whose first member, ``mimetype``, claims 20 bytes and inflates to ``mib`` MiB
    (the format sniff read it whole, in the calling process, whatever the file's name)."""
    return zip_bytes([zeros_bomb("mimetype", mib, method),
                      member("content.xml", b"<office:document/>", DEFLATED)])


def quadratic_html(n: int = 3000) -> bytes:
    """``<p>wombat`` + ``n`` distinct unclosed ``<b>`` + ``n`` paragraphs: an HTML parser
    reopens every active formatting element in each paragraph (n² elements; 56 KB makes
    9M of them)."""
    bold = "".join(f'<b id="{i}">' for i in range(n))
    return f"<html><body><p>wombat{bold}</p>{'<p>x</p>' * n}</body></html>".encode()


def quadratic_epub(n: int = 3000) -> bytes:
    """An EPUB whose one chapter is :func:`quadratic_html`."""
    container = (b'<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:'
                 b'opendocument:xmlns:container"><rootfiles><rootfile full-path="book.opf" '
                 b'media-type="application/oebps-package+xml"/></rootfiles></container>')
    opf = (b'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           b'<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>'
           b'</manifest><spine><itemref idref="c1"/></spine></package>')
    return zip_bytes([member("mimetype", b"application/epub+zip"),
                      member("META-INF/container.xml", container, DEFLATED),
                      member("book.opf", opf, DEFLATED),
                      member("c1.xhtml", quadratic_html(n), DEFLATED)])


def pdf_bytes(content: bytes, *, compress: bool = False) -> bytes:
    """A one-page PDF whose page content stream is ``content`` (Helvetica as ``/F1``)."""
    stream = zlib.compress(content, 9) if compress else content
    extra = b" /Filter /FlateDecode" if compress else b""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d%s >>\nstream\n" % (len(stream), extra) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1, xref)
    return bytes(out)


def deep_array_pdf(depth: int = 100_000) -> bytes:
    """A page whose content stream opens ``depth`` nested arrays, never closed, before its
    text (PDFium gives up on the array, and the text operators inside it with it)."""
    return pdf_bytes(b"[" * depth + b"\nBT /F1 12 Tf 72 700 Td (wombat) Tj ET", compress=True)


def long_string_pdf(chars: int = 70_000_000) -> bytes:
    """A page showing one string of ``chars`` characters (compressed: 70M fit in 70 KB)."""
    return pdf_bytes(b"BT /F1 12 Tf 72 700 Td (" + b"w" * chars + b") Tj ET", compress=True)
