"""Dense vectors in LanceDB, and exact cosine search over them.

A :class:`VectorStore` is one directory holding a LanceDB table ``vectors``
(columns ``chunk_id``, ``vector``; rows sorted by ``chunk_id``) and a
``meta.json`` recording the stamp it was built for (e.g. ``{"generation": 7,
"collection": "notes"}``), the :class:`~groundkit.embeddings.EmbeddingIdentity`
of its vectors and its row count. It is built in a temporary sibling
directory and renamed into place, so a reader never sees half a store.

:meth:`VectorStore.open` fails closed (:class:`~groundkit.errors.IndexMismatchError`)
on another provider, model, dimension or prefixes, another stamp (a stale
generation), a missing or damaged table, or a row count that disagrees.

Search is exact: LanceDB is the storage, but ``open`` loads the vectors into
one float32 matrix and :meth:`VectorStore.search` is a numpy matrix-vector
product. Over 100,000 x 384 vectors, exact top-10 took 7.0 ms p50 this way
against 138.7 ms with LanceDB's flat ``table.search()`` (same top 10 for 20 of
20 queries; ``python bench/bench_dense.py --query-threads 1`` on the shared
2-core development machine, ``.bench/dense.json`` -> ``exact_search``).
Vectors are L2-normalised, so the dot product *is* the cosine similarity, and
``score_threshold`` is a cosine threshold. Ties are broken by ``chunk_id``.

Above a size a store also carries an approximate index (:mod:`.ann`, ADR-0015):
search then scores only the index's candidates (exactly), unless ``exact=True``.

``lancedb`` and ``pyarrow`` are imported lazily (extra ``dense``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import faults
from ..embeddings import EmbeddingIdentity, EmbeddingProvider, l2_normalize
from ..errors import IndexMismatchError, UsageError
from . import vector_files
from .ann import AnnIndex, AnnParams

EMBED_BATCH = 256

Progress = Callable[[int, int, str], None]
"""``progress(done, total, label)``, the shape of :class:`groundkit.progress.ProgressBar.update`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BuildStats:
    """What a build did: rows written, vectors reused from the previous store, texts embedded."""

    rows: int
    reused: int
    embedded: int


class VectorStore:
    """An opened (or freshly built) vector store; immutable once built."""

    def __init__(
        self,
        *,
        directory: Path,
        stamp: Mapping[str, Any],
        identity: EmbeddingIdentity,
        chunk_ids: Sequence[str],
        vectors: np.ndarray,
        stats: BuildStats | None = None,
        ann: Mapping[str, Any] | None = None,
    ) -> None:
        self.directory = directory
        self.stamp = dict(stamp)
        self.identity = identity
        self.chunk_ids: tuple[str, ...] = tuple(chunk_ids)
        self.vectors = vectors
        self.stats = stats
        self._row_of = {cid: i for i, cid in enumerate(self.chunk_ids)}
        self.ann_entry = dict(ann) if ann is not None else None
        """``meta.json``'s ``ann`` entry when the store has an approximate index."""
        self._ann: AnnIndex | None = None
        self._ann_lock = threading.Lock()

    def __len__(self) -> int:
        return len(self.chunk_ids)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._row_of

    def vector(self, chunk_id: str) -> np.ndarray | None:
        """The stored vector of ``chunk_id`` (a read-only view), or ``None``."""
        row = self._row_of.get(chunk_id)
        return None if row is None else self.vectors[row]

    # ------------------------------------------------------------------ build

    @classmethod
    def build(
        cls,
        directory: str | Path,
        stamp: Mapping[str, Any],
        identity: EmbeddingIdentity,
        chunk_ids: Sequence[str],
        texts: Sequence[str],
        provider: EmbeddingProvider,
        *,
        previous: VectorStore | None = None,
        progress: Progress | None = None,
        batch_size: int = EMBED_BATCH,
        ann: AnnParams | None = None,
    ) -> VectorStore:
        """Embed ``texts`` (document kind) and write a store for ``chunk_ids``.

        Chunks already in ``previous`` (same ``chunk_id``, same identity) keep
        their vectors: a chunk id names an exact span of exact file content, so
        its text is unchanged. Only the rest are sent to ``provider``, in
        batches of ``batch_size``; ``progress`` hears about each batch. With
        ``ann`` the store also gets an approximate index (:mod:`.ann`).
        """
        directory = Path(directory)
        _check_build_inputs(identity, chunk_ids, texts, provider, batch_size)
        order = sorted(range(len(chunk_ids)), key=chunk_ids.__getitem__)
        ids = [chunk_ids[i] for i in order]
        vectors = np.empty((len(ids), identity.dimension), dtype=np.float32)
        reuse = previous if previous is not None and previous.identity == identity else None
        todo: list[int] = []
        for row, cid in enumerate(ids):
            old = reuse.vector(cid) if reuse is not None else None
            if old is None:
                todo.append(row)
            else:
                vectors[row] = old
        _embed_rows(vectors, todo, [texts[order[r]] for r in todo], provider, batch_size, progress)
        stats = BuildStats(rows=len(ids), reused=len(ids) - len(todo), embedded=len(todo))
        faults.point("derived.vectors")
        vector_files.write_atomically(directory, dict(stamp), identity, ids, vectors, ann)
        vectors.flags.writeable = False
        entry = vector_files.read_meta(directory).get("ann") if ann is not None else None
        return cls(
            directory=directory,
            stamp=stamp,
            identity=identity,
            chunk_ids=ids,
            vectors=vectors,
            stats=stats,
            ann=entry,
        )

    # ------------------------------------------------------------------- open

    @classmethod
    def open(
        cls,
        directory: str | Path,
        expected_stamp: Mapping[str, Any],
        identity: EmbeddingIdentity,
    ) -> VectorStore:
        """Load a store, failing closed unless it matches the stamp and identity exactly."""
        directory = Path(directory)
        meta = vector_files.read_meta(directory)
        vector_files.check_stamp(directory, meta, expected_stamp)
        stored = vector_files.check_identity(directory, meta, identity)
        ids, vectors = vector_files.load(directory, meta, stored.dimension)
        vector_files.check_rows(directory, meta, ids, vectors)
        vectors.flags.writeable = False
        return cls(
            directory=directory,
            stamp=meta["stamp"],
            identity=stored,
            chunk_ids=ids,
            vectors=vectors,
            ann=meta.get("ann"),
        )

    def approximate(self) -> AnnIndex | None:
        """The store's approximate index, opened (and checked) once; ``None`` without one."""
        if self.ann_entry is None:
            return None
        with self._ann_lock:
            if self._ann is None:
                self._ann = AnnIndex.open(
                    self.directory / f"{vector_files.TABLE}.lance", self.ann_entry,
                    rows=len(self), stamp=self.stamp, identity=self.identity.to_dict())
        return self._ann

    # ----------------------------------------------------------------- search

    def check_identity(self, identity: EmbeddingIdentity) -> None:
        """Fail closed unless query vectors from ``identity`` are comparable with this store."""
        if identity != self.identity:
            raise IndexMismatchError(
                vector_files.identity_message(self.directory, self.identity, identity))

    def search(
        self,
        query_vector: np.ndarray | Sequence[float],
        top_k: int,
        score_threshold: float | None = None,
        *,
        exact: bool = False,
    ) -> list[tuple[str, float]]:
        """``[(chunk_id, cosine)]``, best first; ties broken by ``chunk_id``.

        Exact over every vector, unless the store has an approximate index and
        ``exact`` is false: then over the index's candidates, still scored exactly
        (:mod:`.ann`). ``score_threshold`` drops hits whose cosine similarity is
        below it, so the result may be empty (abstention).
        """
        query = _query_vector(query_vector, self.identity.dimension)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise UsageError(f"top_k must be a positive integer, got {top_k!r}")
        if score_threshold is not None and not np.isfinite(score_threshold):
            raise UsageError(f"score_threshold must be a finite number, got {score_threshold!r}")
        if not len(self):
            return []
        index = None if exact else self.approximate()
        if index is None:
            scores = _cosines(self.vectors, query)
            rows = _top_rows(scores, top_k)
            hits = [(self.chunk_ids[r], float(scores[r])) for r in rows]
        else:
            hits = self._rescored(index.candidates(query, top_k), query, top_k)
        if score_threshold is not None:
            hits = [hit for hit in hits if hit[1] >= score_threshold]
        return hits

    def _rescored(self, candidates: list[str], query: np.ndarray,
                  top_k: int) -> list[tuple[str, float]]:
        """The ``top_k`` of ``candidates`` by exact cosine, ties in ``chunk_id`` order."""
        try:
            rows = np.array(sorted({self._row_of[cid] for cid in candidates}), dtype=np.int64)
        except KeyError as exc:
            raise IndexMismatchError(f"the ANN index of vector store {self.directory} returned "
                                     f"chunk {exc} the store does not hold; re-index") from exc
        scores = _cosines(self.vectors[rows], query)
        return [(self.chunk_ids[rows[r]], float(scores[r])) for r in _top_rows(scores, top_k)]

    def cosines(self, query_vector: np.ndarray | Sequence[float]) -> np.ndarray:
        """The query's cosine to every stored vector, in row (``chunk_ids``) order."""
        return _cosines(self.vectors, _query_vector(query_vector, self.identity.dimension))

    def query(
        self,
        provider: EmbeddingProvider,
        text: str,
        top_k: int,
        score_threshold: float | None = None,
    ) -> list[tuple[str, float]]:
        """Embed ``text`` as a query with ``provider`` (checked against the store) and search."""
        self.check_identity(provider.identity)
        vector = provider.embed([text], kind="query")[0]
        return self.search(vector, top_k, score_threshold)


# ---------------------------------------------------------------------- kernels


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Dot products of unit rows with a unit query, in numpy's own single-threaded loop.

    ``np.einsum`` rather than ``vectors @ query``: the BLAS matrix-vector product
    wakes a thread pool that then competes with the query's embedding model for
    the same cores, and its summation order may depend on the thread count.
    """
    scores: np.ndarray = np.einsum("ij,j->i", vectors, query)
    return scores


def _top_rows(scores: np.ndarray, top_k: int) -> list[int]:
    """Rows of the ``top_k`` highest scores; equal scores in row (= chunk_id) order."""
    n = scores.shape[0]
    if top_k < n:
        kth = np.partition(scores, n - top_k)[n - top_k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    ordered = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [int(r) for r in ordered[:top_k]]


def _query_vector(query_vector: np.ndarray | Sequence[float], dimension: int) -> np.ndarray:
    query = np.asarray(query_vector, dtype=np.float32)
    if query.ndim == 2 and query.shape[0] == 1:
        query = query[0]
    if query.ndim != 1 or query.shape[0] != dimension:
        raise IndexMismatchError(
            f"query vector has shape {query.shape}, but the store holds {dimension}-d vectors; "
            f"embed the query with the store's provider and model"
        )
    normalised: np.ndarray = l2_normalize(query[None, :])[0]
    return normalised


def _check_build_inputs(
    identity: EmbeddingIdentity,
    chunk_ids: Sequence[str],
    texts: Sequence[str],
    provider: EmbeddingProvider,
    batch_size: int,
) -> None:
    if len(chunk_ids) != len(texts):
        raise UsageError(f"{len(chunk_ids)} chunk ids but {len(texts)} texts")
    if len(set(chunk_ids)) != len(chunk_ids):
        raise UsageError("chunk ids must be unique")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise UsageError(f"batch_size must be a positive integer, got {batch_size!r}")
    if not identity.normalized:
        raise UsageError("groundkit stores L2-normalised vectors only (identity.normalized=False)")
    if chunk_ids and provider.identity != identity:
        raise IndexMismatchError(vector_files.identity_message(None, identity, provider.identity))


def _embed_rows(
    vectors: np.ndarray,
    rows: list[int],
    texts: list[str],
    provider: EmbeddingProvider,
    batch_size: int,
    progress: Progress | None,
) -> None:
    starts = range(0, len(rows), batch_size)
    if progress is not None:  # says how many before the first batch is sent
        progress(0, len(rows), "embedding")
    # A provider spreading batches over workers (collection.ray_executor) takes them all.
    spread = getattr(provider, "embed_batches", None)
    matrices = (spread((texts[s : s + batch_size] for s in starts), kind="document")
                if spread is not None
                else (provider.embed(texts[s : s + batch_size], kind="document") for s in starts))
    for start, matrix in zip(starts, matrices, strict=True):
        batch = texts[start : start + batch_size]
        if matrix.shape != (len(batch), vectors.shape[1]):
            raise IndexMismatchError(
                f"the provider returned shape {matrix.shape} for {len(batch)} texts; "
                f"expected ({len(batch)}, {vectors.shape[1]})"
            )
        vectors[rows[start : start + batch_size]] = l2_normalize(matrix)
        if progress is not None:
            progress(min(start + batch_size, len(rows)), len(rows), "embedding")
