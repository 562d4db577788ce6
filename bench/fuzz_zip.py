"""Structure-aware mutations of zip containers (DOCX, ODT, EPUB) for ``fuzz_extract.py``.

Member operators unpack the container, change its members (a member's decompressed
XML edited, members swapped, renamed, dropped, added, reordered, recompressed, the
``mimetype`` rewritten) and pack it again with :mod:`zipfile`; :func:`header_lie` edits
a field of a local header, a central-directory record or the end record of the packed
bytes (sizes, CRC, method, flags, name length, counts, offsets). XML edits insert the
format's own elements, deep nesting, entity declarations and DTDs, change attribute
values or the member's encoding; an EPUB chapter also gets the HTML operators.
"""

from __future__ import annotations

import functools
import random
import re
import struct
import warnings
import zipfile
from collections.abc import Callable
from io import BytesIO

from fuzz_mutate import (
    BYTE_OPS,
    HTML_OPS,
    Corpus,
    Entry,
    Op,
    choose,
    flip_bits,
    insert_tokens,
    near_at,
    text_copy,
)

Member = tuple[str, bytes, int]
Edit = Callable[[random.Random, list[Member], Corpus], None]
MAIN = {"docx": ("word/document.xml", "word/styles.xml"), "odt": ("content.xml",),
        "epub": ("EPUB/content.opf", "META-INF/container.xml", ".xhtml")}
"""Members (or name endings) an edit picks ten times as often as the others (and the
``mimetype``, which decides the format, a third as often)."""

COMMON_XML = (b"<", b">", b"&", b"&amp;", b"&#0;", b"&#x10FFFF;", b"&#xD800;", b"&#13;",
              b"&#9;", b"&bogus;", b"<![CDATA[<&>]]>", b"<![CDATA[", b"<!-- c -->", b"<?pi x?>",
              b"\r\n", b"\r", b"\xff\xfe", b"\x00", b'xmlns:w="urn:other"', b'xmlns="urn:x"',
              b"<x:y xmlns:x='u'/>", b"\xc3\xa9", b"\xe6\x97\xa5", b"\xed\xa0\x80", b"  \t ",
              b"</", b"/>", b"<a b='1' b='2'/>")
PROLOGS = (b"<!DOCTYPE x>", b'<!DOCTYPE x [<!ENTITY a "aaaa">]>',
           b'<!DOCTYPE x SYSTEM "file:///etc/passwd">', b'<!DOCTYPE x [<!ENTITY e SYSTEM "http://x">]>',
           b'<!DOCTYPE x [<!ENTITY % p "x"> %p;]>', b"<?xml-stylesheet href='x'?>",
           b"<!-- comment -->", b'<?xml version="1.0" encoding="UTF-8"?>', b"\xef\xbb\xbf")
def _lines(text: str) -> tuple[bytes, ...]:
    """One token a line (the tables below hold no newline of their own)."""
    return tuple(line.encode() for line in text.strip("\n").split("\n"))


XML_TOKENS = {
    "docx": _lines("""
<w:p>
</w:p>
<w:r>
</w:r>
<w:t>
</w:t>
<w:t xml:space="preserve">  x  </w:t>
<w:tab/>
<w:br/>
<w:cr/>
<w:tbl>
</w:tbl>
<w:tr>
</w:tr>
<w:tc>
</w:tc>
<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>
<w:pPr><w:outlineLvl w:val="-1"/></w:pPr>
<w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr>
<w:pStyle w:val="Title"/>
<mc:AlternateContent><mc:Fallback><w:t>fallback</w:t></mc:Fallback></mc:AlternateContent>
<w:moveFrom><w:r><w:t>moved</w:t></w:r></w:moveFrom>
<w:del><w:r><w:delText>x</w:delText></w:r></w:del>
<w:p><w:r><w:t>para</w:t></w:r></w:p>
<w:style w:type="paragraph" w:styleId="A"><w:basedOn w:val="A"/></w:style>
<w:txbxContent>
<w:sym w:char="F020"/>
"""),
    "odt": _lines("""
<text:p>
</text:p>
<text:h text:outline-level="2">
</text:h>
<text:h text:outline-level="-5">
<text:h text:outline-level="99999999999999999999">
<text:s/>
<text:s text:c="5"/>
<text:s text:c="99999999999"/>
<text:s text:c="-3"/>
<text:tab/>
<text:line-break/>
<text:list>
</text:list>
<text:list-item>
<table:table>
<table:table-row>
<table:table-cell>
</table:table-cell>
<text:note-body>
</text:note-body>
<text:note><text:note-citation>1</text:note-citation><text:note-body><text:p>n</text:p></text:note-body></text:note>
<office:annotation><text:p>c</text:p></office:annotation>
<text:span>
</text:span>
<text:alphabetical-index-source>
<svg:title>t</svg:title>
<draw:frame><draw:text-box><text:p>box</text:p></draw:text-box></draw:frame>
"""),
    "epub": _lines("""
<itemref idref="nav"/>
<itemref idref="missing"/>
</spine>
<spine>
<item id="x" href="../../etc/passwd" media-type="application/xhtml+xml"/>
<item id="y" href="%2e%2e/x" media-type="text/html"/>
<item id="z" href="/abs.xhtml" media-type="application/xhtml+xml"/>
linear="no"
href="text/ch001.xhtml#frag"
href=""
media-type="image/svg+xml"
properties="nav"
<rootfile full-path="../x.opf"/>
<rootfile full-path="EPUB/content.opf" media-type="application/oebps-package+xml"/>
<h1>
</h1>
"""),
}
NESTS = {"docx": ((b"<w:tbl><w:tr><w:tc>", b"</w:tc></w:tr></w:tbl>"), (b"<w:p>", b"</w:p>"),
                  (b"<w:r>", b"</w:r>"), (b"<w:t>", b"</w:t>")),
         "odt": ((b"<text:list><text:list-item>", b"</text:list-item></text:list>"),
                 (b"<text:span>", b"</text:span>"), (b"<text:note-body>", b"</text:note-body>"),
                 (b"<table:table><table:table-row><table:table-cell>",
                  b"</table:table-cell></table:table-row></table:table>")),
         "epub": ((b"<div>", b"</div>"), (b"<ul><li>", b"</li></ul>"), (b"<item>", b"</item>"))}
VALUES = (b"", b"0", b"-1", b"1", b"9", b"10", b"99999999999999999999", b"1e9", b"x", b"Title",
          b"heading 1", b"Heading1", b"nav", b"../x", b"%00", b"\xc3\xa9", b"&amp;", b"A" * 3000)
MIMETYPES = (b"application/epub+zip", b"application/vnd.oasis.opendocument.text",
             b"application/vnd.oasis.opendocument.spreadsheet", b"", b"junk",
             b"application/epub+zip\n", b"application/epub+zip" + b" " * 200)
NAMES = ("../{}", "/{}", "C:{}", "{}/", "./{}", "a/../{}", "{}é", "x" * 300, "", "{}\\x")
_ATTR = re.compile(rb"([\w:.-]+)=(\"[^\"]*\"|'[^']*')")
_DECL = re.compile(rb"<\?xml[^>]*\?>")


@functools.lru_cache(maxsize=8)
def members(data: bytes) -> tuple[Member, ...] | None:
    """The members of a zip (name, decompressed bytes, method), or ``None``."""
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            return tuple((i.filename, archive.read(i), i.compress_type)
                         for i in archive.infolist())
    except Exception:  # noqa: BLE001  -- any failure: the bytes are no longer a zip
        return None


def rezip(items: list[Member]) -> bytes:
    buffer = BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicate names are wanted here
        with zipfile.ZipFile(buffer, "w") as archive:
            for name, data, method in items:
                info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = method
                archive.writestr(info, data)
    return buffer.getvalue()


def pick(rng: random.Random, items: list[Member], fmt: str) -> int:
    main = MAIN.get(fmt, ())
    weights = [10 if any(n == m or (m[0] == "." and n.endswith(m)) for m in main)
               else 0.3 if n == "mimetype" else 1 for n, _, _ in items]
    return rng.choices(range(len(items)), weights=weights)[0]


def with_members(edit: Edit) -> Op:
    """An operator that runs ``edit(rng, items, corpus)`` on the unpacked members."""
    def op(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
        found = members(data)
        if not found:
            return flip_bits(rng, data, corpus)
        items = list(found)
        edit(rng, items, corpus)
        return rezip(items)
    return op


# --- an XML member's own bytes -------------------------------------------------------


def xml_nesting(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    opening, closing = rng.choice(NESTS.get(corpus.fmt, NESTS["epub"]))
    depth = min(rng.choice((16, 256, 4096, 50_000)), (1 << 20) // len(opening))
    pos = near_at(rng, data, b"<")
    return data[:pos] + opening * depth + b"deep" + closing * depth + data[pos:]


def attribute_value(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    found = list(_ATTR.finditer(data))
    if not found:
        return flip_bits(rng, data, corpus)
    m = rng.choice(found)
    value = rng.choice(VALUES) if rng.random() < 0.7 else rng.choice(found).group(2)[1:-1]
    return data[:m.start(2)] + b'"' + value.replace(b'"', b"") + b'"' + data[m.end(2):]


def xml_encoding(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """The member re-encoded (UTF-16 either way, with or without a BOM, Latin-1), or its
    declaration made to lie."""
    way = rng.randrange(6)
    if way < 3:
        codec = ("utf-16-le", "utf-16-be", "utf-16")[way]
        if rng.random() < 0.7:
            data = _DECL.sub(b'<?xml version="1.0" encoding="UTF-16"?>', data, count=1)
        out = data.decode("utf-8", "replace").encode(codec, "replace")
        return out[2:] if codec == "utf-16" and rng.random() < 0.3 else out
    label = rng.choice((b"ISO-8859-1", b"UTF-16", b"US-ASCII", b"EBCDIC", b"utf-32", b"x"))
    decl = b'<?xml version="1.0" encoding="' + label + b'"?>'
    if way == 3:
        return decl + _DECL.sub(b"", data, count=1)
    out = data.decode("utf-8", "replace").encode("latin-1", "replace")
    return _DECL.sub(decl, out, count=1) if way == 4 else b"\xef\xbb\xbf" + data


def prolog(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    m = _DECL.match(data)
    pos = m.end() if m and rng.random() < 0.8 else 0
    return data[:pos] + rng.choice(PROLOGS) + data[pos:]


def xml_ops(fmt: str, name: str) -> tuple[Entry, ...]:
    tokens = XML_TOKENS.get(fmt, ()) + COMMON_XML
    ops: tuple[Entry, ...] = (
        ("xml_tokens", 4, insert_tokens(tokens)), ("xml_nesting", 1, xml_nesting),
        ("attribute_value", 2, attribute_value), ("xml_encoding", 1, xml_encoding),
        ("prolog", 1, prolog), ("text_copy", 1, text_copy), *BYTE_OPS[:5])
    return ops + HTML_OPS if name.endswith((".xhtml", ".html")) else ops


# --- the container's members ---------------------------------------------------------


def edit_member(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    i = pick(rng, items, corpus.fmt)
    name, body, method = items[i]
    for _ in range(rng.choice((1, 1, 2, 3))):
        body = choose(rng, xml_ops(corpus.fmt, name))[2](rng, body, corpus)
    items[i] = (name, body, method)


def swap_members(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    if len(items) > 1:
        i, j = pick(rng, items, corpus.fmt), rng.randrange(len(items))
        items[i], items[j] = (items[i][0], items[j][1], items[i][2]), \
            (items[j][0], items[i][1], items[j][2])


def rename_member(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    i = pick(rng, items, corpus.fmt)
    name, body, method = items[i]
    new = rng.choice(items)[0] if rng.random() < 0.3 else rng.choice(NAMES).format(name)
    items[i] = (new if rng.random() < 0.8 else name.upper(), body, method)


def drop_member(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    if items:
        del items[pick(rng, items, corpus.fmt)]


def add_member(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    """A copy of a member, a padded (bomb-like) one, or thousands of tiny ones."""
    way = rng.randrange(4)
    if way == 0 and items:
        name, body, method = items[pick(rng, items, corpus.fmt)]
        items.insert(rng.randint(0, len(items)), (name if rng.random() < 0.5 else "copy/" + name,
                                                  body, method))
    elif way == 1 and items:  # the member itself padded: ratio and size checks
        i = pick(rng, items, corpus.fmt)
        name, body, method = items[i]
        pad = rng.choice((b" ", b"<!---->", b"\n")) * rng.choice((1 << 20, 3 << 20, 12 << 20))
        pos = near_at(rng, body, b"</")
        items[i] = (name, body[:pos] + pad + body[pos:], zipfile.ZIP_DEFLATED)
    elif way == 2:
        items.extend((f"m/{k}", b"", zipfile.ZIP_STORED)
                     for k in range(rng.choice((100, 10_001))))
    else:
        items.append(("filler.bin", b"\0" * (4 << 20), zipfile.ZIP_DEFLATED))


def reorder(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    rng.shuffle(items)


def recompress(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    i = pick(rng, items, corpus.fmt)
    method = rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                         zipfile.ZIP_LZMA))
    items[i] = (items[i][0], items[i][1], method)


def mimetype(rng: random.Random, items: list[Member], corpus: Corpus) -> None:
    value = rng.choice(MIMETYPES)
    kept = [m for m in items if m[0] != "mimetype"]
    items[:] = [("mimetype", value, zipfile.ZIP_STORED), *kept]


# --- lies in the packed bytes --------------------------------------------------------

_FIELDS = {b"PK\x03\x04": ((4, 2), (6, 2), (8, 2), (14, 4), (18, 4), (22, 4), (26, 2), (28, 2)),
           b"PK\x01\x02": ((6, 2), (8, 2), (10, 2), (16, 4), (20, 4), (24, 4), (28, 2), (30, 2),
                           (32, 2), (34, 2), (38, 4), (42, 4)),
           b"PK\x05\x06": ((4, 2), (6, 2), (8, 2), (10, 2), (12, 4), (16, 4), (20, 2))}


def header_lie(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """One field of one zip record set to a value it should not have."""
    places = [(m.start(), sig) for sig in _FIELDS for m in re.finditer(re.escape(sig), data)]
    if not places:
        return flip_bits(rng, data, corpus)
    start, sig = rng.choice(places)
    offset, width = rng.choice(_FIELDS[sig])
    pos = start + offset
    if pos + width > len(data):
        return data
    fmt = "<H" if width == 2 else "<I"
    old = struct.unpack_from(fmt, data, pos)[0]
    top = (1 << (8 * width)) - 1
    value = rng.choice((0, 1, top, rng.randint(0, top), old + rng.randint(-16, 16),
                        old | 1, old | 8, old | 0x800, 12, 14, 99, old * 2))
    return data[:pos] + struct.pack(fmt, value & top) + data[pos + width:]


def prefix_junk(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    junk = rng.choice((b"MZ" + b"\0" * 62, b"\0" * rng.randint(1, 64), b"PK\x03\x04"))
    return junk + data if rng.random() < 0.5 else data + junk


ZIP_OPS: tuple[Entry, ...] = (
    ("edit_member", 6, with_members(edit_member)),
    ("swap_members", 0.5, with_members(swap_members)),
    ("rename_member", 0.7, with_members(rename_member)),
    ("drop_member", 0.5, with_members(drop_member)),
    ("add_member", 0.5, with_members(add_member)),
    ("reorder", 0.3, with_members(reorder)),
    ("recompress", 0.4, with_members(recompress)),
    ("mimetype", 0.4, with_members(mimetype)),
)
"""Structural operators: applied before the byte-level ones (and the header lies)."""
RAW_ZIP_OPS: tuple[Entry, ...] = (("header_lie", 1, header_lie), ("prefix_junk", 0.2, prefix_junk))
"""Byte-level operators of the packed container, applied with :data:`BYTE_OPS`."""
