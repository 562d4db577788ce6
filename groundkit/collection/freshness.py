"""Whether a hit's file changed since indexing: a cheap hint, never a verdict.

A hit is *stale* when its file's size or modification time differs from what the
indexer recorded for the generation, or the file is gone. It costs one ``stat`` per
document and reads nothing; the verdict (``verified`` / ``drifted`` /
``unresolvable``) still comes only from re-reading the span (``--verify``,
``grk fetch``). A file rewritten with the same size and mtime is not stale, and a
``touch`` without a change is: stale means "look again", not "changed".
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .snapshot import Snapshot

_MEMO = "freshness:documents"


def stale(snap: Snapshot, doc_ids: Iterable[str]) -> dict[str, bool]:
    """``doc_id -> stale`` for each of ``doc_ids`` (see the module docstring)."""
    recorded = _recorded(snap)
    out = {}
    for doc_id in dict.fromkeys(doc_ids):
        known = recorded.get(doc_id)
        if known is None:
            out[doc_id] = True
            continue
        path, size, mtime_ns = known
        try:
            st = os.stat(path)
        except OSError:
            out[doc_id] = True
            continue
        out[doc_id] = st.st_size != size or st.st_mtime_ns != mtime_ns
    return out


def _recorded(snap: Snapshot) -> dict[str, tuple[Path, int, int]]:
    """The generation's documents: path on disk, size and mtime as indexed (memoised)."""
    if _MEMO not in snap.memo:
        rows = snap.conn.execute(
            "SELECT doc_id, root, relpath, size, mtime_ns FROM documents WHERE generation = ?",
            (snap.generation,))
        snap.memo[_MEMO] = {doc: (Path(root) / rel, size, mtime)
                            for doc, root, rel, size, mtime in rows}
    recorded: dict[str, tuple[Path, int, int]] = snap.memo[_MEMO]
    return recorded
