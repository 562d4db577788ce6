"""Independent reference engines, behind groundkit's ``Retriever`` protocol.

bm25s (Lù 2024) and rank-bm25 (Brown 2020) are given groundkit's own analyzer
terms for every unit and query, so a comparison isolates scoring from text
analysis; units that match no query term are never returned (groundkit
abstains the same way). :func:`stage_retriever` gives any stage its retriever:
groundkit's own (:func:`groundkit.retrieval.modes.make_retriever`) or one of
these, over the same units; :func:`collapsed` folds duplicate units away for a
stage that collapses them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from evals.peers import lucene, qmd
from evals.stages import Stage
from groundkit.collection.search import MAX_TOP_K
from groundkit.errors import MissingDependencyError, UsageError
from groundkit.model import Contribution
from groundkit.retrieval.base import Resources, Retriever, Scored
from groundkit.retrieval.bm25 import BM25Params
from groundkit.retrieval.collapse import CollapsedRetriever
from groundkit.retrieval.fusion import FusionRetriever
from groundkit.retrieval.modes import make_retriever, mode
from groundkit.text.analysis import Analyzer

Ranked = list[tuple[int, float]]
"""(unit position, score), best first."""


def _require(module: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(module, "dev", f"the {module} reference stage") from exc


class BM25sRetriever:
    """bm25s over pre-analysed units (method ``lucene`` unless ``params.method`` says)."""

    name = "bm25s"

    def __init__(self, unit_terms: Sequence[list[str]], analyzer: Analyzer,
                 params: BM25Params) -> None:
        bm25s = _require("bm25s")
        method = "lucene" if params.method == "lucene" else params.method.replace("+", "plus")
        self._model = bm25s.BM25(method=method, k1=params.k1, b=params.b, delta=params.delta)
        self._model.index(list(unit_terms), show_progress=False)
        self._units = len(unit_terms)
        self._analyzer = analyzer
        self._primed: dict[tuple[str, int], Ranked] = {}

    def prime(self, queries: Sequence[str], top_k: int) -> None:
        """Retrieve every query at ``top_k`` in one bm25s call (each answered as alone)."""
        analysed = {q: self._analyzer.analyze(q) for q in dict.fromkeys(queries)}
        asked = [q for q, terms in analysed.items() if terms]
        if not asked:
            return
        docs, scores = self._model.retrieve([analysed[q] for q in asked],
                                            k=min(top_k, self._units), show_progress=False,
                                            n_threads=1)
        for query, d, s in zip(asked, docs, scores, strict=True):
            self._primed[query, top_k] = _positive(d, s)

    def pairs(self, query: str, top_k: int) -> Ranked:
        """``(unit, score)`` best first, as :meth:`search` ranks them, without hit objects."""
        if (query, top_k) in self._primed:
            return self._primed[query, top_k]
        terms = self._analyzer.analyze(query)
        if not terms:
            return []
        docs, scores = self._model.retrieve([terms], k=min(top_k, self._units),
                                            show_progress=False, n_threads=1)
        return _positive(docs[0], scores[0])

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        _no_threshold(self.name, score_threshold)
        return scored(self.name, self.pairs(query, top_k))


class RankBM25Retriever:
    """rank-bm25's ``BM25Okapi`` (Robertson idf, negative idf floored at 0.25 x mean idf).

    Each query term scores only the units holding it (``get_batch_scores``), added in
    query order: a unit without the term would add exactly 0, so every total is the
    float ``get_scores`` computes, in a fraction of the time.
    """

    name = "rank-bm25"

    def __init__(self, unit_terms: Sequence[list[str]], analyzer: Analyzer,
                 params: BM25Params) -> None:
        module = _require("rank_bm25")
        # rank-bm25 divides by zero on empty units; a placeholder term matches no query
        self._model = module.BM25Okapi([t or ["\x00"] for t in unit_terms], k1=params.k1,
                                       b=params.b)
        self._postings: dict[str, list[int]] = {}
        for unit, terms in enumerate(unit_terms):
            for term in set(terms):
                self._postings.setdefault(term, []).append(unit)
        # the lengths as an array: rank-bm25 converts them with np.array on every call,
        # which copies an array in microseconds and converts a list in a millisecond
        self._model.doc_len = np.asarray(self._model.doc_len)
        self._units = len(unit_terms)
        self._analyzer = analyzer

    def pairs(self, query: str, top_k: int) -> Ranked:
        """``(unit, score)`` best first, as :meth:`search` ranks them, without hit objects."""
        terms = self._analyzer.analyze(query)
        if not any(t in self._postings for t in terms):
            return []
        scores = np.zeros(self._units)
        for term in terms:  # in query order, each over its own units: the same sums, in order
            units = self._postings.get(term)
            if units:
                scores[units] += self._model.get_batch_scores([term], units)
        return top_positive(scores, top_k)

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        _no_threshold(self.name, score_threshold)
        return scored(self.name, self.pairs(query, top_k))


REFERENCES: dict[str, Callable[[Sequence[list[str]], Analyzer, BM25Params], Retriever]] = {
    "bm25s": BM25sRetriever,
    "rank-bm25": RankBM25Retriever,
}


class Remembered:
    """A retriever whose answers are kept per query and depth, for stages that share it.

    The dense stage and the five hybrid stages of a golden run search one collection:
    each asks the same dense (and BM25) question at the same depth, so it is answered
    once. The lists are immutable values, so sharing them changes nothing.
    """

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.name = inner.name
        self._answers: dict[tuple[Any, ...], list[Scored]] = {}
        self._pairs: dict[tuple[Any, ...], Ranked] = {}

    @property
    def pairs(self) -> Callable[[str, int], Ranked] | None:
        """The inner retriever's ``pairs``, remembered too (``None`` if it has none)."""
        inner = getattr(self.inner, "pairs", None)
        if inner is None:
            return None

        def remembered(query: str, top_k: int) -> Ranked:
            key = ("pairs", query, top_k)
            if key not in self._pairs:
                self._pairs[key] = inner(query, top_k)
            return self._pairs[key]

        return remembered

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        key = (query, top_k, score_threshold, explain)
        if key not in self._answers:
            self._answers[key] = self.inner.search(query, top_k, score_threshold=score_threshold,
                                                   explain=explain)
        return self._answers[key]


def unavailable(stage: Stage) -> str | None:
    """Why ``stage``'s engine cannot run on this machine (``None``: it can)."""
    if stage.engine == "qmd":
        return qmd.command_unavailable(str(stage.options.get("command", "search")))
    return lucene.unavailable() if stage.engine == "lucene" else None


def stage_retriever(stage: Stage, resources: Resources, analyzer: Analyzer, params: BM25Params,
                    unit_terms: Callable[[], Sequence[list[str]]],
                    shared: dict[str, Remembered] | None = None, *,
                    unit_texts: Callable[[], Sequence[str]] | None = None) -> Retriever:
    """The retriever a stage ranks with over ``resources`` (whose units ``unit_terms`` analyses
    and ``unit_texts`` holds: Lucene analyses the texts itself).

    With ``shared`` (one dict per collection), groundkit's dense and BM25 retrievers are
    :class:`Remembered` there, so stages over the same collection search each once.
    """
    if stage.engine == "groundkit":
        retriever = make_retriever(resources, stage.mode, pinned_exact(stage.mode, stage.options))
        if shared is None:
            return retriever
        if isinstance(retriever, FusionRetriever):
            retriever.retrievers = {name: shared.setdefault(name, Remembered(inner))
                                    for name, inner in retriever.retrievers.items()}
            return retriever
        return shared.setdefault(retriever.name, Remembered(retriever))
    if stage.engine in REFERENCES:
        return REFERENCES[stage.engine](unit_terms(), analyzer, params)
    if stage.engine == "lucene" and unit_texts is not None:
        return lucene.LuceneRetriever(unit_texts(), analyzer, params,
                                      own_analysis=stage.options.get("terms") != "groundkit")
    raise UsageError(f"stage {stage.name!r}: engine {stage.engine!r} does not rank units")


def pinned_exact(mode_name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with ``exact=True`` for modes that take it: the harness always searches
    dense vectors exactly, so its numbers never depend on an approximate index (ADR-0015)."""
    takes = {o.name for o in mode(mode_name).options}
    return {**options, "exact": True} if "exact" in takes else dict(options)


def analysis_of(retriever: Retriever) -> dict[str, Any]:
    """A Lucene retriever's config entries: ``query_analysis`` (per query text, the terms
    Lucene analysed it into where groundkit's analyzer differs, filled as it ranks),
    ``indexed_terms`` (each engine's token count over the units) and
    ``units_analysed_differently``, which the agreement block reads
    (:mod:`evals.agreement`); nothing for other retrievers."""
    if isinstance(retriever, lucene.LuceneRetriever):
        return {"query_analysis": retriever.analysis, "indexed_terms": retriever.terms,
                "units_analysed_differently": retriever.units_differing}
    return {}


def release(retriever: Retriever) -> None:
    """End what a stage's retriever alone holds once it has ranked: a Lucene peer's JVM and
    its unit file (groundkit's retrievers hold only the collection, which stays open)."""
    if isinstance(retriever, lucene.LuceneRetriever):
        retriever.close()


def collapsed(stage: Stage, retriever: Retriever,
              unit_texts: Callable[[], Sequence[str]]) -> Retriever:
    """``retriever`` with duplicate units folded away when ``stage.collapse`` asks, by
    groundkit's own :class:`~groundkit.retrieval.collapse.CollapsedRetriever` over the units'
    texts, looking as deep as ``grk search`` does (:data:`~groundkit.collection.search.MAX_TOP_K`;
    deeper when the harness asks for more)."""
    if not stage.collapse:
        return retriever
    return CollapsedRetriever(retriever, unit_texts, limit=MAX_TOP_K)


def ranker(retriever: Retriever) -> Callable[[str, int], Ranked]:
    """``(query, depth) -> (position, score)`` pairs, best first, as ``retriever.search``
    ranks them: its own ``pairs`` when it has them (BM25, dense, the reference engines;
    no explained hits built), else taken from its hits."""
    pairs: Callable[[str, int], Ranked] | None = getattr(retriever, "pairs", None)
    if pairs is not None:
        return pairs
    return lambda query, depth: [(s.position, s.score) for s in retriever.search(query, depth)]


def scored(name: str, ranked: Ranked) -> list[Scored]:
    """``ranked`` as ``name``'s hits, explained as a BM25 or dense retriever explains them."""
    return [Scored(position, score, (Contribution(retriever=name, rank=rank, score=score),))
            for rank, (position, score) in enumerate(ranked, start=1)]


def _positive(docs: Any, scores: Any) -> Ranked:
    """bm25s' ranked arrays as ``(unit, score)`` pairs, units that scored nothing left out."""
    keep = scores > 0
    return list(zip(docs[keep].tolist(), scores[keep].astype(float).tolist(), strict=True))


def _no_threshold(name: str, threshold: float | None) -> None:
    if threshold is not None:
        raise UsageError(f"the {name} reference engine takes no score threshold")


def top_positive(scores: npt.NDArray[np.floating[Any]], depth: int) -> Ranked:
    """The ``depth`` best positive scores, best first, ties to the lower position."""
    candidates = np.flatnonzero(scores > 0)
    if len(candidates) > depth:
        cut = np.partition(scores[candidates], len(candidates) - depth)[len(candidates) - depth]
        candidates = candidates[scores[candidates] >= cut]
    order = np.lexsort((candidates, -scores[candidates]))[:depth]
    return [(int(candidates[i]), float(scores[candidates[i]])) for i in order]


def analyzed(analyzer: Analyzer, texts: Sequence[str]) -> list[list[str]]:
    """Each text's index terms through ``analyzer``."""
    return [analyzer.analyze(t) for t in texts]
