"""Open collections shared by the MCP tools, re-opened when a new generation is published.

A lease keeps a collection open while a tool uses it; a collection retired by a
newer generation is closed when its last lease ends, so a request in flight
finishes on the generation it started on.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

from .. import store
from ..collection import Collection, list_collections
from ..collection.home import Home
from ..errors import CollectionNotFoundError
from ..model import COLLECTION_NAME
from .schema import RetrieverStats


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class _Entry:
    coll: Collection
    users: int = 0
    retired: bool = False
    bm25_loaded: bool = False


@dataclass
class _Counters:
    opens: int = 0
    bm25_loads: int = 0
    generation_changes: int = 0
    last_generation_change_at: str | None = None


@dataclass
class CollectionPool:
    """Opened collections, one per name (see the module docstring)."""

    home: Home = None
    only: tuple[str, ...] | None = None
    started_at: str = field(default_factory=now)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _entries: dict[str, _Entry] = field(default_factory=dict)
    _counters: dict[str, _Counters] = field(default_factory=dict)

    def served(self) -> list[str]:
        return list(self.only) if self.only is not None else list_collections(self.home)

    def check_served(self, name: str) -> str:
        if not COLLECTION_NAME.fullmatch(name) or name not in self.served():
            served = ", ".join(self.served()) or "none"
            raise CollectionNotFoundError(f"unknown collection {name!r}; served: {served}")
        return name

    @contextmanager
    def lease(self, name: str, *, bm25: bool = False) -> Iterator[Collection]:
        entry = self._acquire(self.check_served(name), bm25)
        try:
            yield entry.coll
        finally:
            with self._lock:
                entry.users -= 1
                if entry.retired and entry.users == 0:
                    entry.coll.close()

    def stats(self, name: str, generation: int) -> RetrieverStats:
        with self._lock:
            c = self._counters.get(name, _Counters())
            return RetrieverStats(
                serving_generation=generation, opens=c.opens, bm25_loads=c.bm25_loads,
                generation_changes=c.generation_changes,
                last_generation_change_at=c.last_generation_change_at,
                server_started_at=self.started_at)

    def _acquire(self, name: str, bm25: bool) -> _Entry:
        with self._lock:
            counters = self._counters.setdefault(name, _Counters())
            entry = self._entries.get(name)
            if entry is not None and _published(entry.coll) != entry.coll.generation:
                del self._entries[name]
                entry.retired = True
                if entry.users == 0:
                    entry.coll.close()
                entry = None
                counters.generation_changes += 1
                counters.last_generation_change_at = now()
            if entry is None:
                entry = self._entries[name] = _Entry(Collection.open(name, self.home))
                counters.opens += 1
            if bm25 and not entry.bm25_loaded:
                entry.coll.snapshot.bm25()
                entry.coll.snapshot.rowids()
                entry.bm25_loaded = True
                counters.bm25_loads += 1
            entry.users += 1
            return entry


def _published(coll: Collection) -> int | None:
    """The generation published now (one indexed SELECT on the open connection)."""
    try:
        return store.current_generation(coll.snapshot.conn)
    except sqlite3.Error:
        return None
