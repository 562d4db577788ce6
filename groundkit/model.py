"""Value types: documents, chunks, hits and verdicts.

Every type here is a frozen, slotted, keyword-only dataclass validated in
``__post_init__``: an invalid value cannot be constructed. Offsets are
half-open ``[start, end)`` and counted in Unicode code points of the decoded
document text (``OFFSET_UNIT``); byte offsets index the raw file, BOM included.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import InitVar, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from .errors import InvalidSpanError

OFFSET_UNIT = "codepoint"
"""The unit of ``start``/``end`` in every machine-readable output."""

COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
CHUNK_ID = re.compile(r"(?P<collection>[A-Za-z0-9][A-Za-z0-9._-]{0,63}):(?P<key>[0-9a-f]{20})")


def sha256_text(text: str) -> str:
    """The sha256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def make_chunk_id(collection: str, doc_id: str, doc_sha256: str, start: int, end: int) -> str:
    """A stable id: the same span of the same file content always gets the same id.

    The id names its collection, so ``grk fetch CHUNK_ID`` needs nothing else.
    """
    key = hashlib.sha256(f"{doc_id}\0{doc_sha256}\0{start}\0{end}".encode()).hexdigest()[:20]
    return f"{collection}:{key}"


def split_chunk_id(chunk_id: str) -> tuple[str, str]:
    """``(collection, key)`` of a chunk id, or ``InvalidSpanError`` if malformed."""
    m = CHUNK_ID.fullmatch(chunk_id)
    if m is None:
        raise InvalidSpanError(
            f"malformed chunk id {chunk_id!r}: expected COLLECTION:<20 hex digits>"
        )
    return m["collection"], m["key"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceSpan:
    """Where one piece of a text-view span came from in the raw file.

    Markup formats (HTML, EPUB, DOCX, ODT) give ``byte_start``/``byte_end``: a range of
    the raw bytes of ``part`` (a member of the zip container, ``None`` for the file
    itself). PDF gives ``page`` (1-based), ``page_start``/``page_end`` (code points of
    that page's text) and, where the library reports it, ``bbox`` (left, bottom, right,
    top in PDF points).
    """

    part: str | None = None
    byte_start: int | None = None
    byte_end: int | None = None
    page: int | None = None
    page_start: int | None = None
    page_end: int | None = None
    bbox: tuple[float, float, float, float] | None = None
    page_label: str | None = None
    """The page's printed label where the PDF defines one (``/PageLabels``: ``iv``,
    ``A-3``); ``page`` is always the physical page, counted from 1."""
    ocr_confidence: float | None = None
    """Where the page's text came from OCR: Tesseract's mean word confidence (0-100) on
    the page; ``None`` for text the file itself holds."""
    view_start: int | None = None
    view_end: int | None = None
    """The text-view code points this piece covers (so a sub-span can be mapped too)."""

    def to_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v)
                for k in self.__slots__ if (v := getattr(self, k)) is not None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Locator:
    """A chunk's place in its source file beyond the text view's offsets.

    ``format`` names the extractor's format (``pdf``, ``html``, ...); ``spans`` lists
    the pages or byte ranges the chunk was taken from, in text-view order.
    """

    format: str
    spans: tuple[SourceSpan, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "spans": [s.to_dict() for s in self.spans]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Locator:
        spans = []
        for item in data.get("spans", ()):
            bbox = item.get("bbox")
            spans.append(SourceSpan(**{**item, "bbox": tuple(bbox) if bbox else None}))
        return cls(format=str(data["format"]), spans=tuple(spans))

    @property
    def pages(self) -> tuple[int, ...]:
        """The PDF pages the chunk spans (empty for other formats)."""
        return tuple(dict.fromkeys(s.page for s in self.spans if s.page is not None))

    def narrow(self, start: int, end: int) -> Locator:
        """The locator of the text-view sub-span ``[start, end)`` of this one's: the pieces
        it overlaps, a page piece's offsets moved in by as much as the span is (its box,
        the chunk's lines', is dropped where it would no longer fit); a byte range is kept
        whole (the markup around a quote is not mapped finer than its text node)."""
        kept = []
        for piece in self.spans:
            if piece.view_start is None or piece.view_end is None:
                kept.append(piece)
                continue
            if piece.view_end <= start or piece.view_start >= end:
                continue
            lead, tail = max(0, start - piece.view_start), max(0, piece.view_end - end)
            if piece.page is None or piece.page_start is None or piece.page_end is None:
                kept.append(piece)
                continue
            kept.append(SourceSpan(
                part=piece.part, page=piece.page, page_start=piece.page_start + lead,
                page_end=piece.page_end - tail, bbox=None if lead or tail else piece.bbox,
                page_label=piece.page_label, view_start=piece.view_start + lead,
                view_end=piece.view_end - tail))
        return Locator(format=self.format, spans=tuple(kept))


def open_link(file: str, locator: Locator | None, line: int) -> str:
    """Where a person opens a span at its place: ``file:///…#page=N`` for a PDF (viewers
    open that page), ``PATH:LINE`` for a text or Markdown file (as editors and terminals
    take it), the ``file://`` URI of any other file."""
    if locator is not None and locator.pages:
        return f"{Path(file).as_uri()}#page={locator.pages[0]}"
    if locator is None:
        return f"{file}:{line}"
    return Path(file).as_uri()


def page_place(locator: Locator | None) -> str:
    """``p. 14`` / ``p. 14-15`` of a PDF span, with its printed labels where they are not
    the page numbers (``p. 14 (printed iv)``), and the lowest OCR confidence of its pages
    where their text came from OCR (``p. 3 [OCR, confidence 91]``); empty for a span
    without pages."""
    if locator is None or not locator.pages:
        return ""
    first, last = locator.pages[0], locator.pages[-1]
    place = f"p. {first}" + (f"-{last}" if last != first else "")
    labels = [s.page_label for s in locator.spans if s.page_label]
    if labels:
        shown = labels[0] + (f"-{labels[-1]}" if labels[-1] != labels[0] else "")
        place += f" (printed {shown})"
    confidences = [s.ocr_confidence for s in locator.spans if s.ocr_confidence is not None]
    if confidences:
        place += f" [OCR, confidence {min(confidences):.0f}]"
    return place


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One decoded source file of a collection.

    ``doc_id`` is the collection-relative POSIX path: a changed file keeps its
    identity (and its old citations become *drifted*, not strangers).
    """

    doc_id: str
    root: str
    relpath: str
    sha256: str
    size: int
    encoding: str
    bom_len: int
    text: str
    extractor: str = ""
    """The identity of the extractor that made ``text`` from the raw bytes; empty for a
    plain-text file, whose text *is* the decoded file."""

    @property
    def view_key(self) -> str:
        """What a chunk id hashes for the content: the raw bytes' sha256, and the
        extractor's identity when the text is an extracted view (another extractor
        version may cut the same bytes into other text)."""
        return f"{self.sha256}\0{self.extractor}" if self.extractor else self.sha256

    def __post_init__(self) -> None:
        if not self.doc_id or self.doc_id.startswith("/") or "\\" in self.relpath:
            raise InvalidSpanError(f"document id must be a relative POSIX path: {self.doc_id!r}")
        if self.bom_len < 0 or self.size < self.bom_len:
            raise InvalidSpanError(f"bad BOM length {self.bom_len} for {self.doc_id!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Chunk:
    """An exact span ``[start, end)`` of one document's decoded text.

    Construction checks internal consistency always (length, hash, id shape)
    and, when ``document`` is given, that ``document[start:end] == text``.
    """

    chunk_id: str
    doc_id: str
    doc_sha256: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    start_line: int
    end_line: int
    utf16_start: int
    utf16_end: int
    text: str
    span_sha256: str
    document: InitVar[str | None] = None
    extractor: str = ""
    """The extractor identity of the text view the offsets index (empty: the file's text)."""
    locator: Locator | None = None
    """Pages or raw byte ranges the span came from (extracted formats only)."""
    headings: tuple[str, ...] = ()
    """The heading path the span sits under, outermost first (``Users › sudo``)."""
    furniture: tuple[tuple[int, int, str], ...] = ()
    """Runs of the chunk's text that are page furniture, ``(start, end, kind)`` in offsets
    of :attr:`text` (a running header or footer, a page number, a table of contents, a
    site's navigation): searchable, never quoted as an answer
    (:mod:`groundkit.extract.furniture`)."""
    sections: tuple[tuple[int, tuple[str, ...]], ...] = ()
    """Where a heading inside the chunk starts a new section: ``(offset in text, heading
    path from there on)``, so a sentence past it is placed under its own section."""
    tables: tuple[tuple[int, int, int, str], ...] = ()
    """The part of each table the chunk holds, ``(start, end, header_end, header)`` in
    offsets of :attr:`text`: its lines are rows, those before ``header_end`` header rows,
    and ``header`` is the table's header text wherever it is (``""``: none), so a row is
    read with its column names though the header lies in an earlier chunk
    (:mod:`groundkit.extract.tables`)."""

    def __post_init__(self, document: str | None) -> None:
        if not 0 <= self.start < self.end:
            raise InvalidSpanError(f"chunk span [{self.start}, {self.end}) is empty or negative")
        if len(self.text) != self.end - self.start:
            raise InvalidSpanError(
                f"chunk text has {len(self.text)} code points but span "
                f"[{self.start}, {self.end}) has {self.end - self.start}"
            )
        if not 0 <= self.byte_start < self.byte_end:
            raise InvalidSpanError(f"bad byte span [{self.byte_start}, {self.byte_end})")
        if self.utf16_end - self.utf16_start != utf16_len(self.text) or self.utf16_start < 0:
            raise InvalidSpanError(
                f"UTF-16 span [{self.utf16_start}, {self.utf16_end}) does not fit the text"
            )
        if not 1 <= self.start_line <= self.end_line:
            raise InvalidSpanError(f"bad line range {self.start_line}-{self.end_line}")
        if sha256_text(self.text) != self.span_sha256:
            raise InvalidSpanError(f"span hash does not match the text of {self.chunk_id}")
        split_chunk_id(self.chunk_id)
        if any(not 0 <= a < b <= len(self.text) for a, b, _ in self.furniture):
            raise InvalidSpanError(f"a furniture run of {self.chunk_id} is outside its text")
        if any(not 0 <= a <= h <= b <= len(self.text) for a, b, h, _ in self.tables):
            raise InvalidSpanError(f"a table of {self.chunk_id} is outside its text")
        if document is not None:
            if self.end > len(document):
                raise InvalidSpanError(
                    f"chunk end {self.end} is past the document end {len(document)}"
                )
            if document[self.start : self.end] != self.text:
                raise InvalidSpanError(
                    f"chunk text is not document[{self.start}:{self.end}] of {self.doc_id!r}"
                )

    @property
    def collection(self) -> str:
        return split_chunk_id(self.chunk_id)[0]

    def heading_path_at(self, offset: int) -> tuple[str, ...]:
        """The heading path of the chunk's text at ``offset``: its own section's, which
        is the chunk's :attr:`headings` until a heading inside it starts another."""
        path = self.headings
        for start, titles in self.sections:
            if start > offset:
                break
            path = titles
        return path


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units (astral characters count two)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True, slots=True)
class Contribution:
    """How one retriever placed a hit: its rank and score in that retriever's list.

    Positional construction is allowed (``Contribution("bm25", 1, 7.5)``): retrievers
    make one per hit, and keyword arguments cost twice as much to pass.
    """

    retriever: str
    rank: int
    score: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Duplicate:
    """Another place a collapsed hit's passage occurs (same text, whitespace and case aside)."""

    path: str
    chunk_id: str
    start: int
    end: int

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "chunk_id": self.chunk_id, "start": self.start,
                "end": self.end}


@dataclass(frozen=True, slots=True, kw_only=True)
class Replaced:
    """A place of a hit's passage that was re-read and did not verify, so an identical
    copy that does is shown (and cited) in its place."""

    place: Duplicate
    status: Status
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.place.to_dict(), "status": self.status.value, "reason": self.reason}


@dataclass(frozen=True, slots=True, kw_only=True)
class Hit:
    """A retrieved chunk with its score, 1-based rank and explanation."""

    chunk: Chunk
    score: float
    rank: int
    explanation: tuple[Contribution, ...] = ()
    verdict: Verdict | None = None
    stale: bool | None = None
    """The file's size or mtime differs from what was indexed (or it is gone): a cheap
    hint that the span may have drifted, confirmed by content only with ``verify``.
    ``None`` when it was not looked at."""
    also_in: tuple[Duplicate, ...] = ()
    """Lower-ranked hits with the same passage at other places, collapsed into this one."""
    superseded: str | None = None
    """The evidence that the hit's document says it no longer holds (archived, superseded,
    deprecated, replaced: :mod:`groundkit.text.standing`), recorded when it was indexed;
    ``None`` for a current document."""
    replaced: tuple[Replaced, ...] = ()
    """With verify, where the passage ranked and did not verify (and any copies that did
    not either), best-ranked first: the hit shown is an identical copy that does. Empty
    for a hit shown where it ranked."""
    file: str | None = None
    """The source file's absolute path, where the search knows it (for links)."""

    def __post_init__(self) -> None:
        if self.rank < 1:
            raise InvalidSpanError(f"rank must be >= 1, got {self.rank}")

    def to_dict(self, collection: str) -> dict[str, Any]:
        """The one machine-readable form of a hit (CLI ``--json``, MCP, reports).

        ``path`` is the document id; offsets are code points (``offset_unit``),
        with UTF-16 and byte offsets beside them; ``verdict`` is present when the
        span was re-read (:meth:`Verdict.brief`); ``replaced`` lists the places that
        did not verify when a verified copy is shown in their place.
        """
        c = self.chunk
        return {
            "rank": self.rank, "score": self.score, "chunk_id": c.chunk_id,
            "collection": collection, "path": c.doc_id, "offset_unit": OFFSET_UNIT,
            "start": c.start, "end": c.end, "utf16_start": c.utf16_start,
            "utf16_end": c.utf16_end, "byte_start": c.byte_start, "byte_end": c.byte_end,
            "start_line": c.start_line, "end_line": c.end_line, "text": c.text,
            "headings": list(c.headings), "extractor": c.extractor or None,
            "source": c.locator.to_dict() if c.locator else None,
            "explanation": [{"retriever": e.retriever, "rank": e.rank, "score": e.score,
                             **e.detail} for e in self.explanation],
            "verdict": self.verdict.brief() if self.verdict else None,
            "stale": self.stale,
            "also_in": [d.to_dict() for d in self.also_in],
            "superseded": self.superseded,
            "replaced": [r.to_dict() for r in self.replaced],
            "file": self.file,
            "link": open_link(self.file, c.locator, c.start_line) if self.file else None,
        }


class Status(StrEnum):
    """The three verdicts a citation can get; never a silent pass."""

    VERIFIED = "verified"
    DRIFTED = "drifted"
    UNRESOLVABLE = "unresolvable"


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    """The result of re-reading a cited span from its source right now.

    ``current_text`` is the text now at the cited offsets (``None`` when the
    file could not be read). ``relocated`` gives ``(start, end)`` when a drifted
    span's stored text still occurs exactly once in the current file.
    """

    chunk_id: str
    status: Status
    reason: str
    doc_id: str | None = None
    start: int | None = None
    end: int | None = None
    stored_text: str | None = None
    current_text: str | None = None
    relocated: tuple[int, int] | None = None
    headings: tuple[str, ...] = ()
    """The cited chunk's heading path (when the chunk is known)."""
    extractor: str = ""
    locator: Locator | None = None
    """The cited chunk's source locator: PDF pages, raw byte ranges (extracted formats)."""

    def __post_init__(self) -> None:
        if self.relocated is not None and self.status is not Status.DRIFTED:
            raise InvalidSpanError("only a drifted verdict can carry relocated offsets")

    def brief(self) -> dict[str, Any]:
        """The verdict as a hit carries it: status, reason and relocated offsets."""
        return {
            "status": self.status.value, "reason": self.reason,
            "relocated_start": self.relocated[0] if self.relocated else None,
            "relocated_end": self.relocated[1] if self.relocated else None,
        }

    def to_dict(self) -> dict[str, Any]:
        """The full verdict (``grk fetch --json``): both texts and the offsets."""
        return {
            "chunk_id": self.chunk_id,
            "status": self.status.value,
            "reason": self.reason,
            "doc_id": self.doc_id,
            "offset_unit": OFFSET_UNIT,
            "start": self.start,
            "end": self.end,
            "stored_text": self.stored_text,
            "current_text": self.current_text,
            "relocated": list(self.relocated) if self.relocated else None,
            "headings": list(self.headings),
            "extractor": self.extractor or None,
            "source": self.locator.to_dict() if self.locator else None,
        }
