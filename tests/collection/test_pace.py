"""The pace of the last embedding run, remembered in the home, gives the next run's first
line its estimate; a damaged memory gives none and breaks nothing."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.collection import IndexConfig, index, pace
from groundkit.embeddings.base import EmbeddingIdentity
from groundkit.progress import ProgressBar
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

pytest.importorskip("lancedb")

IDENTITY = EmbeddingIdentity(provider="onnx", model="m", dimension=8)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_run_remembers_its_pace_and_the_next_run_starts_with_an_estimate(
    tmp_path: Path,
) -> None:
    clock, name = Clock(), pace.key(IDENTITY, "this machine")
    first, second = io.StringIO(), io.StringIO()
    with ProgressBar("indexing", first) as bar:
        report = pace.timed(bar.update, tmp_path, name, clock)
        report(0, 600, "embedding")
        clock.now = 20.0
        report(600, 600, "embedding")
    assert pace.remembered(tmp_path, name) == 30.0
    with ProgressBar("indexing", second) as bar:
        pace.timed(bar.update, tmp_path, name, clock)(0, 12_163, "embedding")
    assert first.getvalue().splitlines()[0] == "embedding 600 chunks"
    assert second.getvalue().splitlines() == [
        "embedding 12,163 chunks, about 7 min at the last run's 30.0/s"]


def test_a_run_too_small_to_say_anything_is_not_remembered(tmp_path: Path) -> None:
    clock, name = Clock(), pace.key(IDENTITY, "this machine")
    report = pace.timed(None, tmp_path, name, clock)
    report(0, pace.MIN_ROWS - 1, "embedding")
    clock.now = 60.0
    report(pace.MIN_ROWS - 1, pace.MIN_ROWS - 1, "embedding")
    report(0, 5_000, "embedding")
    report(5_000, 5_000, "embedding")  # no time passed: nothing measured
    assert pace.remembered(tmp_path, name) is None
    assert not (tmp_path / pace.FILE).exists()


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"%s": -3}', '{"%s": "fast"}'])
def test_a_damaged_memory_gives_no_estimate_and_is_written_anew(
    tmp_path: Path, content: str,
) -> None:
    name = pace.key(IDENTITY, "this machine")
    (tmp_path / pace.FILE).write_text(content.replace("%s", name))
    assert pace.remembered(tmp_path, name) is None
    pace.remember(tmp_path, name, 12.5)
    assert json.loads((tmp_path / pace.FILE).read_text()) == {name: 12.5}


def test_models_and_places_are_remembered_apart(tmp_path: Path) -> None:
    here, there = pace.key(IDENTITY, "this machine"), pace.key(IDENTITY, "a cluster")
    pace.remember(tmp_path, here, 10.0)
    assert pace.remembered(tmp_path, there) is None
    other = pace.key(EmbeddingIdentity(provider="local", model="m", dimension=8), "this machine")
    assert other != here and pace.remembered(tmp_path, other) is None


@pytest.fixture
def ollama() -> Iterator[OllamaStandin]:
    with OllamaStandin(hashing_embedder(16), models=["nomic-embed-text"]) as server:
        yield server


def test_indexing_a_home_collection_records_the_pace_its_next_index_announces(
    make_tree: TreeMaker, home: Path, ollama: OllamaStandin, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pace, "MIN_ROWS", 1)
    monkeypatch.setattr(pace, "MIN_SECONDS", 0.0)
    root = make_tree({f"n{i}.md": f"# Note {i}\n\nThe {i}th note.\n" for i in range(5)})
    extra = {"embedding": {"spec": "ollama:nomic-embed-text", "options": {"host": ollama.url}}}
    lines: list[str] = []
    index("a", IndexConfig(roots=(str(root),), extra=extra), home=home)
    [name] = json.loads((home / pace.FILE).read_text())
    assert name.startswith("ollama:nomic-embed-text (16-d") and "on this machine" in name
    index("b", IndexConfig(roots=(str(root),), extra=extra), home=home,
          progress=lambda done, total, label: lines.append(label) if done == 0 else None)
    assert any(label.startswith("embedding, about ") for label in lines)
