"""Checksums of every derived file of a generation: recorded at publish, checked on use.

When a generation is published, every file under ``gen-<N>/`` (``rowids.npy``,
``bm25/*``, ``vectors/*`` including all of LanceDB's files) is listed, sorted,
with its size and sha256, in the store's ``derived_files`` table, in the same
transaction that publishes the generation (:func:`manifest`,
:func:`groundkit.store.record_derived_files`).

Two checks use the record:

* :func:`check` (``grk check``) re-hashes every file and reports each missing,
  unexpected, resized or altered one by its path relative to the collection,
  e.g. ``gen-3/bm25/scores.npy: checksum mismatch (expected sha256 …, found …)``.
* :func:`verify_on_open` runs before a snapshot loads any derived index: it
  compares the set of files and their sizes with the record, hashes every file
  of at most :data:`SMALL_FILE` bytes, and hashes everything when the
  generation's files total at most :data:`FULL_ON_OPEN` bytes. A problem is an
  :class:`~groundkit.errors.IntegrityError` naming ``grk check`` and
  ``grk index --collection NAME --rebuild``. Above the budget, a byte flipped
  inside a large array is found by ``grk check``, not on open (the loaders still
  check headers and that the arrays' lengths agree).

A generation indexed before checksums existed has no record: :func:`check`
says so (re-index to add them) and :func:`verify_on_open` lets it open.
"""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import store
from ..errors import IndexMismatchError, IntegrityError

SMALL_FILE = 64 * 1024
"""Files up to this size (meta.json, LanceDB manifests, small arrays) are hashed on every open."""

FULL_ON_OPEN = 8 * 1024 * 1024
"""A generation whose derived files total at most this (about 5,000 chunks without vectors)
is hashed in full on open: at most ~7 ms warm. Above it, sizes and small files only."""


def sha256_of(path: Path) -> str:
    """The file's sha256, hashed from a read-only map (no copy: ~1.3 GB/s measured)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size:
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                digest.update(mapped)
    return digest.hexdigest()


def files_on_disk(gen_dir: Path) -> dict[str, int]:
    """Relative path (``/``-separated) -> size of every file under ``gen_dir``."""
    found: dict[str, int] = {}
    for folder, dirs, names in os.walk(gen_dir):
        dirs.sort()
        for name in names:
            path = Path(folder, name)
            found[path.relative_to(gen_dir).as_posix()] = path.lstat().st_size
    return found


_HASHED: dict[tuple[int, int, int, int], str] = {}
"""sha256 of files :func:`intact` just hashed and found as recorded, by (device, inode, size,
mtime): a new generation that hard-links them (BM25 segments, :mod:`.bm25_segmented`) records
them at publish without hashing them a second time in the same run. Emptied by
:func:`manifest`."""


def _key(path: Path) -> tuple[int, int, int, int]:
    st = path.stat()
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def manifest(gen_dir: Path) -> list[store.DerivedFile]:
    """``(path, size, sha256)`` of every file under ``gen_dir``, sorted by path (a file
    :func:`intact` hashed earlier in this run, linked here, is not hashed again)."""
    hashed = dict(_HASHED)
    _HASHED.clear()
    return [(rel, size, hashed.get(_key(gen_dir / rel)) or sha256_of(gen_dir / rel))
            for rel, size in sorted(files_on_disk(gen_dir).items())]


def problems(gen_dir: Path, recorded: dict[str, tuple[int, str]], *, label: str,
             hash_all: bool, under: str = "") -> list[str]:
    """How the files under ``gen_dir`` differ from ``recorded`` (empty when they agree).

    ``label`` prefixes each path (``gen-3``); ``under`` restricts both sides to one
    subfolder (``bm25/``). Files are always compared by name and size; by sha256 when
    ``hash_all`` or when they are at most :data:`SMALL_FILE` bytes.
    """
    try:
        disk = files_on_disk(gen_dir) if gen_dir.is_dir() else {}
    except OSError as exc:
        return [f"{label}/: unreadable ({exc})"]
    disk = {p: s for p, s in disk.items() if p.startswith(under)}
    wanted = {p: v for p, v in recorded.items() if p.startswith(under)}
    found: list[str] = []
    for path in sorted(set(wanted) | set(disk)):
        where = f"{label}/{path}"
        if path not in disk:
            found.append(f"{where}: missing (recorded {wanted[path][0]} bytes)")
        elif path not in wanted:
            found.append(f"{where}: unexpected file (not recorded when the generation "
                         "was published)")
        elif disk[path] != wanted[path][0]:
            found.append(f"{where}: size {disk[path]} bytes, recorded {wanted[path][0]}")
        elif hash_all or disk[path] <= SMALL_FILE:
            try:
                actual = sha256_of(gen_dir / path)
            except OSError as exc:
                found.append(f"{where}: unreadable ({exc})")
                continue
            if actual != wanted[path][1]:
                found.append(f"{where}: checksum mismatch (expected sha256 {wanted[path][1]}, "
                             f"found {actual})")
    return found


def unrecorded(generation: int) -> str:
    return (f"no checksums recorded for generation {generation} (indexed before checksums "
            "existed); re-index to add them")


def check(conn: sqlite3.Connection, directory: Path, generation: int) -> tuple[list[str], bool]:
    """Every problem of the generation's derived files, fully hashed; and whether any were
    recorded (``False``: a generation from before checksums, reported as one problem)."""
    recorded = store.derived_files(conn, generation)
    if recorded is None:
        return [unrecorded(generation)], False
    return problems(directory / f"gen-{generation}", recorded, label=f"gen-{generation}",
                    hash_all=True), True


def fix_hint(name: str) -> str:
    return (f"run `grk check {name}` to list every damaged file, then rebuild the derived "
            f"indexes from the store with `grk index --collection {name} --rebuild`")


@contextmanager
def hinted(name: str) -> Iterator[None]:
    """Add :func:`fix_hint` to an ``IndexMismatchError`` a loader raises (a damaged index)."""
    try:
        yield
    except IndexMismatchError as exc:
        raise IndexMismatchError(f"{exc}; {fix_hint(name)}") from exc


def verify_on_open(conn: sqlite3.Connection, directory: Path, generation: int,
                   name: str) -> None:
    """Fail closed (``IntegrityError``) when the generation's files are not as published.

    Sizes and the set of files always; sha256 of small files, and of every file when
    they total at most :data:`FULL_ON_OPEN` bytes. No-op without a record.
    """
    recorded = store.derived_files(conn, generation)
    if recorded is None:
        return
    total = sum(size for size, _ in recorded.values())
    found = problems(directory / f"gen-{generation}", recorded, label=f"gen-{generation}",
                     hash_all=total <= FULL_ON_OPEN)
    if found:
        raise IntegrityError(damage_message(name, found))


def damage_message(name: str, found: Iterable[str]) -> str:
    found = list(found)
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return (f"the derived indexes of collection {name!r} are damaged: {found[0]}{more}; "
            + fix_hint(name))


def intact(conn: sqlite3.Connection, directory: Path, generation: int, under: str) -> bool:
    """Whether ``gen-<N>/<under>`` is exactly as published (fully hashed), so it may be reused.

    True without a record (a generation from before checksums: the loaders decide).
    """
    recorded = store.derived_files(conn, generation)
    if recorded is None:
        return True
    gen_dir = directory / f"gen-{generation}"
    if problems(gen_dir, recorded, label=f"gen-{generation}", hash_all=True, under=under):
        return False
    for path, (_, sha) in recorded.items():
        if path.startswith(under):
            with contextlib.suppress(OSError):
                _HASHED[_key(gen_dir / path)] = sha
    return True
