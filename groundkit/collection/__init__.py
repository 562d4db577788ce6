"""Collections: index folders, search them, verify citations, inspect the index.

This is the Python API the CLI and the MCP server are built on, so all three
return the same results in the same order with the same scores::

    from groundkit.collection import Collection, IndexConfig, index

    index("notes", IndexConfig(roots=("~/notes",)))
    with Collection.open("notes") as notes:
        for hit in notes.search("how long do we keep logs"):
            c = hit.chunk
            print(c.doc_id, c.start, c.end, notes.fetch(c.chunk_id).status)

Inside: :mod:`.home` (where collections live), :mod:`.indexer` and
:mod:`.ingest` (building generations), :mod:`.derived` (their indexes),
:mod:`.snapshot` (one generation, opened), :mod:`.integrity` (checksums of the
derived files), :mod:`.search`, :mod:`.status` and :mod:`.gc` (removing
generations and chunk rows nothing retained references).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import store
from ..errors import (
    ChunkNotFoundError,
    CollectionNotFoundError,
    GroundkitError,
    InvalidSpanError,
    StorageError,
)
from ..model import Chunk, Hit, Verdict, split_chunk_id
from ..retrieval.gate import ALPHA, Calibration, Decision
from ..verify import unresolvable
from . import calibration, gc
from .derived import default_builders
from .executor import Executor, InProcess
from .gc import GcReport, Reclaimable
from .home import Home, collection_dir, list_collections, resolve_home
from .indexer import (
    DerivedBuilder,
    IndexConfig,
    IndexReport,
    Progress,
    exclusive,
    index_collection,
)
from .search import MAX_TOP_K, SearchResult, decide, search, search_or_abstain
from .snapshot import Snapshot
from .status import CollectionStatus, collection_status


def index(
    name: str,
    config: IndexConfig,
    *,
    home: Home = None,
    builders: Sequence[DerivedBuilder] | None = None,
    progress: Progress | None = None,
    rebuild: bool = False,
    publish_unchanged: bool = True,
    executor: Executor | None = None,
) -> IndexReport:
    """Index ``config.roots`` into collection ``name`` (created if new); publish atomically.

    With ``config.extra["embedding"] = {"spec": "local:all-MiniLM-L6-v2"}`` the
    generation also gets dense vectors (re-embedding only new chunks). With
    ``rebuild`` every derived index is built from the store anew (nothing is taken
    from the previous generation's files): the fix for damaged derived files. With
    ``publish_unchanged=False`` a run that finds the same files and settings as the
    current generation publishes nothing and keeps it. ``executor`` is where files are
    chunked and chunks embedded (:mod:`.executor`; e.g. a Ray cluster), the same result.
    """
    chosen = (default_builders(progress, rebuild=rebuild, executor=executor)
              if builders is None else builders)
    with storage_errors(name, "indexing"):
        return index_collection(name, collection_dir(name, home), config, builders=chosen,
                                progress=progress, skip_dirs=(resolve_home(home),),
                                publish_unchanged=publish_unchanged or rebuild,
                                executor=executor)


@contextmanager
def storage_errors(name: str, doing: str) -> Iterator[None]:
    """A full or failing disk (``OSError``, SQLite's disk errors) as a :class:`StorageError`.

    Whatever failed, the generation published before stays current and intact (the new
    one is never made current half-written); the next run clears what this one left.
    """
    try:
        yield
    except GroundkitError:
        raise
    except (OSError, sqlite3.OperationalError) as exc:
        raise StorageError(
            f"{doing} {name!r} failed while writing: {exc}; the previous generation is "
            "intact and still served. Free space or fix the disk, then run it again") from exc


def recorded_config(name: str, home: Home = None) -> IndexConfig:
    """The settings collection ``name``'s current generation was indexed with."""
    directory = collection_dir(name, home)
    if not (directory / store.STORE_FILE).is_file():
        raise CollectionNotFoundError(f"no collection named {name!r} in {resolve_home(home)}")
    conn = store.connect(directory, readonly=True)
    try:
        generation = store.current_generation(conn)
        if generation is None:
            raise CollectionNotFoundError(f"collection {name!r} has no published generation")
        return IndexConfig.from_settings(store.generation_config(conn, generation))
    finally:
        conn.close()


def collect_garbage(name: str, *, home: Home = None, keep: int | None = None,
                    vacuum: bool = False) -> GcReport:
    """Remove what no retained generation of ``name`` references (``grk gc``).

    ``keep`` (default: the setting recorded with the current generation, 2) is how
    many generations to keep, the current one included; generations open readers
    hold are kept too. Refused (:class:`~groundkit.errors.CollectionBusyError`)
    while an indexer runs. ``vacuum`` also rewrites the store file to return its
    free pages to the filesystem.
    """
    directory = collection_dir(name, home)
    if not (directory / store.STORE_FILE).is_file():
        raise CollectionNotFoundError(f"no collection named {name!r} in {resolve_home(home)}")
    with storage_errors(name, "garbage collection of"), exclusive(directory):
        conn = store.connect(directory)
        try:
            if keep is None:
                keep = gc.recorded_settings(conn, store.current_generation(conn))["keep"]
            return gc.collect(conn, directory, keep=keep, checkpoint=True, vacuum=vacuum)
        finally:
            conn.close()


UNKNOWN_CHUNK = ("unknown chunk id: no such chunk in the store (never indexed, or collected "
                 "by grk gc after its generation was retired); search again")


class Collection:
    """A published collection opened read-only, pinned to its current generation."""

    def __init__(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot

    @classmethod
    def open(cls, name: str, home: Home = None) -> Collection:
        return cls(Snapshot.open(name, home))

    def close(self) -> None:
        self.snapshot.close()

    def __enter__(self) -> Collection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def name(self) -> str:
        return self.snapshot.name

    @property
    def generation(self) -> int:
        return self.snapshot.generation

    def search(self, query: str, **options: Any) -> list[Hit]:
        """Search; see :func:`groundkit.collection.search.search` for the options."""
        return search(self.snapshot, query, **options)

    def search_or_abstain(self, query: str, **options: Any) -> SearchResult:
        """Search, or abstain when the calibrated gate says the collection cannot answer.

        ``alpha`` (default the calibration's, 0.1) bounds the rate of answering an
        unanswerable question; the other options are :meth:`search`'s. Without a
        calibration for the mode this is a :class:`~groundkit.errors.CalibrationError`.
        """
        return search_or_abstain(self.snapshot, query, **options)

    def decide(self, query: str, **options: Any) -> Decision:
        """The gate's decision alone (``mode``, ``alpha``, the mode's options)."""
        return decide(self.snapshot, query, **options)

    def calibrate(self, questions: str | Path, *, modes: Sequence[str] | None = None,
                  alpha: float = ALPHA) -> list[Calibration]:
        """Calibrate the abstention gate with a questions file and store it (``grk calibrate``).

        The file is the golden format, one JSON object a line with ``question`` and
        ``kind``; the ``no_answer`` ones are what the gate learns "not in these
        documents" from. Re-indexing makes the calibration stale: calibrate again.
        """
        return calibration.calibrate(self.snapshot, questions, modes=modes, alpha=alpha)

    def fetch(self, chunk_id: str) -> Verdict:
        """Re-read a cited chunk now; never raises for a bad citation."""
        try:
            owner, _ = split_chunk_id(chunk_id)
        except InvalidSpanError as exc:
            return unresolvable(chunk_id, str(exc))
        if owner != self.name:
            return unresolvable(chunk_id, f"chunk belongs to collection {owner!r}")
        stored = self.snapshot.lookup(chunk_id)
        if stored is None:
            return unresolvable(chunk_id, UNKNOWN_CHUNK)
        return self.snapshot.verify(stored)

    def chunk(self, chunk_id: str) -> Chunk:
        stored = self.snapshot.lookup(chunk_id)
        if stored is None:
            raise ChunkNotFoundError(f"no chunk {chunk_id!r} in collection {self.name!r}")
        return stored.chunk

    def chunks(self) -> list[Chunk]:
        """Every chunk of the pinned generation, in canonical order."""
        return self.snapshot.chunks()

    def status(self, *, changes: bool = True) -> CollectionStatus:
        """Counts, settings, skipped files and (with ``changes``) files changed since indexing."""
        return collection_status(self.snapshot, changes=changes)

    def check(self) -> list[str]:
        """Integrity problems of the store and the derived indexes (empty when sound)."""
        return self.snapshot.check()


def fetch_chunk(chunk_id: str, home: Home = None) -> Verdict:
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
    "MAX_TOP_K", "Collection", "CollectionStatus", "Decision", "Executor", "GcReport",
    "InProcess", "IndexConfig", "IndexReport", "Reclaimable", "SearchResult", "Snapshot",
    "collect_garbage", "collection_dir", "fetch_chunk", "index", "list_collections",
    "recorded_config", "resolve_home",
]
