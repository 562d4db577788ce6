"""What a collection holds, and which of its files changed since indexing."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .indexer import root_labels
from .sources import Candidate, discover
from .verify import read_inside

if TYPE_CHECKING:
    from .collection import Collection


def collection_status(coll: Collection, *, changes: bool = True) -> dict[str, Any]:
    """Counts, configuration and skipped files; with ``changes``, a content diff.

    The diff hashes every indexed file (content, not size or mtime) and walks
    the roots for files added since the generation was built.
    """
    conn, gen = coll.conn, coll.generation
    config = coll.config
    documents = dict(
        conn.execute("SELECT doc_id, sha256 FROM documents WHERE generation = ?", (gen,))
    )
    chunk_count = conn.execute(
        "SELECT COUNT(*) FROM generation_chunks WHERE generation = ?", (gen,)
    ).fetchone()[0]
    skipped = [
        {"path": p, "reason": r}
        for p, r in conn.execute(
            "SELECT path, reason FROM skipped WHERE generation = ? ORDER BY path", (gen,)
        )
    ]
    row = conn.execute("SELECT created_at, stats FROM generations WHERE id = ?", (gen,)).fetchone()
    result: dict[str, Any] = {
        "collection": coll.name,
        "directory": str(coll.directory),
        "generation": gen,
        "indexed_at": row[0],
        "documents": len(documents),
        "chunks": chunk_count,
        "roots": config["roots"],
        "chunker": config["chunker"],
        "analyzer": config.get("analyzer"),
        "bm25": config.get("bm25"),
        "embedding": config.get("embedding"),
        "last_run": json.loads(row[1]) if row[1] else None,
        "skipped": skipped,
    }
    if changes:
        result["changed_since_indexing"] = _changes(coll, documents, config)
    return result


def _changes(
    coll: Collection, documents: dict[str, str], config: dict[str, Any]
) -> dict[str, list[str]]:
    rows = coll.conn.execute(
        "SELECT doc_id, root, relpath FROM documents WHERE generation = ?", (coll.generation,)
    ).fetchall()
    modified, missing = [], []
    for doc_id, root, relpath in rows:
        data = read_inside(root, relpath, int(config["max_bytes"]))
        if isinstance(data, str):
            missing.append(doc_id)
        elif hashlib.sha256(data).hexdigest() != documents[doc_id]:
            modified.append(doc_id)
    labels = root_labels(config["roots"])
    known = set(documents)
    skipped = {s for (s,) in coll.conn.execute(
        "SELECT path FROM skipped WHERE generation = ?", (coll.generation,))}
    added = []
    for root in config["roots"]:
        if not Path(root).is_dir():
            continue
        for item in discover(
            Path(root), include=config["include"], exclude=config["exclude"],
            max_bytes=int(config["max_bytes"]), skip_dirs=(coll.directory.parent.parent,),
        ):
            if isinstance(item, Candidate):
                doc_id = labels[root] + item.relpath
                if doc_id not in known and doc_id not in skipped:
                    added.append(doc_id)
    return {"modified": sorted(modified), "missing": sorted(missing), "added": sorted(added)}
