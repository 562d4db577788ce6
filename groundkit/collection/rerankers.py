"""Rerankers registered with a collection: a name, a model folder, the identity it had.

``grk rerankers --collection C --add NAME PATH`` loads the cross-encoder at PATH (or
``llamacpp:MODEL``: the local reader as a relevance judge), computes its identity
(:class:`~groundkit.retrieval.rerank.RerankerIdentity`: the model's name and the sha256
of its weights) and records both under ``NAME`` in the collection's store. A search names
a registered reranker (the only way the MCP server accepts one: a client never gives a
path), or, on the command line and in Python, a model folder or ``llamacpp:MODEL``
directly. A registered reranker whose weights changed since it was
registered fails closed (:class:`~groundkit.errors.IndexMismatchError`).

Loaded models are kept on the snapshot (one load per generation and name).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import store
from ..errors import UsageError
from ..retrieval.rerank import CrossEncoderReranker, Reranker, identity_check
from .indexer import exclusive
from .snapshot import Snapshot

META = "rerankers"
READER_PREFIX = "llamacpp:"
"""A reranker named ``llamacpp:MODEL`` is the local reader judging each passage
(:mod:`groundkit.retrieval.relevance`), not a cross-encoder folder."""
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def registered(snap: Snapshot) -> dict[str, dict[str, Any]]:
    """name -> {"path", "identity"} of the collection's rerankers."""
    return dict(store.get_meta(snap.conn, META) or {})


def register(directory: Path, name: str, path: str | Path) -> dict[str, Any]:
    """Record reranker ``name`` (the model at ``path``) in the collection at ``directory``."""
    if not NAME.fullmatch(name):
        raise UsageError(f"invalid reranker name {name!r}: use 1-64 letters, digits, '.', '_' "
                         "or '-', starting with a letter or digit")
    where = str(path) if _is_reader(path) else str(Path(path).expanduser().resolve())
    reranker = _open(where)
    try:
        entry = {"path": where, "identity": reranker.identity.to_dict()}
    finally:
        reranker.close()
    _update(directory, lambda table: {**table, name: entry})
    return entry


def unregister(directory: Path, name: str) -> None:
    def drop(table: dict[str, Any]) -> dict[str, Any]:
        if name not in table:
            raise UsageError(f"no reranker named {name!r}; registered: "
                             f"{', '.join(sorted(table)) or 'none'}")
        return {k: v for k, v in table.items() if k != name}

    _update(directory, drop)


def load(snap: Snapshot, name_or_path: str, *, allow_path: bool) -> Reranker:
    """The reranker registered as ``name_or_path``, else (``allow_path``) the model folder."""
    key = f"reranker:{name_or_path}"
    if key in snap.memo:
        cached: Reranker = snap.memo[key]
        return cached
    table = registered(snap)
    if name_or_path in table:
        entry = table[name_or_path]
        reranker: Reranker = _open(entry["path"])
        identity_check(entry["identity"], reranker)
    elif allow_path and (_is_reader(name_or_path) or Path(name_or_path).expanduser().is_dir()):
        reranker = _open(name_or_path)
    else:
        known = ", ".join(sorted(table)) or "none"
        how = "a registered name or a model folder" if allow_path else "a registered name"
        raise UsageError(f"unknown reranker {name_or_path!r}: give {how} (registered for "
                         f"{snap.name!r}: {known}; add one with grk rerankers --add NAME PATH)")
    snap.memo[key] = reranker
    return reranker


def _is_reader(path: str | Path) -> bool:
    return isinstance(path, str) and path.startswith(READER_PREFIX)


def _open(where: str) -> Reranker:
    """A cross-encoder folder, or the local reader (``llamacpp:MODEL``) as a judge."""
    if _is_reader(where):
        from ..retrieval.relevance import reader_reranker

        return reader_reranker(where)
    return CrossEncoderReranker(Path(where).expanduser())


def close_all(snap: Snapshot) -> None:
    """Release the models loaded on ``snap``."""
    for key in [k for k in snap.memo if k.startswith("reranker:")]:
        snap.memo.pop(key).close()


def _update(directory: Path, change: Any) -> None:
    with exclusive(directory):
        conn = store.connect(directory)
        try:
            with store.transaction(conn):
                store.set_meta(conn, META, change(dict(store.get_meta(conn, META) or {})))
        finally:
            conn.close()
