"""Aligning a context from another tool to an exact span of the collection.

Contexts exported by RAGAS, LlamaIndex or a BEIR corpus are text, not spans: they
may be re-wrapped, typographically altered, or cut from a slightly different copy.
A context is aligned in three steps, the first that succeeds:

1. ``exact``: it occurs word for word exactly once in the collection.
2. ``normalised``: it occurs exactly once once whitespace runs are one space and
   typographic quotes, apostrophes and dashes are ASCII on both sides
   (:func:`groundkit.answer.llm.normalised`); the span is the original text's.
3. ``fuzzy``: among the documents of BM25's first :data:`CANDIDATES` hits for it,
   the window :func:`difflib.SequenceMatcher` matches best, from its first to its
   last matching block, if its similarity (``2 M / (len(a) + len(b))``) is at least
   :data:`FUZZY_MIN` and no other window matches as well.

A context found several times (in two documents, or twice in one) is *ambiguous*:
it is reported, never guessed, as is one that matches nothing well enough. (A
question listing the same text as often as it occurs names every place: its
contexts then align to all of them; :func:`.interchange.to_entries`.)
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ..answer.llm import normalised
from ..collection import Collection
from ..text.analysis import split_tokens
from .documents import Indexed
from .parse import find_all

CANDIDATES = 5
FUZZY_MIN = 0.85
QUERY_WORDS = 64
"""The context's first words are the BM25 query that finds candidate documents."""


@dataclass(frozen=True, slots=True)
class Aligned:
    doc_id: str
    start: int
    end: int
    method: str
    """``exact``, ``normalised`` or ``fuzzy``."""
    score: float


@dataclass(frozen=True, slots=True)
class Unaligned:
    reason: str


class Aligner:
    """Aligns contexts against one indexed collection (BM25 through ``coll``)."""

    def __init__(self, indexed: Indexed, coll: Collection) -> None:
        self.indexed, self.coll = indexed, coll
        self._normal = {d: normalised(t) for d, t in indexed.documents.items()}

    def align(self, context: str, doc_hint: str | None = None) -> Aligned | Unaligned:
        """The span ``context`` is, or why it has none; ``doc_hint`` narrows the search
        to one document (a BEIR title, a LlamaIndex node id) when the collection has it."""
        if not context.strip():
            return Unaligned("the context is empty")
        scope = self.scope(doc_hint)
        found = self.places(context, doc_hint)
        if len(found) == 1:
            d, s = found[0]
            return Aligned(d, s, s + len(context), "exact", 1.0)
        if found:
            return self._ambiguous(found)
        needle = normalised(context)[0].strip()
        found = [(d, s) for d in scope for s in find_all(self._normal[d][0], needle)]
        if len(found) == 1:
            d, s = found[0]
            where = self._normal[d][1]
            return Aligned(d, where[s], where[s + len(needle) - 1] + 1, "normalised", 1.0)
        if found:
            return self._ambiguous(found)
        return self._fuzzy(context, scope)

    def scope(self, doc_hint: str | None) -> list[str]:
        docs = self.indexed.documents
        return [doc_hint] if doc_hint is not None and doc_hint in docs else sorted(docs)

    def places(self, context: str, doc_hint: str | None = None) -> list[tuple[str, int]]:
        """Every ``(doc_id, start)`` where ``context`` occurs word for word."""
        docs = self.indexed.documents
        scope = self.scope(doc_hint)
        if len(scope) > 1:
            scope = self.indexed.words.containing(context)
        return [(d, s) for d in scope for s in find_all(docs[d], context)]

    @staticmethod
    def _ambiguous(found: list[tuple[str, int]]) -> Unaligned:
        places = ", ".join(f"{d} at {s}" for d, s in found[:3])
        return Unaligned(f"ambiguous: found {len(found)} times ({places}"
                         f"{', …' if len(found) > 3 else ''})")

    def _fuzzy(self, context: str, scope: list[str]) -> Aligned | Unaligned:
        query = " ".join(split_tokens(context)[:QUERY_WORDS])
        docs = self.indexed.documents
        wanted = set(scope)
        windows: dict[tuple[str, int, int], None] = {}
        for hit in self.coll.search(query, top_k=CANDIDATES) if query else []:
            c = hit.chunk
            if c.doc_id in wanted:
                pad = len(context)
                windows[(c.doc_id, max(0, c.start - pad), min(len(docs[c.doc_id]),
                                                              c.end + pad))] = None
        scored = sorted(((*_best_window(docs[d], lo, hi, context), d)
                         for d, lo, hi in windows), key=lambda t: -t[0])
        if not scored or scored[0][0] < FUZZY_MIN:
            best = f" (best similarity {scored[0][0]:.2f})" if scored else ""
            return Unaligned(f"no passage matches well enough{best}; at least {FUZZY_MIN} "
                             "is needed")
        score, start, end, doc_id = scored[0]
        rivals = [s for s in scored[1:] if s[0] >= score and (s[3], s[1]) != (doc_id, start)]
        if rivals:
            return Unaligned(f"ambiguous: {len(rivals) + 1} passages match equally "
                             f"({score:.2f})")
        return Aligned(doc_id, start, end, "fuzzy", round(score, 4))


def _best_window(text: str, lo: int, hi: int, context: str) -> tuple[float, int, int]:
    """(similarity, start, end) of the span of ``text[lo:hi]`` that ``context`` matches."""
    window = text[lo:hi]
    matcher = difflib.SequenceMatcher(None, window, context, autojunk=False)
    blocks = [b for b in matcher.get_matching_blocks() if b.size]
    if not blocks:
        return 0.0, lo, lo
    start, end = blocks[0].a, blocks[-1].a + blocks[-1].size
    while start < end and window[start].isspace():
        start += 1
    while end > start and window[end - 1].isspace():
        end -= 1
    span = window[start:end]
    score = difflib.SequenceMatcher(None, span, context, autojunk=False).ratio()
    return score, lo + start, lo + end
