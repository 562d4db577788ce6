"""A segmented BM25 index on disk: immutable segment folders, tombstone files, a manifest.

Layout of a segmented index folder (ADR-0025)::

    segments.json                 the current manifest: format, version, segments in order
    manifest-000004.json          version 4's manifest (the versions :func:`clean` keeps)
    seg-000001/                   a BM25 index folder (:meth:`.BM25Index.save`), never changed
    seg-000001.del-000004.npz     its tombstones as of manifest version 4 (docs, terms, counts)

Every file is written once under a fresh name, fsynced, and only then does a new
manifest replace the old one (``os.replace``, then an fsync of the folder), so a reader
sees the old generation or the new one and a crash at any point (``faults`` point
``derived.bm25``, reached while a segment is written and again just before each manifest
file is replaced) leaves the previous manifest and everything it names intact. Files no
kept manifest names are removed by :func:`clean` after each publication (a reader that has
them open keeps its mappings); ``keep`` versions stay readable (``open_segmented(root,
version=...)``), as a collection keeps the generations it still serves. One writer at a
time: the caller holds the lock (the collection's writer lock does).

:func:`update` is the edit path: a small segment for the added texts, tombstones for the
deleted documents; it never rewrites an existing segment. :func:`merge` applies the merge
policy (:class:`.bm25_merge.TieredPolicy`) once, synchronously.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import faults
from ..errors import GroundkitError, IndexMismatchError, UsageError
from ..text.analysis import Analyzer
from .bm25 import BM25Index
from .bm25_build import Builder
from .bm25_merge import TieredPolicy, Tombstones, merged, scored, tombstones
from .bm25_segments import SMALL_DOCS, SegmentedBM25

MANIFEST = "segments.json"
FORMAT = "groundkit-bm25-segments/1"
OPEN_TRIES = 3
"""A reader that finds a file gone (a writer published and cleaned meanwhile) re-reads
the manifest, at most this many times."""


def create(root: Path, index: BM25Index) -> SegmentedBM25:
    """A segmented index at ``root`` (which must not hold one) with ``index`` as its only
    segment."""
    if (root / MANIFEST).exists():
        raise UsageError(f"{root} already holds a segmented BM25 index")
    root.mkdir(parents=True, exist_ok=True)
    name = _write_segment(root, index, 1)
    _publish(root, {"version": 1, "next_segment": 2,
                    "segments": [{"name": name, "deleted": None}]})
    return open_segmented(root)


def open_segmented(root: Path, *, analyzer: Analyzer | None = None,
                   version: int | None = None) -> SegmentedBM25:
    """The current generation at ``root`` (or manifest ``version``, one :func:`clean` kept),
    its segments memory-mapped. ``IndexMismatchError`` when a file is missing or damaged
    (after :data:`OPEN_TRIES`)."""
    tries = 0
    while True:
        manifest = read_manifest(root, version)
        try:
            return _open(root, manifest, analyzer)
        except IndexMismatchError:
            tries += 1
            if tries == OPEN_TRIES or read_manifest(root, version) == manifest:
                raise  # not a publication racing us: really damaged


def update(root: Path, deleted: Sequence[int], added_texts: Sequence[str], *,
           deleted_texts: Sequence[str] | None = None,
           current: SegmentedBM25 | None = None, keep: int = 1) -> SegmentedBM25:
    """Publish the next generation: the documents at positions ``deleted`` tombstoned
    (``deleted_texts``: their texts, when known, saves a pass over the postings) and
    ``added_texts`` appended as a new segment. Returns the new generation.

    ``current``: the generation now published, already open (a writer's last result):
    its segments are reused instead of opened again, when its version is the manifest's.
    ``keep``: how many versions stay readable afterwards (:func:`clean`).
    """
    manifest = read_manifest(root)
    if current is None or current.version != manifest["version"]:
        current = _open(root, manifest, None)
    version = int(manifest["version"]) + 1
    entries = [dict(e) for e in manifest["segments"]]
    positions = np.asarray(deleted, dtype=np.int64)
    if len(positions) and (positions.min() < 0 or positions.max() >= current.n_docs):
        raise UsageError(f"deleted positions must lie in 0..{current.n_docs - 1}")
    pairs = list(zip(current.segments, current.tombstones, strict=True))
    owner = np.searchsorted(current.offsets, positions, side="right") - 1
    for i in np.unique(owner).tolist():
        mine = np.flatnonzero(owner == i)
        local = positions[mine] - int(current.offsets[i])
        texts = None if deleted_texts is None else [deleted_texts[j] for j in mine.tolist()]
        dead = tombstones(current.segments[i], local, texts, current.tombstones[i])
        entries[i]["deleted"] = _write_tombstones(root, entries[i]["name"], version, dead)
        pairs[i] = (pairs[i][0], dead)
    next_segment = int(manifest["next_segment"])
    if added_texts:
        builder = Builder(current.analyzer)
        for text in added_texts:
            builder.add(text)
        fresh = scored(builder.finish(), current.analyzer, current.params,
                       blocks=len(added_texts) > SMALL_DOCS)
        entries.append({"name": _write_segment(root, fresh, next_segment), "deleted": None})
        pairs.append((fresh, Tombstones()))
        next_segment += 1
    _publish(root, {"version": version, "next_segment": next_segment, "segments": entries})
    clean(root, keep)
    return SegmentedBM25(pairs, version=version)


def merge(root: Path, policy: TieredPolicy | None = None, *, keep: int = 1) -> bool:
    """Merge the segments ``policy`` picks, once, and publish; ``False``: nothing to do.
    Call it until it returns ``False`` to settle a cascade. ``keep``: as :func:`update`'s."""
    policy = policy or TieredPolicy()
    manifest = read_manifest(root)
    current = _open(root, manifest, None)
    plan = policy.plan([s.n_docs for s in current.segments],
                       [len(d) for d in current.tombstones])
    if plan is None:
        return False
    lo, hi = plan
    pairs = list(zip(current.segments[lo:hi], current.tombstones[lo:hi], strict=True))
    next_segment = int(manifest["next_segment"])
    entries = list(manifest["segments"])
    if sum(s.n_docs - len(d) for s, d in pairs) == 0:
        entries[lo:hi] = []  # nothing live is left in them
        if not entries:
            return False  # keep one (empty) segment: an index has at least one
    else:
        live = sum(s.n_docs - len(d) for s, d in pairs)
        name = _write_segment(root, merged(pairs, blocks=live > SMALL_DOCS), next_segment)
        entries[lo:hi] = [{"name": name, "deleted": None}]
        next_segment += 1
    _publish(root, {"version": int(manifest["version"]) + 1, "next_segment": next_segment,
                    "segments": entries})
    clean(root, keep)
    return True


def clean(root: Path, keep: int = 1) -> list[str]:
    """Remove what neither the current manifest nor the ``keep - 1`` versions before it name
    (older segments, tombstones and manifests, a crashed writer's leftovers); the names
    removed. A generation a collection still serves keeps its version readable this way."""
    if keep < 1:
        raise UsageError(f"keep must be at least 1, got {keep}")
    current = int(read_manifest(root)["version"])
    kept = {MANIFEST}
    for version in range(max(1, current - keep + 1), current + 1):
        with contextlib.suppress(IndexMismatchError):  # a version cleaned before
            manifest = read_manifest(root, version)
            kept |= {_versioned(version)} | {e["name"] for e in manifest["segments"]} | {
                e["deleted"] for e in manifest["segments"] if e["deleted"]}
    removed = []
    for path in sorted(root.iterdir()):
        if path.name in kept:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        removed.append(path.name)
    return removed


def read_manifest(root: Path, version: int | None = None) -> dict[str, Any]:
    """The current manifest, or version ``version``'s."""
    path = root / (MANIFEST if version is None else _versioned(version))
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise IndexMismatchError(f"no segmented BM25 index at {root} ({path.name} missing)") \
            from exc
    except (OSError, ValueError) as exc:
        raise IndexMismatchError(f"{path} is unreadable ({exc}); rebuild the index") from exc
    segments = data.get("segments") if isinstance(data, dict) else None
    if (not isinstance(data, dict) or data.get("format") != FORMAT or not segments
            or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in segments)
            or (version is not None and data.get("version") != version)):
        raise IndexMismatchError(f"{path} is not a {FORMAT} manifest; rebuild the index")
    return data


def _versioned(version: int) -> str:
    return f"manifest-{version:06d}.json"


def _open(root: Path, manifest: dict[str, Any], analyzer: Analyzer | None) -> SegmentedBM25:
    pairs = []
    for entry in manifest["segments"]:
        index = BM25Index.load(root / entry["name"], {"segment": entry["name"]},
                               analyzer=analyzer)
        pairs.append((index, _read_tombstones(root, entry.get("deleted"))))
    try:
        return SegmentedBM25(pairs, version=int(manifest["version"]))
    except GroundkitError as exc:
        raise IndexMismatchError(f"segmented BM25 index at {root}: {exc}") from exc


def _write_segment(root: Path, index: BM25Index, number: int) -> str:
    name = f"seg-{number:06d}"
    index.save(root / name, {"segment": name})
    return name


def _write_tombstones(root: Path, segment: str, version: int, dead: Tombstones) -> str:
    name = f"{segment}.del-{version:06d}.npz"
    with tempfile.NamedTemporaryFile(dir=root, prefix=f".{name}.", delete=False) as f:
        np.savez(f, docs=dead.docs, terms=dead.terms, counts=dead.counts)
        f.flush()
        os.fsync(f.fileno())
    os.replace(f.name, root / name)
    return name


def _read_tombstones(root: Path, name: str | None) -> Tombstones:
    if name is None:
        return Tombstones()
    try:
        with np.load(root / name, allow_pickle=False) as data:
            return Tombstones(docs=data["docs"].astype(np.int64),
                              terms=data["terms"].astype(np.int64),
                              counts=data["counts"].astype(np.int64))
    except (OSError, ValueError, KeyError, GroundkitError) as exc:
        raise IndexMismatchError(f"tombstones {root / name} are missing or damaged ({exc}); "
                                 "rebuild the index") from exc


def _publish(root: Path, manifest: dict[str, Any]) -> None:
    """Write the manifest as its version's file, then make it current, each atomically (its
    new files already written and fsynced); a crash between leaves the previous current."""
    text = json.dumps({"format": FORMAT, **manifest}, indent=1, sort_keys=True).encode()
    for name in (_versioned(int(manifest["version"])), MANIFEST):
        with tempfile.NamedTemporaryFile(dir=root, prefix=f".{name}.", delete=False) as f:
            try:
                f.write(text)
                f.flush()
                os.fsync(f.fileno())
                faults.point("derived.bm25")
            except BaseException:
                os.unlink(f.name)
                raise
        os.replace(f.name, root / name)
    fd = os.open(root, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

