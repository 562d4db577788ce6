"""Keeping a collection current while its files change: ``grk watch``.

A :class:`Watcher` listens to filesystem events under the collection's roots
(``watchdog``: inotify on Linux), gathers the changed paths until the tree has
been quiet for ``debounce`` seconds (or ``max_delay`` has passed since the first
change), and re-indexes just those paths (:mod:`.incremental`), publishing each
generation atomically as ``grk index`` does, embeddings included. Readers — a
running ``grk serve``, a CLI search — see a generation whole or not at all.

What editors and tools do is covered by looking at paths, not at event kinds:
a write to a temporary file renamed over the original, a truncate then write, a
delete and re-create, a folder renamed (both names are looked at) or a burst of a
thousand files from a ``git checkout`` all end as "re-read these paths". A
symlink swapped in pointing out of the root is refused as at index time (the
document leaves the index). A removed root is reported; the watcher waits for it
to come back (then re-indexes it in full) or, with ``on_missing_root="exit"``,
raises :class:`~groundkit.errors.RootMissingError`. The watcher starts with a
full pass, so changes made while nobody watched are picked up too, and so are changes the kernel
dropped: when inotify's queue overflows, the next run is a full pass.

One watcher per collection (``.watch.lock``, a record lock: a second watcher gets
:class:`~groundkit.errors.CollectionBusyError`); each run takes the writer lock
like any indexer, so a ``grk index`` or ``grk gc`` meanwhile simply waits its turn.
"""

from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import store
from ..errors import (
    CollectionBusyError,
    CollectionNotFoundError,
    GroundkitError,
    MissingDependencyError,
    RootMissingError,
    UsageError,
)
from .derived import default_builders
from .home import Home, collection_dir, resolve_home
from .indexer import IndexConfig, IndexReport, index_collection

Emit = Callable[[dict[str, Any]], None]
"""Receives every event as a JSON-ready dict with an ``event`` key."""

Bar = Callable[[str], AbstractContextManager[Any]]
"""``bar(reason)`` -> a context whose ``update(done, total, label)`` follows one run
(:class:`groundkit.progress.ProgressBar` fits)."""

IGNORED = frozenset({"opened", "closed_no_write"})
"""Event kinds that change nothing (the indexer's own reads cause them)."""

ON_MISSING_ROOT = ("wait", "exit")


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchOptions:
    debounce: float = 0.2
    """Seconds without a new event before the changed paths are indexed."""
    max_delay: float = 2.0
    """Index at the latest this long after the first pending change, even mid-burst."""
    poll: float = 0.5
    """How often the roots' existence is checked, in seconds."""
    on_missing_root: str = "wait"
    retry: float = 1.0
    """Seconds before retrying a run that failed (busy writer lock, provider down)."""

    def __post_init__(self) -> None:
        if self.on_missing_root not in ON_MISSING_ROOT:
            raise UsageError(f"on_missing_root must be one of {ON_MISSING_ROOT}, "
                             f"got {self.on_missing_root!r}")
        for name in ("debounce", "max_delay", "poll", "retry"):
            if not getattr(self, name) > 0:
                raise UsageError(f"{name} must be positive, got {getattr(self, name)!r}")


@dataclass
class _Pending:
    """Changed paths gathered by the observer thread, for the watch loop."""

    cond: threading.Condition = field(default_factory=threading.Condition)
    paths: set[str] = field(default_factory=set)
    first: float | None = None
    last: float = 0.0

    def add(self, *paths: str) -> None:
        with self.cond:
            now = time.monotonic()
            self.paths.update(p for p in paths if p)
            self.first = self.first if self.first is not None else now
            self.last = now
            self.cond.notify_all()

    def take(self) -> tuple[set[str], float | None]:
        with self.cond:
            paths, first = self.paths, self.first
            self.paths, self.first = set(), None
            return paths, first


class Watcher:
    """Watches one collection's roots and re-indexes what changes (module docstring)."""

    def __init__(self, name: str, home: Home = None, *, options: WatchOptions | None = None,
                 emit: Emit | None = None, progress: Bar | None = None) -> None:
        self.name = name
        self.home = home
        self.options = options or WatchOptions()
        self.emit: Emit = emit or (lambda event: None)
        self.progress: Bar = progress or (lambda reason: _NoBar())
        self.directory = collection_dir(name, home)
        self.generations = 0
        """Generations this watcher published."""
        self._pending = _Pending()
        self._skip = (self.directory, resolve_home(home))

    def run(self, stop: threading.Event) -> None:
        """Watch until ``stop`` is set; raises on a missing root only when told to exit."""
        config = self._config()
        with watch_lock(self.directory, self.name):
            missing: set[str] = set()
            observer = self._observe(config)
            try:
                self._index(config, None, None, "start")
                self.emit({"event": "watching", "collection": self.name,
                           "roots": list(config.roots), "generation": self._current()})
                while not stop.is_set():
                    back = self._check_roots(config, missing)
                    if back:
                        observer.stop()
                        observer = self._observe(config)
                        self._index(config, None, None, "root back")
                    elif not missing:
                        self._step(config, stop)
                    else:
                        stop.wait(self.options.poll)
            finally:
                observer.stop()
                self.emit({"event": "stopped", "collection": self.name,
                           "generations_published": self.generations})

    # -- the loop ------------------------------------------------------------------

    def _step(self, config: IndexConfig, stop: threading.Event) -> None:
        """Wait for a quiet moment after a change, then index what changed."""
        opts, pending = self.options, self._pending
        with pending.cond:
            if pending.first is None:
                pending.cond.wait(opts.poll)
                return
            now = time.monotonic()
            due = min(pending.last + opts.debounce, pending.first + opts.max_delay)
            if now < due:
                pending.cond.wait(due - now)
                return
        paths, first = pending.take()
        if not self._index(config, sorted(paths), first, "change"):
            for path in paths:  # keep them for the retry
                pending.add(path)
            stop.wait(opts.retry)

    def _index(self, config: IndexConfig, dirty: list[str] | None, first: float | None,
               reason: str) -> bool:
        started = time.monotonic()
        try:
            with self.progress(reason) as bar:
                report = index_collection(
                    self.name, self.directory, config, builders=default_builders(bar.update),
                    progress=bar.update, skip_dirs=self._skip[1:], dirty=dirty,
                    publish_unchanged=False)
        except CollectionBusyError as exc:
            self.emit({"event": "busy", "collection": self.name, "message": str(exc)})
            return False
        except (GroundkitError, OSError, sqlite3.OperationalError) as exc:
            self.emit({"event": "error", "collection": self.name, "message": str(exc),
                       "will_retry_in_s": self.options.retry})
            return False
        self.generations += report.published
        self.emit(_indexed(report, reason, dirty, started, first))
        return True

    # -- roots and events --------------------------------------------------------------

    def _check_roots(self, config: IndexConfig, missing: set[str]) -> bool:
        """Report roots that vanished or came back; True when all are back after a loss."""
        was_missing = bool(missing)
        for root in config.roots:
            if not Path(root).is_dir() and root not in missing:
                missing.add(root)
                self.emit({"event": "root_missing", "collection": self.name, "root": root,
                           "action": self.options.on_missing_root})
                if self.options.on_missing_root == "exit":
                    raise RootMissingError(
                        f"watched folder {root} is gone; the collection keeps its last "
                        "generation. Restore the folder and run grk watch again")
            elif root in missing and Path(root).is_dir():
                missing.discard(root)
                self.emit({"event": "root_back", "collection": self.name, "root": root})
        return was_missing and not missing

    def _observe(self, config: IndexConfig) -> Any:
        try:
            from watchdog.observers import Observer
        except ImportError as exc:  # pragma: no cover - the extra is part of [all]
            raise MissingDependencyError("watchdog", "watch", "grk watch") from exc
        observer = Observer()
        handler = _Handler(self._pending, self._skip)
        _LostEvents.attach(self._pending, config.roots)
        for root in config.roots:
            if Path(root).is_dir():
                try:
                    # duck-typed: dispatch() is the one method watchdog calls
                    observer.schedule(handler, root, recursive=True)  # type: ignore[arg-type]
                except OSError as exc:
                    raise UsageError(
                        f"cannot watch {root}: {exc}; on Linux, raise the inotify limit "
                        "(sysctl fs.inotify.max_user_watches)") from exc
        observer.daemon = True
        observer.start()
        return observer

    def _config(self) -> IndexConfig:
        if not (self.directory / store.STORE_FILE).is_file():
            raise CollectionNotFoundError(
                f"no collection named {self.name!r}; index it first: "
                f"grk index PATH --collection {self.name} (or add --watch there)")
        conn = store.connect(self.directory, readonly=True)
        try:
            generation = store.current_generation(conn)
            if generation is None:
                raise CollectionNotFoundError(
                    f"collection {self.name!r} has no published generation yet")
            return IndexConfig.from_settings(store.generation_config(conn, generation))
        finally:
            conn.close()

    def _current(self) -> int | None:
        conn = store.connect(self.directory, readonly=True)
        try:
            return store.current_generation(conn)
        finally:
            conn.close()


class _NoBar(nullcontext[Any]):
    def __enter__(self) -> _NoBar:
        return self

    def update(self, done: int, total: int, label: str = "") -> None:
        pass


class _Handler:
    """A watchdog event handler: every path an event names becomes pending."""

    def __init__(self, pending: _Pending, skip: tuple[Path, ...]) -> None:
        self.pending = pending
        self.skip = tuple(str(p) for p in skip)

    def dispatch(self, event: Any) -> None:
        if event.event_type in IGNORED:
            return
        if event.is_directory and event.event_type in ("modified", "attrib", "closed"):
            return  # a folder's own metadata; the files' events say what changed
        paths = [os.fsdecode(event.src_path), os.fsdecode(event.dest_path or b"")]
        kept = [p for p in paths if p and not any(
            p == s or p.startswith(s.rstrip("/") + "/") for s in self.skip)]
        if kept:
            self.pending.add(*kept)


class _LostEvents(logging.Handler):
    """When the kernel's event queue overflows, watchdog logs that events were lost (and
    re-arms its watches); this turns that into a full pass over the roots."""

    LOGGER = "watchdog.observers.inotify_c"

    def __init__(self, pending: _Pending, roots: tuple[str, ...]) -> None:
        super().__init__(logging.WARNING)
        self.pending, self.roots = pending, roots

    @classmethod
    def attach(cls, pending: _Pending, roots: tuple[str, ...]) -> None:
        logger = logging.getLogger(cls.LOGGER)
        for old in [h for h in logger.handlers if isinstance(h, cls)]:
            logger.removeHandler(old)
        logger.addHandler(cls(pending, roots))

    def emit(self, record: logging.LogRecord) -> None:
        if "events were lost" in record.getMessage():
            self.pending.add(*self.roots)  # a root is dirty: the next run is a full one


def _indexed(report: IndexReport, reason: str, dirty: list[str] | None, started: float,
             first: float | None) -> dict[str, Any]:
    now = time.monotonic()
    event = {"event": "indexed" if report.published else "unchanged", "reason": reason,
             "paths": None if dirty is None else len(dirty),
             "seconds": round(now - started, 4),
             "since_change_s": None if first is None else round(now - first, 4)}
    return {**event, **report.to_dict()}


@contextmanager
def watch_lock(directory: Path, name: str) -> Iterator[None]:
    """Hold ``.watch.lock``: one watcher per collection, across processes."""
    path = directory / ".watch.lock"
    with open(path, "a+") as fh:
        try:
            fcntl.lockf(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().strip() or "another process"
            raise CollectionBusyError(
                f"collection {name!r} is already watched (pid {holder}); "
                "one watcher per collection") from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()))
        fh.flush()
        try:
            yield
        finally:
            fh.seek(0)
            fh.truncate()
