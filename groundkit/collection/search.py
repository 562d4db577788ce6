"""Searching a generation: one entry point for the CLI, the MCP server and the harness.

Modes are explicit (SPEC §5) and come from the registry
(:data:`groundkit.retrieval.modes.MODES`): ``bm25`` is the default and needs
nothing but groundkit; ``dense`` and ``hybrid`` need the collection to have
been indexed with an embedding model and the ``dense`` extra installed.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..model import Hit
from ..retrieval import modes
from ..retrieval.modes import DEFAULT_MODE
from ..text.analysis import check_query
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
