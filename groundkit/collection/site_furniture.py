"""Site furniture: lines that repeat across the pages of one HTML site or one EPUB.

A site's pages share a menu, a banner, a keyboard-help box, a "Converted with ..." line.
Where the markup says so (``nav``, ARIA roles, DocBook's ``navheader``) the HTML extractor
marks it as navigation (:mod:`groundkit.extract.furniture`); where it does not, a single
page cannot tell a menu from content, but the site can: the same line on half its pages
is not what any one of them is about. This pass runs over a generation's chunks after
ingest and marks those lines ``site-repeated`` in the chunks' furniture (the store's
``layout`` column), so an answer never quotes them. The text, its offsets and every
citation stay as they were; search still indexes the lines (ADR-0021).

**What repeats.** A *line* of the text view (HTML views put each block element on its
own line), whitespace collapsed, of at least :data:`MIN_CHARS` characters with a letter
and not a table row (a line with `` | `` cell separators: a table's header repeated on
many pages is its columns, not chrome), read together with its neighbour: its keys are
8 bytes of BLAKE2b of it with the non-blank line before it, and of it with the one
after, counted once per page. A line is furniture when one of its keys is on at least
:data:`MIN_PAGES` pages and on at least :data:`SHARE` of the site's pages, so what
repeats is a block of two lines or more: a page's own title, which is also its entry in
the site's menu, sits between lines of its own and stays content. A *site* is the folder
of the HTML documents (one document, one page), or one EPUB (one spine member, one
page). On five Debian documentation sites the chrome the extractor misses is on every
page or nearly, while a line on a quarter of them is mostly a section title listed in
several local tables of contents (ADR-0021's revision has the figures).

**Cost.** One pass per site counts fingerprints in a hash table (linear in the site's
text, never pairwise), a second re-reads the site's chunks and rewrites the layouts that
change. Memory is the site's distinct fingerprints. A run re-marks only the sites of
the documents whose bytes or extractor changed since the current generation (every
site when the settings or this detector changed): re-indexing one page re-reads the
chunks of its folder's HTML documents, nothing else.

**When.** Inside the publish transaction (:mod:`.indexer`), so the marks and the new
generation become visible together and a killed indexer leaves them as they were. Chunk
rows are shared by the generations that hold the same span, so a retired generation
sees the marks of the newest: marks change which sentence an answer quotes, never a
verdict.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import posixpath
import re
import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .. import store

KIND = "site-repeated"
MIN_PAGES = 3
"""Pages a line must be on, at the least (on a two- or three-page site, two pages share
examples and code as often as chrome)."""
SHARE = 0.5
"""The share of the site's pages a line must be on."""
MIN_CHARS = 8
"""Characters a line needs, whitespace collapsed (``Note``, ``}``, ``[1]`` repeat as
content does)."""
VERSION = {"version": 1, "min_pages": MIN_PAGES, "share": SHARE, "min_chars": MIN_CHARS}
"""Recorded in the store's meta: a change re-marks every site."""
META_KEY = "site_furniture"
FORMATS = ("html", "epub")

Line = tuple[int, int, tuple[int, int]]
"""A countable line: its ``(start, end)`` in the view, trimmed, and its two keys: the
pair of it and the non-blank line before it (the page's edge: 0), and of it and the one
after it."""
Run = tuple[int, int, str]


_LETTER = re.compile(r"[^\W\d_]")
_MASK = (1 << 64) - 1
_MIX = 0x100000001B3
"""A pair's key is ``(before * _MIX ^ after) mod 2**64`` of its lines' fingerprints:
cheap, ordered (``a, b`` is not ``b, a``), and as spread as the fingerprints are."""


def countable(line: str) -> bool:
    """Whether a line (whitespace collapsed) can be site furniture: long enough, with a
    letter (see the module)."""
    text = " ".join(line.split())
    return len(text) >= MIN_CHARS and _LETTER.search(text) is not None


def lines(text: str, offset: int = 0) -> Iterator[Line]:
    """The countable lines of ``text``, at ``offset`` in the view, with their keys."""
    found: list[tuple[int, int, int, bool]] = []  # every non-blank line
    position = 0
    for raw in text.split("\n"):
        words = raw.split()
        if words:
            norm = " ".join(words)
            own = int.from_bytes(hashlib.blake2b(norm.encode("utf-8"), digest_size=8).digest())
            start = offset + position + len(raw) - len(raw.lstrip())
            found.append((start, offset + position + len(raw.rstrip()), own,
                          len(norm) >= MIN_CHARS and _LETTER.search(norm) is not None))
        position += len(raw) + 1
    for i, (start, end, own, counted) in enumerate(found):
        if counted:
            before = found[i - 1][2] if i else 0
            after = found[i + 1][2] if i + 1 < len(found) else 0
            yield start, end, ((before * _MIX ^ own) & _MASK, (own * _MIX ^ after) & _MASK)


def repeated(pages: Sequence[Iterable[int]]) -> frozenset[int]:
    """The fingerprints on at least :data:`MIN_PAGES` and :data:`SHARE` of ``pages``
    (each page's fingerprints, repeats within a page counted once)."""
    counts: Counter[int] = Counter()
    for keys in pages:
        counts.update(set(keys))
    need = max(MIN_PAGES, math.ceil(SHARE * len(pages)))
    return frozenset(key for key, count in counts.items() if count >= need)


def view_runs(pages: Mapping[str, str]) -> dict[str, list[tuple[int, int]]]:
    """Each page's site-repeated lines ``(start, end)``, for one site given as whole
    texts (page name -> text): what the store pass marks, for a harness that holds views."""
    found = {name: list(lines(text)) for name, text in pages.items()}
    common = repeated([_keys(page) for page in found.values()])
    return {name: _marked(page, common) for name, page in found.items()}


def _keys(page: Iterable[Line]) -> list[int]:
    return [key for _, _, keys in page for key in keys]


def _marked(page: Iterable[Line], common: frozenset[int]) -> list[tuple[int, int]]:
    """The spans of the page's lines one of whose keys is repeated."""
    return [(a, b) for a, b, (before, after) in page if before in common or after in common]


@dataclass(frozen=True, slots=True)
class Marked:
    """What one pass did: sites and pages read, lines found repeated, chunk rows changed."""

    sites: int = 0
    pages: int = 0
    lines: int = 0
    chunks: int = 0


def mark(conn: sqlite3.Connection, generation: int) -> Marked:
    """Mark the site furniture of ``generation`` against the current generation (call
    before publishing it, inside the publish transaction; see the module)."""
    documents = _markup_documents(conn, generation)
    previous = store.current_generation(conn)
    if previous is None or _all_stale(conn, previous, generation):
        affected = {_site(doc, fmt) for doc, (fmt, _) in documents.items()}
    else:
        before = _markup_documents(conn, previous)
        changed = {doc for doc in documents.keys() | before.keys()
                   if documents.get(doc) != before.get(doc)}
        affected = {_site(doc, (documents.get(doc) or before[doc])[0]) for doc in changed}
    sites: dict[Site, list[str]] = {}
    for doc, (fmt, _) in sorted(documents.items()):
        if _site(doc, fmt) in affected:
            sites.setdefault(_site(doc, fmt), []).append(doc)
    total = Marked()
    for site in sorted(sites):
        one = _mark_site(conn, generation, sites[site], epub=site[0] == "epub")
        total = Marked(total.sites + 1, total.pages + one.pages, total.lines + one.lines,
                       total.chunks + one.chunks)
    store.set_meta(conn, META_KEY, VERSION)
    return total


def _markup_documents(conn: sqlite3.Connection, generation: int
                      ) -> dict[str, tuple[str, str]]:
    """doc_id -> (format, sha256 + extractor) of the generation's HTML and EPUB files."""
    rows = conn.execute(
        "SELECT doc_id, extractor, sha256 FROM documents WHERE generation = ? AND "
        "(extractor LIKE 'html/%' OR extractor LIKE 'epub/%')", (generation,))
    return {doc: (extractor.partition("/")[0], f"{sha} {extractor}")
            for doc, extractor, sha in rows}


def _all_stale(conn: sqlite3.Connection, previous: int, generation: int) -> bool:
    """Whether every site must be marked: other settings than ``previous``'s (other
    chunks), or marks made by another version of this pass (or none)."""
    if store.get_meta(conn, META_KEY) != VERSION:
        return True
    old, new = (store.generation_config(conn, g) for g in (previous, generation))
    return any(old.get(k) != new.get(k) for k in old.keys() | new.keys() if k != "gc")


Site = tuple[str, str]
"""``("html", folder)`` or ``("epub", doc_id)``."""


def _site(doc_id: str, fmt: str) -> Site:
    """The site a document's pages belong to: an HTML page's folder, an EPUB itself."""
    return ("epub", doc_id) if fmt == "epub" else ("html", posixpath.dirname(doc_id))


@dataclass(frozen=True, slots=True)
class _Chunk:
    rowid: int
    start: int
    end: int
    text: str
    layout: str | None
    locator: str | None


def _chunks(conn: sqlite3.Connection, generation: int, doc_id: str) -> list[_Chunk]:
    rows = conn.execute(
        'SELECT c.rowid, c.start, c."end", c.text, c.layout, c.locator '
        "FROM generation_chunks g JOIN chunks c ON c.rowid = g.chunk_rowid "
        'WHERE g.generation = ? AND g.doc_id = ? ORDER BY g.start, c."end"',
        (generation, doc_id))
    return [_Chunk(*row) for row in rows]


def _document_lines(chunks: Sequence[_Chunk]) -> list[Line]:
    """The countable lines of the view the chunks cover (overlaps read once; a line is
    never split by a chunk boundary, only by a stretch no chunk covers)."""
    found: list[Line] = []
    pieces: list[str] = []
    begin, covered = 0, -1
    for c in chunks:
        if c.start > covered:
            found.extend(lines("".join(pieces), begin))
            begin, pieces, covered = c.start, [c.text], c.end
        elif c.end > covered:
            pieces.append(c.text[covered - c.start:])
            covered = c.end
    found.extend(lines("".join(pieces), begin))
    return found


def _parts(chunks: Sequence[_Chunk]) -> tuple[list[int], list[str]]:
    """Where each EPUB member starts in the view, from the chunks' locators (sorted)."""
    starts: dict[int, str] = {}
    for c in chunks:
        for span in json.loads(c.locator or "{}").get("spans", ()):
            if span.get("view_start") is not None:
                starts.setdefault(int(span["view_start"]), str(span.get("part")))
    ordered = sorted(starts.items())
    return [s for s, _ in ordered], [p for _, p in ordered]


def _pages(conn: sqlite3.Connection, generation: int, docs: Sequence[str], epub: bool
           ) -> Iterator[tuple[str, list[list[Line]]]]:
    """Each document and its pages' lines: an HTML document is one page, an EPUB one
    page per member."""
    for doc in docs:
        chunks = _chunks(conn, generation, doc)
        found = _document_lines(chunks)
        if not epub:
            yield doc, [found]
            continue
        starts, parts = _parts(chunks)
        by_part: dict[str, list[Line]] = {}
        for line in found:
            at = bisect.bisect_right(starts, line[0]) - 1
            by_part.setdefault(parts[at] if at >= 0 else "", []).append(line)
        yield doc, list(by_part.values())


def _mark_site(conn: sqlite3.Connection, generation: int, docs: Sequence[str],
               epub: bool) -> Marked:
    """Count the site's lines, then rewrite the layouts of its chunks that change."""
    pages = [_keys(page) for _, doc_pages in _pages(conn, generation, docs, epub)
             for page in doc_pages]
    common = repeated(pages)
    marked = changed = 0
    for doc in docs:
        chunks = _chunks(conn, generation, doc)
        spans = _marked(_document_lines(chunks), common)
        marked += len(spans)
        updates = [(layout, c.rowid) for c in chunks
                   if (layout := _relaid(c, spans)) != c.layout]
        conn.executemany("UPDATE chunks SET layout = ? WHERE rowid = ?", updates)
        changed += len(updates)
    return Marked(1, len(pages), marked, changed)


def _relaid(chunk: _Chunk, spans: Sequence[tuple[int, int]]) -> str | None:
    """The chunk's layout with its site furniture set to ``spans`` (view offsets, sorted)
    where the extractor marked nothing, in :mod:`groundkit.store`'s JSON form."""
    data: dict[str, Any] = json.loads(chunk.layout) if chunk.layout else {}
    own = [(int(a), int(b), str(k)) for a, b, k in data.get("furniture", ()) if k != KIND]
    ends = [b for _, b in spans]
    site: list[Run] = []
    for a, b in spans[bisect.bisect_right(ends, chunk.start):]:
        if a >= chunk.end:
            break
        site.extend(_outside(max(a, chunk.start) - chunk.start,
                             min(b, chunk.end) - chunk.start, own))
    runs = sorted(own + site)
    if runs:
        data["furniture"] = [list(r) for r in runs]
    else:
        data.pop("furniture", None)
    return json.dumps(data, ensure_ascii=False, sort_keys=True) if data else None


def _outside(start: int, end: int, own: Sequence[Run]) -> Iterator[Run]:
    """``[start, end)`` less the extractor's runs (a mark keeps the extractor's kind)."""
    for a, b, _ in own:
        if b <= start or a >= end:
            continue
        if a > start:
            yield start, a, KIND
        start = max(start, b)
    if start < end:
        yield start, end, KIND
