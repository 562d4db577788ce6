"""The retrieval seam: what a retriever returns, and what it may ask of a generation.

A :class:`Retriever` ranks the chunks of one index generation for a query. It
names chunks by *position*: their place in the generation's canonical order,
which is document ``i`` of every derived index (BM25 arrays, vector rows mapped
through their chunk ids). The collection layer turns positions into stored
chunks and :class:`~groundkit.model.Hit` values.

:class:`Resources` is what a generation offers retrievers; the collection
layer's ``Snapshot`` implements it, so retrieval never imports the layers above.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..model import Contribution

if TYPE_CHECKING:
    import numpy as np

    from ..embeddings import EmbeddingIdentity
    from .bm25 import BM25Index
    from .vectors import VectorStore


@dataclass(frozen=True, slots=True)
class Scored:
    """One ranked chunk: its position, its score, and who placed it where."""

    position: int
    score: float
    explanation: tuple[Contribution, ...]


class Retriever(Protocol):
    """Ranks chunks for a query, best first; deterministic for a fixed index."""

    name: str

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        """At most ``top_k`` chunks, best first; ``[]`` when nothing qualifies."""
        ...


class QueryVectors(Protocol):
    """Embeds queries with the model a collection was indexed with."""

    @property
    def identity(self) -> EmbeddingIdentity: ...

    def vector(self, query: str) -> np.ndarray: ...

    def prime(self, queries: Iterable[str]) -> None:
        """Embed many queries in one batch ahead of searching them."""
        ...


class Resources(Protocol):
    """The derived indexes of one generation, loaded on first use."""

    name: str
    """The collection's name (for messages)."""

    def bm25(self) -> BM25Index: ...

    def chunk_ids(self) -> Sequence[str]: ...

    def positions(self) -> Mapping[str, int]: ...

    def embedding_spec(self) -> str | None: ...

    def query_embedder(self) -> QueryVectors: ...

    def vectors(self, identity: EmbeddingIdentity | None = None) -> VectorStore: ...
