"""Rerank stages: a first stage's shortlist re-scored by a local cross-encoder.

A rerank stage ranks its shortlist only (30 deep: its R@100 is not comparable with
the other stages'). The model is the folder ``$GROUNDKIT_RERANK_MODEL`` names (``python -m evals run
--rerank-model PATH`` sets it); without one the rerank stages are listed in the report
as *not measured*, never given a number. The reranker's identity (model name, sha256 of
its weights, maximum length) goes into the stage's config. The abstention gate of a
rerank stage is the first stage's: it is decided before reranking.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals.stages import RERANK_MODEL, Stage
from groundkit.collection.search import Reranked
from groundkit.collection.snapshot import Snapshot
from groundkit.retrieval.base import Retriever, Scored

NOT_MEASURED = (f"not measured (no reranker model configured: set {RERANK_MODEL}=PATH or "
                "--rerank-model PATH)")
_LOADED: dict[str, Any] = {}


def unavailable(stage: Stage) -> str | None:
    """Why a rerank stage cannot run here (no model configured), or None."""
    if stage.rerank is None:
        return None
    path = os.environ.get(RERANK_MODEL)
    if not path:
        return NOT_MEASURED
    if not Path(path).is_dir():
        return f"not measured ({RERANK_MODEL}={path} is not a folder)"
    return None


def reranker() -> Any:
    """The configured cross-encoder, loaded once per process."""
    from groundkit.retrieval.rerank import CrossEncoderReranker

    path = os.environ[RERANK_MODEL]
    if path not in _LOADED:
        _LOADED[path] = CrossEncoderReranker(Path(path))
    return _LOADED[path]


class RerankedRetriever(Reranked):
    """``groundkit``'s reranked retrieval (the one ``grk search --rerank`` runs), ranking
    only the shortlist: below it the first stage's scores are on another scale, and a run
    file is ordered by score, so a rerank stage ranks ``depth`` deep."""

    def __init__(self, first: Retriever, snap: Snapshot, stage: Stage) -> None:
        super().__init__(first, snap, reranker(), depth=stage.rerank_depth,
                         method=str(stage.rerank))

    @property
    def identity(self) -> dict[str, Any]:
        return dict(self.reranker.identity.to_dict())

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        return super().search(query, min(top_k, self.depth), score_threshold=score_threshold,
                              explain=explain)


def wrap(first: Retriever, snap: Snapshot, stage: Stage) -> Retriever:
    return RerankedRetriever(first, snap, stage) if stage.rerank else first


__all__: Sequence[str] = ("NOT_MEASURED", "RerankedRetriever", "unavailable", "wrap")
