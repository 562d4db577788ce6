"""The default answer: the one to three sentences of the verified passages that best
answer the question, each quoted exactly. No model writes anything.

Every quotable unit (:mod:`.sentences`) of every verified passage is scored:

* **lexically** (always): BM25 over the units as tiny documents, with the
  collection's analyzer and its idf, so a rare query term counts for more than a
  common one, and a long unit does not win by length alone;
* **semantically** (when the search mode embeds, and a scorer is given): the
  cosine between the question and the unit under the collection's own embedding
  model, so a paraphrase that shares no word can still be quoted.

Each unit's score is then weighted by its passage's retrieval score: times ``1 +
PASSAGE_WEIGHT * hit score / best hit score``, so of two equally good sentences the one
in the passage retrieval ranked higher is quoted (measured on golden v3's train and
calibration parts before it was set, then on its test part: answer success +1.0
points, citation precision +1.7, bm25).

A unit of a passage whose document says it is superseded (archived, replaced) counts
:data:`SUPERSEDED` of its score: a current sentence that is half as good leads, and the
superseded one may follow, marked, but is never hidden.

The best unit is the answer's first sentence; up to two more follow when they
score at least :data:`KEEP` of the best and each adds a query term (or, scored
semantically, a passage) the answer does not have yet. A unit is never cited twice:
one whose file span an earlier choice already cites (overlapping chunks hold the same
sentence) or whose text is an earlier choice's, whitespace and case aside (the same
sentence in another file), is passed over. Ties go to the earlier
passage, then the earlier position: the same question and passages give the
same answer.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..retrieval.bm25 import BM25Index
from .model import Passage, Sentence
from .sentences import Unit, units

MAX_SENTENCES = 3
SUPERSEDED = 0.5
"""The share of its score a unit of a superseded document keeps."""
PASSAGE_WEIGHT = 1.0
"""How much a passage's retrieval score lifts its units (0: not at all)."""
KEEP = 0.5
"""A further sentence must score at least this share of the best one."""
K1, B = 1.2, 0.75
QUOTABLE = ("sentence", "item", "row", "code")
"""Headings are quoted only when nothing else scores."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""Unit texts -> unit vectors (unit length), for semantic scoring."""


@dataclass(frozen=True, slots=True)
class Candidate:
    passage: Passage
    unit: Unit
    terms: frozenset[int]
    lexical: float
    score: float

    @property
    def key(self) -> tuple[float, int, int]:
        return (-self.score, self.passage.number, self.unit.start)

    @property
    def text(self) -> str:
        return self.passage.text[self.unit.start:self.unit.end]

    @property
    def file_span(self) -> tuple[str, int, int]:
        """The quote's span of its document (chunk offsets plus the unit's)."""
        chunk = self.passage.chunk
        return (chunk.doc_id, chunk.start + self.unit.start, chunk.start + self.unit.end)


def extract(question: str, passages: Sequence[Passage], index: BM25Index, *,
            semantic: tuple[np.ndarray, Embed] | None = None,
            max_sentences: int = MAX_SENTENCES) -> tuple[Sentence, ...]:
    """The answer's sentences (empty when no verified passage has a quotable unit).

    ``semantic`` is ``(question vector, embed)`` for modes that embed.
    """
    candidates = _score(question, [p for p in passages if p.verified], index, semantic)
    if not candidates:
        return ()
    ranked = sorted(candidates, key=lambda c: c.key)
    if ranked[0].score <= 0:
        return ()
    chosen = [ranked[0]]
    for c in ranked[1:]:
        if len(chosen) == max_sentences or c.score < KEEP * ranked[0].score:
            break
        if not any(_same(c, o) for o in chosen) and _adds(c, chosen, semantic is not None):
            chosen.append(c)
    return tuple(Sentence(text=c.passage.text[c.unit.start:c.unit.end],
                          citations=(c.passage.cite(c.unit.start, c.unit.end),))
                 for c in chosen)


def _same(a: Candidate, b: Candidate) -> bool:
    """The same quote: one span of one file, or the same words (whitespace, case aside)."""
    if a.file_span == b.file_span:
        return True
    return _normal(a.text) == _normal(b.text)


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _adds(candidate: Candidate, chosen: Sequence[Candidate], semantic: bool) -> bool:
    """Whether the candidate brings a query term (or, semantically, a passage) not yet in."""
    if candidate.terms - frozenset().union(*(c.terms for c in chosen)):
        return True
    return semantic and all(c.passage.number != candidate.passage.number for c in chosen)


def _score(question: str, passages: Sequence[Passage], index: BM25Index,
           semantic: tuple[np.ndarray, Embed] | None) -> list[Candidate]:
    query = {index.term_id(t) for t in index.analyzer.analyze(question)} - {-1}
    found = [(p, u, terms) for p in passages for u, terms in _analysed(index, p.text)]
    quotable = [f for f in found if f[1].kind in QUOTABLE] or found
    if not quotable:
        return []
    average = sum(len(terms) for _, _, terms in quotable) / len(quotable) or 1.0
    lexical = [_bm25(query, terms, index, average) for _, _, terms in quotable]
    scores = lexical
    if semantic is not None:
        vector, embed = semantic
        matrix = embed([p.text[u.start:u.end] for p, u, _ in quotable])
        scores = [float(s) for s in matrix @ vector]
    top = max(p.hit.score for p in passages)
    return [Candidate(passage=p, unit=u, terms=frozenset(terms) & query, lexical=lex,
                      score=s * _weight(p.hit.score, top) * (SUPERSEDED if p.superseded else 1)
                      if s > 0 else s)
            for (p, u, terms), lex, s in zip(quotable, lexical, scores, strict=True)]


def _weight(score: float, top: float) -> float:
    """A unit's lift from its passage's retrieval score (:data:`PASSAGE_WEIGHT`)."""
    return 1.0 + PASSAGE_WEIGHT * max(0.0, score) / top if top > 0 else 1.0


@lru_cache(maxsize=4096)
def _analysed(index: BM25Index, text: str) -> tuple[tuple[Unit, tuple[int, ...]], ...]:
    """A passage's units with their term ids (cached: passages recur across questions)."""
    analyze = index.analyzer.analyze
    return tuple((u, tuple(index.term_id(t) for t in analyze(text[u.start:u.end])))
                 for u in units(text))


def _bm25(query: set[int], terms: Sequence[int], index: BM25Index, average: float) -> float:
    """BM25 of a unit for the query's distinct known terms, with the collection's idf."""
    counts: dict[int, int] = {}
    for t in terms:
        if t in query:
            counts[t] = counts.get(t, 0) + 1
    norm = K1 * (1 - B + B * len(terms) / average)
    return math.fsum(index.idf(t) * tf * (K1 + 1) / (tf + norm) for t, tf in counts.items())
