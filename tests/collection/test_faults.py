"""Faults at every write point of indexing and publishing: a full disk (ENOSPC), a failing
one (EIO) and a kill right there (``groundkit/faults.py``), and a real full tmpfs.

After each: ``grk index`` fails with one clear line and exit 14 (or dies, for a kill), the
generation published before stays current, opens, verifies and passes ``grk check``, and
the next run without the fault recovers and publishes the change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import faults
from groundkit.collection import Collection, IndexConfig, index
from groundkit.errors import StorageError
from groundkit.model import Status
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

DOCS = {f"n{i}.md": f"# Note {i}\n\nNote {i} is about topic{i % 3} and lamps.\n" * 4
        for i in range(12)}
# Which generation is current after the fault: the one before it, or the new one.
EXPECTED = {"index.ingest": "old", "derived.rowids": "old", "derived.bm25": "old",
            "derived.vectors": "old", "publish": "old", "publish.done": "new", "gc": "new"}


def grk_index(root: Path, home: Path, fault: str | None,
              *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    env.pop(faults.VARIABLE, None)
    if fault:
        env[faults.VARIABLE] = fault
    return subprocess.run([sys.executable, "-m", "groundkit", "index", str(root),
                           "--collection", "k", *extra], env=env, capture_output=True,
                          text=True, timeout=300)


def sound(home: Path) -> tuple[int, list[str]]:
    """(generation, problems): the collection opens, checks and verifies."""
    with Collection.open("k", home) as coll:
        problems = coll.check()
        hits = coll.search("lamps topic1", top_k=5, verify=True)
        problems += [f"{h.chunk.chunk_id}: {h.verdict}" for h in hits
                     if h.verdict is None or h.verdict.status is Status.UNRESOLVABLE]
        return coll.generation, problems + ([] if hits else ["no hits"])


@pytest.fixture(scope="module")
def standin() -> Iterator[OllamaStandin]:
    with OllamaStandin(hashing_embedder(32), models=["nomic-embed-text"]) as server:
        yield server


def config(root: Path, point: str, standin: OllamaStandin) -> IndexConfig:
    """BM25 only, except for the vectors' write point (an embedded collection)."""
    extra = {"embedding": {"spec": "ollama:nomic-embed-text", "options": {"host": standin.url}}}
    return IndexConfig(roots=(str(root),), extra=extra if point == "derived.vectors" else {})


@pytest.mark.parametrize("action", ["ENOSPC", "EIO", "kill"])
@pytest.mark.parametrize("point", faults.POINTS)
def test_a_fault_at_each_write_point_leaves_a_sound_collection_and_the_next_run_recovers(
        make_tree: TreeMaker, home: Path, standin: OllamaStandin, point: str, action: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_tree(DOCS)
    settings = config(root, point, standin)
    for _ in range(3 if point == "gc" else 1):  # gc has work beyond the two kept generations
        index("k", settings, home=home)
    before, problems = sound(home)
    assert problems == []
    (root / "n1.md").write_text("# Note 1\n\nRewritten: lamps and lighthouses.\n")
    if action == "kill":  # in a child process, which the fault kills
        embed = (("--embed", "ollama:nomic-embed-text", "--ollama-host", standin.url)
                 if point == "derived.vectors" else ())
        assert grk_index(root, home, f"{point}:{action}", *embed).returncode == -9
    else:
        monkeypatch.setenv(faults.VARIABLE, f"{point}:{action}")
        with pytest.raises(StorageError, match=f"injected at {point}.*previous generation is "
                                               "intact"):
            index("k", settings, home=home)
        monkeypatch.delenv(faults.VARIABLE)
    generation, problems = sound(home)
    assert problems == []
    assert generation == (before if EXPECTED[point] == "old" else before + 1)
    index("k", settings, home=home)  # the next run recovers
    generation, problems = sound(home)
    assert problems == [] and generation > before
    with Collection.open("k", home) as coll:
        assert coll.search("lighthouses")[0].chunk.doc_id == "n1.md"
        kept = sorted(p.name for p in coll.snapshot.directory.glob("gen-*"))
    assert len(kept) <= 2, kept  # what the failed run left was cleared


def test_the_command_line_says_it_in_one_line_with_its_own_exit_code(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree(DOCS)
    assert grk_index(root, home, None).returncode == 0
    (root / "n2.md").write_text("changed\n")
    failed = grk_index(root, home, "derived.bm25:ENOSPC")
    assert failed.returncode == StorageError.exit_code == 14
    # Progress and settings lines may come first; the error is one line, the last.
    *_, line = failed.stderr.strip().splitlines()
    assert [x for x in failed.stderr.splitlines() if "error" in x] == [line]
    assert line.startswith("grk index: error: indexing 'k' failed while writing: [Errno 28]")
    assert "previous generation is intact" in line and "Traceback" not in failed.stderr


def test_an_unknown_fault_action_is_refused() -> None:
    os.environ[faults.VARIABLE] = "publish:melt"
    try:
        with pytest.raises(ValueError, match="must be one of ENOSPC, EIO, kill"):
            faults.point("publish")
    finally:
        del os.environ[faults.VARIABLE]


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1.5 MiB tmpfs (root can mount one; elsewhere the test skips)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1536k", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_real_full_disk_fails_with_one_line_and_the_next_run_recovers(
        make_tree: TreeMaker, tiny_disk: Path) -> None:
    root = make_tree(DOCS)
    home = tiny_disk / "home"
    assert grk_index(root, home, None).returncode == 0
    before, problems = sound(home)
    assert problems == []
    big = root / "big"
    big.mkdir()
    for i in range(40):  # ~4 MB of new, distinct text: more than the disk holds
        (big / f"b{i}.md").write_text(" ".join(f"w{i}x{j}" for j in range(12_000)))
    failed = grk_index(root, home, None)
    assert failed.returncode == StorageError.exit_code, failed.stderr
    errors = [x for x in failed.stderr.splitlines() if "error" in x]
    assert errors == failed.stderr.strip().splitlines()[-1:] and "Traceback" not in failed.stderr
    assert sound(home) == (before, [])
    shutil.rmtree(big)
    assert grk_index(root, home, None).returncode == 0
    generation, problems = sound(home)
    assert problems == [] and generation > before
