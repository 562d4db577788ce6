"""Fusing ranked lists: Reciprocal Rank Fusion, and a convex score combination.

Each input is a retriever's ranked list ``[(chunk_id, score), ...]``, best
first, keyed by the retriever's name (``{"bm25": [...], "dense": [...]}``).
Each output :class:`FusedHit` keeps, per retriever that returned it, its rank,
its score and what it contributed, as :class:`~groundkit.model.Contribution`.

:func:`rrf` is the hybrid mode's fusion (ADR-0005); :func:`convex` exists for
the fusion ablation in the harness. :data:`FUSIONS` names both, with their
parameters' defaults; :class:`FusionRetriever` fuses other retrievers' lists.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..model import Contribution
from .base import Retriever, Scored

RankedList = Sequence[tuple[str, float]]
RankedLists = Mapping[str, RankedList]

DEFAULT_K = 60
"""RRF's constant, as in Cormack, Clarke & Büttcher (2009)."""


@dataclass(frozen=True, slots=True)
class FusedHit:
    """One fused result: a 1-based ``rank``, the fused ``score``, and who put it there.

    ``contributions`` holds one entry per retriever that returned the chunk,
    in retriever-name order; ``detail["contribution"]`` is what that
    retriever added to ``score``.
    """

    chunk_id: str
    score: float
    rank: int
    contributions: tuple[Contribution, ...]

    def contribution(self, retriever: str) -> Contribution | None:
        """This hit's entry for ``retriever``, or ``None`` if that retriever missed it."""
        return next((c for c in self.contributions if c.retriever == retriever), None)


def rrf(ranked_lists: RankedLists, k: float = DEFAULT_K, *, top_k: int,
        explained: int | None = None) -> list[FusedHit]:
    r"""Reciprocal Rank Fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

    ``score(d) = sum over retrievers r that returned d of 1 / (k + rank_r(d))``,
    with ``rank_r`` 1-based position in ``r``'s list. Only positions matter: a
    retriever's scores are carried into the explanation but never into the
    arithmetic, which is why BM25 and cosine scores, on incomparable scales,
    can be fused at all.

    There is deliberately no ``score_threshold`` here. A fused score is
    rank-derived: 1 / (60 + 1) means "first somewhere", whatever the query and
    however poor that first hit was, and every query gets exactly the same set
    of possible values. A cutoff on it would measure list length and overlap,
    never relevance, so fusion cannot abstain by thresholding (ADR-0005).
    Abstention, where wanted, belongs to the inputs (e.g. a dense cosine
    threshold applied before fusion).

    Ties in the fused score are broken by ``chunk_id``, so the output is
    deterministic. Scores are summed with :func:`math.fsum`, so equal rank
    patterns give exactly equal scores. ``explained``: how many of the top hits
    carry their contributions (default all; the rest an empty tuple).
    """
    if isinstance(k, bool) or not (isinstance(k, int | float) and math.isfinite(k) and k >= 0):
        raise UsageError(f"RRF k must be a finite number >= 0, got {k!r}")
    _check_top_k(top_k)
    positions = _positions(ranked_lists)

    def value(name: str, rank: int, score: float) -> float:
        return 1.0 / (k + rank)

    def explain(name: str, rank: int, score: float) -> Contribution:
        return Contribution(name, rank, score, {"contribution": value(name, rank, score), "k": k})

    return _fused_hits(positions, value, explain, top_k, explained)


def convex(ranked_lists: RankedLists, weights: Mapping[str, float], top_k: int,
           explained: int | None = None) -> list[FusedHit]:
    """A convex combination of min-max normalised scores, for the fusion ablation.

    ``score(d) = sum_r w_r * (s_r(d) - min_r) / (max_r - min_r)``, where a
    retriever that missed ``d`` adds 0, the weights are >= 0 and sum to 1, and
    a list whose scores are all equal normalises to 1.0 (ranx gives 0.0 there;
    a list that returned ``d`` should not count as having missed it).

    Caveats, why this is not the hybrid default: min and max come from the
    truncated list each retriever returned, so the same document's normalised
    score changes with top_k and with whatever else was retrieved; one outlier
    squeezes every other score towards 0; the best hit of a query with no
    good answer still normalises to 1.0. The fused score is therefore no more
    thresholdable than RRF's. Ties are broken by ``chunk_id``; ``explained`` as
    :func:`rrf`'s.
    """
    _check_top_k(top_k)
    _check_weights(ranked_lists, weights)
    positions = _positions(ranked_lists)
    bounds = {name: _min_max(ranked) for name, ranked in ranked_lists.items()}

    def normalised(name: str, score: float) -> float:
        low, high = bounds[name]
        return 1.0 if high == low else (score - low) / (high - low)

    def value(name: str, rank: int, score: float) -> float:
        return weights[name] * normalised(name, score)

    def explain(name: str, rank: int, score: float) -> Contribution:
        return Contribution(retriever=name, rank=rank, score=score,
                            detail={"contribution": value(name, rank, score),
                                    "normalized": normalised(name, score),
                                    "weight": weights[name]})

    return _fused_hits(positions, value, explain, top_k, explained)


@dataclass(frozen=True, slots=True, kw_only=True)
class FusionMethod:
    """A registered fusion method: how it fuses, and its parameters' defaults."""

    name: str
    description: str
    fuse: Callable[[RankedLists, int, Mapping[str, Any], int | None], list[FusedHit]]
    """``(lists, top_k, params, explained) -> hits``."""
    defaults: Mapping[str, Any] = field(default_factory=dict)


def _fuse_rrf(lists: RankedLists, top_k: int, params: Mapping[str, Any],
              explained: int | None) -> list[FusedHit]:
    return rrf(lists, params.get("rrf_k", DEFAULT_K), top_k=top_k, explained=explained)


def _fuse_convex(lists: RankedLists, top_k: int, params: Mapping[str, Any],
                 explained: int | None) -> list[FusedHit]:
    weights = params.get("weights") or {name: 1.0 / len(lists) for name in lists}
    return convex(lists, weights, top_k, explained)


FUSIONS: Mapping[str, FusionMethod] = {
    "rrf": FusionMethod(name="rrf", fuse=_fuse_rrf, defaults={"rrf_k": DEFAULT_K},
                        description=f"Reciprocal Rank Fusion, sum of 1/(k + rank); rank-only "
                        f"(default, k={DEFAULT_K})"),
    "convex": FusionMethod(name="convex", fuse=_fuse_convex, defaults={"weights": None},
                           description="convex combination of min-max normalised scores, equal "
                           "weights (an ablation; score-based)"),
}
"""The fusion methods, by name; help text and errors are generated from it."""


def fusion_method(name: str) -> FusionMethod:
    if name not in FUSIONS:
        raise UsageError(f"unknown fusion {name!r}; valid: "
                         + "; ".join(f"{f.name} ({f.description})" for f in FUSIONS.values()))
    return FUSIONS[name]


CANDIDATES = 100
"""How deep each list goes before fusion."""


class FusionRetriever:
    """Fuses the lists of several retrievers; never takes a score threshold (ADR-0005)."""

    name = "hybrid"

    def __init__(self, retrievers: Mapping[str, Retriever], chunk_ids: Sequence[str],
                 positions: Mapping[str, int], method: FusionMethod,
                 params: Mapping[str, Any], candidates: int = CANDIDATES) -> None:
        self.retrievers = dict(retrievers)
        self.chunk_ids = chunk_ids
        self.positions = positions
        self.method = method
        self.params = {**method.defaults, **params}
        self.candidates = candidates
        self.explained: int | None = None
        """How many of the top hits carry their contributions (``None``: every hit); an
        evaluation that records the rest by id and score sets how many it shows."""

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        if score_threshold is not None:
            raise UsageError(
                "hybrid search takes no score threshold: fused scores are rank-derived, so a "
                "cutoff would measure list overlap, not relevance (ADR-0005); threshold dense "
                "instead")
        depth = max(top_k, self.candidates)
        lists = {name: self._ids(retriever, query, depth)
                 for name, retriever in self.retrievers.items()}
        fused = self.method.fuse(lists, top_k, self.params, self.explained)
        return [Scored(self.positions[h.chunk_id], h.score, h.contributions) for h in fused]


    def _ids(self, retriever: Retriever, query: str, depth: int) -> list[tuple[str, float]]:
        """``retriever``'s ranking as ``(chunk_id, score)``: through its ``pairs`` when it
        has them (BM25, dense), so no explained hit is built only to be taken apart."""
        ids = self.chunk_ids
        pairs = getattr(retriever, "pairs", None)
        if pairs is not None:
            return [(ids[position], score) for position, score in pairs(query, depth)]
        return [(ids[s.position], s.score) for s in retriever.search(query, depth)]


# ---------------------------------------------------------------------- kernels


def _positions(ranked_lists: RankedLists) -> dict[str, list[tuple[str, int, float]]]:
    """``chunk_id -> [(retriever, 1-based rank, score)]``, retrievers in name order."""
    if not ranked_lists:
        raise UsageError("fusion needs at least one ranked list")
    out: dict[str, list[tuple[str, int, float]]] = {}
    for name in sorted(ranked_lists):
        ranked = ranked_lists[name]
        ids = [chunk_id for chunk_id, _ in ranked]
        scores = [float(score) for _, score in ranked]
        if len(set(ids)) != len(ids) or not all(map(math.isfinite, scores)):
            _reject(name, ids, scores)
        for rank, (chunk_id, score) in enumerate(zip(ids, scores, strict=True), start=1):
            entries = out.get(chunk_id)
            if entries is None:
                out[chunk_id] = [(name, rank, score)]
            else:
                entries.append((name, rank, score))
    return out


def _reject(name: str, ids: Sequence[str], scores: Sequence[float]) -> None:
    """The first repeated chunk or non-finite score of list ``name``, as a UsageError."""
    seen: set[str] = set()
    for chunk_id, score in zip(ids, scores, strict=True):
        if chunk_id in seen:
            raise UsageError(f"retriever {name!r} returned {chunk_id!r} twice")
        if not math.isfinite(score):
            raise UsageError(f"retriever {name!r} gave {chunk_id!r} a non-finite score")
        seen.add(chunk_id)


def _fused_hits(
    positions: Mapping[str, Sequence[tuple[str, int, float]]],
    value: Callable[[str, int, float], float],
    explain: Callable[[str, int, float], Contribution],
    top_k: int,
    explained: int | None = None,
) -> list[FusedHit]:
    """The ``top_k`` best fused chunks; only those (only the first ``explained`` of
    them, if given) get their contributions spelled out.

    A candidate's score is the :func:`math.fsum` of its ``value`` per list (the
    numbers its explanation carries as ``contribution``), ties broken by ``chunk_id``.
    One or two values are added directly: a correctly rounded sum, as ``fsum``'s.
    """
    scored = {}
    for cid, entries in positions.items():
        if len(entries) == 1:
            scored[cid] = value(*entries[0])
        elif len(entries) == 2:
            scored[cid] = value(*entries[0]) + value(*entries[1])
        else:
            scored[cid] = math.fsum(value(*entry) for entry in entries)
    # best first, ties by chunk id: sorted as (-score, chunk_id) tuples, compared in C
    ordered = sorted([(-score, cid) for cid, score in scored.items()])[:top_k]
    shown = len(ordered) if explained is None else explained
    return [FusedHit(cid, -negated, position,
                     tuple([explain(*entry) for entry in positions[cid]])
                     if position <= shown else ())
            for position, (negated, cid) in enumerate(ordered, start=1)]


def _min_max(ranked: RankedList) -> tuple[float, float]:
    scores = [float(score) for _, score in ranked]
    return (min(scores), max(scores)) if scores else (0.0, 0.0)


def _check_top_k(top_k: int) -> None:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise UsageError(f"top_k must be a positive integer, got {top_k!r}")


def _check_weights(ranked_lists: RankedLists, weights: Mapping[str, float]) -> None:
    if set(weights) != set(ranked_lists):
        raise UsageError(
            f"convex fusion needs one weight per retriever: lists {sorted(ranked_lists)}, "
            f"weights {sorted(weights)}"
        )
    if any(not (math.isfinite(w) and w >= 0) for w in weights.values()):
        raise UsageError(f"convex fusion weights must be finite and >= 0, got {dict(weights)}")
    if not math.isclose(math.fsum(weights.values()), 1.0, abs_tol=1e-9):
        raise UsageError(f"convex fusion weights must sum to 1, got {dict(weights)}")
