"""Searching a generation: one entry point for the CLI, the MCP server and the harness.

Modes are explicit (SPEC §5) and come from the registry
(:data:`groundkit.retrieval.modes.MODES`): ``bm25`` is the default and needs
nothing but groundkit; ``dense`` and ``hybrid`` need the collection to have
been indexed with an embedding model and the ``dense`` extra installed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..model import Hit
from ..retrieval import gate, modes
from ..retrieval.modes import DEFAULT_MODE
from ..text.analysis import check_query
from . import calibration
from .snapshot import Snapshot

MAX_TOP_K = 1000


def search(
    snap: Snapshot,
    query: str,
    *,
    top_k: int = 10,
    mode: str = DEFAULT_MODE,
    score_threshold: float | None = None,
    explain: bool = False,
    verify: bool = False,
    **options: Any,
) -> list[Hit]:
    """The ``top_k`` best chunks for ``query``, best first; ``[]`` when nothing matches.

    ``options`` are the mode's own (see its registry entry); ``verify`` re-reads
    every hit's span now, with the collection's size limit.
    """
    modes.mode(mode)  # an unknown mode is the first thing to report
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise UsageError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    check_query(query)
    retriever = modes.make_retriever(snap, mode, options)
    scored = retriever.search(query, top_k, score_threshold=score_threshold, explain=explain)
    stored = snap.stored_chunks([s.position for s in scored])
    return [
        Hit(chunk=item.chunk, score=s.score, rank=rank, explanation=s.explanation,
            verdict=snap.verify(item) if verify else None)
        for rank, (s, item) in enumerate(zip(scored, stored, strict=True), start=1)
    ]


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The ranked hits and the gate's decision; an abstention carries no hits."""

    hits: list[Hit]
    decision: gate.Decision


def decide(snap: Snapshot, query: str, *, mode: str = DEFAULT_MODE, alpha: float | None = None,
           **options: Any) -> gate.Decision:
    """Whether the collection answers ``query`` in ``mode``: its stored calibration's verdict."""
    check_query(query)
    calibrated = calibration.load(snap, mode)
    return gate.decide(calibrated, modes.evidence(snap, mode, query, options), alpha)


def search_or_abstain(snap: Snapshot, query: str, *, mode: str = DEFAULT_MODE,
                      alpha: float | None = None, **options: Any) -> SearchResult:
    """The gate's decision first; the hits (in the mode's own order) only when it answers."""
    mode_options = {k: v for k, v in options.items() if k in modes.mode(mode).defaults()}
    decision = decide(snap, query, mode=mode, alpha=alpha, **mode_options)
    hits = search(snap, query, mode=mode, **options) if decision.answer else []
    return SearchResult(hits=hits, decision=decision)
