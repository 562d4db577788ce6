"""Segmented BM25 on disk: updates and merges publish atomically; a crash keeps the last."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from groundkit.errors import IndexMismatchError, UsageError
from groundkit.retrieval import bm25_segment_store as segstore
from groundkit.retrieval.bm25 import BM25Index
from groundkit.retrieval.bm25_merge import TieredPolicy
from groundkit.retrieval.bm25_segments import SegmentedBM25
from groundkit.text.analysis import Analyzer

ANALYZER = Analyzer.preset("lucene-english")
WORDS = ["alpha", "beta", "gamma", "delta", "running", "the", "zeta", "eta", "theta", "iota"]
QUERIES = ["alpha", "beta gamma", "running delta delta", "the zeta eta theta", "iota alpha"]


def _texts(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 20))) for _ in range(n)]


def answers(index: SegmentedBM25 | BM25Index) -> list[list[tuple[int, float]]]:
    """Hits as live ranks (a full build's document numbers) and scores."""
    if isinstance(index, BM25Index):
        return [index.search(q, 10) for q in QUERIES]
    positions = index.live_positions()
    return [[(int(np.searchsorted(positions, p)), s) for p, s in index.search(q, 10)]
            for q in QUERIES]


def test_updates_and_merges_answer_as_a_full_build(tmp_path: Path) -> None:
    texts = _texts(1, 300)
    live = list(texts)
    root = tmp_path / "bm25"
    current = segstore.create(root, BM25Index.build(texts, ANALYZER))
    rng = random.Random(2)
    for step in range(25):
        positions = current.live_positions()
        gone = sorted(rng.sample(range(len(positions)), 3))
        added = _texts(100 + step, rng.randint(0, 4))
        current = segstore.update(root, positions[gone].tolist(), added,
                                  deleted_texts=[live[g] for g in gone] if step % 2 else None)
        live = [t for j, t in enumerate(live) if j not in gone] + added
        assert answers(current) == answers(BM25Index.build(live, ANALYZER))
    assert len(current.segments) > 10
    while segstore.merge(root):
        pass
    merged = segstore.open_segmented(root)
    assert len(merged.segments) < 10
    assert answers(merged) == answers(BM25Index.build(live, ANALYZER))
    names = {e["name"] for e in segstore.read_manifest(root)["segments"]}
    assert {p.name for p in root.iterdir() if p.is_dir()} == names  # merged-away ones gone


def test_kept_versions_stay_readable_and_older_ones_go(tmp_path: Path) -> None:
    root = tmp_path / "bm25"
    segstore.create(root, BM25Index.build(_texts(1, 50), ANALYZER))
    seen = {}
    for version in range(2, 6):
        seen[version] = answers(segstore.update(root, [version], _texts(version, 3), keep=2))
    assert answers(segstore.open_segmented(root, version=4)) == seen[4]
    assert answers(segstore.open_segmented(root, version=5)) == seen[5]
    with pytest.raises(IndexMismatchError, match=r"manifest-000003\.json missing"):
        segstore.open_segmented(root, version=3)
    segstore.clean(root)  # keep=1: only the current version's files are left
    assert sorted(p.name for p in root.iterdir() if p.suffix == ".json") == [
        "manifest-000005.json", "segments.json"]
    with pytest.raises(UsageError, match="at least 1"):
        segstore.clean(root, 0)


def test_a_generation_already_open_keeps_answering_after_an_update(tmp_path: Path) -> None:
    root = tmp_path / "bm25"
    old = segstore.create(root, BM25Index.build(_texts(1, 50), ANALYZER))
    before = answers(old)
    segstore.update(root, list(range(40)), _texts(2, 5))
    segstore.merge(root, TieredPolicy(max_deleted=0.1))
    assert answers(old) == before  # its files were removed; its mappings stay


@pytest.mark.parametrize("action", ["ENOSPC", "EIO"])
@pytest.mark.parametrize("what", ["add", "delete", "merge"])
def test_a_failed_write_leaves_the_previous_generation(tmp_path: Path, action: str, what: str,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "bm25"
    segstore.create(root, BM25Index.build(_texts(1, 60), ANALYZER))
    segstore.update(root, list(range(30)), _texts(2, 3))
    before = answers(segstore.open_segmented(root))
    manifest = (root / segstore.MANIFEST).read_bytes()
    monkeypatch.setenv("GROUNDKIT_FAULT", f"derived.bm25:{action}")
    with pytest.raises(OSError, match="injected"):
        _write(root, what)
    assert (root / segstore.MANIFEST).read_bytes() == manifest
    assert answers(segstore.open_segmented(root)) == before
    monkeypatch.delenv("GROUNDKIT_FAULT")
    _write(root, what)  # the next writer succeeds and clears the leftovers
    assert not [p for p in root.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("what", ["add", "delete", "merge"])
def test_a_writer_killed_mid_write_leaves_the_previous_generation(tmp_path: Path,
                                                                  what: str) -> None:
    root = tmp_path / "bm25"
    segstore.create(root, BM25Index.build(_texts(1, 60), ANALYZER))
    segstore.update(root, list(range(30)), _texts(2, 3))
    before = answers(segstore.open_segmented(root))
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
              "from pathlib import Path; from test_bm25_segment_store import _write; "
              f"_write(Path({str(root)!r}), {what!r})")
    env = {**os.environ, "GROUNDKIT_FAULT": "derived.bm25:kill"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          timeout=120, check=False)
    assert done.returncode == -9, done.stderr.decode()
    assert answers(segstore.open_segmented(root)) == before
    _write(root, what)
    assert not [p for p in root.iterdir() if p.name.startswith(".")]


def _write(root: Path, what: str) -> None:
    """One publication of kind ``what`` (the fault tests' step)."""
    if what == "add":
        segstore.update(root, [31], _texts(3, 4))
    elif what == "delete":
        segstore.update(root, [32], [])
    else:
        assert segstore.merge(root, TieredPolicy(max_deleted=0.1))


def test_damage_fails_closed(tmp_path: Path) -> None:
    root = tmp_path / "bm25"
    segstore.create(root, BM25Index.build(_texts(1, 20), ANALYZER))
    segstore.update(root, [1, 2], [])
    entry = segstore.read_manifest(root)["segments"][0]
    (root / entry["deleted"]).write_bytes(b"not a tombstone file")
    with pytest.raises(IndexMismatchError, match="tombstones"):
        segstore.open_segmented(root)
    (root / segstore.MANIFEST).write_text(json.dumps({"format": "other"}))
    with pytest.raises(IndexMismatchError, match="manifest"):
        segstore.open_segmented(root)
    with pytest.raises(IndexMismatchError, match="missing"):
        segstore.open_segmented(tmp_path / "nothing")
    with pytest.raises(UsageError, match="already holds"):
        segstore.create(root, BM25Index.build(["alpha"], ANALYZER))


def test_positions_outside_the_generation_are_refused(tmp_path: Path) -> None:
    root = tmp_path / "bm25"
    segstore.create(root, BM25Index.build(_texts(1, 20), ANALYZER))
    with pytest.raises(UsageError, match=r"0\.\.19"):
        segstore.update(root, [20], [])
    segstore.update(root, [3], [])
    with pytest.raises(UsageError, match="deleted before"):
        segstore.update(root, [3], [])
