"""The encoding of an HTML page, and the raw byte offset of each of its characters.

A byte-order mark decides, else the first ``<meta charset>`` (or ``http-equiv``
content type) in the first 1024 bytes, as the HTML standard's prescan reads it, else an
XML declaration's encoding (XHTML), else UTF-8. Labels are read as browsers read them
(WHATWG Encoding Standard): ``iso-8859-1``, ``ascii`` and their aliases are
windows-1252, ``shift_jis`` is cp932, ``gb2312`` is GBK; a ``utf-16`` label in a
prescan means UTF-8, and an unknown label is ignored. Bytes invalid in that encoding are
refused with their offset, not replaced: a wrong guess would be mojibake with
valid-looking offsets. Stateful encodings (ISO-2022, UTF-7) are refused: their byte
offsets cannot be measured a run at a time. A NUL character means a binary file.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

from .base import ExtractError

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
_PRESCAN = 1024
_META = re.compile(rb"<!--.*?-->|<meta(?=[\t\n\f\r /])(?:[^>\"']|\"[^\"]*\"|'[^']*')*>",
                   re.I | re.S)
_META_ATTR = re.compile(rb"([^\t\n\f\r />=]+)[\t\n\f\r ]*"
                        rb"(?:=[\t\n\f\r ]*(?:\"([^\"]*)\"|'([^']*)'|([^\t\n\f\r >]*)))?")
_CONTENT_CHARSET = re.compile(rb"charset[\t\n\f\r ]*=[\t\n\f\r ]*[\"']?([^\"';\t\n\f\r ]+)",
                              re.I)
_XML_DECL = re.compile(rb"<\?xml[^>]*?encoding[\t\n\r ]*=[\t\n\r ]*[\"']([A-Za-z0-9._:-]+)")
_WINDOWS_1252 = frozenset((
    "ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1",
    "iso-ir-100", "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1",
    "us-ascii", "windows-1252", "x-cp1252",
))
_ALIASES = {  # labels browsers read as a superset encoding (WHATWG Encoding Standard)
    "gb2312": "gbk", "x-gbk": "gbk", "euc-kr": "cp949", "ks_c_5601-1987": "cp949",
    "shift_jis": "cp932", "sjis": "cp932", "windows-31j": "cp932", "big5": "big5hkscs",
    "iso-8859-9": "cp1254", "latin5": "cp1254", "tis-620": "cp874", "iso-8859-11": "cp874",
}
_NOT_CHARSETS = frozenset(("idna", "punycode", "undefined", "unicode-escape",
                           "raw-unicode-escape"))
_C1_AS_1252 = {b: bytes([b]).decode("cp1252", "ignore") or chr(b) for b in range(0x80, 0xA0)}
_C1 = re.compile(rb"[\x80-\x9f]")


@dataclass(frozen=True, slots=True)
class Source:
    """A page decoded, and how to find the raw byte offset of any of its characters."""

    text: str
    codec: str
    """The Python codec that encodes ``text`` back to the file's bytes."""
    bom: int
    one_byte: bool
    """Every code point is one byte (a single-byte encoding, or ASCII)."""

    def byte_offsets(self, positions: list[int]) -> dict[int, int]:
        """The raw byte offset of each code point offset of ``text`` in ``positions``."""
        ordered = sorted(set(positions))
        if self.one_byte:
            return {p: p + self.bom for p in ordered}
        found: dict[int, int] = {}
        last, at = 0, self.bom
        for pos in ordered:
            at += len(self.text[last:pos].encode(self.codec))
            found[pos], last = at, pos
        return found


def decode_html(data: bytes) -> Source:
    """The page's text in the encoding it declares (see the module), or
    :class:`ExtractError` with the offset of the first invalid byte."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return _decode_as(data, codec, codec, len(bom))
    label, codec = _declared(data[:_PRESCAN])
    return _decode_as(data, label, codec, 0)


def _declared(head: bytes) -> tuple[str, str]:
    """The encoding the page declares (its label and Python codec), else UTF-8."""
    for m in _META.finditer(head):
        if m.group().startswith(b"<!--"):
            continue
        attrs = {a.group(1).lower(): a.group(2) or a.group(3) or a.group(4) or b""
                 for a in _META_ATTR.finditer(m.group(), 5)}
        label = attrs.get(b"charset")
        if label is None and attrs.get(b"http-equiv", b"").lower() == b"content-type":
            found = _CONTENT_CHARSET.search(attrs.get(b"content", b""))
            label = found.group(1) if found else None
        codec = _codec(label) if label else None
        if codec is not None:
            return label.decode("ascii", "replace") if label else "", codec
    xml = _XML_DECL.match(head)
    if xml is not None:
        codec = _codec(xml.group(1))
        if codec is not None:
            return xml.group(1).decode("ascii"), codec
    return "utf-8", "utf-8"


def _codec(raw: bytes) -> str | None:
    label = raw.decode("ascii", "replace").strip().lower()
    if label in _WINDOWS_1252:
        return "windows-1252"
    try:
        info = codecs.lookup(_ALIASES.get(label, label))
    except (LookupError, ValueError):  # ValueError: a label with a NUL in it
        return None
    if not getattr(info, "_is_text_encoding", True) or info.name in _NOT_CHARSETS:
        return None  # base64, rot13, idna: Python codecs, not character encodings
    if info.name.startswith(("utf-8", "utf-16", "utf-32")):  # a prescan reads 8-bit ones
        return "utf-8"
    return info.name


def _decode_as(data: bytes, label: str, codec: str, bom: int) -> Source:
    body = data[bom:]
    if codec == "windows-1252":  # latin-1, but 0x80-0x9F as browsers read them
        text = body.decode("latin-1")
        if _C1.search(body):
            text = text.translate(_C1_AS_1252)
        return Source(text, codec, bom, True)
    if codec.startswith("iso2022") or codec in ("utf-7", "hz"):
        raise ExtractError(f"unsupported encoding {label!r} (stateful; byte offsets "
                           "cannot be mapped)")
    try:
        text = body.decode(codec)
    except UnicodeDecodeError as exc:
        raise ExtractError(f"not valid {label} (invalid byte at offset {exc.start + bom})"
                           ) from None
    except UnicodeError:
        raise ExtractError(f"not valid {label}") from None
    if codec not in ("utf-8", "utf-16-le", "utf-16-be") and not _round_trips(text, codec, body):
        raise ExtractError(f"{label} text does not encode back to its bytes; "
                           "byte offsets cannot be mapped")
    if "\0" in text:
        raise ExtractError("binary file (NUL character)")
    return Source(text, codec, bom, len(text) == len(body))


def _round_trips(text: str, codec: str, body: bytes) -> bool:
    """Whether ``text`` encodes back to as many bytes as it was decoded from: the byte
    offsets of a multi-byte legacy encoding are measured by encoding with it."""
    if len(text) == len(body):
        return True
    try:
        return len(text.encode(codec)) == len(body)
    except UnicodeEncodeError:
        return False
