"""One published generation of a collection, opened read-only, with its derived indexes.

A :class:`Snapshot` pins the generation that was current when it was opened: a
re-index published meanwhile is seen only by snapshots opened after it. Its
derived indexes (chunk order, BM25, vectors, the query embedder) are loaded on
first use and kept; each load checks the generation stamp and fails closed
(:class:`~groundkit.errors.IndexMismatchError`). It implements the retrieval
layer's :class:`~groundkit.retrieval.base.Resources`, and it is the one place a
citation is verified, with the collection's own size limit.

While open it holds a shared ``flock`` on its ``gen-<N>/`` folder, so garbage
collection (:mod:`.gc`) keeps that generation until :meth:`Snapshot.close`.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
from collections.abc import Callable, Sequence
from functools import cached_property, wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from .. import store
from ..errors import (
    CollectionBusyError,
    CollectionNotFoundError,
    GroundkitError,
    IndexMismatchError,
)
from ..model import Chunk, Duplicate, Verdict
from ..sources import DEFAULT_MAX_BYTES
from ..text.standing import superseded
from ..verify import verify, verify_all
from . import bm25_segmented, derived, integrity
from .home import Home, collection_dir, list_collections, resolve_home

if TYPE_CHECKING:
    from ..embeddings import EmbeddingIdentity
    from ..retrieval.bm25 import BM25Index
    from ..retrieval.dense import QueryEmbedder
    from ..retrieval.vectors import VectorStore


T = TypeVar("T")
OPEN_ATTEMPTS = 5


def _pin(folder: Path) -> int | None:
    """A descriptor of ``folder`` holding a shared flock, or None when it cannot be opened.

    A missing or unreadable folder is left to the loaders, which fail with a clear error.
    """
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while gc is removing this generation
    except OSError:
        os.close(fd)
        return None
    return fd


def _still_stored(conn: sqlite3.Connection, generation: int) -> bool:
    row = conn.execute("SELECT 1 FROM generations WHERE id = ?", (generation,)).fetchone()
    return row is not None


def once(method: Callable[[Snapshot], T]) -> Callable[[Snapshot], T]:
    """Cache a no-argument method's result on the instance (loaded on first call)."""
    slot = "_" + method.__name__

    @wraps(method)
    def get(self: Snapshot) -> T:
        if slot not in self.__dict__:
            self.__dict__[slot] = method(self)
        return self.__dict__[slot]  # type: ignore[no-any-return]

    return get


class Snapshot:
    """A read-only handle on one generation (see the module docstring)."""

    def __init__(self, name: str, directory: Path, conn: sqlite3.Connection,
                 generation: int, pin: int | None = None) -> None:
        self.name = name
        self.directory = directory
        self.conn = conn
        self.generation = generation
        self._pin = pin
        """A descriptor of ``gen-<N>/`` holding a shared flock: gc leaves the generation be."""
        self._vectors: dict[EmbeddingIdentity | None, VectorStore] = {}
        self.memo: dict[str, Any] = {}
        """Values derived from this generation by the modules that own them, by their key."""

    @classmethod
    def open(cls, name: str, home: Home = None) -> Snapshot:
        directory = collection_dir(name, home)
        if not (directory / store.STORE_FILE).is_file():
            known = ", ".join(list_collections(home)) or "none yet"
            raise CollectionNotFoundError(
                f"no collection named {name!r} in {resolve_home(home)} (known: {known}); "
                f"create it with: grk index PATH --collection {name}"
            )
        for _ in range(OPEN_ATTEMPTS):
            conn, pin = store.connect(directory, readonly=True), None
            try:
                generation = store.current_generation(conn)
                if generation is None:
                    raise CollectionNotFoundError(
                        f"collection {name!r} has no published generation yet")
                pin = _pin(directory / f"gen-{generation}")
                if _still_stored(conn, generation):
                    return cls(name, directory, conn, generation, pin)
            except BaseException:
                if pin is not None:
                    os.close(pin)
                conn.close()
                raise
            # Collected between reading current_generation and pinning it: read again.
            if pin is not None:
                os.close(pin)
            conn.close()
        raise CollectionBusyError(
            f"collection {name!r} kept being re-indexed and collected while opening it; "
            "try again")

    def close(self) -> None:
        """Release the connection and the generation (gc may then remove it); idempotent."""
        if "_query_embedder" in self.__dict__:
            self.query_embedder().close()
        for key in [k for k in self.memo if k.startswith("reranker:")]:  # .rerankers
            self.memo.pop(key).close()
        self.conn.close()
        pin, self._pin = self._pin, None
        if pin is not None:
            os.close(pin)

    # -- the generation -------------------------------------------------------------

    @cached_property
    def config(self) -> dict[str, Any]:
        """The generation's settings, as the indexer recorded them."""
        return store.generation_config(self.conn, self.generation)

    @property
    def generation_dir(self) -> Path:
        return self.directory / f"gen-{self.generation}"

    @property
    def max_bytes(self) -> int:
        """The collection's file size limit: files over it are neither indexed nor verified."""
        return int(self.config.get("max_bytes", DEFAULT_MAX_BYTES))

    @cached_property
    def chunk_count(self) -> int:
        return store.generation_size(self.conn, self.generation)

    def chunks(self) -> list[Chunk]:
        """Every chunk of the generation, in canonical order."""
        return list(store.iter_generation_chunks(self.conn, self.generation))

    @cached_property
    def _standings(self) -> dict[str, str | None]:
        return {}

    def superseded(self, doc_id: str) -> str | None:
        """The evidence that a document of this generation is superseded, or ``None``
        (:mod:`groundkit.text.standing`; cached). Recorded when it was indexed; for a
        document indexed before standings were recorded, worked out now from its path and
        first chunk (its file's metadata is not read until it is re-indexed)."""
        if doc_id not in self._standings:
            recorded = store.document_standing(self.conn, self.generation, doc_id)
            if recorded is None:
                head = store.document_head(self.conn, self.generation, doc_id)
                recorded = superseded(doc_id, head) or ""
            self._standings[doc_id] = recorded or None
        return self._standings[doc_id]

    def lookup(self, chunk_id: str) -> store.StoredChunk | None:
        """A stored chunk by id, from any generation still in the store."""
        return store.lookup_chunk(self.conn, chunk_id)

    def stored_chunks(self, positions: Sequence[int]) -> list[store.StoredChunk]:
        """The chunks at canonical positions ``positions``, in that order."""
        rowids = self.rowids()
        return store.chunks_by_rowid(self.conn, [int(rowids[p]) for p in positions])

    def places(self, positions: Sequence[int]) -> list[tuple[Duplicate, str]]:
        """Where the chunks at ``positions`` lie, and their texts, in that order
        (:func:`..store.places_by_rowid`: cheaper than :meth:`stored_chunks`)."""
        rowids = self.rowids()
        return store.places_by_rowid(self.conn, [int(rowids[p]) for p in positions])

    def verify(self, stored: store.StoredChunk) -> Verdict:
        """Re-read a stored chunk's span now, with this collection's size limit."""
        return verify(stored, max_bytes=self.max_bytes)

    def verify_all(self, stored: Sequence[store.StoredChunk]) -> list[Verdict]:
        """:meth:`verify` for each, reading each file once (:func:`..verify.verify_all`)."""
        return verify_all(stored, max_bytes=self.max_bytes)

    # -- derived indexes (retrieval.base.Resources) ---------------------------------

    @once
    def verified(self) -> None:
        """The generation's derived files are as published (:func:`.integrity.verify_on_open`).

        Run once, before any derived index is loaded; fails closed with an
        :class:`~groundkit.errors.IntegrityError` naming ``grk check`` and the fix.
        """
        integrity.verify_on_open(self.conn, self.directory, self.generation, self.name)

    @once
    def rowids(self) -> npt.NDArray[np.int64]:
        """Store row ids in canonical order: position i is document i of every index."""
        self.verified()
        with integrity.hinted(self.name):
            return derived.load_rowids(self.generation_dir, self.chunk_count)

    @once
    def chunk_ids(self) -> Sequence[str]:
        return [c.chunk_id for c in self.chunks()]

    @once
    def positions(self) -> dict[str, int]:
        """chunk id -> canonical position."""
        return {cid: i for i, cid in enumerate(self.chunk_ids())}

    @once
    def bm25(self) -> BM25Index:
        """The generation's BM25 index, memory-mapped once; with the ``segments`` setting,
        its segments answering in canonical positions (:mod:`.bm25_segmented`)."""
        self.verified()
        if bm25_segmented.enabled(self.config):  # BM25Index's reading API, duck-typed
            rowids = self.rowids()
            with integrity.hinted(self.name):
                return cast("BM25Index", bm25_segmented.load(
                    self.generation_dir, derived.analyzer_of(self.config), rowids))
        with integrity.hinted(self.name):
            return derived.load_bm25(self.generation_dir, self.config, self.generation,
                                     self.chunk_count, self.name)

    def embedding_spec(self) -> str | None:
        """``provider:model`` the collection was embedded with, or ``None``."""
        embedding = self.config.get("embedding")
        return str(embedding["spec"]) if embedding else None

    @once
    def query_embedder(self) -> QueryEmbedder:
        """Embeds queries with the recorded model (loaded once, queries cached)."""
        from ..retrieval.dense import QueryEmbedder

        embedding = self.config.get("embedding")
        if not embedding:
            raise IndexMismatchError(f"collection {self.name!r} has no embedding index")
        return QueryEmbedder(derived.query_provider(embedding))

    def vectors(self, identity: EmbeddingIdentity | None = None) -> VectorStore:
        """The generation's vector store; fails closed on another identity or generation."""
        if identity not in self._vectors:
            self.verified()
            self._vectors[identity] = derived.load_vectors(
                self.generation_dir / derived.VECTORS, self.config, self.generation,
                self.chunk_ids(), identity)
        return self._vectors[identity]

    def check(self) -> list[str]:
        """Integrity problems of the store and the derived indexes (empty when sound).

        Every derived file is hashed against the checksums recorded at publish
        (:func:`.integrity.check`); when one differs, the loaders are not run (they
        would only fail on the same damage).
        """
        return store.check(self.conn) + self._check_derived()

    def _check_derived(self) -> list[str]:
        if not self.generation_dir.is_dir():
            return [f"derived index folder {self.generation_dir} is missing"]
        problems, recorded = integrity.check(self.conn, self.directory, self.generation)
        if recorded and problems:
            return problems
        if recorded:
            self.__dict__["_verified"] = None  # just hashed in full: no need on load
        try:
            if list(self.rowids()) != store.generation_rowids(self.conn, self.generation):
                problems.append("chunk order file disagrees with the store")
        except GroundkitError as exc:
            problems.append(str(exc))
        loaders: list[Callable[[], object]] = [self.bm25]
        if self.embedding_spec() is not None:
            loaders.append(self.vectors)
        for load in loaders:
            try:
                load()
            except GroundkitError as exc:
                problems.append(str(exc))
        return problems
