"""Markdown's outline: the headings of a plain-text view.

Markdown is indexed as the file's own text (its view *is* the decoded file), so only
the outline is extracted here: ATX headings (``## Title``) and setext headings (a line
underlined with ``===`` or ``---``), outside fenced code blocks. The heading path of a
chunk comes from this outline, as it does from an HTML or DOCX extractor's.
"""

from __future__ import annotations

import re

from .base import Heading

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*\Z")
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def is_markdown(relpath: str) -> bool:
    return relpath.lower().endswith(MARKDOWN_SUFFIXES)


def headings(text: str) -> tuple[Heading, ...]:
    """The headings of Markdown ``text``: where each heading's line starts (its ``#``
    marks included, so a chunk that starts at a heading sits under it), level, title."""
    found: list[Heading] = []
    fence: str | None = None
    previous: tuple[int, str] | None = None  # a paragraph line a setext underline may close
    pos = 0
    for m in _LINE.finditer(text):
        raw = m.group()
        if not raw:
            break
        line = raw.rstrip("\r\n")
        start, pos = pos, pos + len(raw)
        fenced = _FENCE.match(line)
        if fence is not None:
            if fenced and fenced.group(1)[0] == fence[0] and len(fenced.group(1)) >= len(fence):
                fence = None
            continue
        if fenced:
            fence, previous = fenced.group(1), None
            continue
        atx = _ATX.match(line)
        if atx:
            title = (atx.group(2) or "").strip()
            if title:
                found.append(Heading(start + len(line) - len(line.lstrip()), len(atx.group(1)),
                                     title))
            previous = None
            continue
        setext = _SETEXT.match(line)
        if setext and previous is not None:
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append(Heading(previous[0], level, previous[1]))
            previous = None
            continue
        stripped = line.strip()
        if stripped and not line.startswith(("    ", "\t")):
            previous = (start + line.index(stripped), stripped)
        else:
            previous = None
    return tuple(found)
