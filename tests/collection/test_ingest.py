"""Reading files for the indexer: exact bytes, bounded reads, refusals."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundkit.collection.ingest import read_regular
from groundkit.sources import READ_SIZE, Candidate


def found(path: Path) -> Candidate:
    """``path`` as discovery finds it: under its folder, with its identity."""
    st = os.lstat(path)
    return Candidate(path.parent, path.name, st.st_size, st.st_mtime_ns, (st.st_dev, st.st_ino))


@pytest.mark.parametrize("size", [0, 1, READ_SIZE - 1, READ_SIZE, READ_SIZE + 1, 3 * READ_SIZE + 7])
def test_read_regular_returns_exactly_the_files_bytes(tmp_path: Path, size: int) -> None:
    data = os.urandom(size)
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert read_regular(found(path), max(size, 1)) == data
    assert read_regular(found(path), 1 << 30) == data


def test_read_regular_refuses_a_file_over_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    path.write_bytes(b"x" * 11)
    with pytest.raises(OSError, match="too large"):
        read_regular(found(path), 10)


def test_read_regular_refuses_what_is_not_a_regular_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        read_regular(found(fifo), 100)
