"""Searching a generation: one entry point for the CLI, the MCP server and the harness.

Modes are explicit (SPEC §5) and come from the registry
(:data:`groundkit.retrieval.modes.MODES`): ``bm25`` is the default and needs
nothing but groundkit; ``dense`` and ``hybrid`` need the collection to have
been indexed with an embedding model and the ``dense`` extra installed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..model import Duplicate, Hit, Replaced, Status, Verdict
from ..retrieval import collapse as collapse_ranking
from ..retrieval import gate, modes
from ..retrieval.base import Retriever, Scored
from ..retrieval.collapse import CANDIDATES, passage_keys
from ..retrieval.lexical import BM25Retriever
from ..retrieval.modes import DEFAULT_MODE
from ..retrieval.rerank import DEPTH as RERANK_DEPTH
from ..retrieval.rerank import Reranker
from ..retrieval.rerank import rerank as reranked
from ..retrieval.signals import TOP, Evidence
from ..store import StoredChunk
from ..text.analysis import check_query
from . import calibration, freshness
from .filters import Filtered, Filters
from .snapshot import Snapshot

MAX_TOP_K = 1000


# long: the one entry point of every search; its options are documented here, in one place
def search(
    snap: Snapshot,
    query: str,
    *,
    top_k: int = 10,
    mode: str = DEFAULT_MODE,
    score_threshold: float | None = None,
    explain: bool = False,
    verify: bool = False,
    rerank: Reranker | None = None,
    rerank_depth: int = RERANK_DEPTH,
    rerank_method: str = "replace",
    collapse: bool = True,
    filters: Filters | None = None,
    **options: Any,
) -> list[Hit]:
    """The ``top_k`` best chunks for ``query``, best first; ``[]`` when nothing matches.

    ``filters`` (:class:`.filters.Filters`: ``path`` globs, ``format``, ``modified_since``)
    keep only the hits of the documents they allow, the ranking otherwise unchanged.

    ``options`` are the mode's own (see its registry entry); ``verify`` re-reads
    every hit's span now, with the collection's size limit. With ``rerank`` the
    mode's top ``rerank_depth`` are re-scored by the cross-encoder and reordered
    (``rerank_method``: ``replace`` or ``rrf``; :mod:`groundkit.retrieval.rerank`).
    With ``collapse`` (the default) a passage found again at another place (the same
    text, whitespace and case aside: one README installed in six folders) is folded
    into its best-ranked hit's ``also_in``, and the list is filled up to ``top_k``
    distinct passages from deeper in the ranking; copies are looked for among the first
    :data:`~groundkit.retrieval.collapse.CANDIDATES` hits whatever ``top_k`` is. With
    ``verify`` too, a hit that does not verify is shown as its first copy that does,
    its own place (and copies checked before) in ``replaced`` (:func:`_in_place`).
    """
    if score_threshold is not None and not math.isfinite(score_threshold):
        raise UsageError(f"score_threshold must be a finite number, got {score_threshold!r}")
    retriever = _retriever(snap, query, top_k, mode, options)
    if filters is not None:
        retriever = Filtered(retriever, filters.mask(snap))
    if rerank is not None:
        retriever = Reranked(retriever, snap, rerank, depth=rerank_depth, method=rerank_method)

    if not collapse:
        scored = retriever.search(query, top_k, score_threshold=score_threshold,
                                  explain=explain)
        return _hits(snap, scored, snap.stored_chunks([s.position for s in scored]), verify)

    def candidates(depth: int) -> list[tuple[Scored, tuple[Duplicate, str]]]:
        scored = retriever.search(query, depth, score_threshold=score_threshold,
                                  explain=explain)
        return list(zip(scored, snap.places([s.position for s in scored]), strict=True))

    found, kept, also = collapse_ranking.deepened(
        candidates, lambda pairs: passage_keys([text for _, (_, text) in pairs]), top_k,
        limit=MAX_TOP_K, candidates=CANDIDATES)
    scored = [found[i][0] for i in kept]
    copies = [[Copy(found[j][0].position, found[j][1][0]) for j in also[i]] for i in kept]
    return _hits(snap, scored, snap.stored_chunks([s.position for s in scored]), verify,
                 copies)


@dataclass(frozen=True, slots=True)
class Copy:
    """Another place of a hit's passage: its canonical position and where it lies."""

    position: int
    place: Duplicate


class Reranked:
    """A retriever whose first ``depth`` hits a cross-encoder re-scores (the rest follow in
    the first stage's order and scores; :func:`groundkit.retrieval.rerank.rerank`)."""

    def __init__(self, first: Retriever, snap: Snapshot, reranker: Reranker, *,
                 depth: int = RERANK_DEPTH, method: str = "replace") -> None:
        self.first, self.snap, self.reranker = first, snap, reranker
        self.depth, self.method = depth, method
        self.name = f"{first.name}+rerank"

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        scored = self.first.search(query, max(top_k, self.depth),
                                   score_threshold=score_threshold, explain=explain)
        shortlist = self.snap.stored_chunks([s.position for s in scored[:self.depth]])
        return reranked(scored, [item.chunk.text for item in shortlist], query, self.reranker,
                        depth=self.depth, method=self.method, explain=explain)[:top_k]


def _retriever(snap: Snapshot, query: str, top_k: int, mode: str,
               options: dict[str, Any]) -> Retriever:
    """The mode's retriever, after checking the mode, ``top_k``, the query and the options."""
    modes.mode(mode)  # an unknown mode is the first thing to report
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise UsageError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    check_query(query)
    return modes.make_retriever(snap, mode, options)


def _hits(snap: Snapshot, scored: Sequence[Scored], stored: Sequence[StoredChunk],
          verify: bool, copies: Sequence[Sequence[Copy]] | None = None) -> list[Hit]:
    verdicts = snap.verify_all(stored) if verify else [None] * len(stored)
    shown = [_in_place(snap, item, verdict, places) for item, verdict, places in zip(
        stored, verdicts, copies if copies is not None else [()] * len(stored), strict=True)]
    changed = freshness.stale(snap, (s.stored.chunk.doc_id for s in shown))
    return [
        Hit(chunk=s.stored.chunk, score=sc.score, rank=rank, explanation=sc.explanation,
            verdict=s.verdict, stale=changed[s.stored.chunk.doc_id], also_in=s.also_in,
            superseded=snap.superseded(s.stored.chunk.doc_id), replaced=s.replaced,
            file=os.path.join(s.stored.root, s.stored.relpath))
        for rank, (sc, s) in enumerate(zip(scored, shown, strict=True), start=1)
    ]


@dataclass(frozen=True, slots=True)
class Shown:
    """What a hit shows: its own chunk, or the verified copy standing in for it."""

    stored: StoredChunk
    verdict: Verdict | None
    also_in: tuple[Duplicate, ...]
    replaced: tuple[Replaced, ...] = ()


def _in_place(snap: Snapshot, item: StoredChunk, verdict: Verdict | None,
              copies: Sequence[Copy]) -> Shown:
    """``item`` as found, or, when it was re-read and did not verify, the first of its
    ``copies`` (best-ranked first) that does, with the places checked before it.

    An identical passage is the same evidence: a README deleted from one folder still
    says what it said in the five others. When no copy verifies either, the hit stays
    where it ranked with its own verdict.
    """
    places = tuple(c.place for c in copies)
    if verdict is None or verdict.status is Status.VERIFIED:
        return Shown(item, verdict, places)
    c = item.chunk
    checked = [Replaced(place=Duplicate(c.doc_id, c.chunk_id, c.start, c.end),
                        status=verdict.status, reason=verdict.reason)]
    for n, copy in enumerate(copies):
        (stored,) = snap.stored_chunks([copy.position])
        (judged,) = snap.verify_all([stored])
        if judged.status is Status.VERIFIED:
            return Shown(stored, judged, places[n + 1:], tuple(checked))
        checked.append(Replaced(place=copy.place, status=judged.status, reason=judged.reason))
    return Shown(item, verdict, places)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The ranked hits and the gate's decision; an abstention carries no hits."""

    hits: list[Hit]
    decision: gate.Decision


def decide(snap: Snapshot, query: str, *, mode: str = DEFAULT_MODE, alpha: float | None = None,
           **options: Any) -> gate.Decision:
    """Whether the collection answers ``query`` in ``mode``: its stored calibration's verdict."""
    return _decide(snap, query, mode, alpha, options)[0]


def _decide(snap: Snapshot, query: str, mode: str, alpha: float | None,
            options: dict[str, Any]) -> tuple[gate.Decision, Evidence]:
    check_query(query)
    calibrated = calibration.load(snap, mode)
    evidence = modes.evidence(snap, mode, query, options)
    return gate.decide(calibrated, evidence, alpha), evidence


def search_or_abstain(snap: Snapshot, query: str, *, mode: str = DEFAULT_MODE,
                      alpha: float | None = None, **options: Any) -> SearchResult:
    """The gate's decision first; the hits (in the mode's own order) only when it answers.

    In ``bm25`` mode the gate's evidence already holds the search's ranking (the top
    :data:`~groundkit.retrieval.signals.TOP`, exactly ``BM25Index.search``'s), so an
    uncollapsed answer up to that depth shows it rather than searching again: the same
    hits as :func:`search` (a collapsed one searches again, its copies lying deeper).
    """
    mode_options = {k: v for k, v in options.items() if k in modes.mode(mode).defaults()}
    decision, evidence = _decide(snap, query, mode, alpha, mode_options)
    if not decision.answer:
        return SearchResult(hits=[], decision=decision)
    ranked = _bm25_ranking(snap, query, mode, evidence, options)
    hits = search(snap, query, mode=mode, **options) if ranked is None else ranked
    return SearchResult(hits=hits, decision=decision)


def _bm25_ranking(snap: Snapshot, query: str, mode: str, evidence: Evidence,
                  options: dict[str, Any]) -> list[Hit] | None:
    """:func:`search`'s hits from the evidence's BM25 ranking, or ``None`` when it cannot
    stand for the search (another mode, deeper than the evidence looked, or collapsed:
    copies are looked for deeper than that)."""
    top_k = options.get("top_k", 10)
    if (mode != "bm25" or evidence.lexical is None or options.get("rerank") is not None
            or options.get("collapse", True) or options.get("filters") is not None
            or not (isinstance(top_k, int) and top_k <= TOP)):
        return None
    rest = {k: v for k, v in options.items()
            if k not in ("top_k", "score_threshold", "explain", "verify", "collapse")}
    retriever = _retriever(snap, query, top_k, mode, rest)  # the same checks as search
    if not isinstance(retriever, BM25Retriever):  # pragma: no cover - bm25 mode's retriever
        return None
    threshold = options.get("score_threshold")
    ranked = [h for h in evidence.lexical.top if threshold is None or h[1] >= threshold]
    scored = retriever.scored(query, ranked, explain=bool(options.get("explain")))[:top_k]
    return _hits(snap, scored, snap.stored_chunks([s.position for s in scored]),
                 bool(options.get("verify", False)))
