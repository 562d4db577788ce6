"""Cutting decoded text into overlapping windows at natural boundaries.

A chunker returns plain ``(start, end)`` spans over the text; turning them
into :class:`groundkit.model.Chunk` values (with byte offsets, lines and ids)
is :func:`make_chunks`' job, so every span is checked by the ``Chunk``
constructor against the document it came from.

The windowing rule, for a target size ``T``, overlap ``O`` and hard maximum
``M = max_factor * T``:

* a window starts at a non-whitespace character;
* it ends at the best boundary in ``[start + T/2, start + 5T/4]``, or failing
  that in ``[start + T/2, start + M]``, preferring, in order, a heading, a
  blank line, a sentence end, a line end, a space, and the candidate closest
  to ``T`` within the best class present; with no boundary at all it is cut
  hard at ``M`` (the ``boundaries`` setting can leave out the first classes, so
  the effect of following a document's structure can be measured);
* no window ends (or starts) inside a table row of an extracted view
  (:mod:`groundkit.extract.tables`: each row is a line): a boundary strictly inside a
  row is no boundary, and a hard cut that would fall inside one moves back to the
  row's start (only a row longer than ``M`` is cut);
* trailing whitespace is trimmed from the window;
* the next window starts at the best boundary at or after ``end - O`` (so
  windows overlap by about ``O``) and always strictly after the previous start
  and no later than the previous end, so every non-whitespace character is
  covered.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import repeat

from ..errors import UsageError
from ..extract.base import TextView
from ..extract.tables import rows as table_rows
from ..model import Chunk, Document, make_chunk_id, sha256_text, utf16_len
from ..sources import encode_len

# Boundary classes, best first. Each pattern's match *end* is a position where
# a window may end; the next window may start there too.
_BOUNDARIES: tuple[re.Pattern[str], ...] = (
    re.compile(r"(?:\r\n|\r|\n)(?=#{1,6} |={3,}|-{3,})"),  # before a heading / rule
    re.compile(r"\n[ \t]*\n|\r\n[ \t]*\r\n|\r[ \t]*\r"),  # blank line
    re.compile(r"[.!?。！？](?=\s)"),  # sentence end
    re.compile(r"\r\n|\r|\n"),  # line end
    re.compile(r"[ \t]+"),  # any space
)
# The same classes for text without carriage returns (most files): patterns that
# start with a literal newline are scanned several times faster by ``re``.
_BOUNDARIES_LF: tuple[re.Pattern[str], ...] = (
    re.compile(r"\n(?=#{1,6} |={3,}|-{3,})"),
    re.compile(r"\n[ \t]*\n"),
    _BOUNDARIES[2],
    re.compile(r"\n"),
    _BOUNDARIES[4],
)
_NON_SPACE = re.compile(r"\S")


DEFAULT_TARGET = 1000
DEFAULT_OVERLAP = 150
BOUNDARIES: dict[str, int] = {
    "structure": 0,  # headings (and an extracted view's outline), blank lines, then the rest
    "sentences": 2,  # sentence ends, line ends, spaces: the document's sections ignored
    "words": 4,      # spaces only: fixed-size windows that merely avoid cutting a word
}
"""Boundary choices -> the first boundary class they use (the default is ``structure``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChunkerConfig:
    """Window size and overlap, in code points; recorded in the collection."""

    target: int = DEFAULT_TARGET
    overlap: int = DEFAULT_OVERLAP
    max_factor: float = 2.0
    boundaries: str = "structure"
    """Which boundaries a window may end at (:data:`BOUNDARIES`)."""

    def __post_init__(self) -> None:
        if self.boundaries not in BOUNDARIES:
            raise UsageError(f"chunk boundaries must be one of {', '.join(BOUNDARIES)}, "
                             f"got {self.boundaries!r}")
        if not 50 <= self.target <= 20_000:
            raise UsageError(f"chunk target must be 50..20000 characters, got {self.target}")
        if not 0 <= self.overlap < self.target // 2:
            raise UsageError(
                f"chunk overlap must be 0..{self.target // 2 - 1} for target {self.target}, "
                f"got {self.overlap}"
            )
        if not 1.0 <= self.max_factor <= 4.0:
            raise UsageError(f"max_factor must be 1.0..4.0, got {self.max_factor}")

    @property
    def maximum(self) -> int:
        return int(self.target * self.max_factor)

    def to_dict(self) -> dict[str, float | int | str]:
        out: dict[str, float | int | str] = {"target": self.target, "overlap": self.overlap,
                                             "max_factor": self.max_factor}
        if self.boundaries != "structure":  # recorded only when set: older stores unchanged
            out["boundaries"] = self.boundaries
        return out


_PRECOMPUTED = 2  # headings and blank lines are rare: find them all once per document


class _Boundaries:
    """Boundary search, best class first.

    The rare classes (headings, blank lines) are found once per document and
    bisected; the frequent ones are searched only inside the window being cut,
    so the cost follows the number of chunks rather than the number of spaces.
    """

    def __init__(self, text: str, headings: Sequence[int] = (), first: int = 0,
                 rows: Sequence[tuple[int, int]] = ()) -> None:
        self.text = text
        self.row_starts = [a for a, _ in rows]
        self.row_ends = [b for _, b in rows]
        self.first = first  # the best class used; those before it are never boundaries
        self.patterns = _BOUNDARIES if "\r" in text else _BOUNDARIES_LF
        self.rare = [[m.end() for m in p.finditer(text)] if cls >= first else []
                     for cls, p in enumerate(self.patterns[:_PRECOMPUTED])]
        if headings and first == 0:  # an extracted view's outline: headings start lines
            self.rare[0] = sorted({*self.rare[0], *(h for h in headings if 0 < h <= len(text))})

    def in_row(self, position: int) -> int | None:
        """The start of the table row ``position`` is strictly inside, if any."""
        i = bisect.bisect_right(self.row_starts, position) - 1
        if i >= 0 and self.row_starts[i] < position < self.row_ends[i]:
            return self.row_starts[i]
        return None

    def _window(self, cls: int, lo: int, hi: int) -> list[int]:
        if cls < _PRECOMPUTED:
            positions = self.rare[cls]
            found = positions[bisect.bisect_left(positions, lo):bisect.bisect_right(positions, hi)]
        else:
            # Matches are short; starting a little before lo finds those ending at lo.
            stop = min(len(self.text), hi + 8)
            found = [e for m in self.patterns[cls].finditer(self.text, max(0, lo - 4), stop)
                     if lo <= (e := m.end()) <= hi]
        if self.row_starts:
            found = [p for p in found if self.in_row(p) is None]
        return found

    def best_end(self, lo: int, hi: int, target: int) -> int | None:
        for cls in range(self.first, len(_BOUNDARIES)):
            ends = self._window(cls, lo, hi)
            if ends:
                return min(ends, key=lambda p: (abs(p - target), p))
        return None

    def best_start(self, lo: int, hi: int) -> int | None:
        for cls in range(self.first, len(_BOUNDARIES)):
            if cls < _PRECOMPUTED:
                ends = self._window(cls, lo, hi)
                if ends:
                    return ends[0]
                continue
            pos = max(0, lo - 4)
            while (m := self.patterns[cls].search(self.text, pos, min(len(self.text), hi + 8))):
                if m.end() > hi:
                    break
                if m.end() >= lo and (not self.row_starts or self.in_row(m.end()) is None):
                    return m.end()
                pos = m.end() if m.end() > m.start() else m.start() + 1
        return None


def spans(text: str, config: ChunkerConfig, headings: Sequence[int] = (),
          rows: Sequence[tuple[int, int]] = ()) -> Iterator[tuple[int, int]]:
    """Yield the ``(start, end)`` windows of ``text``; none for blank text.

    ``headings`` are the starts of an extracted view's headings (HTML ``h1``-``h6``, a
    PDF's outline, DOCX heading styles): the best boundaries, as a Markdown heading line
    is, so a section tends to start a chunk of its own. ``rows`` are the ``(start, end)``
    of its table rows, sorted: no window ends or starts inside one."""
    first = _NON_SPACE.search(text)
    if first is None:
        return
    bounds = _Boundaries(text, headings, BOUNDARIES[config.boundaries], rows)
    n = len(text)
    start = first.start()
    while True:
        end = n if n - start <= config.maximum else _window_end(bounds, start, config)
        end = _trim_right(text, start, end)
        yield start, end
        rest = _NON_SPACE.search(text, end)
        if rest is None:
            return
        nxt = _next_start(text, bounds, start, end, config.overlap)
        start = nxt if nxt is not None else rest.start()


def _window_end(bounds: _Boundaries, start: int, config: ChunkerConfig) -> int:
    """The best boundary near the target: a narrow window first, then up to the maximum."""
    lo, target = start + max(1, config.target // 2), start + config.target
    for hi in (start + min(config.target * 5 // 4, config.maximum), start + config.maximum):
        end = bounds.best_end(lo, hi, target)
        if end is not None:
            return end
    cut = start + config.maximum
    row = bounds.in_row(cut) if bounds.row_starts else None
    return row if row is not None and row > start else cut


def _trim_right(text: str, start: int, end: int) -> int:
    while end > start + 1 and text[end - 1].isspace():
        end -= 1
    return end


def _next_start(
    text: str, bounds: _Boundaries, start: int, end: int, overlap: int
) -> int | None:
    """A start in ``(start, end]`` near ``end - overlap``, on a non-space character."""
    if overlap == 0:
        return None
    lo = max(start + 1, end - overlap)
    candidate = bounds.best_start(lo, end)
    if candidate is None:
        return None
    m = _NON_SPACE.search(text, candidate)
    if m is None or m.start() >= end or m.start() <= start:
        return None
    return m.start()


def _breaks(text: str, a: int, b: int) -> int:
    """Line breaks (CRLF, CR or LF, each counted once) ending in ``(a, b]``."""
    return text.count("\n", a, b) + text.count("\r", a, b) - text.count("\r\n", a, b + 1)


def make_chunks(collection: str, document: Document, config: ChunkerConfig,
                view: TextView | None = None) -> list[Chunk]:
    """Chunk ``document``; every chunk is validated against the document text.

    ``view`` is the document's text view when it has a source map or an outline (an
    extracted format, Markdown): each chunk then carries its locator and heading path.
    """
    text = document.text
    chunks: list[Chunk] = []
    cursor, cursor_byte, cursor_line, cursor_utf16 = 0, document.bom_len, 1, 0
    outline = [h.start for h in view.headings] if view and view.segments else ()
    rows = [(a, b) for table in view.tables for a, b, _ in table_rows(text, table)
            ] if view and view.segments else []
    windows = list(spans(text, config, outline, rows))
    table_ends = [b for _, b, _ in view.tables] if rows and view else []
    paths = (view.heading_paths(start for start, _ in windows) if view and view.headings
             else repeat(()))
    key = document.view_key
    for (start, end), headings in zip(windows, paths, strict=False):
        # Starts never decrease, so byte offsets and line numbers advance incrementally.
        cursor_byte += encode_len(text[cursor:start], document.encoding)
        cursor_line += _breaks(text, cursor, start)
        cursor_utf16 += utf16_len(text[cursor:start])
        cursor = start
        piece = text[start:end]
        chunks.append(
            Chunk(
                chunk_id=make_chunk_id(collection, document.doc_id, key, start, end),
                doc_id=document.doc_id,
                doc_sha256=document.sha256,
                start=start,
                end=end,
                byte_start=cursor_byte,
                byte_end=cursor_byte + encode_len(piece, document.encoding),
                start_line=cursor_line,
                end_line=cursor_line + _breaks(text, start, end - 1),
                utf16_start=cursor_utf16,
                utf16_end=cursor_utf16 + utf16_len(piece),
                text=piece,
                span_sha256=sha256_text(piece),
                document=text,
                extractor=document.extractor,
                locator=view.locate(start, end) if view else None,
                headings=headings,
                furniture=view.furniture_in(start, end) if view else (),
                sections=view.sections_in(start, end) if view and view.headings else (),
                tables=_tables_in(view, table_ends, start, end) if view and table_ends else (),
            )
        )
    return chunks


def _tables_in(view: TextView, ends: list[int], start: int, end: int
               ) -> tuple[tuple[int, int, int, str], ...]:
    """The tables of ``view`` (whose ends are ``ends``) overlapping ``[start, end)``, cut
    to it and made relative to ``start``, each with its whole header's text
    (:attr:`Chunk.tables`)."""
    found = []
    for a, b, header_end in view.tables[bisect.bisect_right(ends, start):]:
        if a >= end:
            break
        lo, hi = max(a, start), min(b, end)
        found.append((lo - start, hi - start, min(max(header_end, lo), hi) - start,
                      view.text[a:header_end]))
    return tuple(found)
