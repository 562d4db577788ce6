"""Page furniture: the text of a page that is not its content.

A PDF repeats a running header or footer and a page number on every page; a manual opens
with a table of contents and ends with an index; an HTML page carries the site's
navigation. All of it is text a reader skips, and all of it matches questions: a running
head names the product on every page, a contents line names every section. groundkit keeps
it in the text view (offsets never change, a search can still find it) and marks it, so an
answer never quotes it (:mod:`groundkit.answer.sentences`).

Runs are ``(start, end, kind)`` of the view, sorted and disjoint. The kinds:

``running-head``
    A line at the top or bottom edge of a PDF page whose words, digits masked and in any
    order, are at the same height (within :data:`SAME_HEIGHT` points) on at least
    :data:`MIN_REPEATS` pages, one of them near (:data:`RUN_GAP`): ``gnuplot 5.4 24``,
    ``25 gnuplot 5.4`` and ``gnuplot 5.4 26`` are one running head.
``page-number``
    A line at the top or bottom edge of a PDF page that is only a page number (``24``,
    ``iv``, ``Page 3 of 40``, ``- 7 -``).

A page's edge is read inwards from its highest line (and from its lowest), by position,
and ends at the first line that is neither, after at most :data:`EDGE_LINES`: a body line
that happens to start many pages (gnuplot's ``Syntax:``) sits below the running head, so
it is never reached.
``contents``
    A PDF line with a dot leader before page numbers (``Introduction ..... 4``), or, on a
    page where most lines end in a page number and those numbers rise down the page, each
    such line (a table of contents without leaders).
``index``
    On a PDF page where most lines are index entries (``pm3d, 64, 141, 188``), each entry
    and each letter heading between them.
``navigation``
    HTML: what a ``nav`` element, a page-level ``header``, ``footer`` or ``aside``, an
    element whose ARIA role is navigation, banner, contentinfo or search, or a DocBook or
    common navigation class or a class Bootstrap hides (:data:`NAVIGATION_CLASSES`) holds
    (:mod:`.html`).

The detector is part of each extractor's identity (its algorithm version): a change to it
re-indexes, never silently changes a verdict.
"""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Run = tuple[int, int, str]
Box = tuple[float, float, float, float]

EDGE_LINES = 3
"""Lines at each of a page's top and bottom that may be a running head or page number."""
SAME_HEIGHT = 6.0
"""Points two lines' tops may differ by and still be at the same height."""
MIN_REPEATS = 3
"""Pages a masked edge line must appear on to be a running head."""
RUN_GAP = 2
"""A running head is also on a page at most this far away (alternate pages may differ)."""
CONTENTS_LINES = 6
"""Lines ending in a page number a page needs before it can be a table of contents."""
NAVIGATION_CLASSES = frozenset({
    "docnav", "navheader", "navfooter", "navbar", "navigation", "breadcrumb", "breadcrumbs",
    "skip-link", "skiplink", "site-header", "site-footer", "site-nav", "banner", "masthead",
    "dropdown-menu", "sr-only", "visually-hidden"})
"""``class`` or ``id`` tokens that mark HTML navigation (DocBook's ``docnav``,
``navheader`` and ``navfooter``; a site ``banner``; common theme names), and the classes
whose meaning every Bootstrap style sheet fixes as hidden from a sighted reader: a
``dropdown-menu`` (a menu shown only when its toggle is clicked: haproxy's "This keyword
is available in sections" pop-ups) and ``sr-only``/``visually-hidden`` (text for screen
readers only, such as "Toggle navigation"). DocBook's ``sidebar`` is content, so it is
not here."""
NAVIGATION_ROLES = frozenset({"navigation", "banner", "contentinfo", "search"})

_DIGITS = re.compile(r"\d+")
_PAGE_NUMBER = re.compile(r"[\s\-–—|·•]*(?:page\s+)?(?:\d{1,5}|[ivxlcdm]{1,8})"
                          r"(?:\s*(?:/|of)\s*\d{1,5})?[\s\-–—|·•]*", re.I)
_REFS = r"\d{1,5}(?:\s*[-–]\s*\d{1,5})?(?:\s*,\s*\d{1,5}(?:\s*[-–]\s*\d{1,5})?)*"
"""Page references: ``47``, ``20, 43, 61``, ``12-14``."""
_LEADER = re.compile(rf"(?:\.\s?){{4,}}\s*(?:{_REFS}|[ivxlcdm]{{1,8}})\s*$|…{{2,}}\s*{_REFS}\s*$",
                     re.I)
_INDEX_ENTRY = re.compile(rf"\S.*?,\s*{_REFS}\s*,?\s*")
_INDEX_CONTINUED = re.compile(rf"{_REFS}\s*,?")
_INDEX_TITLE = re.compile(r"(?:[\w-]+ ){0,3}index", re.I)
_CONTENTS_TITLE = re.compile(r"(?:table of )?contents", re.I)
_ENDS_IN_NUMBER = re.compile(r"\S.*?\s(\d{1,5})\s*$")


@dataclass(frozen=True, slots=True)
class PageLines:
    """One PDF page as the detector sees it: where its text starts in the view, the text,
    and its lines ``(start, end, box)`` in that text (box ``None`` when unknown)."""

    offset: int
    text: str
    lines: Sequence[tuple[int, int, Box | None]]


def pdf_runs(pages: Sequence[PageLines]) -> tuple[Run, ...]:
    """The furniture runs of a PDF's view, from its pages (see the module)."""
    edges = [_edge_lines(page) for page in pages]
    heights: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for number, edge in enumerate(edges):
        for key, top, _ in dict.fromkeys(line for side in edge for line in side):
            heights[key].append((number, top))
    runs: list[Run] = []
    for number, (page, edge) in enumerate(zip(pages, edges, strict=True)):
        marked: dict[int, str] = {}
        for side in edge:
            for key, top, index in side:
                start, end, _ = page.lines[index]
                if _PAGE_NUMBER.fullmatch(page.text[start:end]):
                    marked[index] = "page-number"
                elif _repeated(heights[key], number, top):
                    marked[index] = "running-head"
                else:
                    break  # the edge ends at the first line that is content
        marked.update((i, "index") for i in _index_lines(page) if i not in marked)
        marked.update((i, "contents") for i in _contents_lines(page) if i not in marked)
        runs.extend((page.offset + page.lines[i][0], page.offset + page.lines[i][1], kind)
                    for i, kind in sorted(marked.items()))
    return merged(runs)


Edge = tuple[str, float, int]
"""An edge line: its masked text, the top of its box, its index in the page's lines."""


def _edge_lines(page: PageLines) -> tuple[list[Edge], list[Edge]]:
    """The page's :data:`EDGE_LINES` highest lines, top down, and lowest, bottom up."""
    placed = [(box[3], box[1], i) for i, (start, end, box) in enumerate(page.lines)
              if box is not None and page.text[start:end].strip()]
    if len(placed) < 2:
        return [], []

    def edge(order: list[tuple[float, float, int]]) -> list[Edge]:
        return [(_masked(page.text[page.lines[i][0]:page.lines[i][1]]), top, i)
                for top, _, i in order[:EDGE_LINES]]

    return (edge(sorted(placed, key=lambda p: (-p[0], p[2]))),
            edge(sorted(placed, key=lambda p: (p[1], p[2]))))


def _masked(line: str) -> str:
    """A line's words, digits masked, in sorted order: the running head of odd pages
    (``gnuplot 5.4 21``) and of even ones (``22 gnuplot 5.4``) are one."""
    return " ".join(sorted(_DIGITS.sub("#", line.casefold()).split()))


def _repeated(places: Sequence[tuple[int, float]], page: int, top: float) -> bool:
    """Whether a masked line is at about ``top`` on :data:`MIN_REPEATS` pages or more, one
    of them within :data:`RUN_GAP` pages of ``page`` (a running head runs on; a body line
    that starts many pages, such as ``Syntax:``, is scattered)."""
    pages = {number for number, other in places if abs(other - top) <= SAME_HEIGHT}
    near = any(other != page and abs(other - page) <= RUN_GAP for other in pages)
    return page in pages and len(pages) >= MIN_REPEATS and near


def _contents_lines(page: PageLines) -> list[int]:
    """The page's table-of-contents lines: dot leaders anywhere; on a page where lines
    ending in page numbers (leaders or not) are most lines and those numbers rise, each
    such line and the page's ``Contents`` heading."""
    lines = [(i, page.text[s:e].strip()) for i, (s, e, _) in enumerate(page.lines)
             if page.text[s:e].strip()]
    found = [i for i, line in lines if _LEADER.search(line)]
    numbered = [(i, int(m.group(1))) for i, line in lines
                if (m := _ENDS_IN_NUMBER.fullmatch(line))]
    if len(numbered) >= CONTENTS_LINES and 2 * len(numbered) >= len(lines):
        rises = sum(1 for (_, a), (_, b) in itertools.pairwise(numbered) if b >= a)
        if rises >= 0.9 * (len(numbered) - 1):
            found.extend(i for i, _ in numbered)
            found.extend(i for i, line in lines if _CONTENTS_TITLE.fullmatch(line))
    return sorted(set(found))


def _index_lines(page: PageLines) -> list[int]:
    """On a page whose lines are mostly index entries (``pm3d, 64, 141``, or with dot
    leaders), each entry, each line that only continues one (``232``, ``using, 34, 36,``),
    each one-letter group heading and the page's ``Index`` heading."""
    lines = [(i, page.text[s:e].strip()) for i, (s, e, _) in enumerate(page.lines)
             if page.text[s:e].strip()]
    entries = [i for i, line in lines if _INDEX_ENTRY.fullmatch(line)
               or (_LEADER.search(line) and "," in line)]
    if len(entries) < CONTENTS_LINES or 2 * len(entries) < len(lines):
        return []
    return sorted({*entries, *(i for i, line in lines
                              if (len(line) <= 2 and line.isalpha())
                              or _INDEX_CONTINUED.fullmatch(line)
                              or _INDEX_TITLE.fullmatch(line))})


def merged(runs: Iterable[Run]) -> tuple[Run, ...]:
    """``runs`` sorted, overlapping or touching runs joined (the first one's kind kept)."""
    out: list[list[int | str]] = []
    for start, end, kind in sorted(runs):
        if start >= end:
            continue
        if out and start <= int(out[-1][1]):
            out[-1][1] = max(int(out[-1][1]), end)
        else:
            out.append([start, end, kind])
    return tuple((int(a), int(b), str(k)) for a, b, k in out)


def is_navigation(tag: str, attributes: dict[str, str | None], inside_content: bool) -> bool:
    """Whether an HTML element is navigation (see the module): ``inside_content`` is
    whether it sits in an ``article`` or ``main`` (whose ``header`` and ``footer`` are the
    article's own, not the site's)."""
    if tag == "nav":
        return True
    if tag in ("header", "footer", "aside") and not inside_content:
        return True
    if (attributes.get("role") or "").strip().casefold() in NAVIGATION_ROLES:
        return True
    tokens = f"{attributes.get('class') or ''} {attributes.get('id') or ''}".casefold().split()
    return any(t in NAVIGATION_CLASSES for t in tokens)
