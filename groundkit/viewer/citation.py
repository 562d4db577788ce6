"""What a citation's page shows, decided when the page is made: verdict first, then where.

:func:`resolve` looks a chunk id up in its collection (and only there), re-reads the
cited span from the file now (:mod:`groundkit.verify`), reads the file's bytes once more
for the picture and checks *those* bytes again: the highlight is drawn only where the
text it covers is the cited text, at the cited offsets (verified) or at the relocated
ones (drifted, the stored text found exactly once). A file that changed between the two
reads, a drifted span that was not relocated and an unresolvable citation get no
highlight at all: the page says why.

What is shown of the file, by format:

* **PDF**: the pages the quote lies on, drawn with PDFium, the quote's own boxes
  (:mod:`.pdf_pages`), each page's printed label and physical number;
* **HTML, EPUB**: the original page (the EPUB chapter), sanitised, the quote marked
  where its bytes hold it (:mod:`.original`); where that cannot be done, the text view,
  saying why;
* **DOCX, ODT** (and HTML, EPUB as a fallback): the text view the index cut from the
  file, its headings marked, the zip part the quote came from named;
* **plain text, Markdown**: the file's lines, numbered.

Text bodies are a window of :data:`CONTEXT_LINES` lines either side of the quote.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

from ..collection import Collection, resolve_home
from ..errors import CollectionNotFoundError, DecodeError, InvalidSpanError
from ..extract import DEFAULT_LIMITS, ExtractError, TextView
from ..extract.reread import as_indexed
from ..extract.zipsafe import SafeZip
from ..model import Chunk, Locator, Status, Verdict, split_chunk_id
from ..sources import decode_bytes
from ..verify import Unreadable, read_inside
from .original import NoOriginal, original
from .pdf_pages import Piece, RenderedPage, render

CONTEXT_LINES = 40
"""Lines of the text shown before and after the quote's."""
CHANGED_MEANWHILE = "the file changed while the page was made: open it again"


@dataclass(frozen=True, slots=True, kw_only=True)
class TextBody:
    """A window of a text (the file's, or its text view) with the quote's place in it."""

    text: str
    first_line: int
    """The number of the window's first line in the whole text (1-based)."""
    total_lines: int
    highlight: tuple[int, int] | None
    """The quote's offsets in :attr:`text`."""
    headings: tuple[tuple[int, int], ...] = ()
    """``(offset in text, level)`` of each heading line in the window."""
    parts: tuple[str, ...] = ()
    """The zip members (DOCX, ODT, EPUB) the quote came from."""
    no_original: str = ""
    """Why an HTML or EPUB quote is shown in the text view, not the original layout."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OriginalBody:
    """The page (or EPUB chapter) the quote came from, sanitised, the quote marked."""

    markup: str
    parts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PdfBody:
    """The quote's pages drawn, with its boxes on each."""

    pages: tuple[RenderedPage, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class Shown:
    """Everything a view page shows."""

    verdict: Verdict
    collection: str
    cited: str | None
    """The quote's text as it was cited (stored)."""
    quote: tuple[int, int] | None
    """The quote's offsets as cited (text-view code points)."""
    now_at: tuple[int, int] | None = None
    """Where the highlight is drawn now: the quote's offsets, or its relocated ones."""
    body: TextBody | PdfBody | OriginalBody | None = None
    note: str = ""
    """Why there is no highlight although the verdict would allow one."""
    format: str = "text"


def resolve(chunk_id: str, *, home: str | None = None, start: int | None = None,
            end: int | None = None, served: tuple[str, ...] | None = None) -> Shown:
    """What the page of citation ``chunk_id`` (the quote ``[start, end)`` inside it, by
    default the whole chunk) shows now. ``served`` limits the collections it may come
    from; an id outside them, unknown or malformed, is an unresolvable page.
    :class:`InvalidSpanError` for a quote outside its chunk."""
    try:
        name, _ = split_chunk_id(chunk_id)
    except InvalidSpanError as exc:
        return _nothing(chunk_id, "", str(exc))
    if served is not None and name not in served:
        return _nothing(chunk_id, name, f"collection {name!r} is not served here")
    try:
        coll = Collection.open(name, resolve_home(home))
    except CollectionNotFoundError:
        return _nothing(chunk_id, name, f"unknown collection {name!r}")
    with coll:
        stored = coll.snapshot.lookup(chunk_id)
        verdict = coll.fetch(chunk_id)
        if stored is None:
            return Shown(verdict=verdict, collection=name, cited=None, quote=None)
        chunk = stored.chunk
        quote = _quote(chunk, start, end)
        cited = chunk.text[quote[0] - chunk.start: quote[1] - chunk.start]
        shown = Shown(verdict=verdict, collection=name, cited=cited, quote=quote,
                      format=_format(chunk))
        now_at = _now_at(verdict, chunk, quote)
        if now_at is None:
            return shown
        data = read_inside(stored.root, stored.relpath, coll.snapshot.max_bytes)
    if isinstance(data, Unreadable):
        return _replace(shown, note=f"{CHANGED_MEANWHILE} ({data.reason})")
    try:
        body = _body(chunk, stored.relpath, data, now_at, cited)
    except (ExtractError, DecodeError) as exc:  # it no longer extracts, or cannot be drawn
        return _replace(shown, note=str(exc))
    if body is None:
        return _replace(shown, note=CHANGED_MEANWHILE)
    return Shown(verdict=verdict, collection=name, cited=cited, quote=quote, now_at=now_at,
                 body=body, format=shown.format)


def _nothing(chunk_id: str, name: str, reason: str) -> Shown:
    return Shown(verdict=Verdict(chunk_id=chunk_id, status=Status.UNRESOLVABLE, reason=reason),
                 collection=name, cited=None, quote=None)


def _replace(shown: Shown, *, note: str) -> Shown:
    return Shown(verdict=shown.verdict, collection=shown.collection, cited=shown.cited,
                 quote=shown.quote, note=note, format=shown.format)


def _format(chunk: Chunk) -> str:
    if chunk.extractor:
        return chunk.extractor.split("/", 1)[0]
    return "markdown" if chunk.doc_id.lower().endswith((".md", ".markdown")) else "text"


def _quote(chunk: Chunk, start: int | None, end: int | None) -> tuple[int, int]:
    lo = chunk.start if start is None else start
    hi = chunk.end if end is None else end
    if not chunk.start <= lo < hi <= chunk.end:
        raise InvalidSpanError(f"quote [{lo}, {hi}) is not inside chunk {chunk.chunk_id} "
                               f"[{chunk.start}, {chunk.end})")
    return lo, hi


def _now_at(verdict: Verdict, chunk: Chunk, quote: tuple[int, int]) -> tuple[int, int] | None:
    """Where the quote is now by the verdict: its own offsets (verified), the relocated
    ones (drifted and found once), else nowhere."""
    if verdict.status is Status.VERIFIED:
        return quote
    if verdict.status is Status.DRIFTED and verdict.relocated is not None:
        shift = verdict.relocated[0] - chunk.start
        return quote[0] + shift, quote[1] + shift
    return None


def _body(chunk: Chunk, relpath: str, data: bytes, at: tuple[int, int],
          cited: str) -> TextBody | PdfBody | OriginalBody | None:
    """The body drawn from ``data``, the file's bytes read for it; ``None`` when they no
    longer hold ``cited`` at ``at``."""
    if not chunk.extractor:
        text = decode_bytes(data).text
        return _window(text, at) if text[at[0]:at[1]] == cited else None
    unchanged = hashlib.sha256(data).hexdigest() == chunk.doc_sha256
    fmt = chunk.extractor.split("/", 1)[0]
    if fmt == "pdf":
        if unchanged and chunk.locator is not None:
            pieces = _pieces_of_locator(chunk.locator.narrow(*at), at, cited)
        else:
            pieces = _pieces_of_view(as_indexed(relpath, data, chunk.extractor), at, cited)
        if not pieces:
            return None
        return PdfBody(pages=tuple(render(data, pieces)))
    view = as_indexed(relpath, data, chunk.extractor)
    if view.text[at[0]:at[1]] != cited:
        return None
    parts = tuple(dict.fromkeys(s.part for s in view.segments
                                if s.part and s.start < at[1] and s.end > at[0]))
    if fmt not in ("html", "epub"):
        return _window(view.text, at, view, parts)
    try:
        page = data if fmt == "html" else _chapter(data, parts)
        return OriginalBody(markup=original(page, view, at, parts[0] if parts else None),
                            parts=parts)
    except NoOriginal as exc:
        return replace(_window(view.text, at, view, parts), no_original=str(exc))


def _chapter(data: bytes, parts: tuple[str, ...]) -> bytes:
    """The EPUB chapter the quote lies in (one part, read within the extractors' limits)."""
    if len(parts) != 1:
        raise NoOriginal("the original layout could not be shown: the quote spans chapters")
    with SafeZip(data, DEFAULT_LIMITS) as archive:
        return archive.read(parts[0])


def _pieces_of_locator(locator: Locator, at: tuple[int, int], cited: str) -> list[Piece]:
    runs = [(s.page, s.page_start - s.view_start, s.view_start, s.view_end)
            for s in locator.spans if s.page is not None and s.page_start is not None
            and s.view_start is not None and s.view_end is not None]
    return _pieces(runs, at, cited)


def _pieces_of_view(view: TextView, at: tuple[int, int], cited: str) -> list[Piece]:
    if view.text[at[0]:at[1]] != cited:
        return []
    runs = [(s.page, s.page_offset - s.start, s.start, s.end) for s in view.segments
            if s.page is not None and s.page_offset is not None]
    return _pieces(runs, at, cited)


def _pieces(runs: list[tuple[int, int, int, int]], at: tuple[int, int],
            cited: str) -> list[Piece]:
    """One piece per page from ``(page, page offset - view offset, view start, view
    end)`` runs: the part of ``at`` on each page, with the cited text it must show."""
    spans: dict[int, list[int]] = {}
    for page, delta, lo, hi in runs:
        lo, hi = max(lo, at[0]), min(hi, at[1])
        if lo >= hi:
            continue
        span = spans.setdefault(page, [lo, hi, delta])
        span[0], span[1] = min(span[0], lo), max(span[1], hi)
    return [Piece(page=page, page_start=lo + delta, page_end=hi + delta,
                  text=cited[lo - at[0]: hi - at[0]])
            for page, (lo, hi, delta) in sorted(spans.items())]


def _window(text: str, at: tuple[int, int], view: TextView | None = None,
            parts: tuple[str, ...] = ()) -> TextBody:
    """:data:`CONTEXT_LINES` lines of ``text`` either side of ``at``."""
    lo, hi = at
    begin = text.rfind("\n", 0, lo) + 1
    for _ in range(CONTEXT_LINES):
        if begin == 0:
            break
        begin = text.rfind("\n", 0, begin - 1) + 1
    finish = text.find("\n", hi)
    for _ in range(CONTEXT_LINES):
        if finish == -1:
            break
        finish = text.find("\n", finish + 1)
    finish = len(text) if finish == -1 else finish
    headings = tuple((h.start - begin, h.level) for h in (view.headings if view else ())
                     if begin <= h.start < finish)
    return TextBody(text=text[begin:finish], first_line=text.count("\n", 0, begin) + 1,
                    total_lines=text.count("\n") + 1, highlight=(lo - begin, hi - begin),
                    headings=headings, parts=parts)
