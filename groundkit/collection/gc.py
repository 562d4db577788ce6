"""Garbage collection: removing what no retained generation references.

A generation is *retained* when it is the current one, one of the ``keep - 1``
newest before it, or pinned by an open reader. A :class:`~.snapshot.Snapshot`
pins its generation with a shared ``flock`` on the ``gen-<N>/`` folder; the
collector takes an exclusive, non-blocking ``flock`` on each folder it means to
remove, so a generation a reader holds is retained (and reported) instead. With
the exclusive lock held, the generation's rows (memberships, documents, skipped
files, the generation itself) are deleted and then its folder. A reader that
read ``current_generation`` before that and locks after it finds the
generation's row gone and opens the new current one instead.

Then every chunk row no remaining generation references is deleted (a citation
of it becomes "not in the store"), folders ``gen-<N>/`` without a generation row
(debris) are removed, and optionally the WAL is checkpointed and the file
vacuumed. :func:`collect` must run under the collection's writer lock
(:func:`groundkit.collection.indexer.exclusive`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import sqlite3
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import faults, store
from ..errors import UsageError

KEEP_GENERATIONS = 2
DEFAULT_SETTINGS: dict[str, Any] = {"auto": True, "keep": KEEP_GENERATIONS}
ROW_OVERHEAD = 64
"""Bytes a chunk row costs beyond its strings (integers, record header, index entries)."""

_GEN_DIR = re.compile(r"gen-(\d+)")


def settings(recorded: dict[str, Any] | None, given: dict[str, Any] | None) -> dict[str, Any]:
    """The gc settings of a new generation: the defaults, then the recorded, then ``given``."""
    merged = {**DEFAULT_SETTINGS, **(recorded or {}), **(given or {})}
    unknown = set(merged) - set(DEFAULT_SETTINGS)
    if unknown:
        raise UsageError(f"unknown gc settings: {', '.join(sorted(unknown))}")
    keep, auto = merged["keep"], merged["auto"]
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
        raise UsageError(f"gc keep must be a whole number of at least 1, got {keep!r}")
    if not isinstance(auto, bool):
        raise UsageError(f"gc auto must be true or false, got {auto!r}")
    return {"auto": auto, "keep": keep}


def recorded_settings(conn: sqlite3.Connection, generation: int | None) -> dict[str, Any]:
    """The gc settings recorded with ``generation`` (the defaults when none are)."""
    if generation is None:
        return dict(DEFAULT_SETTINGS)
    return settings(store.generation_config(conn, generation).get("gc"), None)


def generation_dir(directory: Path, generation: int) -> Path:
    return directory / f"gen-{generation}"


@dataclass(slots=True)
class GcReport:
    """What one collection run removed, and what it could not."""

    keep: int
    retained: list[int] = field(default_factory=list)
    generations_removed: list[int] = field(default_factory=list)
    held_by_readers: list[int] = field(default_factory=list)
    chunks_removed: int = 0
    stray_folders_removed: int = 0
    derived_bytes_removed: int = 0
    store_bytes_before: int = 0
    store_bytes_after: int = 0
    checkpoint: dict[str, int] | None = None
    """``wal_checkpoint(TRUNCATE)``: ``busy`` 1 when readers kept it from finishing."""
    vacuumed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True, kw_only=True)
class Reclaimable:
    """About how much space a collection run would free now (``grk status``)."""

    generations: tuple[int, ...]
    derived_bytes: int
    chunk_rows: int
    chunk_bytes: int
    """Text and strings of those rows plus :data:`ROW_OVERHEAD` each: an estimate."""
    free_bytes: int
    """SQLite free pages (reused by later writes; ``grk gc --vacuum`` returns them)."""

    @property
    def total_bytes(self) -> int:
        return self.derived_bytes + self.chunk_bytes + self.free_bytes

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "generations": list(self.generations),
                "total_bytes": self.total_bytes}


def store_bytes(directory: Path) -> int:
    """Size of the store file and its WAL."""
    total = 0
    for name in (store.STORE_FILE, store.STORE_FILE + "-wal"):
        with contextlib.suppress(FileNotFoundError):
            total += (directory / name).stat().st_size
    return total


def folder_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def retained_generations(conn: sqlite3.Connection, keep: int) -> list[int]:
    """The current generation and the ``keep - 1`` newest published ones before it."""
    if keep < 1:
        raise UsageError(f"keep must be at least 1, got {keep}")
    current = store.current_generation(conn)
    if current is None:
        return []
    rows = conn.execute(
        "SELECT id FROM generations WHERE id < ? AND state != 'building' "
        "ORDER BY id DESC LIMIT ?", (current, keep - 1))
    return [current, *(int(r[0]) for r in rows)]


def _removable(conn: sqlite3.Connection, retained: list[int]) -> list[int]:
    rows = conn.execute("SELECT id FROM generations ORDER BY id")
    return [int(r[0]) for r in rows if int(r[0]) not in retained]


def collect(conn: sqlite3.Connection, directory: Path, *, keep: int = KEEP_GENERATIONS,
            checkpoint: bool = False, vacuum: bool = False) -> GcReport:
    """Remove unretained generations, unreferenced chunk rows and stray folders.

    Call it holding the writer lock. ``checkpoint`` runs ``wal_checkpoint(TRUNCATE)``
    (partial while readers are reading); ``vacuum`` rewrites the file (needs free
    disk space about the size of the store).
    """
    report = GcReport(keep=keep, store_bytes_before=store_bytes(directory))
    report.retained = retained_generations(conn, keep)
    for gen in _removable(conn, report.retained):
        if _remove_generation(conn, directory, gen, report):
            report.generations_removed.append(gen)
        else:
            report.held_by_readers.append(gen)
            report.retained.append(gen)
    with store.transaction(conn):
        report.chunks_removed = conn.execute(
            "DELETE FROM chunks WHERE rowid NOT IN "
            "(SELECT DISTINCT chunk_rowid FROM generation_chunks)").rowcount
    report.stray_folders_removed = _remove_strays(conn, directory, report)
    if vacuum:
        conn.execute("VACUUM")
        report.vacuumed = True
    if checkpoint or vacuum:
        busy, log, done = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        report.checkpoint = {"busy": int(busy), "log_pages": int(log),
                             "checkpointed_pages": int(done)}
    report.store_bytes_after = store_bytes(directory)
    return report


def _remove_generation(conn: sqlite3.Connection, directory: Path, gen: int,
                       report: GcReport) -> bool:
    """Delete one generation's rows and folder; False when a reader holds it."""
    folder = generation_dir(directory, gen)
    try:
        fd: int | None = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        fd = None
    try:
        if fd is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return False
        with store.transaction(conn):
            for table in ("generation_chunks", "documents", "skipped", "derived_files"):
                conn.execute(f"DELETE FROM {table} WHERE generation = ?", (gen,))
            conn.execute("DELETE FROM generations WHERE id = ?", (gen,))
        faults.point("gc")
        if fd is not None:
            report.derived_bytes_removed += folder_bytes(folder)
            shutil.rmtree(folder, ignore_errors=True)
        return True
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock, after the folder is gone


def _remove_strays(conn: sqlite3.Connection, directory: Path, report: GcReport) -> int:
    """Remove ``gen-<N>/`` folders whose generation is not in the store."""
    known = {int(r[0]) for r in conn.execute("SELECT id FROM generations")}
    removed = 0
    for path in directory.glob("gen-*"):
        match = _GEN_DIR.fullmatch(path.name)
        if match and int(match.group(1)) not in known and path.is_dir():
            report.derived_bytes_removed += folder_bytes(path)
            shutil.rmtree(path, ignore_errors=True)
            removed += 1
    return removed


def reclaimable(conn: sqlite3.Connection, directory: Path, keep: int) -> Reclaimable:
    """About what :func:`collect` would free now (readers' generations counted as freed)."""
    retained = retained_generations(conn, keep)
    gens = _removable(conn, retained)
    derived = sum(folder_bytes(generation_dir(directory, g)) for g in gens)
    marks = ",".join("?" * len(retained)) or "NULL"
    rows, size = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(text AS BLOB)) + LENGTH(chunk_id) * 2 "
        f"+ LENGTH(doc_id) + LENGTH(root) + LENGTH(relpath) + 128 + {ROW_OVERHEAD}), 0) "
        "FROM chunks WHERE rowid NOT IN (SELECT chunk_rowid FROM generation_chunks "
        f"WHERE generation IN ({marks}))", retained).fetchone()
    free = (conn.execute("PRAGMA freelist_count").fetchone()[0]
            * conn.execute("PRAGMA page_size").fetchone()[0])
    return Reclaimable(generations=tuple(gens), derived_bytes=derived, chunk_rows=int(rows),
                       chunk_bytes=int(size), free_bytes=int(free))
