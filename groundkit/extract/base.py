"""The extractor contract: raw bytes in, a text view and its source map out.

A *text view* is the text groundkit chunks, indexes, shows and quotes for a file. For
plain text and Markdown it is the decoded file itself (offsets index the file, as
always). For every other format an :class:`Extractor` makes it: the PDF's page texts,
the visible text of an HTML page, the paragraphs of a DOCX. Beside the text the
extractor returns a *source map*: :class:`Segment` runs of the view, each tied to where
it came from (a page and the offset in that page's text; a byte range of the raw file
or of one zip member), and the document's :class:`Heading` outline.

Extractors are deterministic (same bytes, same library version, same options: same
view), and their identity (:attr:`Extractor.identity`) is recorded with every document,
so verification can re-extract a changed file the same way, or say that it cannot.
A file an extractor cannot read raises :class:`ExtractError` with a one-line reason:
the file is skipped with that reason, never a traceback.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..errors import DecodeError
from ..model import Locator, SourceSpan


class ExtractError(DecodeError):
    """A file its extractor cannot turn into text: the reason is one line, for ``skipped``."""


@dataclass(frozen=True, slots=True)
class Limits:
    """Bounds on what one file may cost to extract."""

    max_unpacked: int = 256 * 1024 * 1024
    """Total decompressed bytes read from a zip container (DOCX, ODT, EPUB)."""
    max_ratio: float = 200.0
    """Largest compression ratio accepted for one zip member (a zip bomb's is far higher)."""
    max_members: int = 10_000
    """Members a zip container may list."""
    max_pages: int = 10_000
    """Pages of one PDF."""
    timeout_s: float = 60.0
    """Wall-clock seconds for one extraction (every extractor runs in a child process)."""
    memory_bytes: int = 256 * 1024 * 1024
    """Address space one extraction may add to what its process had mapped at the fork.
    A 10 MiB HTML page of ordinary text needs about 120 MiB; a child of the fork server
    (about 55 MiB resident) plus this stays within issue 45's 512 MiB whatever the face
    holds (ADR 0018)."""
    max_view_chars: int = 64 * 1024 * 1024
    """Code points of one text view."""


DEFAULT_LIMITS = Limits()


@dataclass(frozen=True, slots=True)
class Segment:
    """A run ``[start, end)`` of the text view and where in the source it came from.

    Segments are sorted by ``start`` and do not overlap; text between them (the
    separators an extractor adds: a blank line between paragraphs, a page break) maps
    to nothing.
    """

    start: int
    end: int
    part: str | None = None
    """The zip member the run came from; ``None`` for the file itself."""
    byte_start: int | None = None
    byte_end: int | None = None
    """Raw bytes of the file (or of ``part``) that hold the run (markup formats)."""
    page: int | None = None
    """1-based PDF page."""
    page_offset: int | None = None
    """Code point of that page's text where the run starts (PDF)."""
    bbox: tuple[float, float, float, float] | None = None
    """The run's box on its page: left, bottom, right, top in PDF points."""


@dataclass(frozen=True, slots=True)
class Heading:
    """A heading of the outline, starting at text-view offset ``start`` (where its line
    starts: a chunk starting there sits under it)."""

    start: int
    level: int
    title: str


@dataclass(frozen=True, slots=True)
class TextView:
    """A file's text as groundkit sees it, and the map back to the file."""

    text: str
    format: str
    segments: tuple[Segment, ...] = ()
    headings: tuple[Heading, ...] = ()
    status: str = ""
    """What the file's own metadata says about its standing: the evidence that it is
    superseded (:mod:`groundkit.extract.declared`), or ``""``."""
    furniture: tuple[tuple[int, int, str], ...] = ()
    """Runs ``(start, end, kind)`` of the view that are page furniture (running heads,
    page numbers, tables of contents, navigation: :mod:`groundkit.extract.furniture`),
    sorted and disjoint. Marking them changes no character of the view."""
    page_labels: tuple[tuple[int, str], ...] = ()
    """``(page, printed label)`` for the PDF pages whose label is not their number."""
    ocr_pages: tuple[tuple[int, float], ...] = ()
    """``(page, mean word confidence 0-100)`` for each page whose text came from OCR
    (:mod:`groundkit.extract.ocr`); every locator on such a page carries it."""
    scanned_pages: tuple[int, ...] = ()
    """Pages that hold images but no text (a PDF with some scanned pages): left out of
    this view, read by OCR where it is installed (:func:`groundkit.extract.read`)."""
    tables: tuple[tuple[int, int, int], ...] = ()
    """Runs ``(start, end, header_end)`` of the view that are tables
    (:mod:`groundkit.extract.tables`), sorted and disjoint: each line of ``[start, end)``
    is one row, its cells joined by `` | ``, and ``[start, header_end)`` are the header
    rows (``header_end == start``: no header row is marked). Like furniture, a mark
    beside the text: no character of the view depends on it."""
    _starts: list[int] = field(default_factory=list, init=False, repr=False, compare=False)
    _furniture_ends: list[int] = field(default_factory=list, init=False, repr=False,
                                       compare=False)
    _labels: dict[int, str] = field(default_factory=dict, init=False, repr=False,
                                    compare=False)

    def __post_init__(self) -> None:
        last = 0
        for seg in self.segments:
            if not last <= seg.start < seg.end <= len(self.text):
                raise ExtractError(f"{self.format} extractor made a bad segment "
                                   f"[{seg.start}, {seg.end}) (view of {len(self.text)})")
            last = seg.end
        last = 0
        for start, end, _ in self.furniture:
            if not last <= start < end <= len(self.text):
                raise ExtractError(f"{self.format} extractor marked a bad furniture run "
                                   f"[{start}, {end}) (view of {len(self.text)})")
            last = end
        check_tables(self.text, self.tables, self.format)
        object.__setattr__(self, "_starts", [s.start for s in self.segments])
        object.__setattr__(self, "_furniture_ends", [end for _, end, _ in self.furniture])
        object.__setattr__(self, "_labels", dict(self.page_labels))

    def furniture_in(self, start: int, end: int) -> tuple[tuple[int, int, str], ...]:
        """The furniture runs overlapping ``[start, end)``, cut to it and made relative
        to ``start`` (a chunk's own offsets)."""
        first = bisect.bisect_right(self._furniture_ends, start)  # runs are sorted, disjoint
        return tuple((max(a, start) - start, min(b, end) - start, kind)
                     for a, b, kind in itertools.takewhile(lambda run: run[0] < end,
                                                           self.furniture[first:]))

    def sections_in(self, start: int, end: int) -> tuple[tuple[int, tuple[str, ...]], ...]:
        """``(offset relative to start, heading path)`` for each heading that starts
        inside ``(start, end)``: a chunk's sections after its first."""
        inside = [h.start for h in self.headings if start < h.start < end]
        return tuple((at - start, path) for at, path in zip(inside, self.heading_paths(inside),
                                                             strict=True))

    def locate(self, start: int, end: int) -> Locator | None:
        """Where ``[start, end)`` of the view came from; ``None`` for a view without a map.

        One :class:`~groundkit.model.SourceSpan` per page or zip member touched, in
        view order: the byte range covering the runs of that part, or the page offsets
        of the span's first and last character on that page (and the union of boxes).
        """
        if not self.segments:
            return None
        lo = max(0, bisect.bisect_right(self._starts, start) - 1)
        hi = bisect.bisect_left(self._starts, end)
        spans: list[SourceSpan] = []
        key: tuple[str | None, int | None] | None = None
        group: list[Segment] = []
        for seg in self.segments[lo:hi]:
            if seg.end <= start:
                continue
            if (seg.part, seg.page) != key and group:
                spans.append(_merge(group, start, end))
                group = []
            key = (seg.part, seg.page)
            group.append(seg)
        if group:
            spans.append(_merge(group, start, end))
        if self._labels:
            spans = [replace(piece, page_label=self._labels.get(piece.page)) if piece.page
                     else piece for piece in spans]
        if self.ocr_pages:
            confidence = dict(self.ocr_pages)
            spans = [replace(piece, ocr_confidence=confidence.get(piece.page)) if piece.page
                     else piece for piece in spans]
        return Locator(format=self.format, spans=tuple(spans))

    def heading_path(self, position: int) -> tuple[str, ...]:
        """The titles of the headings ``position`` sits under, outermost first."""
        return next(self.heading_paths([position]))

    def heading_paths(self, positions: Iterable[int]) -> Iterator[tuple[str, ...]]:
        """:meth:`heading_path` of each of ``positions``, which must not decrease: the
        outline is walked once, however many chunks a long document has."""
        path: list[Heading] = []
        titles: tuple[str, ...] = ()
        i = 0
        for position in positions:
            changed = False
            while i < len(self.headings) and self.headings[i].start <= position:
                heading = self.headings[i]
                while path and path[-1].level >= heading.level:
                    path.pop()
                path.append(heading)
                i, changed = i + 1, True
            if changed:
                titles = tuple(h.title for h in path)
            yield titles


def check_tables(text: str, tables: Sequence[tuple[int, int, int]], format: str) -> None:
    """Raise :class:`ExtractError` unless ``tables`` are sorted, disjoint runs of ``text``
    whose header ends inside them at a line's end."""
    last = 0
    for start, end, header_end in tables:
        if not last <= start <= header_end <= end <= len(text) or start == end:
            raise ExtractError(f"{format} extractor marked a bad table [{start}, {end}) "
                               f"(header to {header_end}, view of {len(text)})")
        if start < header_end < end and text[header_end] != "\n":
            raise ExtractError(f"{format} extractor marked a table header ending inside "
                               f"a row at {header_end}")
        last = end


def _merge(group: Sequence[Segment], start: int, end: int) -> SourceSpan:
    first, last = group[0], group[-1]
    view_start, view_end = max(start, first.start), min(end, last.end)
    if first.page is not None:
        offset = first.page_offset or 0
        page_start = offset + max(0, start - first.start)
        last_offset = last.page_offset or 0
        page_end = last_offset + (min(end, last.end) - last.start)
        boxes = [s.bbox for s in group if s.bbox is not None]
        bbox = None
        if boxes:
            bbox = (min(b[0] for b in boxes), min(b[1] for b in boxes),
                    max(b[2] for b in boxes), max(b[3] for b in boxes))
        return SourceSpan(part=first.part, page=first.page, page_start=page_start,
                          page_end=page_end, bbox=bbox, view_start=view_start,
                          view_end=view_end)
    starts = [s.byte_start for s in group if s.byte_start is not None]
    ends = [s.byte_end for s in group if s.byte_end is not None]
    return SourceSpan(part=first.part, byte_start=min(starts) if starts else None,
                      byte_end=max(ends) if ends else None, view_start=view_start,
                      view_end=view_end)


class Extractor(Protocol):
    """One format's extractor. Instances live in :data:`groundkit.extract.EXTRACTORS`."""

    name: str
    """The format it reads (``pdf``, ``html``, ``docx``, ...): the registry key."""
    library: str
    """The Python package whose parser it runs (``pypdfium2``)."""
    extra: str
    """The optional extra that installs its library (``pip install 'groundkit[EXTRA]'``)."""
    suffixes: tuple[str, ...]
    """File-name globs it claims by default (``*.pdf``)."""
    def available(self) -> bool:
        """Whether its library is installed."""
        ...

    def identity(self) -> str:
        """``name/library=version;options``: what verification must match to re-extract
        as the index did. Raises :class:`~groundkit.errors.MissingDependencyError`
        when the library is missing."""
        ...

    def extract(self, data: bytes, limits: Limits) -> TextView:
        """The text view of ``data``, or :class:`ExtractError` with a one-line reason."""
        ...


def join_views(format: str, views: Sequence[TextView], separator: str = "\n\n") -> TextView:
    """One view of several (an EPUB's chapters, a DOCX's body and notes): the texts
    joined by ``separator``, every segment and heading shifted to its place."""
    texts: list[str] = []
    segments: list[Segment] = []
    headings: list[Heading] = []
    furniture: list[tuple[int, int, str]] = []
    tables: list[tuple[int, int, int]] = []
    offset = 0
    for view in views:
        if not view.text:
            continue
        if texts:
            texts.append(separator)
            offset += len(separator)
        texts.append(view.text)
        segments.extend(Segment(s.start + offset, s.end + offset, s.part, s.byte_start,
                                s.byte_end, s.page, s.page_offset, s.bbox)
                        for s in view.segments)
        headings.extend(Heading(h.start + offset, h.level, h.title) for h in view.headings)
        furniture.extend((a + offset, b + offset, kind) for a, b, kind in view.furniture)
        tables.extend((a + offset, b + offset, h + offset) for a, b, h in view.tables)
        offset += len(view.text)
    status = next((view.status for view in views if view.status), "")
    return TextView("".join(texts), format, tuple(segments), tuple(headings), status,
                    tuple(furniture), tables=tuple(tables))
