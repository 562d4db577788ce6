"""What ``fuzz_extract.py`` holds every extraction to (groundkit/extract/base.py's contract).

An extraction returns a :class:`~groundkit.extract.TextView` or raises
:class:`~groundkit.extract.ExtractError` with a one-line reason. A view must also:

- have the format it was extracted as, and text that encodes as UTF-8 (every offset of a
  chunk is also a UTF-8 byte offset of the view);
- have segments sorted, non-overlapping and within the text (checked again here, since
  :class:`TextView` raises an ``ExtractError`` for a bad one, which is a bug, not a
  reason), and headings sorted, inside the text, with a level of at least 1 and a
  non-empty title of one line, without spaces at either end;
- HTML and EPUB: each segment's raw bytes (of the file, or of its zip member), decoded
  in the page's encoding, character references resolved and whitespace collapsed, are
  the segment's text collapsed: the check ``tests/extract/test_html_map.py`` makes, with
  its ``collapse`` and ``unescape`` (or, in ``<xmp>`` and ``<plaintext>``, whose text is
  verbatim, the bytes as they are);
- DOCX and ODT: each segment's member bytes, decoded and read as XML character data
  (line ends normalised, comments and processing instructions dropped, CDATA kept as
  is, references resolved), contain the segment's text (the promise of
  ``groundkit/extract/office.py``);
- PDF: each segment is one line (no newline), on a page at least 1 and not before the
  previous segment's page, at a page offset of at least 0, with a finite box whose
  corners are in order.
"""

from __future__ import annotations

import codecs
import math
import re
import sys
import zipfile
from io import BytesIO

from common import ROOT

from groundkit.extract import TextView
from groundkit.extract.html_encoding import decode_html

sys.path.insert(0, str(ROOT / "tests"))
from extract.test_html_map import collapse, unescape  # the tests' own check

codecs.register_error("fuzz-c1", lambda exc: (chr(exc.object[exc.start]), exc.start + 1))
"""windows-1252 as browsers read it: its five undefined bytes are the C1 controls."""

_XML_SKIPPED = re.compile(r"<!--.*?-->|<\?.*?\?>", re.S)
_CDATA = re.compile(r"<!\[CDATA\[(.*?)\]\]>", re.S)
_REFERENCE = re.compile(r"&(#[0-9]+|#x[0-9a-fA-F]+|lt|gt|amp|apos|quot);")
_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "apos": "'", "quot": '"'}


def check_view(name: str, data: bytes, view: TextView) -> str | None:
    """The first broken invariant of ``view`` (``data`` extracted as ``name``), or None."""
    if view.format != name:
        return f"view of format {view.format!r}, extracted as {name!r}"
    try:
        view.text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"view does not encode as UTF-8 (code point {exc.start})"
    last = 0
    for seg in view.segments:
        if not last <= seg.start < seg.end <= len(view.text):
            return f"segment [{seg.start}, {seg.end}) after {last} in a view of {len(view.text)}"
        last = seg.end
    problem = _headings(view)
    if problem is None and name == "pdf":
        problem = _pdf(view)
    elif problem is None and name in ("html", "epub"):
        problem = _markup(data, view, epub=name == "epub")
    elif problem is None and name in ("docx", "odt"):
        problem = _office(data, view)
    return problem


def same_view(a: TextView, b: TextView) -> bool:
    return (a.text, a.segments, a.headings) == (b.text, b.segments, b.headings)


def _headings(view: TextView) -> str | None:
    last = 0
    for h in view.headings:
        if not last <= h.start <= len(view.text):
            return f"heading at {h.start} after {last} in a view of {len(view.text)}"
        if h.level < 1 or not h.title or h.title != h.title.strip(" \t\r\n") \
                or "\n" in h.title:
            return f"heading {h.title[:40]!r} of level {h.level}"
        last = h.start
    return None


def _pdf(view: TextView) -> str | None:
    page = 1
    for seg in view.segments:
        if seg.page is None or seg.page < page or (seg.page_offset or 0) < 0:
            return f"segment [{seg.start}, {seg.end}) on page {seg.page} after page {page}"
        page = seg.page
        if "\n" in view.text[seg.start:seg.end]:
            return f"segment [{seg.start}, {seg.end}) holds a line break"
        box = seg.bbox
        if box is not None and (not all(map(math.isfinite, box))
                                or box[0] > box[2] or box[1] > box[3]):
            return f"segment [{seg.start}, {seg.end}) has the box {box}"
    return None


def _members(data: bytes, view: TextView) -> dict[str | None, bytes]:
    parts = {seg.part for seg in view.segments}
    if parts <= {None}:
        return {None: data}
    with zipfile.ZipFile(BytesIO(data)) as archive:
        return {part: archive.read(part) for part in parts if part is not None}


def _markup(data: bytes, view: TextView, epub: bool) -> str | None:
    found = _members(data, view)
    codec = {part: decode_html(raw).codec for part, raw in found.items() if raw}
    for seg in view.segments:
        if (seg.part is None) == epub or seg.byte_start is None or seg.byte_end is None:
            return f"segment [{seg.start}, {seg.end}) maps to part {seg.part!r}"
        raw = found[seg.part][seg.byte_start:seg.byte_end].decode(codec[seg.part], "fuzz-c1")
        held, shown = collapse(unescape(raw)), collapse(view.text[seg.start:seg.end])
        if held != shown and collapse(raw) != shown:  # <xmp>, <plaintext>: kept verbatim
            return (f"segment [{seg.start}, {seg.end}) is {shown[:60]!r}; bytes "
                    f"[{seg.byte_start}, {seg.byte_end}) of {seg.part or 'the file'} "
                    f"hold {held[:60]!r}")
    return None


def _office(data: bytes, view: TextView) -> str | None:
    found = _members(data, view)
    for seg in view.segments:
        if seg.part is None or seg.byte_start is None or seg.byte_end is None:
            return f"segment [{seg.start}, {seg.end}) has no part or bytes"
        member = found[seg.part]
        raw = member[seg.byte_start:seg.byte_end].decode(_xml_codec(member), "replace")
        if view.text[seg.start:seg.end] not in _character_data(raw):
            return (f"segment [{seg.start}, {seg.end}) {view.text[seg.start:seg.end][:60]!r} "
                    f"is not in bytes [{seg.byte_start}, {seg.byte_end}) of {seg.part}: "
                    f"{raw[:80]!r}")
    return None


def _xml_codec(member: bytes) -> str:
    """The encoding expat reads ``member`` in: a UTF-16 BOM or first ``<``, else the
    declaration's Latin-1 or ASCII, else UTF-8."""
    if member[:2] in (b"\xff\xfe", b"<\0"):
        return "utf-16-le"
    if member[:2] in (b"\xfe\xff", b"\0<"):
        return "utf-16-be"
    declared = re.match(rb"(?:\xef\xbb\xbf)?<\?xml[^>]*encoding=[\"']([\w.-]+)", member)
    label = declared.group(1).lower() if declared else b"utf-8"
    return {b"iso-8859-1": "latin-1", b"latin1": "latin-1", b"us-ascii": "ascii"}.get(
        label, "utf-8")


def _character_data(raw: str) -> str:
    """The text an XML parser reads in ``raw`` (which may hold tags too)."""
    raw = _XML_SKIPPED.sub("", raw.replace("\r\n", "\n").replace("\r", "\n"))
    pieces = _CDATA.split(raw)  # odd pieces are CDATA contents, read as they are
    return "".join(p if i % 2 else _REFERENCE.sub(_resolve, p) for i, p in enumerate(pieces))


def _resolve(m: re.Match[str]) -> str:
    """An XML reference's character (not :func:`html.unescape`, which drops U+10FFFF)."""
    name = m.group(1)
    if name[0] != "#":
        return _ENTITIES[name]
    return chr(int(name[2:], 16) if name[1] in "xX" else int(name[1:]))
