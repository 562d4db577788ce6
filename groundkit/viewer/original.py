"""An HTML or EPUB citation shown in its original layout: the document sanitised, the
cited words highlighted where its bytes hold them.

How the highlight finds its place
    The text view's segments (:class:`~groundkit.extract.TextView`) tie each run of the
    view to the raw bytes of the page (or EPUB chapter) it came from. For each segment
    the quote touches, the raw run is decoded again (character references, CR LF) with
    :class:`~groundkit.extract.html_map.Stream`, the extractor's own decoder, and
    aligned with the segment's view text (whose whitespace runs are collapsed); the
    quote's part of it becomes a raw character range, and two private-use characters
    (:data:`OPEN`, :data:`CLOSE`) are written around it into the page's source. Each
    pair lies inside one text run, with no markup between, so the parser keeps it in one
    text node.

Sanitising
    The marked source is cleaned by ammonia (``nh3``, html5ever's parser) with an
    allowlist (:func:`sanitise`): structural and phrasing elements only, no image, frame,
    object, form, SVG or MathML element; ``script``, ``style``, ``template``, ``title``
    and the like dropped with their content; no attribute but a few layout ones
    (``colspan``, ``rowspan``, ``start``, ``dir``, ``lang``, ``hidden``, which the text
    view also honours); no URL of any scheme
    (``href``, ``src``, ``cite`` are gone: a link is its text), no ``style``, no
    ``class``, no ``id``, no event handler, no comment. The page around it keeps its
    policy (``default-src 'none'``): even markup that slipped through could neither run
    nor fetch.

Checking
    After cleaning, the marks must all be there, in order, and the text between each
    pair (unescaped, whitespace collapsed) must be the cited text of that piece; then
    they become ``<mark>`` elements. Anything else (a quote in text the cleaner drops,
    a document that already holds the private-use characters, a segment that does not
    align) gives no original at all, and the page falls back to the text view, saying
    why: a highlight never lands on other words.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from ..extract import TextView
from ..extract.html_encoding import Source, decode_html
from ..extract.html_map import WHITESPACE, Stream

OPEN, CLOSE = "\ue000", "\ue001"
"""The marks written around each piece of the quote before sanitising."""
_ATTRIBUTES = {"*": {"dir", "lang", "hidden"}, "td": {"colspan", "rowspan"},
               "th": {"colspan", "rowspan", "scope"}, "ol": {"start"}, "a": set()}
_DROPPED = {"script", "style", "template", "title", "noscript", "iframe", "object",
            "embed", "noembed", "noframes", "frameset", "svg", "math", "textarea", "select"}
_NO_ORIGINAL = "the original layout could not be shown"


class NoOriginal(Exception):
    """Why the original cannot be shown with the quote highlighted (one line)."""


def sanitise(source: str) -> str:
    """``source`` (an HTML document or fragment) cleaned by the allowlist above."""
    import nh3

    tags = set(nh3.ALLOWED_TAGS) - {"img", "area", "map"}
    return nh3.clean(source, tags=tags, clean_content_tags=_DROPPED - tags,
                     attributes=_ATTRIBUTES, url_schemes=set(), link_rel=None,
                     strip_comments=True)


def original(data: bytes, view: TextView, at: tuple[int, int], part: str | None) -> str:
    """The sanitised markup of ``data`` (the page, or EPUB chapter ``part``) with the view's
    ``at`` highlighted (the first mark's id is ``quote``); :class:`NoOriginal` else."""
    lo, hi = at
    segments = [s for s in view.segments if s.start < hi and s.end > lo]
    if not segments or any(s.part != part or s.byte_start is None or s.byte_end is None
                           for s in segments):
        raise NoOriginal(f"{_NO_ORIGINAL}: the quote is not all in one page's bytes")
    try:
        import nh3  # noqa: F401
    except ModuleNotFoundError:
        raise NoOriginal("the original layout needs nh3: pip install "
                         "'groundkit[html]'") from None
    source = decode_html(data)
    text = source.text
    if OPEN in text or CLOSE in text:
        raise NoOriginal(f"{_NO_ORIGINAL}: the page holds the highlight's own marks")
    cuts: list[tuple[int, int]] = []
    pieces: list[str] = []
    for seg in segments:
        assert seg.byte_start is not None and seg.byte_end is not None
        start, end = _chars(source, seg.byte_start), _chars(source, seg.byte_end)
        a, b = max(lo, seg.start), min(hi, seg.end)
        cuts.append(_raw_range(text, start, end, view.text[seg.start:seg.end],
                               a - seg.start, b - seg.start))
        pieces.append(view.text[a:b])
    marked = text
    for start, end in reversed(cuts):
        marked = marked[:start] + OPEN + marked[start:end] + CLOSE + marked[end:]
    return _marks(sanitise(marked), pieces)


def _chars(source: Source, byte: int) -> int:
    """The code point of the decoded page at raw ``byte`` (a bisection over
    :meth:`~groundkit.extract.html_encoding.Source.byte_offsets`)."""
    offsets = source.byte_offsets
    lo, hi = 0, len(source.text)
    while lo < hi:
        mid = (lo + hi) // 2
        if offsets([mid])[mid] < byte:
            lo = mid + 1
        else:
            hi = mid
    if offsets([lo])[lo] != byte:
        raise NoOriginal(f"{_NO_ORIGINAL}: a segment does not start on a character")
    return lo


def _raw_range(text: str, start: int, end: int, shown: str, a: int, b: int
               ) -> tuple[int, int]:
    """The raw characters of ``text[start:end]`` (one text run) that the view's
    ``shown[a:b]`` came from."""
    stream = Stream()
    stream.add_run(text[start:end], start, True)
    decoded = "".join(stream.parts)
    first = _align(decoded, shown)
    return stream.source_start(first[a]), stream.source_end(first[b - 1])


def _align(decoded: str, shown: str) -> list[int]:
    """For each character of ``shown`` (the view of one run: its whitespace runs
    collapsed to one space, or kept verbatim) the index of the decoded character it
    stands for."""
    out: list[int] = []
    j = 0
    for i, ch in enumerate(shown):
        if j >= len(decoded) or (decoded[j] != ch and not (
                ch == " " and decoded[j] in WHITESPACE)):
            raise NoOriginal(f"{_NO_ORIGINAL}: the page's text does not align with its view")
        out.append(j)
        j += 1
        if ch == " " and not (i + 1 < len(shown) and shown[i + 1] in WHITESPACE):
            while j < len(decoded) and decoded[j] in WHITESPACE:  # a collapsed run
                j += 1
    return out


def _marks(clean: str, pieces: Sequence[str]) -> str:
    """``clean`` with each mark pair made a ``<mark>``, once every pair is checked to
    hold its piece of the quote."""
    opens = [i for i, ch in enumerate(clean) if ch == OPEN]
    closes = [i for i, ch in enumerate(clean) if ch == CLOSE]
    if len(opens) != len(pieces) or len(closes) != len(pieces) or any(
            not o < c or (k + 1 < len(opens) and c > opens[k + 1])
            for k, (o, c) in enumerate(zip(opens, closes, strict=True))):
        raise NoOriginal(f"{_NO_ORIGINAL}: the quote is in text the sanitiser drops")
    for o, c, piece in zip(opens, closes, pieces, strict=True):
        if " ".join(html.unescape(clean[o + 1:c]).split()) != " ".join(piece.split()):
            raise NoOriginal(f"{_NO_ORIGINAL}: the sanitised page does not say the "
                             "cited words there")
    out, last = [], 0
    for k, (o, c) in enumerate(zip(opens, closes, strict=True)):
        anchor = ' id="quote"' if k == 0 else ""
        out += [clean[last:o], f'<mark class="hl"{anchor}>', clean[o + 1:c], "</mark>"]
        last = c + 1
    out.append(clean[last:])
    return "".join(out)
