"""Units of an external collection as groundkit's retrievers see them.

:class:`MemoryUnits` implements :class:`groundkit.retrieval.base.Resources` over
unit texts held in memory (a stage's passages, or the imported documents under
other BM25 settings), so every groundkit mode ranks them through the product's
own retrievers. Vectors are built with :class:`groundkit.retrieval.vectors.VectorStore`
into a cache folder named by the embedding identity and a digest of every unit
text (a changed model or corpus is a new folder), and each text's vector comes
from the persistent embedding cache when it has been embedded before.
:func:`to_documents` turns unit hits into document hits: a document scores its
best unit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from pathlib import Path

import numpy as np
import numpy.typing as npt

from groundkit.embeddings import EmbeddingIdentity, EmbeddingProvider, make_provider
from groundkit.embeddings.cache import CachedProvider
from groundkit.errors import GroundkitError
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.dense import QueryEmbedder
from groundkit.retrieval.vectors import VectorStore

Ranked = list[tuple[int, float]]


class MemoryUnits:
    """In-memory units behind the retrieval ``Resources`` protocol."""

    def __init__(self, name: str, texts: Sequence[str], bm25: Callable[[], BM25Index], *,
                 embedding: str | None = None, cache: Path | None = None) -> None:
        self.name = name
        self.texts = texts
        self._bm25 = bm25
        self._embedding = embedding
        self._cache = cache

    def bm25(self) -> BM25Index:
        return self._index

    @cached_property
    def _index(self) -> BM25Index:
        return self._bm25()

    def chunk_ids(self) -> Sequence[str]:
        return self._ids

    @cached_property
    def _ids(self) -> list[str]:
        width = len(str(len(self.texts)))
        return [f"u{i:0{width}d}" for i in range(len(self.texts))]  # string order = position

    def positions(self) -> Mapping[str, int]:
        return self._positions

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {cid: i for i, cid in enumerate(self.chunk_ids())}

    def embedding_spec(self) -> str | None:
        return self._embedding

    def query_embedder(self) -> QueryEmbedder:
        return self._query_embedder

    @cached_property
    def _query_embedder(self) -> QueryEmbedder:
        return QueryEmbedder(self._provider())

    def vectors(self, identity: EmbeddingIdentity | None = None) -> VectorStore:
        return self._vectors

    @cached_property
    def _vectors(self) -> VectorStore:
        provider = self._provider()
        identity = provider.identity
        digest = hashlib.sha256(json.dumps(identity.to_dict(), sort_keys=True).encode())
        for text in self.texts:
            digest.update(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest())
        base = self._cache or Path(".cache") / "external"
        directory = base / f"vectors-{digest.hexdigest()[:24]}"
        stamp = {"collection": self.name, "generation": 0}
        try:
            return VectorStore.open(directory, stamp, identity)
        except GroundkitError:
            return VectorStore.build(directory, stamp, identity, self.chunk_ids(),
                                     list(self.texts), provider)
        finally:
            provider.close()

    def close(self) -> None:
        if "_query_embedder" in self.__dict__:
            self._query_embedder.close()

    def _provider(self) -> EmbeddingProvider:
        if self._embedding is None:
            raise GroundkitError(f"units of {self.name!r} have no embedding model")
        provider = make_provider(self._embedding)
        return CachedProvider(provider, self._cache / "embeddings") if self._cache else provider


def to_documents(ranked: Ranked, doc_of: npt.NDArray[np.int64], depth: int,
                 ) -> list[tuple[int, float, int]]:
    """``(doc, score, best unit)`` by max score per document, best first, ``depth`` docs."""
    docs, scores, units = _best_units(ranked, doc_of, depth, injective=False)
    return list(zip(docs.tolist(), scores.tolist(), units.tolist(), strict=True))


def document_hits(ranked: Ranked, doc_of: npt.NDArray[np.int64], depth: int,
                  id_rank: npt.NDArray[np.int64], *, injective: bool = False,
                  ) -> tuple[list[int], list[float], list[int]]:
    """Documents, scores and best units of :func:`to_documents`, exact ties in trec_eval's order.

    When two of the (at most ``depth``) documents score exactly the same, all are
    sorted by score descending, then doc id descending (``id_rank``: each document's
    place in the sorted doc ids), as :func:`evals.trec.trec_order` orders them, so
    a run file reads back in the order it was written. ``injective``: every unit
    is its own document's only unit (a document's best unit is its one hit).
    """
    docs, scores, units = _best_units(ranked, doc_of, depth, injective=injective)
    if np.unique(scores).size < scores.size:
        order = np.lexsort((-id_rank[docs], -scores))
        docs, scores, units = docs[order], scores[order], units[order]
    return docs.tolist(), scores.tolist(), units.tolist()


def _best_units(ranked: Ranked, doc_of: npt.NDArray[np.int64], depth: int, *, injective: bool,
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]:
    n = len(ranked)
    positions = np.fromiter((p for p, _ in ranked), np.int64, n)
    scores = np.fromiter((s for _, s in ranked), np.float64, n)
    docs = doc_of[positions]
    if injective:
        return docs[:depth], scores[:depth], positions[:depth]
    _, first = np.unique(docs, return_index=True)  # a document's first hit is its best
    first.sort()
    first = first[:depth]
    return docs[first], scores[first], positions[first]
