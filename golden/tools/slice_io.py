"""What the golden slice builders (formats_slice.py, archive_slice.py) share: hashing,
writing a file, the checksums of a golden folder, and ``--check``."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from pathlib import Path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def files(root: Path) -> dict[str, str]:
    """sha256 of every file under ``docs/`` and ``twins/``, and of ``PROVENANCE.json``."""
    found = {p.relative_to(root).as_posix(): sha256(p.read_bytes())
             for sub in ("docs", "twins") for p in (root / sub).rglob("*") if p.is_file()}
    if (root / "PROVENANCE.json").is_file():
        found["PROVENANCE.json"] = sha256((root / "PROVENANCE.json").read_bytes())
    return found


def check(build: Callable[[Path], object], out: Path) -> int:
    """Build into a temporary folder and compare it with ``out``: 1 (and each file that
    differs) on any difference, else 0."""
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp))
        ours, theirs = files(Path(tmp)), files(out)
    diffs = sorted(n for n in ours.keys() | theirs.keys() if ours.get(n) != theirs.get(n))
    for name in diffs:
        print(f"differs: {name}")
    print(f"{len(diffs)} difference(s) with {out}" if diffs else f"no difference with {out}")
    return 1 if diffs else 0
