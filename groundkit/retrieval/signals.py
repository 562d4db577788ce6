"""Confidence signals: what retrieval already knows about a query, as numbers.

The abstention gate (:mod:`.gate`) needs one score per query saying how likely
the collection is to hold its answer (higher: more likely). :class:`Evidence`
collects what BM25 and the dense retriever computed anyway; :data:`SIGNALS` are
the candidate scores over it, each a small pure function. Which one a mode uses
is chosen by measurement in the harness (AUROC of answerable against no-answer
questions on golden v2's train part; ``docs/abstention.md``), never assumed.

Unknown query terms (absent from the collection) count with the largest idf a
term can have, so a query about something the documents never mention scores low.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .bm25 import BM25Index

TOP = 10
"""How deep the evidence looks into each ranked list."""
COVERAGE_DEPTH = 3
"""How many of the best BM25 chunks the term-coverage signals look at."""


@dataclass(frozen=True, slots=True)
class LexicalEvidence:
    """A query's distinct analysed terms, their idfs, and the best BM25 chunks."""

    idf: tuple[float, ...]
    known: tuple[bool, ...]
    top: tuple[tuple[int, float], ...]
    """(position, score) of the best chunks, best first (at most :data:`TOP`)."""
    present: tuple[tuple[bool, ...], ...]
    """For each of the best :data:`COVERAGE_DEPTH` chunks, which query terms it holds."""


@dataclass(frozen=True, slots=True)
class DenseEvidence:
    """The best cosines, and the mean and spread of the query's cosine to every chunk."""

    top: tuple[tuple[int, float], ...]
    mean: float
    std: float


@dataclass(frozen=True, slots=True)
class Evidence:
    lexical: LexicalEvidence | None = None
    dense: DenseEvidence | None = None


def lexical_evidence(index: BM25Index, query: str,
                     ranked: Sequence[tuple[int, float]] | None = None) -> LexicalEvidence:
    """BM25's evidence for ``query``: idfs, the top chunks, which terms they hold.

    ``top`` is exactly ``index.search(query, TOP)``, so a caller may show it as the
    search's own ranking (:func:`groundkit.collection.search.search_or_abstain` does).
    A caller that has already run ``index.search(query, k)`` with ``k >= TOP`` may pass
    its ``ranked`` list, whose first ``TOP`` are that ranking (top-k is exact, ties to
    the lower position), and save the search.
    """
    terms = index.analyzer.analyze(query)
    ids = [index.term_id(t) for t in dict.fromkeys(terms)]
    if ranked is not None:
        top = tuple(ranked[:TOP]) if ids else ()
    else:
        top = tuple(index.search_terms(terms, TOP)) if ids else ()
    present = tuple(map(tuple, index.holds(ids, [pos for pos, _ in top[:COVERAGE_DEPTH]])))
    return LexicalEvidence(idf=tuple(index.idf(t) for t in ids), known=tuple(t >= 0 for t in ids),
                           top=top, present=present)


def dense_evidence(cosines: np.ndarray, row_ids: Sequence[str],
                   positions: Mapping[str, int]) -> DenseEvidence:
    """The dense retriever's evidence from every chunk's cosine (rows named by ``row_ids``)."""
    if cosines.size == 0:
        return DenseEvidence(top=(), mean=0.0, std=0.0)
    k = min(TOP, cosines.size)
    best = np.argpartition(-cosines, k - 1)[:k]
    best = best[np.lexsort((best, -cosines[best]))]
    return DenseEvidence(top=tuple((positions[row_ids[i]], float(cosines[i])) for i in best),
                         mean=float(cosines.mean()), std=float(cosines.std()))


# -- the candidate signals --------------------------------------------------------------


def _lex(evidence: Evidence) -> LexicalEvidence:
    if evidence.lexical is None:
        raise ValueError("this signal needs BM25's evidence")
    return evidence.lexical


def _den(evidence: Evidence) -> DenseEvidence:
    if evidence.dense is None:
        raise ValueError("this signal needs the dense retriever's evidence")
    return evidence.dense


def bm25_top1(e: Evidence) -> float:
    """The best BM25 score (0 when nothing matches)."""
    top = _lex(e).top
    return top[0][1] if top else 0.0


def bm25_top1_attainable(e: Evidence) -> float:
    """The best score over the most the query could score: Σ idf of its terms."""
    lex = _lex(e)
    total = sum(lex.idf)
    return bm25_top1(e) / total if total else 0.0


def bm25_known_terms(e: Evidence) -> float:
    """The share of the query's idf mass carried by terms the collection holds."""
    lex = _lex(e)
    total = sum(lex.idf)
    return sum(i for i, k in zip(lex.idf, lex.known, strict=True) if k) / total if total else 0.0


def bm25_idf_coverage(e: Evidence) -> float:
    """The share of the query's idf mass present in the best chunk."""
    lex = _lex(e)
    total = sum(lex.idf)
    if not lex.present or not total:
        return 0.0
    return sum(i for i, p in zip(lex.idf, lex.present[0], strict=True) if p) / total


def bm25_best_coverage(e: Evidence) -> float:
    """As :func:`bm25_idf_coverage`, for the best-covering of the top three chunks."""
    lex = _lex(e)
    total = sum(lex.idf)
    if not lex.present or not total:
        return 0.0
    covered = (sum(i for i, p in zip(lex.idf, row, strict=True) if p) for row in lex.present)
    return max(covered) / total


def bm25_missing_rarest(e: Evidence) -> float:
    """Minus the idf share of the rarest query term the best-covering top chunk lacks."""
    lex = _lex(e)
    if not lex.present:
        return -1.0
    biggest = max(lex.idf)
    missing = [max((i for i, p in zip(lex.idf, row, strict=True) if not p), default=0.0)
               for row in lex.present]
    return -min(missing) / biggest if biggest else 0.0


def bm25_nqc(e: Evidence) -> float:
    """Normalised query commitment (Shtok et al. 2012): spread of the top scores over their mean."""
    scores = np.array([s for _, s in _lex(e).top])
    return float(scores.std() / scores.mean()) if scores.size and scores.mean() else 0.0


def bm25_smv(e: Evidence) -> float:
    """Score magnitude and variance (Tao & Wu 2014): mean of s·|ln(s/μ)| over the top
    scores, over μ (their mean, standing in for the corpus score as in :func:`bm25_nqc`)."""
    scores = np.array([s for _, s in _lex(e).top])
    if not scores.size or scores.mean() <= 0 or (scores <= 0).any():
        return 0.0
    mean = scores.mean()
    return float((scores * np.abs(np.log(scores / mean))).mean() / mean)


def bm25_wig(e: Evidence) -> float:
    """Weighted information gain (Zhou & Croft 2007): mean of the top five over √(query length)."""
    lex = _lex(e)
    scores = [s for _, s in lex.top[:5]]
    return sum(scores) / len(scores) / math.sqrt(len(lex.idf)) if scores else 0.0


def dense_top1(e: Evidence) -> float:
    """The best cosine."""
    top = _den(e).top
    return top[0][1] if top else 0.0


def dense_margin(e: Evidence) -> float:
    """The best cosine minus the query's mean cosine to every chunk."""
    return dense_top1(e) - _den(e).mean


def dense_z(e: Evidence) -> float:
    """The best cosine in standard deviations above the query's mean cosine."""
    dense = _den(e)
    return (dense_top1(e) - dense.mean) / dense.std if dense.std else 0.0


def dense_gap(e: Evidence) -> float:
    """The best cosine minus the tenth best."""
    top = _den(e).top
    return top[0][1] - top[-1][1] if top else 0.0


def agreement(e: Evidence) -> float:
    """How many of the ten best chunks BM25 and the dense retriever share (0 to 1)."""
    lexical = {p for p, _ in _lex(e).top}
    dense = {p for p, _ in _den(e).top}
    return len(lexical & dense) / TOP


@dataclass(frozen=True, slots=True)
class Signal:
    name: str
    needs: frozenset[str]
    """Which evidence it reads: ``bm25``, ``dense`` or both."""
    compute: Callable[[Evidence], float]

    @property
    def description(self) -> str:
        return (self.compute.__doc__ or "").strip().split("\n")[0]


def _signal(name: str, needs: str, compute: Callable[[Evidence], float]) -> Signal:
    return Signal(name=name, needs=frozenset(needs.split("+")), compute=compute)


SIGNALS: Mapping[str, Signal] = {s.name: s for s in (
    _signal("bm25.top1", "bm25", bm25_top1),
    _signal("bm25.top1_attainable", "bm25", bm25_top1_attainable),
    _signal("bm25.known_terms", "bm25", bm25_known_terms),
    _signal("bm25.idf_coverage", "bm25", bm25_idf_coverage),
    _signal("bm25.best_coverage", "bm25", bm25_best_coverage),
    _signal("bm25.missing_rarest", "bm25", bm25_missing_rarest),
    _signal("bm25.nqc", "bm25", bm25_nqc),
    _signal("bm25.smv", "bm25", bm25_smv),
    _signal("bm25.wig", "bm25", bm25_wig),
    _signal("dense.top1", "dense", dense_top1),
    _signal("dense.margin", "dense", dense_margin),
    _signal("dense.z", "dense", dense_z),
    _signal("dense.gap", "dense", dense_gap),
    _signal("agreement.top10", "bm25+dense", agreement),
)}
"""Every candidate confidence signal, by name."""


def compute(evidence: Evidence) -> dict[str, float]:
    """Every signal the evidence allows."""
    have = {"bm25"} if evidence.lexical else set()
    have |= {"dense"} if evidence.dense else set()
    return {name: s.compute(evidence) for name, s in SIGNALS.items() if s.needs <= have}
