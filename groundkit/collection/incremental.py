"""Re-indexing only the paths that changed, as a file watcher reports them.

A full run walks every root and hashes every file. When a watcher already knows
which paths changed (``dirty``: files or folders, absolute), the indexer looks at
those alone: each is judged exactly as the full walk would judge it
(:func:`groundkit.sources.discover_paths`), every other document of the previous
generation is carried over as it was (its rows copied in bulk, nothing read), and a
previous document under a dirty path that is no longer found is removed. The
result is the generation a full run would build, as long as every change was
reported; the watcher runs a full pass when it starts and after a lost event.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import store
from ..sources import Candidate, Skipped, discover_paths

Found = list[tuple[str, Candidate]]
"""``(root label, candidate)`` pairs, as the full walk yields them."""


@dataclass(frozen=True, slots=True)
class Dirty:
    """The dirty paths of one run, as doc ids (``label + relpath``) per root."""

    relpaths: dict[str, set[str]]
    """root -> dirty paths relative to it."""
    labels: dict[str, str]

    def doc_ids(self) -> set[str]:
        return {self.labels[root] + rel for root, rels in self.relpaths.items() for rel in rels}


def classify(roots: Sequence[str], labels: dict[str, str], dirty: Iterable[str]) -> Dirty | None:
    """Dirty paths by root, or ``None`` when only a full run can say (a root itself)."""
    relpaths: dict[str, set[str]] = {root: set() for root in roots}
    for raw in dirty:
        path = os.path.abspath(raw)
        for root in roots:
            if path == root:
                return None
            if path.startswith(root.rstrip("/") + "/"):
                relpaths[root].add(Path(os.path.relpath(path, root)).as_posix())
                break
    return Dirty(relpaths, labels)


def under(doc_id: str, dirty_ids: set[str]) -> bool:
    """Whether ``doc_id`` is a dirty path or lies in a dirty folder."""
    if doc_id in dirty_ids:
        return True
    cut = doc_id.rfind("/")
    while cut >= 0:  # each enclosing folder, innermost first
        if doc_id[:cut] in dirty_ids:
            return True
        cut = doc_id.rfind("/", 0, cut)
    return False


def discover_dirty(dirty: Dirty, *, include: Sequence[str], exclude: Sequence[str],
                   max_bytes: int, skip_dirs: Sequence[Path],
                   skipped: list[Skipped]) -> Found:
    """The candidates under the dirty paths; skipped ones are appended to ``skipped``."""
    found: Found = []
    for root, rels in dirty.relpaths.items():
        label = dirty.labels[root]
        for item in discover_paths(Path(root), sorted(rels), include=include, exclude=exclude,
                                   max_bytes=max_bytes, skip_dirs=skip_dirs):
            if isinstance(item, Skipped):
                skipped.append(Skipped(label + item.path, item.reason))
            else:
                found.append((label, item))
    return found


def carry_clean(conn: sqlite3.Connection, source: int, target: int,
                dirty_ids: set[str]) -> tuple[int, int]:
    """Copy every document of ``source`` outside the dirty paths into ``target``.

    Documents, chunk memberships and skipped paths are copied in three statements.
    Returns (documents carried, chunk memberships carried).
    """
    clean = [(doc,) for (doc,) in conn.execute(
        "SELECT doc_id FROM documents WHERE generation = ?", (source,))
        if not under(doc, dirty_ids)]
    conn.execute("CREATE TEMP TABLE IF NOT EXISTS clean_docs (doc_id TEXT PRIMARY KEY)")
    conn.execute("DELETE FROM temp.clean_docs")
    conn.executemany("INSERT INTO temp.clean_docs VALUES (?)", clean)
    conn.execute(
        "INSERT INTO documents SELECT ?, doc_id, root, relpath, sha256, size, mtime_ns, "
        "encoding, bom_len, extractor, standing FROM documents WHERE generation = ? "
        "AND doc_id IN (SELECT doc_id FROM temp.clean_docs)", (target, source))
    chunks = conn.execute(
        "INSERT INTO generation_chunks (generation, doc_id, start, chunk_rowid) "
        "SELECT ?, doc_id, start, chunk_rowid FROM generation_chunks WHERE generation = ? "
        "AND doc_id IN (SELECT doc_id FROM temp.clean_docs)", (target, source)).rowcount
    kept = [(target, path, reason) for path, reason in conn.execute(
        "SELECT path, reason FROM skipped WHERE generation = ?", (source,))
        if not under(path, dirty_ids)]
    conn.executemany("INSERT INTO skipped (generation, path, reason) VALUES (?, ?, ?)", kept)
    conn.execute("DELETE FROM temp.clean_docs")
    return len(clean), chunks


def reusable(
    conn: sqlite3.Connection, previous: int | None, settings: dict[str, Any]
) -> dict[str, tuple[str, int, str]]:
    """doc_id -> (sha256, generation, extractor identity) of the previous generation's
    documents, whose chunks a run (full or not) carries over when bytes and extractor are
    unchanged."""
    if previous is None:
        return {}
    old = store.generation_config(conn, previous)
    same_chunking = old.get("chunker") == settings["chunker"]
    rows = conn.execute(
        "SELECT doc_id, sha256, extractor FROM documents WHERE generation = ?", (previous,)
    ).fetchall()
    # Documents are always tracked (for the removed count); chunks are reused
    # only when the chunker settings are unchanged.
    return {doc_id: (sha if same_chunking else "", previous, extractor)
            for doc_id, sha, extractor in rows}
