"""Saving and opening BM25 index directories: ``.npy`` arrays, a term blob, ``meta.json``.

``save_index`` writes every file into a sibling temporary directory, fsyncs them
and renames the directory into place, so a reader sees the old or the new index,
never half of one. ``read_meta`` and ``open_arrays`` fail closed
(``IndexMismatchError``) on a missing, damaged or inconsistent file; arrays are
memory-mapped read-only, the large ones advised to come in huge pages (``advise``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import mmap
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from .. import faults
from ..errors import IndexMismatchError

HUGE_PAGES_FROM = 2 << 20
"""Mapped arrays of at least this many bytes (one huge page) are advised ``MADV_HUGEPAGE``."""
FORMAT = "groundkit-bm25/2"
"""Bumped whenever the files change: an index in an older format is refused (rebuild)."""


def save_index(
    target: Path, arrays: dict[str, npt.NDArray[Any]], blob: bytes, meta: dict[str, Any]
) -> Path:
    """Write ``arrays``, the term ``blob`` and ``meta`` (plus file specs) to ``target``."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        files: dict[str, Any] = {}
        for name, value in arrays.items():
            arr = np.ascontiguousarray(value)
            _write_file(tmp / f"{name}.npy", functools.partial(_save_npy, arr))
            files[name] = {"dtype": arr.dtype.str, "shape": list(arr.shape),
                           "bytes": (tmp / f"{name}.npy").stat().st_size}
            faults.point("derived.bm25")
        _write_file(tmp / "terms.bin", lambda f: f.write(blob))
        files["terms"] = {"bytes": len(blob)}
        text = json.dumps({"format": FORMAT, **meta, "files": files}, indent=1, sort_keys=True)
        _write_file(tmp / "meta.json", lambda f: f.write(text.encode()))
        _replace_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def read_meta(root: Path) -> dict[str, Any]:
    """``meta.json`` of the index at ``root`` (``IndexMismatchError`` if absent or foreign)."""
    try:
        meta = json.loads((root / "meta.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise IndexMismatchError(f"no BM25 index at {root} (meta.json missing)") from exc
    except (OSError, ValueError) as exc:
        raise damaged(root, f"meta.json unreadable: {exc}") from exc
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise damaged(root, f"meta.json is not {FORMAT}")
    return meta


def open_arrays(
    root: Path, meta: dict[str, Any], names: Sequence[str]
) -> tuple[dict[str, npt.NDArray[Any]], bytes | mmap.mmap]:
    """The named arrays (memory-mapped) and the term blob, checked against ``meta``."""
    files = meta.get("files")
    if not isinstance(files, dict):
        raise damaged(root, "meta.json lists no files")
    arrays = {name: _open_array(root, name, files.get(name)) for name in names}
    blob = _open_blob(root / "terms.bin", files.get("terms", {}).get("bytes"))
    return arrays, blob


def damaged(root: Path, what: str) -> IndexMismatchError:
    return IndexMismatchError(f"BM25 index at {root} is damaged ({what}); rebuild the index")


def _save_npy(arr: npt.NDArray[Any], f: Any) -> None:
    np.save(f, arr)


def _write_file(path: Path, write: Callable[[Any], Any]) -> None:
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())


def _replace_dir(tmp: Path, target: Path) -> None:
    old = None
    if target.exists():
        old = target.with_name(f".{target.name}.old-{os.getpid()}-{id(tmp)}")
        os.replace(target, old)
    os.replace(tmp, target)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def _open_array(root: Path, name: str, spec: dict[str, Any] | None) -> npt.NDArray[Any]:
    path = root / f"{name}.npy"
    try:
        if spec is None or path.stat().st_size != spec["bytes"]:
            raise damaged(root, f"{path.name} is missing from meta.json or has the wrong size")
        empty = 0 in spec["shape"]
        arr: npt.NDArray[Any] = np.load(path, mmap_mode=None if empty else "r",
                                        allow_pickle=False)
    except OSError as exc:
        raise damaged(root, f"{path.name}: {exc}") from exc
    except ValueError as exc:
        raise damaged(root, f"{path.name}: {exc}") from exc
    if arr.dtype.str != spec["dtype"] or list(arr.shape) != spec["shape"]:
        raise damaged(root, f"{path.name} holds {arr.dtype.str}{list(arr.shape)}, "
                            f"expected {spec['dtype']}{spec['shape']}")
    advise(arr)
    return arr


def advise(arr: npt.NDArray[Any]) -> None:
    """Advise the kernel to back a large mapped array with huge pages (Linux, where
    transparent huge pages are enabled, ``madvise`` or ``always``; elsewhere nothing).

    A query reads its posting lists wherever they lie; read in by its own page faults,
    a file comes into the page cache in small pieces, and every later process maps it
    a few pages a fault: at 10^6 passages, after the index was evicted, about 8,000 faults
    a pass over the bench's 1,000 queries and a p50 about 20% higher than with huge pages
    (ADR-0003, revision 2026-12-07). Advice only: nothing is read at open, and a kernel
    that refuses it changes nothing."""
    mapping = getattr(arr, "_mmap", None)  # numpy's memmap keeps its mmap here
    option = getattr(mmap, "MADV_HUGEPAGE", None)
    if mapping is None or option is None or arr.nbytes < HUGE_PAGES_FROM:
        return
    with contextlib.suppress(OSError):  # advice only
        mapping.madvise(option)


def _open_blob(path: Path, size: int | None) -> bytes | mmap.mmap:
    try:
        if path.stat().st_size != size:
            raise damaged(path.parent, f"{path.name} has the wrong size")
        if size == 0:
            return b""
        with open(path, "rb") as f:
            return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise damaged(path.parent, f"{path.name}: {exc}") from exc
