"""The dense retriever: a query embedding against a generation's vector store.

:class:`QueryEmbedder` embeds queries with the model the collection was indexed
with and keeps the most recent :data:`QUERY_CACHE` vectors (the harness asks
each question once per stage; :meth:`QueryEmbedder.prime` embeds many in one
batch). :class:`DenseRetriever` searches exactly (cosine over every vector), or over
the candidates of the store's approximate index where it has one and ``exact`` is
false (:mod:`.ann`), and abstains only with ``score_threshold``, a cosine threshold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..embeddings import EmbeddingIdentity, EmbeddingProvider
from ..model import Contribution
from .base import QueryVectors, Scored
from .vectors import VectorStore

QUERY_CACHE = 4096
"""Query embeddings kept per open generation."""


class QueryEmbedder:
    """Query vectors from one provider, cached by query text (oldest dropped first)."""

    def __init__(self, provider: EmbeddingProvider, capacity: int = QUERY_CACHE) -> None:
        self.provider = provider
        self.capacity = capacity
        self._cache: dict[str, np.ndarray] = {}

    @property
    def identity(self) -> EmbeddingIdentity:
        return self.provider.identity

    def vector(self, query: str) -> np.ndarray:
        if query not in self._cache:
            self._remember(query, self.provider.embed([query], kind="query")[0])
        return self._cache[query]

    def prime(self, queries: Iterable[str]) -> None:
        """Embed every query not cached yet, in one batch."""
        todo = [q for q in dict.fromkeys(queries) if q.strip() and q not in self._cache]
        if todo:
            for query, vector in zip(todo, self.provider.embed(todo, kind="query"), strict=True):
                self._remember(query, vector)

    def close(self) -> None:
        self.provider.close()

    def _remember(self, query: str, vector: np.ndarray) -> None:
        if len(self._cache) >= self.capacity:
            self._cache.pop(next(iter(self._cache)))
        self._cache[query] = vector


class DenseRetriever:
    name = "dense"

    def __init__(self, store: VectorStore, embedder: QueryVectors,
                 positions: Mapping[str, int], *, exact: bool = False) -> None:
        store.check_identity(embedder.identity)
        self.store = store
        self.exact = exact
        self.embedder = embedder
        self.positions = positions

    def ranked(self, query: str, depth: int,
               score_threshold: float | None = None) -> list[tuple[str, float]]:
        """``[(chunk_id, cosine)]``, best first; ``[]`` for a blank query."""
        if not query.strip():
            return []
        return self.store.search(self.embedder.vector(query), depth, score_threshold,
                                 exact=self.exact)

    def pairs(self, query: str, top_k: int) -> list[tuple[int, float]]:
        """:meth:`search`'s ranking as ``(position, score)`` pairs, no hits built."""
        positions = self.positions
        return [(positions[chunk_id], score) for chunk_id, score in self.ranked(query, top_k)]

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        name, positions = self.name, self.positions
        return [Scored(positions[chunk_id], score, (Contribution(name, rank, score),))
                for rank, (chunk_id, score) in enumerate(
                    self.ranked(query, top_k, score_threshold), start=1)]
