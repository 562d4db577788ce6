"""The BM25 retriever: a :class:`~groundkit.retrieval.bm25.BM25Index` behind the protocol.

It abstains (returns ``[]``) when no query term occurs in the collection, and
with ``score_threshold`` drops hits scoring below it. ``explain`` adds each
query term's idf, tf, length norm and score to the hit's explanation.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..model import Contribution
from .base import Scored
from .bm25 import BM25Index


class BM25Retriever:
    name = "bm25"

    def __init__(self, index: BM25Index) -> None:
        self.index = index

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        ranked = self.index.search(query, top_k, score_threshold=score_threshold)
        return self.scored(query, ranked, explain=explain)

    def pairs(self, query: str, top_k: int) -> list[tuple[int, float]]:
        """:meth:`search`'s ranking as ``(position, score)`` pairs, no hits built."""
        return self.index.search(query, top_k)

    def scored(self, query: str, ranked: Sequence[tuple[int, float]], *,
               explain: bool = False) -> list[Scored]:
        """``(position, score)`` pairs of :meth:`BM25Index.search` as this retriever's hits."""
        name = self.name
        if not explain:  # the common case, one hit at a time: kept lean
            return [Scored(position, score, (Contribution(name, rank, score),))
                    for rank, (position, score) in enumerate(ranked, start=1)]
        return [Scored(position, score, (Contribution(name, rank, score,
                                                      {"terms": self._terms(query, position)}),))
                for rank, (position, score) in enumerate(ranked, start=1)]

    def _terms(self, query: str, position: int) -> list[dict[str, Any]]:
        return [
            {"term": t.term, "query_count": t.query_count, "df": t.df, "idf": t.idf, "tf": t.tf,
             "doc_length": t.doc_length, "norm_length": t.norm_length, "score": t.score}
            for t in self.index.explain(query, position)
        ]
