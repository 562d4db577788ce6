"""Zip containers (DOCX, ODT, EPUB) read without trusting them.

A zip member's headers are claims, not facts, so :class:`SafeZip` checks both. Before
anything is decompressed: the container must list at most ``Limits.max_members``
members (counted on the raw bytes, before :mod:`zipfile` builds an object for each),
every member name must be safe (:func:`check_name`: no ``..`` component, no absolute
path, no drive letter, no backslash, no NUL), no name may appear twice (which copy a
reader takes is a parser's choice: a classic way to show two readers two documents),
and a member to read must be unencrypted and stored or deflated (the only methods the
OOXML, ODF and EPUB containers allow). While a member streams out, the bytes actually
produced are counted: past the container's remaining ``Limits.max_unpacked`` budget,
or past ``Limits.max_ratio`` times its compressed size (declared, and never more than
the whole file) once it is over :data:`RATIO_GRACE`, reading stops with "zip bomb".
A header that lies about the uncompressed size therefore gains nothing: the declared
size is only a first check, and :mod:`zipfile`'s CRC check catches a truncated lie.

Policy for hostile names: one unsafe name makes the whole file an
:class:`~groundkit.extract.base.ExtractError`, even when no reader would open that
member. No office suite or EPUB writer produces such names, so the file is hostile or
broken; refusing it whole is simpler to reason about than skipping (and an EPUB spine
entry resolving outside the container is refused the same way by ``check_name``).

The zip formats keep their structure in XML members, parsed here with defusedxml: no
entity declarations (billion laughs, quadratic blowup), no external references, and
any failure a one-line :class:`ExtractError` (:func:`xml_errors`). :func:`xml_tree`
gives the element tree; :func:`walk_xml` feeds an :class:`XmlWalker` the tags with
their byte offsets, which ElementTree does not keep: its target reads the expat
parser's ``CurrentByteIndex`` at each start and end tag. defusedxml is imported only
when XML is parsed, so a module using this one imports without it.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from io import BytesIO
from types import TracebackType
from typing import Any
from xml.etree.ElementTree import Element

from .base import ExtractError, Limits

RATIO_GRACE = 1024 * 1024
"""Decompressed bytes a member may reach before its compression ratio is checked: a
small member of repeated markup can compress far better than ``max_ratio`` and is no
threat (the total is bounded by ``max_unpacked`` all the same)."""

_CHUNK = 64 * 1024
_METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED}
_CENTRAL_RECORD = b"PK\x01\x02"
_DRIVE = re.compile(r"[A-Za-z]:")
_ZIP_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError, RuntimeError,
               NotImplementedError, struct.error, OverflowError, IndexError)
"""What zipfile raises for a corrupt container or member (CRC, bad headers, short data)."""


def check_name(name: str) -> str:
    """``name`` if it is a safe, relative member path; else :class:`ExtractError`."""
    parts = name.split("/")
    if (not name or name.startswith("/") or "\\" in name or "\x00" in name
            or _DRIVE.match(name) or ".." in parts):
        raise ExtractError(f"unsafe member name {name!r}")
    return name


def _size(n: int) -> str:
    return f"{n // 2**20} MiB" if n % 2**20 == 0 else f"{n} bytes"


class SafeZip:
    """A zip container in memory whose members are read within :class:`Limits`."""

    def __init__(self, data: bytes, limits: Limits) -> None:
        if not data:
            raise ExtractError("empty file (0 bytes)")
        # zipfile makes one ZipInfo per central-directory record before we could count
        # them; every record starts with its signature, so this count bounds them.
        if data.count(_CENTRAL_RECORD) > limits.max_members:
            raise ExtractError(f"zip lists more than {limits.max_members} members")
        try:
            self._zip = zipfile.ZipFile(BytesIO(data))
            infos = self._zip.infolist()
        except _ZIP_ERRORS as exc:
            raise ExtractError(f"not a zip file ({exc})") from None
        self._infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            check_name(info.filename)
            if info.filename in self._infos:
                raise ExtractError(f"duplicate member name {info.filename!r}")
            self._infos[info.filename] = info
        self._limits = limits
        self._left = limits.max_unpacked
        self._size = len(data)

    def __enter__(self) -> SafeZip:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._zip.close()

    def __contains__(self, name: object) -> bool:
        return name in self._infos

    @property
    def names(self) -> tuple[str, ...]:
        """The member names, in the container's order."""
        return tuple(self._infos)

    def read(self, name: str) -> bytes:
        """Member ``name`` decompressed, or :class:`ExtractError` (missing, encrypted,
        unsupported, corrupt, or a zip bomb)."""
        info = self._infos.get(name)
        if info is None:
            raise ExtractError(f"member {name} is missing")
        if info.flag_bits & 0x1:
            raise ExtractError(f"member {name} is encrypted")
        if info.compress_type not in _METHODS:
            raise ExtractError(f"member {name} uses unsupported compression method "
                               f"{info.compress_type} (only stored and deflated)")
        packed = max(1, min(info.compress_size, self._size))
        self._check(name, info.file_size, packed)
        out = bytearray()
        try:
            with self._zip.open(info) as stream:
                while chunk := stream.read(_CHUNK):
                    out += chunk
                    self._check(name, len(out), packed)
        except ExtractError:
            raise
        except _ZIP_ERRORS as exc:
            raise ExtractError(f"corrupt member {name}: {exc}") from None
        self._left -= len(out)
        return bytes(out)

    def _check(self, name: str, unpacked: int, packed: int) -> None:
        if unpacked > self._left:
            raise ExtractError(f"zip bomb: member {name} expands past "
                               f"{_size(self._limits.max_unpacked)}")
        if unpacked > RATIO_GRACE and unpacked > packed * self._limits.max_ratio:
            raise ExtractError(f"zip bomb: member {name} expands {unpacked / packed:.0f}:1 "
                               f"(limit {self._limits.max_ratio:g}:1)")


@contextmanager
def xml_errors(part: str) -> Iterator[None]:
    """Turn a failure to parse XML member ``part`` into a one-line :class:`ExtractError`."""
    from xml.etree.ElementTree import ParseError

    from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden

    try:
        yield
    except ExtractError:
        raise
    except (EntitiesForbidden, ExternalReferenceForbidden):
        raise ExtractError(f"unsafe XML in {part}: entities and external references "
                           "are not allowed") from None
    except DTDForbidden:
        raise ExtractError(f"unsafe XML in {part}: a DTD is not allowed") from None
    except (ParseError, ValueError, LookupError) as exc:
        raise ExtractError(f"malformed XML in {part}: {exc}") from None


def xml_tree(data: bytes, part: str) -> Element:
    """The root element of XML member ``part``, parsed by defusedxml (a DTD is tolerated,
    entity declarations and external references are not)."""
    from defusedxml.ElementTree import fromstring

    with xml_errors(part):
        root: Element = fromstring(data, forbid_dtd=False, forbid_entities=True,
                                   forbid_external=True)
    return root


class XmlWalker:
    """A parser target for :func:`walk_xml`: tags with byte offsets, text runs between.

    A run (the character data between two tags, while ``capturing`` and outside a
    skipped subtree) goes to :meth:`on_text` with its byte range: from the start of the
    tag before it to the end of the tag after it, so the XML-unescaped slice of the
    member always contains the run. A comment, a processing instruction or a CDATA
    section boundary also ends a run (the slice would not contain the text across
    them). Elements in ``skip_tags`` are skipped whole.
    """

    skip_tags: frozenset[str] | set[str] = frozenset()

    def __init__(self, data: bytes) -> None:
        self.capturing = 0
        self.skipping = 0
        self.stack: list[str] = []
        self.expat: Any = None  # the expat parser, for CurrentByteIndex
        self._data = data
        self._gt = ">".encode(_codec(data))
        self._last = 0
        self._run: list[str] = []

    def on_start(self, tag: str, attrib: dict[str, str]) -> None:
        """Element ``tag`` (``{namespace}name``) opens."""

    def on_end(self, tag: str) -> None:
        """Element ``tag`` closes."""

    def on_text(self, text: str, span: tuple[int, int]) -> None:
        """A run of text and the byte range ``[start, end)`` of the member holding it."""

    def start(self, tag: str, attrib: dict[str, str]) -> None:
        index = self.expat.CurrentByteIndex
        self._flush(index)
        self._last = index
        self.stack.append(tag)
        if self.skipping or tag in self.skip_tags:
            self.skipping += 1
        else:
            self.on_start(tag, attrib)

    def end(self, tag: str) -> None:
        index = self.expat.CurrentByteIndex
        if self._run:  # text before this tag: a real end tag, not an empty element's
            self._flush(self._tag_end(index))
        self._last = index
        if self.skipping:
            self.skipping -= 1
        else:
            self.on_end(tag)
        self.stack.pop()

    def data(self, text: str) -> None:
        if self.capturing and not self.skipping:
            self._run.append(text)

    def close(self) -> None:
        self._flush(len(self._data))

    def comment(self, text: str) -> None:
        self.mark()

    def pi(self, target: str, text: str) -> None:
        self.mark()

    def mark(self, length: int = 0) -> None:
        """Something that is not text starts here (``length`` characters of it are kept
        in the run's range: a CDATA section's ``]]>``)."""
        index = self.expat.CurrentByteIndex
        self._flush(index + length * len(self._gt))
        self._last = index

    def _flush(self, end: int) -> None:
        if self._run:
            text = "".join(self._run)
            self._run.clear()
            self.on_text(text, (self._last, end))

    def _tag_end(self, index: int) -> int:
        """The byte after the end tag starting at ``index`` (an end tag holds no ``>``)."""
        found = self._data.find(self._gt, index)
        while found >= 0 and (found - index) % len(self._gt):
            found = self._data.find(self._gt, found + 1)
        return len(self._data) if found < 0 else found + len(self._gt)


def _codec(data: bytes) -> str:
    """How ``>`` is encoded: UTF-16 by the BOM or first character, else ASCII-compatible
    (expat reads only UTF-8, UTF-16, US-ASCII and Latin-1 itself)."""
    if data[:2] in (b"\xff\xfe", b"<\x00"):
        return "utf-16-le"
    return "utf-16-be" if data[:2] in (b"\xfe\xff", b"\x00<") else "utf-8"


def walk_xml(data: bytes, part: str, walker: XmlWalker) -> None:
    """Parse XML member ``part`` with defusedxml (no DTD at all), feeding ``walker``."""
    from defusedxml.ElementTree import DefusedXMLParser

    with xml_errors(part):
        parser = DefusedXMLParser(target=walker, forbid_dtd=True, forbid_entities=True,
                                  forbid_external=True)
        walker.expat = parser.parser
        parser.parser.StartCdataSectionHandler = walker.mark
        parser.parser.EndCdataSectionHandler = lambda: walker.mark(len("]]>"))
        parser.feed(data)
        parser.close()
