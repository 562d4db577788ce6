"""bm25_store maps a saved index's arrays read-only and advises huge pages for the large
ones (fewer page faults for a process opening an index the page cache holds in pieces)."""

from __future__ import annotations

import mmap
import sys
from pathlib import Path

import numpy as np
import pytest

from groundkit.retrieval import bm25_store

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or not hasattr(mmap, "MADV_HUGEPAGE")
    or not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(),
    reason="MADV_HUGEPAGE, transparent huge pages and /proc/self/smaps are Linux's")


def advised(arr: np.ndarray) -> bool:
    """Whether the mapping holding ``arr``'s first byte carries the ``hg`` flag."""
    at = arr.ctypes.data
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0] if line else ""
        if "-" in head and ":" not in head:  # a mapping's address range opens its entry
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= at < hi
        elif inside and line.startswith("VmFlags:"):
            return "hg" in line.split()[1:]
    raise AssertionError("no mapping holds the array")


def test_a_large_mapped_array_is_advised_huge_pages_and_a_small_one_is_not(tmp_path):
    large = np.arange(bm25_store.HUGE_PAGES_FROM // 4 + 1, dtype=np.int32)
    small = np.arange(1000, dtype=np.int32)
    np.save(tmp_path / "large.npy", large)
    np.save(tmp_path / "small.npy", small)
    got_large = np.load(tmp_path / "large.npy", mmap_mode="r")
    got_small = np.load(tmp_path / "small.npy", mmap_mode="r")
    assert not advised(got_large) and not advised(got_small)
    bm25_store.advise(got_large)
    bm25_store.advise(got_small)
    assert advised(got_large) and not advised(got_small)
    assert np.array_equal(got_large, large)  # read as before


def test_an_array_in_memory_is_left_alone():
    arr = np.zeros(bm25_store.HUGE_PAGES_FROM, dtype=np.uint8)
    bm25_store.advise(arr)  # no mapping of its own: nothing to advise, no error
