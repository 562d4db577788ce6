"""Where an HTML page's text nodes are in its raw file: the map behind the view.

lexbor does not report where a node came from, so the map is rebuilt by alignment. A
small tokenizer (a regular expression that follows the HTML tokenizer's rules for tags,
attributes, comments, raw text and RCDATA) finds the raw *text runs* of the page and
decodes their character references into a *stream*: the runs' text concatenated, each
stream character tied to the raw characters it came from (one character, a whole
``&name;`` reference, a CR LF pair).

Tree construction keeps text in source order but for a few cases: text it drops (a
newline after ``<pre>``, whitespace before ``<head>``, text in a ``<frameset>``), text
foster-parented out of a table (moved before it), and text nodes it merges across
markup it ignores (a stray ``</span>``). So each text node, in document order, is looked
for at a forward cursor: at the cursor itself almost always; else the nearest match
ahead, taken as out of order when the next node is at the cursor (the cursor stays, and
later skips it), as skipped text when the node is long or the next node follows it, and
as not found otherwise (a short text is only taken at the cursor). A merged node is
split where its runs end. A text node the stream does not hold (markup the two
tokenizers read differently: ``<script>`` or ``<style>`` inside inline SVG, which
lexbor tokenizes as markup) is not found, so its text is unmapped: a segment is only
ever made where the raw bytes hold exactly its text.
"""

from __future__ import annotations

import bisect
import html
import re
from dataclasses import dataclass, field

WHITESPACE = "\t\n\f\r "
"""HTML's whitespace (not U+00A0, which the view keeps)."""
NON_WHITESPACE = re.compile(r"[^\t\n\f\r ]")

_ATTRS = (r"(?:[\t\n\f\r /]++|[^\t\n\f\r />][^\t\n\f\r /=>]*+"
          r"(?:[\t\n\f\r ]*+=[\t\n\f\r ]*+(?:\"[^\"]*+\"|'[^']*+'|(?![\"'])[^\t\n\f\r >]*+)"
          r"|(?![\t\n\f\r ]*+=)))*+")
_END = r"(?=[\t\n\f\r />])"
_MARKUP = re.compile(
    r"<!--(?:>|->|.*?(?:--!?>|\Z))"                      # a comment
    r"|<(?:!|\?|/(?=[^a-z>]))[^>]*+(?:>|\Z)"             # doctype, bogus comment
    r"|</>"
    rf"|<(?P<rc>title|textarea){_END}{_ATTRS}>(?P<rcdata>.*?)(?=</(?P=rc){_END}|\Z)"
    rf"|<(?P<raw>script|style|iframe|noembed|noframes|xmp){_END}{_ATTRS}>"
    rf"(?P<rawtext>.*?)(?=</(?P=raw){_END}|\Z)"
    rf"|<plaintext{_END}{_ATTRS}>(?P<plain>.*)"
    rf"|</?[a-z][^\t\n\f\r />]*+{_ATTRS}(?:>|.*)",       # a tag (unclosed: to the end)
    re.I | re.S)
_REFERENCE = re.compile(r"\r\n?|&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f\r <&#;]{1,32};?)")
_CR = re.compile(r"\r\n?")


def _unescape(reference: str) -> str:
    """A character reference decoded as the HTML standard does. :func:`html.unescape`
    drops a numeric reference to a control character or noncharacter (``&#1;``), which
    the standard (and lexbor) keeps, and fails on one of thousands of digits."""
    if not reference.startswith("&#"):
        return html.unescape(reference)
    digits = reference[2:].rstrip(";")
    hexadecimal = digits[0] in "xX"
    digits = (digits[1:] if hexadecimal else digits).lstrip("0") or "0"
    if len(digits) > 8:  # past U+10FFFF
        return "\ufffd"
    x = "x" if hexadecimal else ""
    return html.unescape(f"&#{x}{digits};") or chr(int(digits, 16 if hexadecimal else 10))


@dataclass(slots=True)
class Stream:
    """The decoded text of every raw text run, and where each character came from.

    The stream is ``parts`` joined; ``runs`` are the stream offsets where runs start.
    Pieces are parallel lists: piece ``i`` starts at stream offset ``at[i]`` and source
    offset ``src[i]``; ``whole[i]`` is 0 for literal text (character for character), or
    the length of the source that all its characters stand for (a reference, a CR LF).
    """

    parts: list[str] = field(default_factory=list)
    runs: list[int] = field(default_factory=list)
    at: list[int] = field(default_factory=list)
    src: list[int] = field(default_factory=list)
    whole: list[int] = field(default_factory=list)
    size: int = 0

    def add_run(self, text: str, start: int, decode: bool) -> None:
        self.runs.append(self.size)
        special = _REFERENCE if decode else _CR
        if "&" not in text and "\r" not in text:
            self._piece(text, start, 0)
            return
        last = 0
        for m in special.finditer(text):
            if m.start() > last:
                self._piece(text[last:m.start()], start + last, 0)
            token = m.group()
            self._piece("\n" if token[0] == "\r" else _unescape(token), start + m.start(),
                        len(token))
            last = m.end()
        if last < len(text):
            self._piece(text[last:], start + last, 0)

    def _piece(self, text: str, src: int, whole: int) -> None:
        if text:
            self.parts.append(text)
            self.at.append(self.size)
            self.src.append(src)
            self.whole.append(whole)
            self.size += len(text)

    def source_start(self, k: int) -> int:
        i = bisect.bisect_right(self.at, k) - 1
        return self.src[i] + (0 if self.whole[i] else k - self.at[i])

    def source_end(self, k: int) -> int:
        """The source offset just past stream character ``k``."""
        i = bisect.bisect_right(self.at, k) - 1
        return self.src[i] + (self.whole[i] or k - self.at[i] + 1)


def raw_stream(src: str) -> Stream:
    """The text runs of the decoded page ``src``: the stream the tree's text is found in."""
    stream = Stream()
    pos = 0
    for m in _MARKUP.finditer(src):
        if m.start() > pos:
            stream.add_run(src[pos:m.start()], pos, True)
        body = m.lastgroup  # RCDATA is text; raw text is not, but for <xmp> and <plaintext>
        if body == "rawtext" and m.group("raw").lower() != "xmp":
            body = None
        if body is not None and m.group(body):
            stream.add_run(m.group(body), m.start(body), body == "rcdata")
        pos = m.end()
    if pos < len(src):
        stream.add_run(src[pos:], pos, True)
    return stream



_WINDOW = 1024
"""How far past the cursor a text node is looked for before a search of the rest."""
_SHORT = 8
"""A text of fewer visible characters is only taken at the cursor (after whitespace)."""
_SURE = 16
"""A text of this many visible characters found ahead of the cursor is taken without
the next one confirming it."""


def align(stream: str, texts: list[str]) -> list[int]:
    """The offset in ``stream`` of each text node's text (in document order), or -1
    where it is not found."""
    found: list[int] = []
    cursor = 0
    budget = 4 * len(stream) + _WINDOW  # bounds the full searches: linear time overall
    ahead: dict[int, int] = {}  # the stream taken out of order: start -> end
    for i, text in enumerate(texts):
        if ahead and not stream.startswith(text, cursor):
            cursor = _past(stream, cursor, ahead)
        if stream.startswith(text, cursor):
            found.append(cursor)
            cursor += len(text)
            continue
        pos = stream.find(text, cursor, cursor + len(text) + _WINDOW)
        blank = NON_WHITESPACE.search(text) is None
        if pos < 0 and not blank and budget > 0:
            budget -= len(stream) - cursor
            pos = stream.find(text, cursor)
        if pos < 0:
            found.append(-1)
            continue
        size = len(text.strip(WHITESPACE))
        if NON_WHITESPACE.search(stream, cursor, pos) is None:
            cursor = pos + len(text)
        elif size < _SHORT:  # too common to be taken anywhere but here
            pos = -1
        elif _next_at(stream, texts, i, cursor):
            ahead[pos] = pos + len(text)  # out of order (foster-parented): the cursor stays
        elif size >= _SURE or _next_at(stream, texts, i, pos + len(text)):
            cursor = pos + len(text)  # skipped text the tree does not hold (a template)
        else:
            pos = -1  # a short text far ahead, and nothing confirms it: unmapped
        found.append(pos)
    return found


def _past(stream: str, cursor: int, ahead: dict[int, int]) -> int:
    """The cursor moved past the text already taken out of order that it has reached."""
    while (m := NON_WHITESPACE.search(stream, cursor)) is not None and m.start() in ahead:
        cursor = ahead.pop(m.start())
    return cursor


def _next_at(stream: str, texts: list[str], i: int, cursor: int) -> bool:
    """Whether the next non-blank text after ``texts[i]`` starts at ``cursor`` (after
    whitespace)."""
    for text in texts[i + 1:i + 8]:
        if NON_WHITESPACE.search(text):
            pos = stream.find(text, cursor, cursor + len(text) + 64)
            return pos >= 0 and NON_WHITESPACE.search(stream, cursor, pos) is None
    return False
