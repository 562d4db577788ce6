"""The files of a vector store, written atomically: a LanceDB table, the same vectors
as one float32 matrix, and ``meta.json``.

The LanceDB table is the store of record (the seam to approximate indexes and to
other tools). The matrix (``vectors.npy``, rows in ``chunk_ids.json`` order, both
sha256-recorded in ``meta.json``) is what opening reads: it needs neither
``lancedb`` nor ``pyarrow``, whose import alone costs about 3 s of CPU. A store
written before the matrix existed is read from its table.

Reading fails closed (:class:`~groundkit.errors.IndexMismatchError`) on another
format version, stamp or identity, a missing or damaged table or matrix, or rows
that do not match the metadata. ``lancedb`` and ``pyarrow`` are imported lazily
(extra ``dense``), and only to write or to read an older store.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import json
import os
import shutil
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..embeddings import EmbeddingIdentity
from ..errors import IndexMismatchError, MissingDependencyError, UsageError
from .ann import AnnParams
from .ann import build as build_ann

FORMAT = "groundkit.vectors"
FORMAT_VERSION = 1
TABLE = "vectors"
META = "meta.json"
MATRIX = "vectors.npy"
IDS = "chunk_ids.json"


def lancedb_module() -> Any:
    """``lancedb``, or the extra to install."""
    try:
        import lancedb
    except ImportError as exc:
        raise MissingDependencyError("lancedb", "dense", "Dense retrieval") from exc
    return lancedb


def write_atomically(
    directory: Path,
    stamp: dict[str, Any],
    identity: EmbeddingIdentity,
    ids: list[str],
    vectors: np.ndarray,
    ann: AnnParams | None = None,
) -> None:
    """Write the store's files into a temporary sibling and rename it to ``directory``;
    with ``ann``, also the approximate index on the table (:mod:`.ann`)."""
    import pyarrow as pa

    lancedb = lancedb_module()
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = directory.parent / f".{directory.name}.tmp-{uuid.uuid4().hex}"
    try:
        tmp.mkdir()
        schema = pa.schema(
            [("chunk_id", pa.string()), ("vector", pa.list_(pa.float32(), identity.dimension))]
        )
        flat = pa.array(vectors.reshape(-1), type=pa.float32())
        column = pa.FixedSizeListArray.from_arrays(flat, identity.dimension)
        table = pa.Table.from_arrays([pa.array(ids, type=pa.string()), column], schema=schema)
        created = lancedb.connect(str(tmp)).create_table(TABLE, data=table, schema=schema)
        matrix = _npy(np.ascontiguousarray(vectors, dtype=np.float32))
        listed = json.dumps(ids).encode()
        (tmp / MATRIX).write_bytes(matrix)
        (tmp / IDS).write_bytes(listed)
        meta = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "stamp": stamp,
            "identity": identity.to_dict(),
            "rows": len(ids),
            "table": TABLE,
            "matrix": {"file": MATRIX, "sha256": _sha256(matrix),
                       "ids": IDS, "ids_sha256": _sha256(listed)},
        }
        if ann is not None:
            meta["ann"] = build_ann(created, tmp / f"{TABLE}.lance", ann, rows=len(ids),
                                    stamp=stamp, identity=identity.to_dict())
        (tmp / META).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", "utf-8")
        swap_into_place(tmp, directory)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def swap_into_place(tmp: Path, directory: Path) -> None:
    """Rename ``tmp`` to ``directory``; an existing store is moved aside first, then removed.

    Into a fresh directory (one per generation) this is one atomic rename. Over
    an existing store a concurrent reader may briefly find no store and fail
    closed, never a mixture of the two.
    """
    if not directory.exists():
        os.replace(tmp, directory)
        return
    old = directory.parent / f".{directory.name}.old-{uuid.uuid4().hex}"
    os.replace(directory, old)
    os.replace(tmp, directory)
    shutil.rmtree(old, ignore_errors=True)


def read_meta(directory: Path) -> dict[str, Any]:
    path = directory / META
    if not path.is_file():
        raise IndexMismatchError(f"no vector store at {directory} ({META} is missing); re-index")
    try:
        meta = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IndexMismatchError(f"vector store {path} is unreadable ({exc}); re-index") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise IndexMismatchError(f"{path} is not a groundkit vector store; re-index")
    if meta.get("format_version") != FORMAT_VERSION:
        raise IndexMismatchError(
            f"vector store {directory} has format version {meta.get('format_version')!r}; "
            f"this groundkit reads version {FORMAT_VERSION}; re-index"
        )
    return meta


def check_stamp(directory: Path, meta: dict[str, Any], expected: Mapping[str, Any]) -> None:
    stamp = meta.get("stamp")
    if not isinstance(stamp, dict):
        raise IndexMismatchError(f"vector store {directory} has no stamp; re-index")
    for key in sorted(set(stamp) | set(expected)):
        if stamp.get(key) != expected.get(key):
            raise IndexMismatchError(
                f"vector store {directory} was built for {key}={stamp.get(key)!r}, "
                f"but {key}={expected.get(key)!r} was expected (a stale or foreign index); "
                f"re-index to rebuild it"
            )


def check_identity(
    directory: Path, meta: dict[str, Any], expected: EmbeddingIdentity
) -> EmbeddingIdentity:
    try:
        stored = EmbeddingIdentity.from_dict(meta.get("identity") or {})
    except UsageError as exc:
        raise IndexMismatchError(f"vector store {directory} has a damaged identity: {exc}") from exc
    if stored != expected:
        raise IndexMismatchError(identity_message(directory, stored, expected))
    return stored


def identity_message(
    directory: Path | None, stored: EmbeddingIdentity, asked: EmbeddingIdentity
) -> str:
    fields = [
        f"{name} {value!r} != {getattr(asked, name)!r}"
        for name, value in stored.to_dict().items()
        if value != getattr(asked, name)
    ]
    where = f"vector store {directory}" if directory is not None else "the vector store"
    return (
        f"{where} holds {stored.describe()} vectors, but {asked.describe()} was asked for "
        f"({'; '.join(fields)}); use the same embedding model or re-index with the new one"
    )


def load(directory: Path, meta: Mapping[str, Any], dimension: int) -> tuple[list[str], np.ndarray]:
    """The store's chunk ids and vectors: from the matrix, or an older store's table."""
    matrix = meta.get("matrix")
    if matrix is None:
        return load_table(directory, dimension)
    if not (directory / f"{TABLE}.lance").is_dir():
        raise IndexMismatchError(f"vector store {directory} has lost its table "
                                 f"({TABLE}.lance); re-index")
    try:
        data = _recorded(directory / matrix["file"], matrix["sha256"])
        ids = json.loads(_recorded(directory / matrix["ids"], matrix["ids_sha256"]))
        vectors = np.load(io.BytesIO(data), allow_pickle=False)
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise IndexMismatchError(
            f"vector store {directory} has a missing or damaged matrix ({type(exc).__name__}: "
            f"{exc}); re-index") from exc
    if vectors.dtype != np.float32 or vectors.ndim != 2 or vectors.shape[1] != dimension:
        raise IndexMismatchError(
            f"vector store {directory} holds a {vectors.dtype} matrix of shape {vectors.shape}, "
            f"but its identity says float32 x {dimension}; re-index")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise IndexMismatchError(f"vector store {directory} has damaged chunk ids; re-index")
    return ids, vectors


def _recorded(path: Path, sha256: str) -> bytes:
    data = path.read_bytes()
    if _sha256(data) != sha256:
        raise ValueError(f"{path.name} does not hash as recorded")
    return data


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _npy(matrix: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, matrix, allow_pickle=False)
    return out.getvalue()


def load_table(directory: Path, dimension: int) -> tuple[list[str], np.ndarray]:
    """The LanceDB table's chunk ids and vectors."""
    lancedb = lancedb_module()
    try:
        table = lancedb.connect(str(directory)).open_table(TABLE).to_arrow()
        ids = table.column("chunk_id").to_pylist()
        column = table.column("vector").combine_chunks()
        width = column.type.list_size
        flat = column.values.to_numpy(zero_copy_only=False)
    except Exception as exc:  # any failure to read the table means "damaged"
        raise IndexMismatchError(
            f"vector store {directory} has a missing or damaged table ({type(exc).__name__}: "
            f"{exc}); re-index"
        ) from exc
    if width != dimension or column.null_count:
        raise IndexMismatchError(
            f"vector store {directory} holds {width}-d vectors but its identity says {dimension}"
        )
    return ids, np.ascontiguousarray(flat, dtype=np.float32).reshape(-1, dimension)


def check_rows(directory: Path, meta: dict[str, Any], ids: list[str], vectors: np.ndarray) -> None:
    if meta.get("rows") != len(ids) or vectors.shape[0] != len(ids):
        raise IndexMismatchError(
            f"vector store {directory} records {meta.get('rows')!r} rows but its table has "
            f"{len(ids)}; re-index"
        )
    if any(a >= b for a, b in itertools.pairwise(ids)):
        raise IndexMismatchError(f"vector store {directory} has unsorted or duplicate chunk ids")
    if len(ids):
        norms = np.linalg.norm(vectors, axis=1)
        if not np.isfinite(norms).all() or np.abs(norms - 1.0).max() > 1e-3:
            raise IndexMismatchError(f"vector store {directory} holds unnormalised vectors")
