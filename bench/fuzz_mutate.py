"""Seeded mutations of real files for the extractor fuzz campaign (``fuzz_extract.py``).

An input is one seed file of a format with one to four operators applied, chosen and
driven by a ``random.Random`` seeded with ``(campaign seed, format, input index)``: the
same three always give the same bytes, so any input can be made again from its number.
Operators are ``(name, weight, function)``; a function takes the generator, the bytes
and the :class:`Corpus` (for splicing) and returns new bytes. Byte-level operators work
on any format; structure-aware ones (this module: HTML; ``fuzz_zip``: zip members and
headers; ``fuzz_pdf``: PDF objects, streams and cross-references) parse what they need
and fall back to another edit when the bytes no longer parse. Structure-aware operators
run before the byte-level ones of an input.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

Op = Callable[[random.Random, bytes, "Corpus"], bytes]
Entry = tuple[str, float, Op]
MAX_GROWTH = 1 << 20
"""Bytes an operator may add at most (a repeated chunk, nesting)."""


@dataclass(frozen=True)
class Corpus:
    """The seed files of every format (``format -> ((name, bytes), ...)``) and the format
    of the input being made."""

    seeds: dict[str, tuple[tuple[str, bytes], ...]]
    fmt: str = ""

    def other(self, rng: random.Random) -> bytes:
        """A seed to splice with: one of the input's format three times in four, else any."""
        pool = self.seeds.get(self.fmt, ()) if rng.random() < 0.75 else ()
        pool = pool or tuple(s for group in self.seeds.values() for s in group)
        return rng.choice(pool)[1]


# --- byte-level operators (any format) -----------------------------------------------

INTERESTING = b"\x00\x01\x7f\x80\xff \n\r<>&\"'/09%(){}[]"


def at(rng: random.Random, data: bytes) -> int:
    return rng.randint(0, len(data))


def span(rng: random.Random, data: bytes) -> tuple[int, int]:
    """A range of ``data``: usually short, sometimes up to half of it."""
    start = at(rng, data)
    size = rng.choice((rng.randint(1, 16), rng.randint(1, 256), rng.randint(1, len(data) // 2 + 1)))
    return start, min(len(data), start + size)


def flip_bits(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8) if out else 0):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def set_bytes(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8) if out else 0):
        pos = rng.randrange(len(out))
        out[pos] = rng.choice(INTERESTING) if rng.random() < 0.7 else rng.randrange(256)
    return bytes(out)


def insert_bytes(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    pos = at(rng, data)
    return data[:pos] + rng.randbytes(rng.randint(1, 64)) + data[pos:]


def delete_range(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    start, end = span(rng, data)
    return data[:start] + data[end:]


def duplicate_range(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    start, end = span(rng, data)
    pos = at(rng, data)
    return data[:pos] + data[start:end] + data[pos:]


def repeat_range(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    start = at(rng, data)
    chunk = data[start:start + rng.randint(1, 64)] or b"x"
    times = min(rng.choice((2, 10, 100, 1000, 10_000)), MAX_GROWTH // len(chunk))
    return data[:start] + chunk * times + data[start:]


def truncate(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    return data[:at(rng, data)]


def splice(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    other = corpus.other(rng)
    return data[:at(rng, data)] + other[at(rng, other):]


BYTE_OPS: tuple[Entry, ...] = (
    ("flip_bits", 1, flip_bits), ("set_bytes", 1, set_bytes), ("insert_bytes", 1, insert_bytes),
    ("delete_range", 1, delete_range), ("duplicate_range", 1, duplicate_range),
    ("repeat_range", 0.5, repeat_range), ("truncate", 0.5, truncate), ("splice", 0.5, splice),
)


def insert_tokens(tokens: Sequence[bytes], near: bytes = b"<") -> Op:
    """An operator inserting one to four of ``tokens``, usually just before ``near``."""
    def op(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
        pos = near_at(rng, data, near)
        return data[:pos] + b"".join(rng.choice(tokens) for _ in range(rng.randint(1, 4))) \
            + data[pos:]
    return op


def near_at(rng: random.Random, data: bytes, near: bytes) -> int:
    """A random offset, moved to the next ``near`` after it three times in four."""
    pos = at(rng, data)
    if rng.random() < 0.75:
        found = data.find(near, pos)
        return found if found >= 0 else pos
    return pos


# --- HTML ----------------------------------------------------------------------------

HTML_TOKENS: tuple[bytes, ...] = tuple(t.encode("utf-8", "surrogatepass") for t in (
    "<p>", "</p>", "<div>", "</div>", "<table>", "</table>", "<tr>", "<td>", "</td>", "<th>",
    "<caption>", "<colgroup><col>", "<tbody>", "<form>", "<frameset>", "<body>", "</body>",
    "<html>", "</html>", "<head>", "</head>", "<option>", "<optgroup>", "<select>", "<dl><dt>",
    "<dd>", "<ruby><rt>", "<image>", "<isindex>", "<nobr>", "<object>", "<button>", "<input>",
    "<hr>", "<wbr>", "<br>", "</br>", "<li>", "<ul>", "<math><mtext>", "<math><mi>",
    "<svg><foreignObject>", "<svg><desc>", "<svg><title>", "<svg><script>", "<svg><style>",
    "</svg>", "<noscript>", "<noembed>", "<iframe>", "<xmp>", "<listing>", "<pre>\n",
    "<textarea>\n", "</textarea>", "<template>", "</template>", "<details><summary>",
    "<h1>", "</h1>", "<h2>", "</h3>", "<h6>", "<p hidden>", "<div style=\"display:none\">",
    "<title>", "</title>", "<script>", "</script>", "<style>", "</style>", "<!doctype html>",
    "<!-->", "<!--->", "--!>", "<!---->", "<!--", "-->", "<?php ?>", "</ >", "</a b>", "<a/b>",
    "<\t>", "< p>", "<p/>", "<3", "a<b", "<![CDATA[x]]>", "<a href='", "<a href=\"x",
    "&", "&#", "&#x", "&#;", "&amp", "&ampx", "&notin", "&notit;", "&NotNestedGreaterGreater;",
    "&#0;", "&#x110000;", "&#xD800;", "&#128;", "&#x80;", "&#99999999999999999999;",
    "&#x0000000000041;", "&#13;", "&#10;", "&#9;", "&#xa0;", "&nbsp;", "&lt;p&gt;", "&bogus;",
    "\r", "\r\n", "\n\n", "\t", "\x0c", " ", "word", "é", "日本語", "\u00a0", "\u2028",
    "<meta charset=shift_jis>", "<base href=x>",
    "<meta http-equiv=content-type content='text/html; charset=koi8-r'>",
))
ENTITIES = (b"&", b"&#", b"&#x", b"&#;", b"&amp", b"&ampx", b"&amp;amp;", b"&notin", b"&notit;",
            b"&NotNestedGreaterGreater;", b"&#0;", b"&#x110000;", b"&#xD800;", b"&#xDFFF;",
            b"&#128;", b"&#x80;", b"&#x9F;", b"&#99999999999999999999;", b"&#x0000000000041;",
            b"&#13;", b"&#10;", b"&#9;", b"&#12;", b"&#xa0;", b"&nbsp;", b"&lt;p&gt;", b"&bogus;",
            b"&#xFFFE;", b"&#x1F600;", b"&#65;&#66", b"&lt", b"&gt", b"&quot", b"&AElig",
            b"&" + b"a" * 40 + b";", b"&#" + b"9" * 40 + b";", b"&#x" + b"f" * 40)
UNCLOSED = (b"<!--", b"<script>", b"<style>", b"<textarea>", b"<title>", b"<plaintext>",
            b"<xmp>", b"<noscript>", b"<iframe>", b"<noembed>", b"<![CDATA[", b"<?", b"<!DOCTYPE",
            b"<svg><style>", b"<math><mi>", b"<a href=\"", b"</", b"<template>", b"<table>",
            b"<select>", b"<pre>", b"<div title='")
NESTING = (b"<div>", b"<span>", b"<table>", b"<table><tr><td>", b"<ul><li>", b"<b>", b"<p>",
           b"<blockquote>", b"<svg>", b"<template>", b"<font>", b"<a>", b"<dl><dd>", b"<h2>",
           b"<select><option>", b"<i><b>", b"<pre>", b"<object>", b"<td>", b"<li>")
LABELS = (b"utf-8", b"UTF8", b"utf-16", b"utf-16le", b"utf-32", b"shift_jis", b"euc-jp",
          b"iso-2022-jp", b"gb2312", b"gb18030", b"big5", b"euc-kr", b"koi8-r", b"windows-1251",
          b"iso-8859-1", b"latin1", b"us-ascii", b"x-user-defined", b"utf-7", b"hz-gb-2312",
          b"base64", b"rot13", b"idna", b"unicode-escape", b"bogus", b"", b"cp1252",
          b"iso-8859-8-i", b"macintosh", b"tis-620", b"replacement", b"cp037", b"utf-8-sig")
CODECS = ("utf-16-le", "utf-16-be", "utf-16", "utf-32", "shift_jis", "euc-jp", "gb18030",
          "cp1251", "koi8-r", "latin-1", "big5", "cp932", "euc-kr", "cp1252", "utf-8-sig")
BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
ODD_UTF8 = (b"\xc2\xa0", b"\xe2\x80\xa8", b"\xef\xbb\xbf", b"\xed\xa0\x80", b"\xc0\xaf",
            b"\xf4\x90\x80\x80", b"\xcc\x81", b"\xe2\x80\x8b", b"\xef\xbf\xbe", b"\xef\xbf\xbf",
            b"\xf0\x9f\x98\x80", b"\x00", b"\x01", b"\x0b", b"\x7f", b"\xc2\x85", b"\xe3\x80\x80",
            b"\xe2\x80\xae", b"\xc3", b"\x80", b"\xdb\x8c")
_CHARSET = re.compile(rb"charset=[\"']?[^\"'\s;>]*", re.I)
_TEXT_RUN = re.compile(rb">([^<]{4,})<")


def deep_nesting(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    tag = rng.choice(NESTING)
    depth = min(rng.choice((64, 512, 4096, 20_000)), MAX_GROWTH // len(tag))
    pos = near_at(rng, data, b"<")
    closing = b"" if rng.random() < 0.5 else tag.replace(b"<", b"</") * depth
    return data[:pos] + tag * depth + b"deep" + closing + data[pos:]


def unclosed(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    pos = near_at(rng, data, b"<")
    return data[:pos] + rng.choice(UNCLOSED) + data[pos:]


def charset(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """Declare another encoding, add a byte-order mark, or re-encode the page."""
    label = rng.choice(LABELS)
    way = rng.randrange(4)
    if way == 0:
        if _CHARSET.search(data[:1024]):
            return _CHARSET.sub(b"charset=" + label, data, count=1)
        return b'<meta charset="' + label + b'">' + data
    if way == 1:
        return rng.choice(BOMS) + data
    if way == 2:
        return b'<?xml version="1.0" encoding="' + label + b'"?>\n' + data
    codec = rng.choice(CODECS)
    text = data.decode("utf-8", "replace")
    out = text.encode(codec, rng.choice(("replace", "ignore", "xmlcharrefreplace")))
    return _CHARSET.sub(b"charset=" + label, out, count=1) if rng.random() < 0.3 else out


def newlines(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    new = rng.choice((b"\r\n", b"\r", b"\x0c", b"\n\r", b"\r\r\n"))
    if rng.random() < 0.5:
        return data.replace(b"\n", new)
    start, end = span(rng, data)
    return data[:start] + data[start:end].replace(b"\n", new) + data[end:]


def attribute_junk(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    junk = rng.choice((b" hidden", b' style="display:none"', b" =", b" \"'", b" /", b" a=",
                       b' title="' + b"x" * 70_000 + b'"', b" a=b=c", b" <p>", b" \x00", b"/>",
                       b" href='x>y'", b" charset=utf-16"))
    tag = [m.end() for m in re.finditer(rb"<[a-zA-Z][a-zA-Z0-9]*", data)]
    pos = rng.choice(tag) if tag else at(rng, data)
    return data[:pos] + junk + data[pos:]


def text_copy(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """A run of text copied before another tag (text the aligner finds twice)."""
    runs = [m.group(1) for m in _TEXT_RUN.finditer(data)]
    if not runs:
        return duplicate_range(rng, data, corpus)
    pos = near_at(rng, data, b"<")
    return data[:pos] + rng.choice(runs) + data[pos:]


def move_block(rng: random.Random, data: bytes, corpus: Corpus) -> bytes:
    """A range from one ``<`` to another moved before a third (markup out of place)."""
    tags = [m.start() for m in re.finditer(rb"<", data)]
    if len(tags) < 3:
        return duplicate_range(rng, data, corpus)
    a, b, c = sorted(rng.sample(tags, 3))
    block = data[a:b]
    rest = data[:a] + data[b:]
    pos = c - len(block) if rng.random() < 0.5 else rng.choice(tags[:tags.index(a) + 1])
    return rest[:pos] + block + rest[pos:]


HTML_OPS: tuple[Entry, ...] = (
    ("tag_soup", 3, insert_tokens(HTML_TOKENS)), ("deep_nesting", 1, deep_nesting),
    ("unclosed", 2, unclosed), ("charset", 2, charset),
    ("odd_utf8", 1.5, insert_tokens(ODD_UTF8, b" ")),
    ("entities", 1.5, insert_tokens(ENTITIES, b" ")), ("newlines", 1, newlines),
    ("attribute_junk", 1, attribute_junk), ("text_copy", 1, text_copy),
    ("move_block", 1, move_block),
)


# --- choosing and applying -----------------------------------------------------------


def choose(rng: random.Random, ops: Sequence[Entry]) -> Entry:
    return rng.choices(ops, weights=[w for _, w, _ in ops])[0]


def mutate(rng: random.Random, data: bytes, corpus: Corpus, structural: Sequence[Entry],
           raw: Sequence[Entry] = (), byte_share: float = 1.0) -> tuple[bytes, list[str]]:
    """``data`` with one to four operators applied, and their names in the order applied:
    the ``structural`` ones first, then the byte-level ones (``raw`` and :data:`BYTE_OPS`,
    whose weights are scaled by ``byte_share``)."""
    count = rng.choices((1, 2, 3, 4), weights=(50, 25, 15, 10))[0]
    late = (*raw, *((name, w * byte_share, op) for name, w, op in BYTE_OPS))
    picked = [choose(rng, (*structural, *late)) for _ in range(count)]
    picked.sort(key=lambda entry: entry in late)  # stable: structural first
    for _, _, op in picked:
        data = op(rng, data, corpus)
    return data, [name for name, _, _ in picked]
