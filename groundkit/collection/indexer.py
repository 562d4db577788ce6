"""Indexing folder trees into a collection, one atomic generation at a time.

The pipeline: discover files, hash them, reuse the chunks of files whose
content hash is unchanged, decode and chunk the rest, build the derived
indexes of the new generation under ``gen-<N>/``, and publish the generation
in one transaction. A kill at any point leaves the previous generation the
current one, untouched; the half-built generation is cleared by the next run.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from .. import faults, store
from ..errors import CollectionBusyError, UsageError
from ..sources import (
    DEFAULT_EXCLUDE,
    DEFAULT_INCLUDE,
    DEFAULT_MAX_BYTES,
    Candidate,
    Skipped,
    count_by_kind,
    discover,
    discover_paths,
)
from ..text.chunking import ChunkerConfig
from . import gc, incremental, ingest, integrity, site_furniture
from .executor import Executor, InProcess

Progress = Callable[[int, int, str], None]
"""``progress(done, total, path)`` — called once per file."""

DerivedBuilder = Callable[[sqlite3.Connection, int, Path, dict[str, Any]], None]
"""``build(conn, generation, generation_dir, config)`` — writes one derived index."""

KEEP_GENERATIONS = gc.KEEP_GENERATIONS

SMALL_RUN = 64
"""A dirty run with fewer files than this chunks them in-process (no worker start-up)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class IndexConfig:
    """What a collection indexes and how; recorded with every generation."""

    roots: tuple[str, ...]
    include: tuple[str, ...] = DEFAULT_INCLUDE
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    max_bytes: int = DEFAULT_MAX_BYTES
    chunker: ChunkerConfig = field(default_factory=ChunkerConfig)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.roots:
            raise UsageError("give at least one folder to index")
        if self.max_bytes < 1:
            raise UsageError(f"max_bytes must be positive, got {self.max_bytes}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "roots": list(self.roots), "include": list(self.include),
            "exclude": list(self.exclude), "max_bytes": self.max_bytes,
            "chunker": self.chunker.to_dict(), **self.extra,
        }

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> IndexConfig:
        """The configuration a generation was built with (its recorded settings)."""
        own = {"roots", "include", "exclude", "max_bytes", "chunker", "name"}
        return cls(roots=tuple(settings["roots"]), include=tuple(settings["include"]),
                   exclude=tuple(settings["exclude"]), max_bytes=int(settings["max_bytes"]),
                   chunker=ChunkerConfig(**settings["chunker"]),
                   extra={k: v for k, v in settings.items() if k not in own})


@dataclass(slots=True)
class IndexReport:
    """What one indexing run did."""

    collection: str
    generation: int
    added: int = 0
    changed: int = 0
    removed: int = 0
    unchanged: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    chunks: int = 0
    bytes_read: int = 0
    published: bool = True
    """False when a run restricted to dirty paths found nothing to change: no new
    generation (``generation`` is the current one)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "collection": self.collection, "generation": self.generation,
            "published": self.published,
            "added": self.added, "changed": self.changed, "removed": self.removed,
            "unchanged": self.unchanged, "chunks": self.chunks, "bytes_read": self.bytes_read,
            "skipped": [{"path": s.path, "reason": s.reason} for s in self.skipped],
            "skipped_by_reason": count_by_kind(s.reason for s in self.skipped),
        }


def generation_dir(directory: Path, generation: int) -> Path:
    return directory / f"gen-{generation}"


@contextmanager
def exclusive(directory: Path) -> Iterator[None]:
    """Hold the collection's writer lock (one indexer or calibrator at a time)."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / ".lock", "a+b") as fh:
        try:
            # A POSIX record lock: unlike flock, it is not inherited by the worker
            # processes, so a killed indexer's orphaned workers cannot keep it held.
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise CollectionBusyError(
                f"collection at {directory} is being indexed by another process"
                f"{_holder(fh)}; wait for it to finish"
            ) from None
        fh.seek(0)
        fh.truncate()  # who holds it, for the message another process gets
        fh.write(f"{os.getpid()}\n{' '.join(sys.argv)[:300]}\n".encode("utf-8", "replace"))
        fh.flush()
        yield


def _holder(fh: BinaryIO) -> str:
    """`` (pid N: command)`` as the lock's holder wrote it, or nothing when unreadable."""
    fh.seek(0)
    pid, _, command = fh.read(400).decode("utf-8", "replace").partition("\n")
    return f" (pid {pid}: {command.strip()})" if pid.strip().isdigit() else ""


def root_labels(roots: Sequence[str]) -> dict[str, str]:
    """Prefix for each root's document ids: none for one root; for several, a folder's name,
    and none for a file (its id is its name) unless another file root has the same name:
    then its folder's name."""
    if len(roots) == 1:
        return {roots[0]: ""}
    files = [Path(r).name for r in roots if not Path(r).is_dir()]
    labels: dict[str, str] = {}
    for root in roots:
        path = Path(root)
        if not path.is_dir() and files.count(path.name) == 1:
            labels[root] = ""
            continue
        name = (path.name if path.is_dir() else path.parent.name) or "root"
        label, n = name + "/", 2
        while label in labels.values():
            label, n = f"{name}-{n}/", n + 1
        labels[root] = label
    return labels


def index_collection(
    name: str,
    directory: Path,
    config: IndexConfig,
    *,
    builders: Sequence[DerivedBuilder] = (),
    progress: Progress | None = None,
    skip_dirs: Sequence[Path] = (),
    workers: int | None = None,
    dirty: Sequence[str] | None = None,
    publish_unchanged: bool = True,
    executor: Executor | None = None,
) -> IndexReport:
    """Index ``config.roots`` into the collection at ``directory``; publish atomically.

    ``skip_dirs`` (plus ``directory`` itself) are never indexed: pass the
    groundkit home so an index inside a root does not index itself.
    ``workers`` processes decode and chunk changed files (default: one fewer
    than the cores, at least one); the result is identical whatever the number.
    ``executor`` (default :class:`~.executor.InProcess` with ``workers``) is where files are
    read and chunked, e.g. a Ray cluster; the generation is the same bytes whichever runs.
    ``dirty`` (absolute paths of files or folders) restricts the run to what
    changed there, carrying everything else over unread
    (:mod:`~groundkit.collection.incremental`); a full run happens anyway when
    there is no previous generation or the settings changed. With
    ``publish_unchanged=False`` a run finding nothing added, changed, removed or newly
    skipped, under the same settings, publishes nothing (``published`` false).
    """
    # The main process writes SQLite while workers chunk; on two cores that measured
    # no faster than one process (bench/bench_index.py), so one core is kept for it.
    workers = workers if workers is not None else max(1, (os.cpu_count() or 1) - 1)
    executor = executor if executor is not None else InProcess(workers)
    roots = tuple(str(Path(r).resolve()) for r in config.roots)
    for root in roots:
        if not Path(root).is_dir() and not Path(root).is_file():
            raise UsageError(f"not a folder or a file: {root}")
    with exclusive(directory):
        conn = store.connect(directory)
        try:
            return _run(name, directory, conn, config, roots, builders, progress,
                        (directory, *skip_dirs), executor, dirty, publish_unchanged)
        finally:
            conn.close()


# long: the pipeline's steps in order (plan, discover, ingest, build, publish), read top down
def _run(
    name: str,
    directory: Path,
    conn: sqlite3.Connection,
    config: IndexConfig,
    roots: tuple[str, ...],
    builders: Sequence[DerivedBuilder],
    progress: Progress | None,
    skip_dirs: tuple[Path, ...],
    executor: Executor,
    dirty: Sequence[str] | None,
    publish_unchanged: bool,
) -> IndexReport:
    _clear_unpublished(conn, directory)
    previous = store.current_generation(conn)
    settings = {**config.to_dict(), "roots": list(roots), "name": name}
    # gc settings: as given, else as recorded with the previous generation, else defaults.
    settings["gc"] = gc.settings(
        None if previous is None else store.generation_config(conn, previous).get("gc"),
        config.extra.get("gc"))
    with store.transaction(conn):
        store.set_meta(conn, "name", name)
        cur = conn.execute(
            "INSERT INTO generations (state, created_at, config) VALUES ('building', ?, ?)",
            (_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
             json.dumps(settings, sort_keys=True)),
        )
    generation = int(cur.lastrowid or 0)
    report = IndexReport(collection=name, generation=generation)
    reusable = incremental.reusable(conn, previous, settings)
    plan = _incremental_plan(conn, previous, settings, roots, dirty)
    if plan is None:
        candidates = _discover_all(roots, config, skip_dirs, report)
    else:
        candidates = incremental.discover_dirty(
            plan, include=config.include, exclude=config.exclude, max_bytes=config.max_bytes,
            skip_dirs=skip_dirs, skipped=report.skipped)
        executor = executor.small() if len(candidates) < SMALL_RUN else executor
    with store.transaction(conn), closing(executor.prepared(
            candidates, config.max_bytes, reusable, report.skipped, name, config.chunker,
            settings,
    )) as prepared:
        dirty_ids = None
        if plan is not None and previous is not None:
            dirty_ids = plan.doc_ids()
            report.unchanged, report.chunks = incremental.carry_clean(
                conn, previous, generation, dirty_ids)
        for i, done in enumerate(prepared):
            if progress:
                progress(i, len(candidates), done.job.relpath)
            report.bytes_read += len(done.job.data)
            _store_file(conn, generation, done, reusable, report)
        faults.point("index.ingest")
        seen = {label + c.relpath for label, c in candidates}
        report.removed = sum(1 for doc_id in reusable if doc_id not in seen
                             and (dirty_ids is None or incremental.under(doc_id, dirty_ids)))
        conn.executemany(
            "INSERT INTO skipped (generation, path, reason) VALUES (?, ?, ?)",
            [(generation, s.path, s.reason) for s in report.skipped],
        )
    if progress:
        progress(len(candidates), len(candidates), "")
    if not publish_unchanged and _same_as(conn, previous, generation, report, settings):
        assert previous is not None
        return _discard(conn, directory, generation, previous, report)
    gen_dir = generation_dir(directory, generation)
    shutil.rmtree(gen_dir, ignore_errors=True)
    gen_dir.mkdir(parents=True)
    for build in builders:
        build(conn, generation, gen_dir, settings)
    _publish(conn, generation, report, integrity.manifest(gen_dir))
    if settings["gc"]["auto"]:
        gc.collect(conn, directory, keep=settings["gc"]["keep"])
    return report


def _incremental_plan(
    conn: sqlite3.Connection, previous: int | None, settings: dict[str, Any],
    roots: tuple[str, ...], dirty: Sequence[str] | None,
) -> incremental.Dirty | None:
    """The dirty paths to look at, or ``None`` for a full run (see ``index_collection``)."""
    if dirty is None or previous is None:
        return None
    old = store.generation_config(conn, previous)
    if any(old.get(k) != v for k, v in settings.items() if k != "gc"):
        return None
    return incremental.classify(roots, root_labels(roots), dirty)


def _discover_all(
    roots: tuple[str, ...], config: IndexConfig, skip_dirs: tuple[Path, ...],
    report: IndexReport,
) -> list[tuple[str, Candidate]]:
    labels = root_labels(roots)
    found: list[tuple[str, Candidate]] = []
    for root in roots:
        path = Path(root)
        options: dict[str, Any] = {"include": config.include, "exclude": config.exclude,
                                   "max_bytes": config.max_bytes, "skip_dirs": skip_dirs}
        items = (discover(path, **options) if path.is_dir()
                 else discover_paths(path.parent, [path.name], **options))  # a file root
        for item in items:
            if isinstance(item, Skipped):
                report.skipped.append(Skipped(labels[root] + item.path, item.reason))
            else:
                found.append((labels[root], item))
    return found


def _store_file(
    conn: sqlite3.Connection,
    generation: int,
    done: ingest.Prepared,
    reusable: dict[str, tuple[str, int, str]],
    report: IndexReport,
) -> None:
    job = done.job
    if done.error is not None:
        report.skipped.append(Skipped(job.doc_id, done.error))
        return
    if job.carry:
        # Same bytes as before: same encoding, same BOM, same chunks.
        source = reusable[job.doc_id][1]
        conn.execute(
            "INSERT INTO documents SELECT ?, doc_id, ?, ?, sha256, size, ?, encoding, bom_len, "
            "extractor, standing FROM documents WHERE generation = ? AND doc_id = ?",
            (generation, job.root, job.relpath, job.mtime_ns, source, job.doc_id),
        )
        report.unchanged += 1
        report.chunks += store.carry_document(conn, source, generation, job.doc_id)
        return
    conn.execute(
        "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (generation, job.doc_id, job.root, job.relpath, job.sha256, len(job.data),
         job.mtime_ns, done.encoding, done.bom_len, done.extractor, done.standing),
    )
    if job.doc_id in reusable:
        report.changed += 1
    else:
        report.added += 1
    report.chunks += store.insert_chunks(conn, generation, job.root, job.relpath, done.rows)


def _publish(conn: sqlite3.Connection, generation: int, report: IndexReport,
             files: Sequence[store.DerivedFile]) -> None:
    stats = json.dumps(report.to_dict(), sort_keys=True)
    with store.transaction(conn):
        site_furniture.mark(conn, generation)  # against the current one, so before the flip
        store.record_derived_files(conn, generation, files)  # checksums: see .integrity
        conn.execute("UPDATE generations SET state = 'retired' WHERE state = 'published'")
        conn.execute(
            "UPDATE generations SET state = 'published', stats = ? WHERE id = ?",
            (stats, generation),
        )
        store.set_meta(conn, "current_generation", generation)
        faults.point("publish")
    faults.point("publish.done")


def _same_as(conn: sqlite3.Connection, previous: int | None, generation: int,
             report: IndexReport, settings: dict[str, Any]) -> bool:
    """Whether the new generation holds what ``previous`` holds, under the same settings."""
    if previous is None or report.added or report.changed or report.removed:
        return False
    old = store.generation_config(conn, previous)
    skips = "SELECT path, reason FROM skipped WHERE generation = ?"
    return (all(old.get(k) == v for k, v in settings.items() if k != "gc")
            and set(conn.execute(skips, (previous,))) == set(conn.execute(skips, (generation,))))


def _discard(conn: sqlite3.Connection, directory: Path, generation: int, previous: int,
             report: IndexReport) -> IndexReport:
    """Drop a generation that changes nothing; keep the current one, with fresh mtimes.

    The dirty files were re-read and hashed unchanged (a ``touch``, a save without an
    edit), so their recorded modification times are brought up to date: the
    ``stale`` hint is about the file on disk, and it now matches what is indexed.
    """
    with store.transaction(conn):
        conn.execute(
            "UPDATE documents SET mtime_ns = (SELECT n.mtime_ns FROM documents n "
            "WHERE n.generation = ? AND n.doc_id = documents.doc_id) "
            "WHERE generation = ? AND doc_id IN (SELECT doc_id FROM documents n "
            "WHERE n.generation = ? AND n.mtime_ns != ("
            "SELECT o.mtime_ns FROM documents o WHERE o.generation = ? AND o.doc_id = n.doc_id))",
            (generation, previous, generation, previous))
    _clear_unpublished(conn, directory)
    report.generation, report.published = previous, False
    return report


def _clear_unpublished(conn: sqlite3.Connection, directory: Path) -> None:
    """Remove what a killed indexer left: unpublished generations and their files."""
    stale = [r[0] for r in conn.execute("SELECT id FROM generations WHERE state = 'building'")]
    with store.transaction(conn):
        for gen in stale:
            for table in ("generation_chunks", "documents", "skipped", "derived_files"):
                conn.execute(f"DELETE FROM {table} WHERE generation = ?", (gen,))
            conn.execute("DELETE FROM generations WHERE id = ?", (gen,))
    for gen in stale:
        shutil.rmtree(generation_dir(directory, gen), ignore_errors=True)

