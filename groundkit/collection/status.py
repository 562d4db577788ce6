"""What a collection holds, and which of its files changed since indexing.

:func:`collection_status` reads counts and settings from the store; with
``changes`` it also hashes every indexed file (content, never size or mtime)
and walks the roots for files added since the generation was built.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import store
from ..errors import CalibrationError
from ..retrieval.gate import Calibration
from ..retrieval.modes import MODES
from ..sources import Candidate, count_by_kind, discover
from ..verify import Unreadable, read_inside
from . import calibration, gc
from .gc import Reclaimable
from .indexer import root_labels
from .snapshot import Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class SkippedFile:
    path: str
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Changes:
    """Documents modified or missing since indexing, and files added under the roots."""

    modified: tuple[str, ...]
    missing: tuple[str, ...]
    added: tuple[str, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class CalibrationInfo:
    """A stored abstention calibration: its size, alpha, age, and whether it still holds."""

    mode: str
    n0: int
    alpha: float
    created_at: str
    stale: str | None
    """Why ``--abstain`` would refuse it (re-indexed, other analyzer or model), or None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CollectionStatus:
    """A collection's published generation: counts, settings, skipped and changed files."""

    collection: str
    directory: str
    generation: int
    indexed_at: str
    documents: int
    chunks: int
    roots: tuple[str, ...]
    chunker: dict[str, Any]
    analyzer: dict[str, Any] | None
    bm25: dict[str, Any] | None
    embedding: dict[str, Any] | None
    last_run: dict[str, Any] | None
    skipped: tuple[SkippedFile, ...]
    formats: dict[str, int] = field(default_factory=dict)
    """Documents per format (``text`` for plain files, else the extractor's format)."""
    calibrations: tuple[CalibrationInfo, ...] = ()
    changed_since_indexing: Changes | None = None
    """``None`` unless changes were looked for."""
    gc: dict[str, Any] | None = None
    """The garbage collection settings recorded with the generation (``auto``, ``keep``)."""
    reclaimable: Reclaimable | None = None
    """About what ``grk gc`` would free now (``None`` when not computed)."""

    def to_dict(self) -> dict[str, Any]:
        """The machine-readable form (``grk status --json``)."""
        out = asdict(self)
        out["roots"] = list(self.roots)
        out["skipped"] = [asdict(s) for s in self.skipped]
        out["skipped_by_reason"] = count_by_kind(s.reason for s in self.skipped)
        out["calibrations"] = [asdict(c) for c in self.calibrations]
        out["reclaimable"] = None if self.reclaimable is None else self.reclaimable.to_dict()
        if self.changed_since_indexing is None:
            del out["changed_since_indexing"]
        else:
            out["changed_since_indexing"] = {k: list(v) for k, v in
                                             asdict(self.changed_since_indexing).items()}
        return out


def collection_status(snap: Snapshot, *, changes: bool = True) -> CollectionStatus:
    """The status of ``snap``'s generation; with ``changes``, a content diff of its files."""
    conn, gen, config = snap.conn, snap.generation, snap.config
    documents = dict(
        conn.execute("SELECT doc_id, sha256 FROM documents WHERE generation = ?", (gen,)))
    formats = dict(conn.execute(
        "SELECT CASE extractor WHEN '' THEN 'text' ELSE substr(extractor, 1, "
        "instr(extractor, '/') - 1) END AS format, COUNT(*) FROM documents "
        "WHERE generation = ? GROUP BY format ORDER BY COUNT(*) DESC, format", (gen,)))
    skipped = tuple(SkippedFile(path=p, reason=r) for p, r in conn.execute(
        "SELECT path, reason FROM skipped WHERE generation = ? ORDER BY path", (gen,)))
    created, stats = conn.execute(
        "SELECT created_at, stats FROM generations WHERE id = ?", (gen,)).fetchone()
    return CollectionStatus(
        collection=snap.name, directory=str(snap.directory), generation=gen,
        indexed_at=created, documents=len(documents), chunks=snap.chunk_count,
        roots=tuple(config["roots"]), chunker=config["chunker"],
        analyzer=config.get("analyzer"), bm25=config.get("bm25"),
        embedding=config.get("embedding"), last_run=json.loads(stats) if stats else None,
        skipped=skipped, formats=formats, calibrations=_calibrations(snap),
        changed_since_indexing=_changes(snap, documents, skipped) if changes else None,
        gc=(collecting := gc.settings(config.get("gc"), None)),
        reclaimable=gc.reclaimable(conn, snap.directory, collecting["keep"]))


def _calibrations(snap: Snapshot) -> tuple[CalibrationInfo, ...]:
    out = []
    for mode in MODES:
        text = store.get_meta_text(snap.conn, calibration.META_PREFIX + mode)
        if text is None:
            continue
        try:
            found, stale = calibration.load(snap, mode), None
        except CalibrationError as exc:
            stale = str(exc)
            try:
                found = Calibration.from_dict(json.loads(text))
            except (CalibrationError, ValueError):
                out.append(CalibrationInfo(mode=mode, n0=0, alpha=0.0, created_at="",
                                           stale=stale))
                continue
        out.append(CalibrationInfo(mode=mode, n0=found.n0, alpha=found.alpha,
                                   created_at=found.created_at, stale=stale))
    return tuple(out)


def _changes(snap: Snapshot, documents: dict[str, str],
             skipped: tuple[SkippedFile, ...]) -> Changes:
    modified, missing = [], []
    for row in store.generation_documents(snap.conn, snap.generation):
        data = read_inside(row.root, row.relpath, snap.max_bytes)
        if isinstance(data, Unreadable):
            missing.append(row.doc_id)
        elif hashlib.sha256(data).hexdigest() != row.sha256:
            modified.append(row.doc_id)
    return Changes(modified=tuple(sorted(modified)), missing=tuple(sorted(missing)),
                   added=tuple(sorted(_added(snap, set(documents) | {s.path for s in skipped}))))


def _added(snap: Snapshot, known: set[str]) -> list[str]:
    config = snap.config
    labels = root_labels(config["roots"])
    added = []
    for root in config["roots"]:
        if not Path(root).is_dir():
            continue
        for item in discover(
            Path(root), include=config["include"], exclude=config["exclude"],
            max_bytes=snap.max_bytes, skip_dirs=(snap.directory.parent.parent,),
        ):
            if isinstance(item, Candidate) and labels[root] + item.relpath not in known:
                added.append(labels[root] + item.relpath)
    return added
