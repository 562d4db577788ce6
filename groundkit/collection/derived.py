"""Derived indexes built for each generation: how they are built and loaded.

Derived indexes live under ``gen-<N>/`` and are stamped with the collection
and generation they were built from; loading one with another stamp fails
closed (:class:`~groundkit.errors.IndexMismatchError`).

* ``gen-<N>/rowids.npy`` — the generation's chunks in canonical order (store
  row ids); position ``i`` is document ``i`` of every derived index.
* ``gen-<N>/bm25/`` — the BM25 index (:mod:`groundkit.retrieval.bm25`); with the
  opt-in ``segments`` setting, segments and ``bm25-order.npy`` (:mod:`.bm25_segmented`).
* ``gen-<N>/vectors/`` — dense vectors, when the collection has an embedding.

Every file under ``gen-<N>/`` is checksummed when the generation is published
(:mod:`.integrity`); a previous generation's index is reused only when intact.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from .. import faults, store
from ..errors import GroundkitError, IndexMismatchError
from ..retrieval.bm25 import BM25Index, BM25Params
from ..text.analysis import DEFAULT_PRESET, Analyzer
from . import bm25_segmented, integrity, pace
from .indexer import DerivedBuilder, Progress

if TYPE_CHECKING:
    from ..embeddings import EmbeddingIdentity, EmbeddingProvider
    from ..model import Chunk
    from ..retrieval.vectors import VectorStore
    from .executor import Analysed, Executor

ROWIDS = "rowids.npy"
BM25 = "bm25"
VECTORS = "vectors"


def stamp(settings: Mapping[str, Any], generation: int) -> dict[str, Any]:
    return {"collection": settings.get("name", ""), "generation": generation}


def analyzer_of(settings: Mapping[str, Any]) -> Analyzer:
    data = settings.get("analyzer")
    return Analyzer.from_dict(data) if data else Analyzer.preset(DEFAULT_PRESET)


def bm25_params_of(settings: Mapping[str, Any]) -> BM25Params:
    data = settings.get("bm25")
    return BM25Params.from_dict(data) if data else BM25Params()


# -- builders ------------------------------------------------------------------------


def build_rowids(conn: sqlite3.Connection, generation: int, gen_dir: Path,
                 settings: dict[str, Any]) -> None:
    rowids = np.asarray(store.generation_rowids(conn, generation), dtype=np.int64)
    tmp = gen_dir / f".{ROWIDS}.tmp"
    with open(tmp, "wb") as fh:
        np.save(fh, rowids)
        fh.flush()
        os.fsync(fh.fileno())
    faults.point("derived.rowids")
    os.replace(tmp, gen_dir / ROWIDS)


UPDATE_AT_MOST = 0.25
"""Update the previous BM25 index (rather than build anew) when at most this share of the
generation's chunks is new: beyond it a full build is as fast."""


def build_bm25(conn: sqlite3.Connection, generation: int, gen_dir: Path,
               settings: dict[str, Any]) -> None:
    """Write ``gen-<N>/bm25``, updating the previous generation's index when that pays."""
    _write_bm25(conn, generation, gen_dir, settings, reuse=True)


def rebuild_bm25(conn: sqlite3.Connection, generation: int, gen_dir: Path,
                 settings: dict[str, Any]) -> None:
    """Write ``gen-<N>/bm25`` from the store's chunks alone (``grk index --rebuild``)."""
    _write_bm25(conn, generation, gen_dir, settings, reuse=False)


def bm25_builder(executor: Executor | None = None, *, reuse: bool = True) -> DerivedBuilder:
    """:func:`build_bm25` (``reuse``) or :func:`rebuild_bm25`, building from the term bags
    ``executor``'s tasks analysed (:meth:`.executor.Executor.analysed`) where it has them."""
    if executor is None:
        return build_bm25 if reuse else rebuild_bm25

    def build(conn: sqlite3.Connection, generation: int, gen_dir: Path,
              settings: dict[str, Any]) -> None:
        _write_bm25(conn, generation, gen_dir, settings, reuse=reuse,
                    analysed=executor.analysed())

    return build


def _write_bm25(conn: sqlite3.Connection, generation: int, gen_dir: Path,
                settings: dict[str, Any], *, reuse: bool, analysed: Analysed | None = None,
                ) -> None:
    def full() -> BM25Index:
        analyzer = analyzer_of(settings)
        corpus = None if analysed is None else analysed.corpus(conn, generation, analyzer)
        if corpus is None:
            corpus = (c.text for c in store.iter_generation_chunks(conn, generation))
        return BM25Index.build(corpus, analyzer, bm25_params_of(settings))

    if bm25_segmented.enabled(settings):
        rowids = _chunk_order(conn, gen_dir.parent, generation, written=True)
        previous = _segmented_previous(conn, settings, gen_dir.parent) if reuse else None
        bm25_segmented.write(conn, gen_dir, rowids, full, previous=previous,
                             at_most=UPDATE_AT_MOST)
        return
    index = _updated_bm25(conn, generation, settings, gen_dir.parent) if reuse else None
    (index or full()).save(gen_dir / BM25, stamp(settings, generation))


def _segmented_previous(conn: sqlite3.Connection, settings: dict[str, Any],
                        directory: Path) -> Path | None:
    """The previous generation's folder when its BM25 segments can be extended: segmented
    too, with the same analyzer and parameters, its segment files intact."""
    previous = store.current_generation(conn)
    if previous is None:
        return None
    old_settings = store.generation_config(conn, previous)
    if (not bm25_segmented.enabled(old_settings)
            or analyzer_of(old_settings) != analyzer_of(settings)
            or bm25_params_of(old_settings) != bm25_params_of(settings)
            or not integrity.intact(conn, directory, previous, BM25 + "/")
            or not integrity.intact(conn, directory, previous, bm25_segmented.ORDER)):
        return None
    return directory / f"gen-{previous}"


def _updated_bm25(conn: sqlite3.Connection, generation: int, settings: dict[str, Any],
                  directory: Path) -> BM25Index | None:
    """The previous generation's index updated for this one's chunks, when that pays.

    Equal to a full build, array for array (:mod:`groundkit.retrieval.bm25_update`);
    ``None`` (build anew) without a usable previous index or when much changed.
    """
    from ..retrieval.bm25_update import position_map, updated

    previous = store.current_generation(conn)
    if previous is None:
        return None
    old_settings = store.generation_config(conn, previous)
    if (bm25_segmented.enabled(old_settings)
            or analyzer_of(old_settings) != analyzer_of(settings)
            or bm25_params_of(old_settings) != bm25_params_of(settings)):
        return None
    new_rowids = _chunk_order(conn, directory, generation, written=True)
    old_rowids = _chunk_order(conn, directory, previous, written=False)
    old_to_new, added = position_map(old_rowids, new_rowids)
    if len(added) > UPDATE_AT_MOST * max(len(new_rowids), 1):
        return None
    if not integrity.intact(conn, directory, previous, BM25 + "/"):
        return None  # damaged since it was published: build anew
    try:
        index = load_bm25(directory / f"gen-{previous}", old_settings, previous,
                          len(old_rowids), str(settings.get("name", "")))
    except GroundkitError:
        return None  # nothing reusable: build anew
    texts = [c.chunk.text for c in store.chunks_by_rowid(conn, new_rowids[added].tolist())]
    return updated(index, old_to_new, added, texts)


def _chunk_order(conn: sqlite3.Connection, directory: Path, generation: int, *,
                 written: bool) -> npt.NDArray[np.int64]:
    """The generation's chunk order: its ``rowids.npy`` when this run wrote it (``written``)
    or as published (checksum intact), else from the store (1M rows: ~1 s)."""
    path = directory / f"gen-{generation}" / ROWIDS
    usable = (path.is_file() if written else
              store.derived_files(conn, generation) is not None
              and integrity.intact(conn, directory, generation, ROWIDS))
    if usable:
        with contextlib.suppress(OSError, ValueError):
            rowids = np.load(path, allow_pickle=False)
            if rowids.ndim == 1 and rowids.dtype == np.int64:
                return np.asarray(rowids)
    return np.asarray(store.generation_rowids(conn, generation), dtype=np.int64)


def vector_builder(progress: Progress | None = None, *, reuse: bool = True,
                   executor: Executor | None = None) -> DerivedBuilder:
    """Build ``gen-<N>/vectors`` when the settings name an embedding model.

    Vectors of chunks already embedded in the previous generation (same chunk
    id, same embedding identity, files intact) are reused and only new chunks are
    embedded; with ``reuse=False`` (``grk index --rebuild``) every chunk is embedded.
    Above :data:`~groundkit.retrieval.ann.THRESHOLD` chunks (or as ``settings["ann"]``
    says: ``on``, ``off``) the store also gets an approximate index, built anew.
    With an ``executor`` the batches are embedded where it runs work (Ray actors).
    In a home's collection the run's pace is remembered for the next estimate
    (:mod:`.pace`).
    """

    def build(conn: sqlite3.Connection, generation: int, gen_dir: Path,
              settings: dict[str, Any]) -> None:
        embedding = settings.get("embedding")
        if not embedding:
            return
        from ..retrieval import ann
        from ..retrieval.vectors import VectorStore

        provider = (document_provider(embedding) if executor is None
                    else executor.embedder(embedding, document_provider))
        chunks = list(store.iter_generation_chunks(conn, generation))
        previous = (_previous_vectors(conn, gen_dir, settings, provider.identity)
                    if reuse else None)
        if previous is not None:  # an edited or re-chunked file: identical texts keep vectors
            from ..embeddings.reuse import ReusingProvider

            provider = ReusingProvider(provider, _vectors_by_text(conn, previous, chunks))
        collections = gen_dir.parent.parent  # <home>/collections/NAME/gen-N
        timed = (pace.timed(progress, collections.parent, pace.key(
                     provider.identity, "this machine" if executor is None else "a cluster"))
                 if collections.name == "collections" else progress)
        try:
            VectorStore.build(gen_dir / VECTORS, stamp(settings, generation),
                              provider.identity, [c.chunk_id for c in chunks],
                              [c.text for c in chunks], provider, previous=previous,
                              progress=timed,
                              ann=ann.choose(str(settings.get("ann", "auto")), len(chunks)))
        finally:
            provider.close()

    return build


def _vectors_by_text(conn: sqlite3.Connection, previous: VectorStore,
                     chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
    """The previous generation's vectors of retired chunks whose text a new chunk repeats."""
    ids = {c.chunk_id for c in chunks}
    wanted = {c.text for c in chunks if c.chunk_id not in previous}
    found: dict[str, np.ndarray] = {}
    for chunk_id in previous.chunk_ids if wanted else ():
        if chunk_id in ids:
            continue
        stored = store.lookup_chunk(conn, chunk_id)
        vector = previous.vector(chunk_id)
        if stored is not None and vector is not None and stored.chunk.text in wanted:
            found[stored.chunk.text] = vector
    return found


def _previous_vectors(conn: sqlite3.Connection, gen_dir: Path, settings: dict[str, Any],
                      identity: EmbeddingIdentity) -> VectorStore | None:
    from ..retrieval.vectors import VectorStore

    previous = store.current_generation(conn)
    if previous is None or not integrity.intact(conn, gen_dir.parent, previous, VECTORS + "/"):
        return None  # nothing, or nothing intact, to reuse: embed everything
    try:
        return VectorStore.open(gen_dir.parent / f"gen-{previous}" / VECTORS,
                                stamp(settings, previous), identity)
    except GroundkitError:
        return None  # nothing reusable: embed everything


def default_builders(progress: Progress | None = None, *, rebuild: bool = False,
                     executor: Executor | None = None) -> list[DerivedBuilder]:
    """The derived indexes every generation gets; vectors when an embedding is configured.

    With ``rebuild`` nothing is carried over from the previous generation's derived
    files: BM25 is built and every chunk embedded from the store (``--rebuild``).
    """
    if rebuild:
        return [build_rowids, bm25_builder(executor, reuse=False),
                vector_builder(progress, reuse=False, executor=executor)]
    return [build_rowids, bm25_builder(executor), vector_builder(progress, executor=executor)]


# -- loaders -------------------------------------------------------------------------


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


def load_bm25(gen_dir: Path, settings: Mapping[str, Any], generation: int, chunk_count: int,
              name: str) -> BM25Index:
    index = BM25Index.load(gen_dir / BM25, stamp(settings, generation),
                           analyzer=analyzer_of(settings))
    if index.n_docs != chunk_count:
        raise IndexMismatchError(
            f"BM25 index of {name!r} has {index.n_docs} documents, the store has "
            f"{chunk_count} chunks; re-run grk index to rebuild"
        )
    return index


def load_vectors(directory: Path, settings: Mapping[str, Any], generation: int,
                 chunk_ids: Sequence[str], identity: EmbeddingIdentity | None) -> VectorStore:
    """The vector store at ``directory``; with ``identity=None``, the identity it records."""
    from ..embeddings import EmbeddingIdentity
    from ..retrieval.vector_files import META
    from ..retrieval.vectors import VectorStore

    if identity is None:  # integrity checks: take the identity the store records
        try:
            meta = json.loads((directory / META).read_text("utf-8"))
            identity = EmbeddingIdentity.from_dict(meta["identity"])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexMismatchError(f"vector store {directory} is unreadable ({exc})") from exc
    vectors = VectorStore.open(directory, stamp(settings, generation), identity)
    if sorted(vectors.chunk_ids) != sorted(chunk_ids):
        raise IndexMismatchError(
            f"vector store {directory} does not hold exactly the generation's chunks; re-index"
        )
    return vectors


def document_provider(embedding: Mapping[str, Any]) -> EmbeddingProvider:
    """The provider a recorded embedding names, behind its cache when one is set."""
    return _provider(embedding, dict(embedding.get("options", {})))


def query_provider(embedding: Mapping[str, Any]) -> EmbeddingProvider:
    """The query-side provider for a recorded embedding (one torch thread for local models)."""
    options = dict(embedding.get("options", {}))
    if str(embedding["spec"]).startswith("local"):
        # One torch thread on the query path: measured faster on 2 cores under load,
        # and no BLAS/torch pool contention (bench/bench_dense.py --query-threads).
        options.setdefault("threads", 1)
    return _provider(embedding, options)


def _provider(embedding: Mapping[str, Any], options: dict[str, Any]) -> EmbeddingProvider:
    from ..embeddings import make_provider
    from ..embeddings.cache import CachedProvider

    provider = make_provider(embedding["spec"], **options)
    cache = embedding.get("cache")
    return CachedProvider(provider, cache) if cache else provider
