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
:attr:`Choice.superseded` of its score (half, by default): a current sentence that is
half as good leads, and the superseded one may follow, marked, but is never hidden.

A table row is scored together with its table's header row (its column names), and
the header is cited beside it as its *context*; a header row is never an answer on
its own.

The best unit is the answer's first sentence; up to two more follow when they
score at least :attr:`Choice.keep` of the best and each adds a query term (or, scored
semantically, a passage) the answer does not have yet. A unit is never cited twice:
one whose file span an earlier choice already cites (overlapping chunks hold the same
sentence) or whose text is an earlier choice's, whitespace and case aside (the same
sentence in another file), is passed over, and so is a near-duplicate: a unit whose
content terms are :attr:`Choice.redundancy` or more of those of a chosen one (or
theirs of it), the same fact said again. Ties go to the earlier passage, then the
earlier position: the same question and passages give the same answer.

Each of these choices is a field of :class:`Choice`; the answer harness measures the
alternatives side by side (``answers.extractive.choices``), and the defaults are the
measured ones (docs/answers.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

import numpy as np

from ..retrieval.bm25 import BM25Index
from .asked import asked_for, holds
from .model import Passage, Sentence
from .sentences import Unit, units

MAX_SENTENCES = 5
"""The most sentences an extractive answer may quote (``grk ask --sentences``)."""
K1, B = 1.2, 0.75
QUOTABLE = ("sentence", "item", "row", "code")
"""The kinds of unit an answer may quote: never a bare heading or a table's header row
(a header is cited beside its row, as context), never page furniture."""
QUESTION_WORDS = frozenset({
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether", "do",
    "does", "did", "done", "doing", "we", "us", "our", "ours", "you", "your", "yours", "i",
    "me", "my", "can", "could", "should", "would", "may", "might", "must", "shall", "will",
    "there", "here", "get", "gets", "got", "any", "some", "much", "many", "tell",
})
"""Words a question is phrased with, not what it is about: they do not score a unit
(the analyzer's stopwords are dropped already)."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""Unit texts -> unit vectors (unit length), for semantic scoring."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Choice:
    """How the sentences are chosen (the defaults are the measured choice)."""

    keep: float = 0.5
    """A further sentence must score at least this share of the best one."""
    passage_weight: float = 1.0
    """How much a passage's retrieval score lifts its units (0: not at all)."""
    redundancy: float = 1.01
    """A unit sharing this share of its content terms with a chosen one is a near
    duplicate and passed over (above 1: only the same words are)."""
    header_context: bool = True
    """Score a table row with its header row, and cite the header as its context."""
    question_words: bool = False
    """Let :data:`QUESTION_WORDS` (how, what, do, we, …) score units as well."""
    lexical_share: float = 0.3
    """In a mode that embeds *and* ranks lexically (hybrid), the share of a unit's score
    from BM25 (each part scaled by its best unit); 0: the embedding alone, as in dense."""
    max_sentences: int = 1
    coverage: float = 1.4
    """Added, times the share of the question's distinct terms a unit holds, to its score
    (scaled by the best unit's): a sentence holding more of what was asked reads more like
    its answer than one matching a single rare word many times."""
    answer_type: float = 0.4
    """Added when a unit holds the kind of thing the question asks for (a duration for
    *how long*, a number for *how many*: :mod:`.asked`)."""
    passage_rank: float = 0.0
    """Added, divided by the passage's rank (1 for the first), to its units' scores (0:
    not at all, the measured default: 0.5 was fitted on the train part alone, and lost a
    point on train and calibration together, where the harness chooses)."""
    superseded: float = 0.5
    """The share of its score a unit of a superseded document keeps; 1 treats it as
    current (its passages then also keep their retrieval order)."""

    def to_dict(self) -> dict[str, Any]:
        return {"keep": self.keep, "passage_weight": self.passage_weight,
                "redundancy": self.redundancy, "header_context": self.header_context,
                "question_words": self.question_words, "lexical_share": self.lexical_share,
                "max_sentences": self.max_sentences, "coverage": self.coverage,
                "answer_type": self.answer_type, "passage_rank": self.passage_rank,
                "superseded": self.superseded}


DEFAULT = Choice()


@dataclass(frozen=True, slots=True)
class Candidate:
    passage: Passage
    unit: Unit
    terms: frozenset[int]
    """The query terms it holds."""
    content: frozenset[int]
    """Every term it holds (for near duplicates)."""
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
            choice: Choice = DEFAULT, lexical: bool = True) -> tuple[Sentence, ...]:
    """The answer's sentences (empty when no verified passage has a quotable unit).

    ``semantic`` is ``(question vector, embed)`` for modes that embed; ``lexical`` is
    false for a mode that ranks by embedding alone (its units are then scored so too).
    """
    verified = [p for p in passages if p.verified]
    share = choice.lexical_share if lexical and semantic is not None else 0.0
    candidates = _score(question, verified, index, semantic, choice, share)
    if not candidates:
        return ()
    ranked = sorted(candidates, key=lambda c: c.key)
    if ranked[0].score <= 0:
        return ()
    chosen = [ranked[0]]
    for c in ranked[1:]:
        if len(chosen) == choice.max_sentences or c.score < choice.keep * ranked[0].score:
            break
        if (not any(_same(c, o, choice.redundancy) for o in chosen)
                and _adds(c, chosen, semantic is not None)):
            chosen.append(c)
    return tuple(_sentence(c, choice) for c in chosen)


def _sentence(c: Candidate, choice: Choice) -> Sentence:
    context = c.unit.context if choice.header_context else None
    return Sentence(text=c.text, citations=(c.passage.cite(c.unit.start, c.unit.end),),
                    context=c.passage.cite(*context) if context else None)


def _same(a: Candidate, b: Candidate, redundancy: float) -> bool:
    """The same quote (one span of one file, or the same words, whitespace and case
    aside), or a near duplicate: ``redundancy`` of either's content terms in the other."""
    if a.file_span == b.file_span or _normal(a.text) == _normal(b.text):
        return True
    shared = len(a.content & b.content)
    return bool(shared) and shared >= redundancy * min(len(a.content), len(b.content))


def _normal(text: str) -> str:
    return " ".join(text.split()).casefold()


def _adds(candidate: Candidate, chosen: Sequence[Candidate], semantic: bool) -> bool:
    """Whether the candidate brings a query term (or, semantically, a passage) not yet in."""
    if candidate.terms - frozenset().union(*(c.terms for c in chosen)):
        return True
    return semantic and all(c.passage.number != candidate.passage.number for c in chosen)


def _score(question: str, passages: Sequence[Passage], index: BM25Index,
           semantic: tuple[np.ndarray, Embed] | None, choice: Choice,
           share: float) -> list[Candidate]:
    asked = question if choice.question_words else _content(question)
    query = {index.term_id(t) for t in index.analyzer.analyze(asked)} - {-1}
    found = [(p, u, terms) for p in passages
             for u, terms in _analysed(index, p.text, p.chunk.furniture, choice.header_context,
                                       p.chunk.tables)]
    quotable = [f for f in found if f[1].kind in QUOTABLE]
    if not quotable:
        return []
    average = sum(len(terms) for _, _, terms in quotable) / len(quotable) or 1.0
    lexical = [_bm25(query, terms, index, average) for _, _, terms in quotable]
    scores = lexical
    if semantic is not None:
        vector, embed = semantic
        matrix = embed([_scored_text(p.text, u, choice.header_context) for p, u, _ in quotable])
        scores = _fused([float(s) for s in matrix @ vector], lexical, share)
    top = max(p.hit.score for p in passages)
    lift = [1.0 + choice.passage_weight * max(0.0, p.hit.score) / top if top > 0 else 1.0
            for p, _, _ in quotable]
    lifted = [s * w for s, w in zip(scores, lift, strict=True)]
    best = max(lifted)
    kind = asked_for(question)
    candidates = []
    for (p, u, terms), lex, s in zip(quotable, lexical, lifted, strict=True):
        held = frozenset(terms) & query
        if s > 0:
            s = (s / best + choice.coverage * len(held) / len(query) if query else s / best)
            s += choice.answer_type * holds(kind, p.text[u.start:u.end])
            s += choice.passage_rank / p.number
            s *= choice.superseded if p.superseded else 1
        candidates.append(Candidate(passage=p, unit=u, terms=held,
                                    content=frozenset(terms) - {-1}, lexical=lex, score=s))
    return candidates


def _fused(semantic: list[float], lexical: list[float], share: float) -> list[float]:
    """``(1 - share)`` of the semantic score plus ``share`` of the lexical one, each
    scaled by its best unit (``share`` 0: the semantic score as it is)."""
    if share <= 0:
        return semantic
    top_s, top_l = max(max(semantic), 1e-9), max(max(lexical), 1e-9)
    return [(1 - share) * s / top_s + share * lex / top_l
            for s, lex in zip(semantic, lexical, strict=True)]


def _content(question: str) -> str:
    """The question without its :data:`QUESTION_WORDS` (all of it if nothing is left)."""
    kept = [w for w in question.split() if w.strip("?!.,;:'\"()").casefold() not in QUESTION_WORDS]
    return " ".join(kept) or question


def _scored_text(text: str, unit: Unit, header: bool) -> str:
    """What a unit is scored as: its text, after its header row when it has one (in the
    passage, or an earlier chunk's: its text)."""
    own = text[unit.start:unit.end]
    if header and unit.context:
        return f"{text[unit.context[0]:unit.context[1]]}\n{own}"
    return f"{unit.header}\n{own}" if header and unit.header else own


Analysed = tuple[tuple[Unit, tuple[int, ...]], ...]
Furniture = tuple[tuple[int, int, str], ...]
Tables = tuple[tuple[int, int, int, str], ...]
_ANALYSED: WeakKeyDictionary[BM25Index, dict[tuple[str, Furniture, bool, Tables], Analysed]] = (
    WeakKeyDictionary())
"""Each open index's analysed passages. Held weakly by the index, so an index closed or
replaced by a newer generation (a long-running ``grk serve``) is freed with its mapped
files, not kept alive by the cache."""
ANALYSED_MAX = 4096
"""Passages one index's cache holds before it starts again."""


def _analysed(index: BM25Index, text: str, furniture: Furniture, header: bool,
              tables: Tables = ()) -> Analysed:
    """A passage's units (none holding furniture) with their term ids, a row's with its
    header's too (cached per index: passages recur across questions)."""
    cache = _ANALYSED.setdefault(index, {})
    found = cache.get((text, furniture, header, tables))
    if found is None:
        analyze = index.analyzer.analyze
        found = tuple((u, tuple(index.term_id(t) for t in analyze(_scored_text(text, u, header))))
                      for u in units(text, furniture, tables))
        if len(cache) >= ANALYSED_MAX:
            cache.clear()
        cache[(text, furniture, header, tables)] = found
    return found


def _bm25(query: set[int], terms: Sequence[int], index: BM25Index, average: float) -> float:
    """BM25 of a unit for the query's distinct known terms, with the collection's idf."""
    counts: dict[int, int] = {}
    for t in terms:
        if t in query:
            counts[t] = counts.get(t, 0) + 1
    norm = K1 * (1 - B + B * len(terms) / average)
    return math.fsum(index.idf(t) * tf * (K1 + 1) / (tf + norm) for t, tf in counts.items())
