"""Searching a collection: one entry point for the CLI, the MCP server and the harness.

Modes are explicit (SPEC §5): ``bm25`` is the default and needs nothing but
groundkit; ``dense`` and ``hybrid`` need the collection to have been indexed
with an embedding model and the ``dense`` extra installed. Nothing in the
environment switches a search to another mode.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .analysis import check_query
from .errors import UsageError
from .model import OFFSET_UNIT, Contribution, Hit
from .verify import verify as verify_span

if TYPE_CHECKING:
    from .collection import Collection

MAX_TOP_K = 1000

Ranked = list[tuple[int, float, tuple[Contribution, ...]]]
"""(index position, score, explanation), best first."""


@dataclass(frozen=True, slots=True)
class Mode:
    name: str
    description: str
    run: Callable[..., Ranked]


def _bm25(coll: Collection, query: str, top_k: int, *, score_threshold: float | None,
          explain: bool, **_: Any) -> Ranked:
    index = coll.bm25()
    ranked = index.search(query, top_k, score_threshold=score_threshold)
    out: Ranked = []
    for rank, (position, score) in enumerate(ranked, start=1):
        detail: dict[str, Any] = {}
        if explain:
            detail["terms"] = [
                {"term": t.term, "query_count": t.query_count, "df": t.df, "idf": t.idf,
                 "tf": t.tf, "doc_length": t.doc_length, "norm_length": t.norm_length,
                 "score": t.score}
                for t in index.explain(query, position)
            ]
        out.append((position, score, (Contribution(retriever="bm25", rank=rank, score=score,
                                                   detail=detail),)))
    return out


MODES: dict[str, Mode] = {
    "bm25": Mode("bm25", "lexical BM25 (default; zero setup; abstains when nothing matches)",
                 _bm25),
}


def register_mode(mode: Mode) -> None:
    MODES[mode.name] = mode


def search(
    coll: Collection,
    query: str,
    *,
    top_k: int = 10,
    mode: str = "bm25",
    score_threshold: float | None = None,
    explain: bool = False,
    verify: bool = False,
    **options: Any,
) -> list[Hit]:
    """The ``top_k`` best chunks for ``query``, best first; ``[]`` when nothing matches."""
    _load_optional_modes()
    if mode not in MODES:
        choices = ", ".join(f"{m.name} ({m.description})" for m in MODES.values())
        raise UsageError(f"unknown search mode {mode!r}; valid modes: {choices}")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:
        raise UsageError(f"top_k must be an integer from 1 to {MAX_TOP_K}, got {top_k!r}")
    check_query(query)
    ranked = MODES[mode].run(coll, query, top_k, score_threshold=score_threshold,
                             explain=explain, **options)
    stored = coll.stored_chunks([position for position, _, _ in ranked])
    hits = []
    for rank, ((_, score, explanation), item) in enumerate(zip(ranked, stored, strict=True), 1):
        verdict = verify_span(item) if verify else None
        hits.append(Hit(chunk=item.chunk, score=score, rank=rank, explanation=explanation,
                        verdict=verdict))
    return hits


def _load_optional_modes() -> None:
    if "dense" not in MODES:
        # Registers dense and hybrid; their heavy dependencies load only when used.
        importlib.import_module("groundkit.dense_search")


def hit_to_dict(hit: Hit, collection: str) -> dict[str, Any]:
    """The machine-readable form of a hit (CLI ``--json``, MCP, reports)."""
    c = hit.chunk
    return {
        "rank": hit.rank,
        "score": hit.score,
        "chunk_id": c.chunk_id,
        "collection": collection,
        "path": c.doc_id,
        "offset_unit": OFFSET_UNIT,
        "start": c.start,
        "end": c.end,
        "utf16_start": c.utf16_start,
        "utf16_end": c.utf16_end,
        "byte_start": c.byte_start,
        "byte_end": c.byte_end,
        "start_line": c.start_line,
        "end_line": c.end_line,
        "text": c.text,
        "explanation": [
            {"retriever": e.retriever, "rank": e.rank, "score": e.score, **e.detail}
            for e in hit.explanation
        ],
        "verdict": hit.verdict.to_dict() if hit.verdict else None,
    }
