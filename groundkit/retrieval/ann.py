"""An approximate nearest-neighbour (ANN) index for dense search above a size: LanceDB's.

Exact search (:meth:`~groundkit.retrieval.vectors.VectorStore.search`) scores every
vector; above :data:`THRESHOLD` vectors a generation's store also carries a LanceDB
vector index on its own table (``vectors.lance/_indices/``), built with the store in
its temporary folder, so it is part of the immutable generation and of its integrity
manifest. Chosen and tuned in ADR-0015 (``bench/bench_ann.py``).

Search with the index asks LanceDB for ``candidates x top_k`` chunk ids, then scores
those exactly against the store's matrix: the scores are the exact cosines and ties
are broken by ``chunk_id`` as in exact search; only *which* chunks are considered is
approximate (recall@10 against exact search is what ADR-0015 measured).

``meta.json``'s ``ann`` entry records the parameters, the stamp, identity and row count
the index was built for, and the sha256 of every file of the index and of the table's
version manifests. :meth:`AnnIndex.open` fails closed
(:class:`~groundkit.errors.IndexMismatchError`) when any of them disagrees with the
store, when a file is missing, extra or changed, or when LanceDB reports another index.

The index is opened on the first approximate search, so exact searches (``exact=True``,
``grk search --exact``, the evaluation harness) never import ``lancedb``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexMismatchError, MissingDependencyError, UsageError

THRESHOLD = 200_000
"""Above this many vectors ``--ann auto`` builds the index (ADR-0015)."""
MODES = ("auto", "on", "off")
"""``grk index --ann``: above :data:`THRESHOLD` (default), always, never."""
KINDS = {"ivf_hnsw_sq": "IVF_HNSW_SQ", "ivf_pq": "IVF_PQ", "ivf_hnsw_pq": "IVF_HNSW_PQ"}
"""Index kinds, as named in ``meta.json`` -> LanceDB's ``index_type``."""
INDEX_NAME = "vector_ann"
MIN_ROWS = 256
"""LanceDB's k-means needs training rows; fewer vectors are always searched exactly."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AnnParams:
    """How the index is built (``kind`` .. ``ef_construction``) and searched (the rest)."""

    kind: str = "ivf_hnsw_sq"
    partitions: int = 1
    """IVF partitions (HNSW kinds: one graph per partition)."""
    sub_vectors: int | None = None
    """PQ kinds: sub-vectors (LanceDB's default: dimension / 16)."""
    m: int = 20
    ef_construction: int = 300
    nprobes: int = 1
    ef: int = 800
    refine_factor: int | None = None
    """LanceDB's own re-ranking of ``refine_factor x`` its limit with the full vectors."""
    candidates: int = 2
    """Ask LanceDB for ``candidates x top_k`` ids, then score them exactly."""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise UsageError(f"unknown ANN index kind {self.kind!r}; choose one of "
                             f"{', '.join(KINDS)}")
        for name in ("partitions", "m", "ef_construction", "nprobes", "ef", "candidates"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"ANN parameter {name} must be a positive integer, "
                                 f"got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnnParams:
        try:
            return cls(**dict(data))
        except TypeError as exc:
            raise UsageError(f"damaged ANN parameters {dict(data)!r}: {exc}") from exc


DEFAULT = AnnParams()
"""The tuned setting (ADR-0015)."""


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise UsageError(f"--ann must be one of {', '.join(MODES)}, got {mode!r}")
    return mode


def choose(mode: str, rows: int, params: AnnParams = DEFAULT) -> AnnParams | None:
    """The index to build for ``rows`` vectors under ``--ann mode``, or ``None`` (exact only).

    ``on`` builds one at any size from :data:`MIN_ROWS` up (fewer cannot train it).
    """
    check_mode(mode)
    if mode == "off" or rows < MIN_ROWS or (mode == "auto" and rows <= THRESHOLD):
        return None
    return params


def _config(params: AnnParams) -> Any:
    from lancedb.index import HnswPq, HnswSq, IvfPq

    if params.kind == "ivf_pq":
        return IvfPq(distance_type="dot", num_partitions=params.partitions,
                     num_sub_vectors=params.sub_vectors)
    if params.kind == "ivf_hnsw_pq":
        return HnswPq(distance_type="dot", num_partitions=params.partitions,
                      num_sub_vectors=params.sub_vectors, m=params.m,
                      ef_construction=params.ef_construction)
    return HnswSq(distance_type="dot", num_partitions=params.partitions, m=params.m,
                  ef_construction=params.ef_construction)


def build(table: Any, table_dir: Path, params: AnnParams, *, rows: int,
          stamp: Mapping[str, Any], identity: Mapping[str, Any]) -> dict[str, Any]:
    """Build the index on the LanceDB ``table`` (stored at ``table_dir``); its ``meta`` entry."""
    table.create_index("vector", config=_config(params), name=INDEX_NAME)
    return {"params": params.to_dict(), "index": INDEX_NAME, "rows": rows,
            "stamp": dict(stamp), "identity": dict(identity), "files": _hashes(table_dir)}


def _hashes(table_dir: Path) -> dict[str, str]:
    """sha256 of the index's files and of the table's version manifests, by relative path."""
    out: dict[str, str] = {}
    for sub in ("_indices", "_versions"):
        for path in sorted((table_dir / sub).rglob("*")):
            if path.is_file():
                digest = hashlib.sha256()
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        digest.update(block)
                out[path.relative_to(table_dir).as_posix()] = digest.hexdigest()
    return out


class AnnIndex:
    """An opened index: approximate candidates for a query vector."""

    def __init__(self, table: Any, params: AnnParams) -> None:
        self.table = table
        self.params = params

    @classmethod
    def open(cls, table_dir: Path, entry: Mapping[str, Any], *, rows: int,
             stamp: Mapping[str, Any], identity: Mapping[str, Any]) -> AnnIndex:
        """The index ``entry`` (``meta.json``'s ``ann``) describes; fails closed (module doc)."""
        where = f"ANN index of vector store {table_dir.parent}"
        try:
            params = AnnParams.from_dict(entry["params"])
            recorded = (entry["rows"], entry["stamp"], entry["identity"], entry["files"])
        except (KeyError, TypeError, UsageError) as exc:
            raise IndexMismatchError(f"{where} has damaged metadata ({exc}); re-index") from exc
        for name, got, want in (("rows", recorded[0], rows), ("stamp", recorded[1], dict(stamp)),
                                ("identity", recorded[2], dict(identity))):
            if got != want:
                raise IndexMismatchError(f"{where} was built for {name} {got!r}, but the store "
                                         f"has {want!r} (a stale or foreign index); re-index")
        if _hashes(table_dir) != recorded[3]:
            raise IndexMismatchError(f"{where}: its files are missing, extra or do not hash as "
                                     f"recorded (damaged); re-index with --rebuild")
        table = _open_table(table_dir, where)
        _check_listed(table, entry, params, rows, where)
        return cls(table, params)

    def candidates(self, query: np.ndarray, top_k: int) -> list[str]:
        """Up to ``candidates x top_k`` chunk ids near ``query`` (a unit vector), unordered."""
        p = self.params
        builder = (self.table.search(query, vector_column_name="vector")
                   .distance_type("dot").limit(top_k * p.candidates)
                   .nprobes(p.nprobes).select(["chunk_id", "_distance"]))
        if p.kind != "ivf_pq":
            builder = builder.ef(max(p.ef, top_k * p.candidates))
        if p.refine_factor is not None:
            builder = builder.refine_factor(p.refine_factor)
        try:
            found = builder.to_arrow()
        except Exception as exc:  # a failing read of the index means "damaged"
            raise IndexMismatchError(f"ANN search failed ({type(exc).__name__}: {exc}); "
                                     f"re-index with --rebuild") from exc
        ids: list[str] = found.column("chunk_id").to_pylist()
        return ids


def _open_table(table_dir: Path, where: str) -> Any:
    try:
        import lancedb
    except ImportError as exc:
        purpose = "The approximate dense index (or search with --exact)"
        raise MissingDependencyError("lancedb", "dense", purpose) from exc
    try:
        return lancedb.connect(str(table_dir.parent)).open_table(table_dir.stem)
    except Exception as exc:  # any failure to open the table means "damaged"
        raise IndexMismatchError(f"{where} cannot be opened ({type(exc).__name__}: {exc}); "
                                 f"re-index") from exc


def _check_listed(table: Any, entry: Mapping[str, Any], params: AnnParams, rows: int,
                  where: str) -> None:
    try:
        listed = [i for i in table.list_indices() if i.name == entry.get("index")]
        stats = table.index_stats(str(entry.get("index"))) if listed else None
    except Exception as exc:  # any failure to list means "damaged"
        raise IndexMismatchError(f"{where} cannot be read ({type(exc).__name__}: {exc}); "
                                 f"re-index") from exc
    if (stats is None or stats.index_type != KINDS[params.kind] or stats.distance_type != "dot"
            or stats.num_indexed_rows != rows or stats.num_unindexed_rows):
        raise IndexMismatchError(f"{where}: LanceDB reports {stats!r}, not the recorded "
                                 f"{KINDS[params.kind]} index over {rows} rows; re-index")
