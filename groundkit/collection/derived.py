"""Derived indexes built for each generation, and their consistency checks.

Derived indexes live under ``gen-<N>/`` and are stamped with the collection
and generation they were built from; opening one with another stamp fails
closed (:class:`~groundkit.errors.IndexMismatchError`).

* ``gen-<N>/rowids.npy`` — the generation's chunks in canonical order (store
  row ids); position ``i`` is document ``i`` of every derived index.
* ``gen-<N>/bm25/`` — the BM25 index (:mod:`groundkit.retrieval.bm25`).
* ``gen-<N>/vectors/`` — dense vectors, when the collection has an embedding.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import store
from .analysis import DEFAULT_PRESET, Analyzer
from .errors import GroundkitError, IndexMismatchError
from .indexer import DerivedBuilder, Progress
from .retrieval.bm25 import BM25Index, BM25Params

if TYPE_CHECKING:
    from .collection import Collection
    from .embeddings import EmbeddingIdentity
    from .retrieval.dense import VectorStore

ROWIDS = "rowids.npy"


def stamp(settings: dict[str, Any], generation: int) -> dict[str, Any]:
    return {"collection": settings.get("name", ""), "generation": generation}


def analyzer_of(settings: dict[str, Any]) -> Analyzer:
    data = settings.get("analyzer")
    return Analyzer.from_dict(data) if data else Analyzer.preset(DEFAULT_PRESET)


def bm25_params_of(settings: dict[str, Any]) -> BM25Params:
    data = settings.get("bm25")
    return BM25Params.from_dict(data) if data else BM25Params()


def build_rowids(conn: sqlite3.Connection, generation: int, gen_dir: Path,
                 settings: dict[str, Any]) -> None:
    rowids = np.asarray(store.generation_rowids(conn, generation), dtype=np.int64)
    tmp = gen_dir / f".{ROWIDS}.tmp"
    with open(tmp, "wb") as fh:
        np.save(fh, rowids)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, gen_dir / ROWIDS)


def build_bm25(conn: sqlite3.Connection, generation: int, gen_dir: Path,
               settings: dict[str, Any]) -> None:
    texts = (c.text for c in store.iter_generation_chunks(conn, generation))
    index = BM25Index.build_from_texts(texts, analyzer_of(settings), bm25_params_of(settings))
    index.save(gen_dir / "bm25", stamp(settings, generation))


def vector_builder(progress: Progress | None = None) -> DerivedBuilder:
    """Build ``gen-<N>/vectors`` when the settings name an embedding model.

    Vectors of chunks already embedded in the previous generation (same chunk
    id, same embedding identity) are reused; only new chunks are embedded.
    """

    def build(conn: sqlite3.Connection, generation: int, gen_dir: Path,
              settings: dict[str, Any]) -> None:
        embedding = settings.get("embedding")
        if not embedding:
            return
        from .embeddings import make_provider
        from .retrieval.dense import VectorStore

        provider = make_provider(embedding["spec"], **embedding.get("options", {}))
        chunks = list(store.iter_generation_chunks(conn, generation))
        previous = _previous_vectors(conn, gen_dir, settings, provider.identity)
        embed_progress = None
        if progress is not None:
            def embed_progress(done: int, total: int, label: str) -> None:
                progress(done, total, "embedding " + label)
        try:
            VectorStore.build(gen_dir / "vectors", stamp(settings, generation),
                              provider.identity, [c.chunk_id for c in chunks],
                              [c.text for c in chunks], provider, previous=previous,
                              progress=embed_progress)
        finally:
            provider.close()

    return build


def _previous_vectors(conn: sqlite3.Connection, gen_dir: Path, settings: dict[str, Any],
                      identity: EmbeddingIdentity) -> VectorStore | None:
    from .retrieval.dense import VectorStore

    previous = store.current_generation(conn)
    if previous is None:
        return None
    try:
        return VectorStore.open(gen_dir.parent / f"gen-{previous}" / "vectors",
                                stamp(settings, previous), identity)
    except GroundkitError:
        return None  # nothing reusable: embed everything


def default_builders(progress: Progress | None = None) -> list[DerivedBuilder]:
    """The derived indexes every generation gets; vectors when an embedding is configured."""
    return [build_rowids, build_bm25, vector_builder(progress)]


def load_vectors(coll: Collection, identity: EmbeddingIdentity | None) -> VectorStore:
    from .embeddings import EmbeddingIdentity
    from .retrieval.dense import META, VectorStore

    directory = coll.generation_dir / "vectors"
    if identity is None:  # integrity checks: take the identity the store records
        try:
            meta = json.loads((directory / META).read_text("utf-8"))
            identity = EmbeddingIdentity.from_dict(meta["identity"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexMismatchError(f"vector store {directory} is unreadable ({exc})") from exc
    vectors = VectorStore.open(directory, stamp(coll.config, coll.generation), identity)
    if sorted(vectors.chunk_ids) != sorted(coll.chunk_ids()):
        raise IndexMismatchError(
            f"vector store {directory} does not hold exactly the generation's chunks; re-index"
        )
    return vectors


def load_rowids(gen_dir: Path, expected: int) -> npt.NDArray[np.int64]:
    try:
        rowids = np.load(gen_dir / ROWIDS, mmap_mode="r")
    except (OSError, ValueError) as exc:
        raise IndexMismatchError(
            f"chunk order file {gen_dir / ROWIDS} is missing or damaged ({exc}); "
            "re-run grk index to rebuild"
        ) from exc
    if rowids.ndim != 1 or len(rowids) != expected:
        raise IndexMismatchError(
            f"chunk order file {gen_dir / ROWIDS} lists {len(rowids)} chunks, the store has "
            f"{expected}; re-run grk index to rebuild"
        )
    return np.asarray(rowids, dtype=np.int64)


def load_bm25(coll: Collection) -> BM25Index:
    settings = coll.config
    index = BM25Index.load(coll.generation_dir / "bm25", stamp(settings, coll.generation),
                           analyzer=analyzer_of(settings))
    if index.n_docs != coll.chunk_count:
        raise IndexMismatchError(
            f"BM25 index of {coll.name!r} has {index.n_docs} documents, the store has "
            f"{coll.chunk_count} chunks; re-run grk index to rebuild"
        )
    return index


def check_derived(coll: Collection) -> list[str]:
    """Problems with the current generation's derived indexes."""
    problems = []
    if not coll.generation_dir.is_dir():
        return [f"derived index folder {coll.generation_dir} is missing"]
    try:
        rowids = load_rowids(coll.generation_dir, coll.chunk_count)
        if list(rowids) != store.generation_rowids(coll.conn, coll.generation):
            problems.append("chunk order file disagrees with the store")
    except GroundkitError as exc:
        problems.append(str(exc))
    try:
        load_bm25(coll)
    except GroundkitError as exc:
        problems.append(str(exc))
    if coll.embedding_spec() is not None:
        try:
            coll.vectors()
        except GroundkitError as exc:
            problems.append(str(exc))
    return problems
