"""The Python API: collections you can index, search, verify and inspect.

The CLI and the MCP server are thin layers over this module, so all three
return the same results in the same order with the same scores.

Where collections live: ``home`` argument, else ``$GROUNDKIT_HOME``, else
``$XDG_DATA_HOME/groundkit``, else ``~/.local/share/groundkit``. Each
collection is the folder ``<home>/collections/<name>/``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from . import store
from .errors import (
    ChunkNotFoundError,
    CollectionNotFoundError,
    IndexMismatchError,
    InvalidSpanError,
    UsageError,
)
from .indexer import DerivedBuilder, IndexConfig, IndexReport, Progress, index_collection
from .model import COLLECTION_NAME, Chunk, Hit, Status, Verdict, split_chunk_id
from .verify import unresolvable, verify

if TYPE_CHECKING:
    from .embeddings import EmbeddingIdentity, EmbeddingProvider
    from .retrieval.bm25 import BM25Index
    from .retrieval.dense import VectorStore


def resolve_home(home: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding all collections (see the module docstring)."""
    if home is not None:
        return Path(home).expanduser()
    if env := os.environ.get("GROUNDKIT_HOME"):
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(data) / "groundkit"


def check_name(name: str) -> str:
    if not COLLECTION_NAME.fullmatch(name):
        raise UsageError(
            f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def collection_dir(name: str, home: str | os.PathLike[str] | None = None) -> Path:
    return resolve_home(home) / "collections" / check_name(name)


def list_collections(home: str | os.PathLike[str] | None = None) -> list[str]:
    base = resolve_home(home) / "collections"
    if not base.is_dir():
        return []
    return sorted(
        p.name for p in base.iterdir()
        if COLLECTION_NAME.fullmatch(p.name) and (p / store.STORE_FILE).is_file()
    )


def index(
    name: str,
    config: IndexConfig,
    *,
    home: str | os.PathLike[str] | None = None,
    builders: Sequence[DerivedBuilder] | None = None,
    progress: Progress | None = None,
) -> IndexReport:
    """Index ``config.roots`` into collection ``name`` (created if new).

    With ``config.extra["embedding"] = {"spec": "local:all-MiniLM-L6-v2"}`` the
    generation also gets dense vectors (re-embedding only new chunks).
    """
    from .derived import default_builders

    directory = collection_dir(name, home)
    chosen = default_builders(progress) if builders is None else builders
    return index_collection(name, directory, config, builders=chosen, progress=progress,
                            skip_dirs=(resolve_home(home),))


@dataclass
class Collection:
    """A published collection opened read-only.

    It pins the generation that was current when it was opened: a re-index
    published meanwhile is seen only by collections opened after it.
    """

    name: str
    directory: Path
    conn: sqlite3.Connection
    generation: int
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def open(cls, name: str, home: str | os.PathLike[str] | None = None) -> Collection:
        directory = collection_dir(name, home)
        if not (directory / store.STORE_FILE).is_file():
            known = ", ".join(list_collections(home)) or "none yet"
            raise CollectionNotFoundError(
                f"no collection named {name!r} in {resolve_home(home)} (known: {known}); "
                f"create it with: grk index PATH --collection {name}"
            )
        conn = store.connect(directory, readonly=True)
        generation = store.current_generation(conn)
        if generation is None:
            conn.close()
            raise CollectionNotFoundError(f"collection {name!r} has no published generation yet")
        return cls(name=name, directory=directory, conn=conn, generation=generation)

    def close(self) -> None:
        embedder = self._cache.pop("embedder", None)
        if embedder is not None:
            embedder.close()
        self.conn.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def config(self) -> dict[str, Any]:
        """The pinned generation's settings (read once)."""
        if "config" not in self._cache:
            self._cache["config"] = store.generation_config(self.conn, self.generation)
        return self._cache["config"]  # type: ignore[no-any-return]

    @property
    def generation_dir(self) -> Path:
        return self.directory / f"gen-{self.generation}"

    @property
    def chunk_count(self) -> int:
        if "chunk_count" not in self._cache:
            self._cache["chunk_count"] = self.conn.execute(
                "SELECT COUNT(*) FROM generation_chunks WHERE generation = ?", (self.generation,)
            ).fetchone()[0]
        return int(self._cache["chunk_count"])

    def bm25(self) -> BM25Index:
        """The generation's BM25 index, loaded (memory-mapped) once."""
        if "bm25" not in self._cache:
            from .derived import load_bm25

            self._cache["bm25"] = load_bm25(self)
        return self._cache["bm25"]  # type: ignore[no-any-return]

    def rowids(self) -> npt.NDArray[np.int64]:
        """Store row ids of the generation's chunks: position i is document i of every index."""
        if "rowids" not in self._cache:
            from .derived import load_rowids

            self._cache["rowids"] = load_rowids(self.generation_dir, self.chunk_count)
        return self._cache["rowids"]  # type: ignore[no-any-return]

    def chunk_ids(self) -> list[str]:
        """The generation's chunk ids in canonical order (position i = document i)."""
        if "chunk_ids" not in self._cache:
            self._cache["chunk_ids"] = [c.chunk_id for c in self.chunks()]
        return self._cache["chunk_ids"]  # type: ignore[no-any-return]

    def positions(self) -> dict[str, int]:
        """chunk id -> position in canonical order."""
        if "positions" not in self._cache:
            self._cache["positions"] = {cid: i for i, cid in enumerate(self.chunk_ids())}
        return self._cache["positions"]  # type: ignore[no-any-return]

    def embedding_spec(self) -> str | None:
        """``provider:model`` the collection was embedded with, or ``None``."""
        embedding = self.config.get("embedding")
        return str(embedding["spec"]) if embedding else None

    def embedder(self) -> EmbeddingProvider:
        """The query-side provider for the recorded embedding model (loaded once)."""
        if "embedder" not in self._cache:
            from .embeddings import make_provider

            embedding = self.config.get("embedding")
            if not embedding:
                raise IndexMismatchError(f"collection {self.name!r} has no embedding index")
            options = dict(embedding.get("options", {}))
            if str(embedding["spec"]).startswith("local"):
                # One torch thread on the query path: measured faster on 2 cores under load,
                # and no BLAS/torch pool contention (bench/bench_dense.py --query-threads).
                options.setdefault("threads", 1)
            self._cache["embedder"] = make_provider(embedding["spec"], **options)
        return self._cache["embedder"]  # type: ignore[no-any-return]

    def vectors(self, identity: EmbeddingIdentity | None = None) -> VectorStore:
        """The generation's vector store; fails closed on another identity or generation."""
        key = f"vectors:{identity}"
        if key not in self._cache:
            from .derived import load_vectors

            self._cache[key] = load_vectors(self, identity)
        return self._cache[key]  # type: ignore[no-any-return]

    def stored_chunks(self, positions: Sequence[int]) -> list[store.StoredChunk]:
        """The chunks at index positions ``positions``, in that order."""
        rowids = self.rowids()
        return store.chunks_by_rowid(self.conn, [int(rowids[p]) for p in positions])

    def search(self, query: str, **options: Any) -> list[Hit]:
        """Search this collection; see :func:`groundkit.search.search` for the options."""
        from .search import search

        return search(self, query, **options)

    def chunks(self) -> list[Chunk]:
        """Every chunk of the current generation, in canonical order."""
        return list(store.iter_generation_chunks(self.conn, self.generation))

    def chunk(self, chunk_id: str) -> Chunk:
        stored = store.lookup_chunk(self.conn, chunk_id)
        if stored is None:
            raise ChunkNotFoundError(f"no chunk {chunk_id!r} in collection {self.name!r}")
        return stored.chunk

    def fetch(self, chunk_id: str) -> Verdict:
        """Re-read a cited chunk now; never raises for a bad citation."""
        try:
            owner, _ = split_chunk_id(chunk_id)
        except InvalidSpanError as exc:
            return unresolvable(chunk_id, str(exc))
        if owner != self.name:
            return unresolvable(chunk_id, f"chunk belongs to collection {owner!r}")
        stored = store.lookup_chunk(self.conn, chunk_id)
        if stored is None:
            return unresolvable(chunk_id, "unknown chunk id")
        return verify(stored, max_bytes=int(self.config.get("max_bytes", 1 << 26)))

    def status_summary(self) -> dict[str, Any]:
        """Name, roots and counts, without re-reading any file."""
        from .status import collection_status

        return collection_status(self, changes=False)

    def check(self) -> list[str]:
        """Integrity problems of the store and the derived indexes (empty when sound)."""
        from .derived import check_derived

        return store.check(self.conn) + check_derived(self)

    def status(self) -> dict[str, Any]:
        """Counts, configuration, skipped files and files changed since indexing."""
        from .status import collection_status

        return collection_status(self)


def fetch_chunk(chunk_id: str, home: str | os.PathLike[str] | None = None) -> Verdict:
    """Verify a chunk id from any collection; never raises for a bad citation."""
    try:
        name, _ = split_chunk_id(chunk_id)
    except InvalidSpanError as exc:
        return unresolvable(chunk_id, str(exc))
    try:
        with Collection.open(name, home) as coll:
            return coll.fetch(chunk_id)
    except CollectionNotFoundError:
        return unresolvable(chunk_id, f"unknown collection {name!r}")


__all__ = [
    "Collection", "IndexConfig", "IndexReport", "Status", "Verdict", "collection_dir",
    "fetch_chunk", "index", "list_collections", "resolve_home",
]
