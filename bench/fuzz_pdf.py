"""Structure-aware mutations of PDF files for ``fuzz_extract.py``.

The seeds are classic PDFs (plain objects, an ``xref`` table): the operators find objects,
references, streams and the trailer with regular expressions and edit them.

- ``stream_edit``: a stream inflated (when it is Flate), edited (content-stream
  operators, ToUnicode CMap entries, numbers, bytes; fonts and images get byte edits:
  FreeType and the image decoders read them), deflated again, ``/Length`` usually fixed;
- ``dict_tokens``, ``numbers``, ``references``: keys inserted into an object's
  dictionary, a number made extreme, a reference or an object number pointed elsewhere
  (cycles, missing objects, the page tree looping);
- ``xref_edit``: ``startxref``, an xref entry, a subsection header, the trailer's keys, or
  the table removed (PDFium must rebuild it);
- ``incremental``: an object changed in an appended update, whose ``/Prev`` may loop;
- ``outline``: an appended ``/Outlines`` tree with odd titles and destinations, deep
  chains and cycles (the fixtures, page cuts, have none).

After an object-level edit the cross-reference table is rebuilt half of the time (an
appended full table), so that the edited objects are read as written rather than through
PDFium's repair path, which the other half exercises.
"""

from __future__ import annotations

import random
import re
import zlib

from fuzz_mutate import BYTE_OPS, Corpus, Entry, at, insert_tokens

CONTENT = (b"BT ", b" ET ", b"/F1 12 Tf ", b"(Hello) Tj ", b"[(A) -120 (B)] TJ ", b"<0041> Tj ",
           b"<FEFF> Tj ", b"T* ", b"0 0 Td ", b"1 0 0 1 0 0 Tm ", b"q ", b" Q ", b"3 Tr ", b"7 Tr ",
           b"1 0 0 -1 0 0 cm ", b"99999999999 0 0 99999999999 0 0 cm ", b"0 0 0 0 0 0 cm ",
           b"/Im1 Do ", b"(\\", b"(", b")", b"[", b"]", b"<<", b">>", b"-1e308 Tc ", b"1e38 Tz ",
           b"0 TL ", b"' ", b'" ', b"BI /W 1 /H 1 /BPC 8 /CS /G ID \x00 EI ", b"EMC ",
           b"/Span <</ActualText (x)>> BDC ", b"%", b"\x00", b"1.#INF ", b"--1 ", b"4294967296 ",
           b"(\\376\\377\\330\\000) Tj ", b"(\r\n) Tj ", b"(\t\x01\x1f) Tj ", b"<D800DC00> Tj ")
CMAP = (b"1 beginbfchar <01> <D800> endbfchar\n", b"1 beginbfchar <0001> <000A> endbfchar\n",
        b"1 beginbfchar <0003> <FFFE> endbfchar\n", b"1 beginbfchar <0003> <D83DDE00> endbfchar\n",
        b"1 beginbfrange <0000> <FFFF> <0041> endbfrange\n",
        b"1 beginbfrange <00> <FF> [<0041> <0042>] endbfrange\n",
        b"1 begincodespacerange <00> <FFFFFFFF> endcodespacerange\n",
        b"1 beginbfchar <0003> <" + b"0041" * 300 + b"> endbfchar\n", b"endcmap ", b"<0001> ")
DICT = (b"/Type /Pages ", b"/Type /Page ", b"/Count 2147483647 ", b"/Count -1 ", b"/Kids [1 0 R] ",
        b"/Parent 2 0 R ", b"/MediaBox [0 0 0 0] ", b"/MediaBox [0 0 1e30 1e30] ",
        b"/CropBox [100 100 0 0] ", b"/Rotate 45 ", b"/Rotate -270 ", b"/UserUnit 0 ",
        b"/Length 999999999 ", b"/Length -1 ", b"/Filter /LZWDecode ", b"/Filter /JBIG2Decode ",
        b"/Filter [/FlateDecode /FlateDecode] ", b"/DecodeParms <</Predictor 15 /Columns 99999>> ",
        b"/Resources <<>> ", b"/Font <</F1 99 0 R>> ", b"/Encoding /Identity-H ",
        b"/ToUnicode 1 0 R ", b"/Subtype /Type0 ", b"/DescendantFonts [1 0 R] ", b"/W [0 [500]] ",
        b"/Widths [0 0] ", b"/FirstChar -5 ", b"/LastChar 999999 ", b"/Encrypt 1 0 R ",
        b"/Contents [1 0 R 1 0 R] ", b"/Annots [<</Subtype /Text>>] ", b"/Prev 0 ", b"/Size 0 ",
        b"/Outlines 1 0 R ", b"/Type /Catalog ", b"/", b"<<", b">>", b"(", b"null ")
NUMBERS = (b"0", b"-1", b"1", b"2147483647", b"2147483648", b"-2147483649", b"4294967296",
           b"99999999999999999999", b"1e308", b"3.4e38", b"-0", b".5", b"0.0000001", b"65535")
TITLES = (b"Introduction", b"\xfe\xff\x00I\x00n\x00t\x00r\x00o", b"\xfe\xff\xd8\x00\x00A",
          b"\xfe\xff\x00", b"", b"A" * 5000, b"\x00\x01\x02\r\n\t", b"Copyright",
          b"\xfe\xff" + "日本語".encode("utf-16-be"), b"\xef\xbb\xbfUTF-8 title",
          b"  spaced   title  ", b"An Introduction to R", b"(a)*+?[", b"Preface")
DESTS = (b"[PAGE 0 R /XYZ 0 0 0]", b"[PAGE 0 R /XYZ 0 0 0]", b"[PAGE 0 R /Fit]",
         b"[ROOT 0 R /Fit]", b"[0 /Fit]", b"[99 /Fit]", b"[]", b"null", b"(named)", b"/Name")
"""Outline destinations: ``PAGE`` is a page object's number, ``ROOT`` the outline's."""
_OBJ = re.compile(rb"(?m)^(\d+)\s+(\d+)\s+obj\b")
_REF = re.compile(rb"\b(\d+)\s+(\d+)\s+R\b")
_NUM = re.compile(rb"(?<![\w.#/])-?\d+(?:\.\d*)?(?![\w.#])")
_STREAM = re.compile(rb"stream\r?\n")
_TRAILER = re.compile(rb"trailer\s*(<<.*?>>)\s*startxref", re.S)
_STARTXREF = re.compile(rb"startxref\s+(-?\d+)")
_PAGE = re.compile(rb"/Type\s*/Page\b(?!s)")


def objects(data: bytes) -> list[tuple[int, int, int]]:
    """``(number, start of its header, end of its body)`` of each object in the file."""
    found = []
    for m in _OBJ.finditer(data):
        end = data.find(b"endobj", m.end())
        found.append((int(m.group(1)), m.start(), end if end > 0 else len(data)))
    return found


def dict_part(data: bytes, start: int, end: int) -> int:
    """Where an object's dictionary part ends (its stream's start, or ``end``)."""
    m = _STREAM.search(data, start, end)
    return m.start() if m else end


def replace_at(rng: random.Random, data: bytes, found: list[re.Match[bytes]], group: int,
               new: bytes) -> bytes:
    m = rng.choice(found)
    return data[:m.start(group)] + new + data[m.end(group):]


def trailer_of(data: bytes) -> bytes:
    found = list(_TRAILER.finditer(data))
    return found[-1].group(1) if found else b"<< >>"


def last_startxref(data: bytes) -> int:
    found = list(_STARTXREF.finditer(data))
    return int(found[-1].group(1)) if found else 0


def with_trailer(trailer: bytes, **keys: int) -> bytes:
    """``trailer`` with the given integer keys set (their old values removed)."""
    for key in keys:
        trailer = re.sub(rb"/" + key.encode() + rb"\s+-?\d+(\s+\d+\s+R)?", b"", trailer)
    extra = b"".join(b" /%s %d" % (k.encode(), v) for k, v in keys.items())
    return b"<<" + extra + trailer[2:] if trailer.startswith(b"<<") else b"<<" + extra + b" >>"


def rebuild_xref(data: bytes) -> bytes:
    """``data`` with a full, correct cross-reference table appended (the last of each
    object number wins); unchanged when the object numbers are too large for one."""
    offsets = {int(m.group(1)): m.start() for m in _OBJ.finditer(data)}
    if not offsets or max(offsets) > 100_000:
        return data
    out = bytearray(data if data.endswith(b"\n") else data + b"\n")
    xref_at = len(out)
    size = max(offsets) + 1
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += (b"%010d 00000 n \n" % offsets[number]) if number in offsets \
            else b"0000000000 00000 f \n"
    trailer = with_trailer(re.sub(rb"/Prev\s+-?\d+", b"", trailer_of(data)), Size=size)
    return bytes(out + b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref_at)


def append_update(rng: random.Random, data: bytes, new: list[tuple[int, bytes]]) -> bytes:
    """``data`` with objects ``new`` appended as an incremental update (its own xref
    section; ``/Prev`` the old table, or sometimes itself, zero or far away)."""
    out = bytearray(data if data.endswith(b"\n") else data + b"\n")
    offsets = []
    for number, body in new:
        offsets.append((number, len(out)))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_at = len(out)
    out += b"xref\n" + b"".join(b"%d 1\n%010d 00000 n \n" % (n, o) for n, o in sorted(offsets))
    known = [n for n, _, _ in objects(bytes(out))]
    prev = rng.choice((last_startxref(data),) * 4 + (xref_at, 0, 999_999_999))
    trailer = with_trailer(trailer_of(data), Size=max(known) + 1, Prev=prev)
    return bytes(out + b"trailer\n" + trailer + b"\nstartxref\n%d\n%%%%EOF\n" % xref_at)


def maybe_rebuilt(rng: random.Random, data: bytes) -> bytes:
    return rebuild_xref(data) if rng.random() < 0.5 else data


# --- operators -----------------------------------------------------------------------


def stream_edit(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    streams = [(m.end(), data.find(b"endstream", m.end())) for m in _STREAM.finditer(data)]
    streams = [(a, b) for a, b in streams if b > a]
    if not streams:
        return dict_tokens(rng, data, corpus)
    start, end = rng.choice(streams)
    head = data.rfind(b"obj", 0, start)
    head = 0 if head < 0 else head
    body = data[start:end].rstrip(b"\r\n")
    try:
        plain, packed = zlib.decompress(body), True
    except zlib.error:
        plain, packed = body, False
    for _ in range(rng.choice((1, 1, 2, 4))):
        plain = _content_edit(rng, plain, corpus)
    new = zlib.compress(plain) if packed and rng.random() < 0.9 else plain
    header = data[head:start]
    if new is plain and packed:  # sometimes stored raw: drop the filter, or keep it (a lie)
        header = re.sub(rb"/Filter\s*/FlateDecode", b"", header, count=1) \
            if rng.random() < 0.7 else header
    if rng.random() < 0.8:
        header = re.sub(rb"/Length\s+\d+(?:\s+\d+\s+R)?", b"/Length %d" % len(new), header,
                        count=1)
    return maybe_rebuilt(rng, data[:head] + header + new + b"\n" + data[end:])


def _content_edit(rng: random.Random, plain: bytes, corpus: Corpus) -> bytes:
    text_like = plain[:512].count(b"\0") == 0 and plain[:512].isascii()
    way = rng.random()
    if text_like and way < 0.6:
        tokens = CMAP if b"begincmap" in plain else CONTENT
        return insert_tokens(tokens, b"\n")(rng, plain, corpus)
    if text_like and way < 0.8:
        found = list(_NUM.finditer(plain))
        return replace_at(rng, plain, found, 0, rng.choice(NUMBERS)) if found else plain
    return rng.choice(BYTE_OPS[:5])[2](rng, plain, corpus)


def dict_tokens(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    objs = objects(data)
    if not objs:
        return insert_tokens(DICT, b"/")(rng, data, corpus)
    _, start, end = rng.choice(objs)
    pos = data.find(b"/", start, dict_part(data, start, end))
    pos = pos if pos >= 0 else at(rng, data)
    return maybe_rebuilt(rng, data[:pos] + rng.choice(DICT) + data[pos:])


def numbers(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    objs = objects(data)
    if not objs:
        return data
    _, start, end = rng.choice(objs)
    found = [m for m in _NUM.finditer(data, start, dict_part(data, start, end))
             if data[m.start() - 1:m.start()] not in (b"\n", b"")]  # not the object number
    return maybe_rebuilt(rng, replace_at(rng, data, found, 0, rng.choice(NUMBERS))) \
        if found else data


def references(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """A reference pointed at another object (itself, a missing one), or an object
    renumbered."""
    numbers_in = [n for n, _, _ in objects(data)] or [1]
    target = rng.choice((*numbers_in, *numbers_in, 0, 99_999, 2_147_483_647))
    if rng.random() < 0.75:
        found = list(_REF.finditer(data))
        gen = rng.choice((b"0", b"0", b"0", b"65535", b"1"))
        new = data if not found else replace_at(rng, data, found, 0, b"%d %s R" % (target, gen))
    else:
        found = list(_OBJ.finditer(data))
        new = data if not found else replace_at(rng, data, found, 1, b"%d" % target)
    return maybe_rebuilt(rng, new)


def xref_edit(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    way = rng.randrange(6)
    if way == 0:
        found = list(_STARTXREF.finditer(data))
        value = rng.choice((b"0", b"1", b"-5", b"%d" % len(data), b"9223372036854775807",
                            b"%d" % (last_startxref(data) + rng.randint(-20, 20))))
        return replace_at(rng, data, found, 1, value) if found else data
    if way == 1:
        found = list(re.finditer(rb"(\d{10}) (\d{5}) ([nf])", data))
        group = rng.randint(1, 3)
        value = {1: b"%010d" % rng.randrange(len(data) + 100), 2: b"%05d" % rng.randrange(65536),
                 3: rng.choice((b"n", b"f", b"x"))}[group]
        return replace_at(rng, data, found, group, value) if found else data
    if way == 2:
        found = list(re.finditer(rb"xref\s+(\d+ \d+)", data))
        value = rng.choice((b"0 0", b"0 1", b"1 0", b"0 999999999", b"4294967295 2", b"-1 3"))
        return replace_at(rng, data, found, 1, value) if found else data
    if way == 3:
        start, end = data.rfind(b"xref"), data.rfind(b"trailer")
        return data[:start] + data[end:] if 0 <= start < end else data
    if way == 4:
        found = list(re.finditer(rb"/(Root|Size|Prev|Info|Encrypt)\s+(\d+)", data))
        return replace_at(rng, data, found, 2, rng.choice(NUMBERS)) if found else data
    return data.replace(rng.choice((b"%%EOF", b"startxref", b"trailer", b"xref")), b"", 1)


def incremental(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    objs = [o for o in objects(data) if _STREAM.search(data, o[1], o[2]) is None]
    if not objs:
        return dict_tokens(rng, data, corpus)
    number, start, end = rng.choice(objs)
    body = data[data.find(b"obj", start) + 3:end]
    edit = rng.choice((dict_tokens, numbers, references))
    body = edit(random.Random(rng.random()), b"1 0 obj\n" + body + b"\nendobj", corpus)
    body = body[body.find(b"obj") + 3:body.rfind(b"endobj")] if b"endobj" in body else body
    return append_update(rng, data, [(number, body.strip())])


def outline(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """An ``/Outlines`` tree appended (a new catalog pointing at it)."""
    root = re.findall(rb"/Root\s+(\d+)\s+\d+\s+R", data)
    objs = objects(data)
    if not root or not objs:
        return dict_tokens(rng, data, corpus)
    catalog = next((o for o in objs if o[0] == int(root[-1])), None)
    if catalog is None:
        return dict_tokens(rng, data, corpus)
    pages = [n for n, s, e in objs if _PAGE.search(data, s, dict_part(data, s, e))] or [1]
    base = max(n for n, _, _ in objs) + 1
    count = rng.choice((1, 3, 20, 200))
    items = _outline_items(rng, base, count, pages)
    body = data[data.find(b"obj", catalog[1]) + 3:catalog[2]].strip()
    body = re.sub(rb"/Outlines\s+\d+\s+\d+\s+R", b"", body)
    body = b"<< /Outlines %d 0 R " % base + body[2:] if body.startswith(b"<<") else body
    return append_update(rng, data, [(catalog[0], body), *items])


def _outline_items(rng: random.Random, base: int, count: int, pages: list[int],
                   ) -> list[tuple[int, bytes]]:
    """Outline root ``base`` and ``count`` items under it (a random tree; with cycles
    through ``/Next`` three times in ten)."""
    items = list(range(base + 1, base + 1 + count))
    parent = {n: (base if k == 0 or rng.random() < 0.4 else rng.choice(items[:k]))
              for k, n in enumerate(items)}
    children: dict[int, list[int]] = {n: [] for n in [base, *items]}
    for n in items:
        children[parent[n]].append(n)
    loops = rng.random() < 0.3
    out = []
    for n in [base, *items]:
        kids = children[n]
        keys = [b"/Count %d" % len(kids)]
        keys += [b"/First %d 0 R /Last %d 0 R" % (kids[0], kids[-1])] if kids else []
        if n != base:
            siblings = children[parent[n]]
            i = siblings.index(n)
            following = siblings[i + 1] if i + 1 < len(siblings) else None
            following = rng.choice(items) if loops and rng.random() < 0.2 else following
            title = rng.choice(TITLES).hex().encode()
            keys += [b"/Parent %d 0 R" % parent[n], b"/Title <%s>" % title]
            keys += [b"/Next %d 0 R" % following] if following else []
            dest = rng.choice(DESTS).replace(b"PAGE", b"%d" % rng.choice(pages))
            keys.append(b"/Dest " + dest.replace(b"ROOT", b"%d" % base))
        out.append((n, b"<< " + b" ".join(keys) + b" >>"))
    return out


PDF_OPS: tuple[Entry, ...] = (
    ("stream_edit", 4, stream_edit), ("dict_tokens", 2, dict_tokens), ("numbers", 2, numbers),
    ("references", 2, references), ("xref_edit", 1.5, xref_edit), ("incremental", 1, incremental),
    ("outline", 1.5, outline),
)
