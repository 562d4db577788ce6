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

from .snapshot import Snapshot


def stale(snap: Snapshot, doc_ids: Iterable[str]) -> dict[str, bool]:
    """``doc_id -> stale`` for each of ``doc_ids`` (see the module docstring)."""
    wanted = list(dict.fromkeys(doc_ids))
    recorded = _recorded(snap, wanted)
    out = {}
    for doc_id in wanted:
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


def _recorded(snap: Snapshot, doc_ids: list[str]) -> dict[str, tuple[str, int, int]]:
    """Path on disk, size and mtime as recorded now for the generation's ``doc_ids``.

    Read on every call (a primary-key lookup per document), so a watcher that found a
    touched file unchanged and refreshed its recorded mtime clears the flag at once. The
    path is joined as a string: it is only stat'ed, and ``pathlib`` cost a third of an
    MCP search's own time (profiled).
    """
    if not doc_ids:
        return {}
    marks = ",".join("?" * len(doc_ids))
    rows = snap.conn.execute(
        "SELECT doc_id, root, relpath, size, mtime_ns FROM documents "
        f"WHERE generation = ? AND doc_id IN ({marks})", (snap.generation, *doc_ids))
    return {doc: (os.path.join(root, rel), size, mtime) for doc, root, rel, size, mtime in rows}
