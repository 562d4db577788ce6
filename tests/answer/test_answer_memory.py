"""An answer's caches never keep an index alive: a long-running server that moves to a new
generation frees the old one's index and its mapped files."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path

from conftest import TreeMaker

from groundkit.answer import ask
from groundkit.collection import Collection, IndexConfig, index

DOCS = {"a.md": "Rotate the keys every ninety days. The vault console shows the age.\n",
        "b.md": "Backups run nightly. A restore needs the vault token.\n"}


def _open_files(folder: Path) -> int:
    """This process's descriptors open on a file under ``folder``."""
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir()
               if str(_target(fd)).startswith(str(folder)))


def _target(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""


def test_an_answered_collection_closed_frees_its_index_and_files(
        make_tree: TreeMaker, home: Path) -> None:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    coll = Collection.open("k", home)
    assert ask(coll, "how often are keys rotated").sentences
    bm25 = weakref.ref(coll.snapshot.bm25())
    assert _open_files(home) > 0
    coll.close()
    del coll
    gc.collect()
    assert bm25() is None
    assert _open_files(home / "collections" / "k") == 0
