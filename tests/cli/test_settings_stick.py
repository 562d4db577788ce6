"""Settings that stick: a plain re-index keeps how the collection was built, embedding
included; an option changes one setting and says so; --no-embed alone drops the vectors;
identical chunk texts keep their vectors across edits and re-chunking."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

pytest.importorskip("lancedb")

PARAGRAPHS = [f"Paragraph {i} explains how the {w} service restarts after a failure."
              for i, w in enumerate(("ingest", "billing", "search", "mail", "backup"))]
DOCS = {"run.md": "# Runbook\n\n" + "\n\n".join(PARAGRAPHS) + "\n",
        "logs.md": "# Logs\n\nDeployment logs are kept for 30 days.\n"}
SEEN: list[str] = []
"""Every text the stand-in embedded, in order."""


def _recording(texts: list[str]) -> object:
    SEEN.extend(t for t in texts if not t.endswith("dimension probe"))
    return hashing_embedder(64)(texts)


@pytest.fixture
def ollama() -> Iterator[OllamaStandin]:
    SEEN.clear()
    with OllamaStandin(_recording, models=["nomic-embed-text"]) as server:
        yield server


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def status(capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, _ = grk(capsys, "status", "k", "--json", "--no-changes")
    assert code == 0
    return json.loads(out)


def test_a_plain_reindex_keeps_the_embedding_and_embeds_only_new_texts(
        make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(DOCS)
    code, _, err = grk(capsys, "index", str(root), "-c", "k", "--chunk-size", "120",
                       "--chunk-overlap", "0", "--embed", "ollama:nomic-embed-text",
                       "--ollama-host", ollama.url)
    chunks = status(capsys)["chunks"]
    assert code == 0 and chunks > 3 and len(SEEN) == chunks
    # off a terminal, progress is plain lines: how much, then the first estimate
    lines = err.splitlines()
    assert lines[:2] == ["indexing 2 files", f"embedding {chunks} chunks"]
    assert lines[2].startswith(f"embedding: {chunks}/{chunks} chunks (100%), ")
    (root / "run.md").write_text(DOCS["run.md"] + "\nA new closing paragraph.\n")
    SEEN.clear()
    code, _, err = grk(capsys, "index", "-c", "k")  # no folder, no option: as recorded
    assert code == 0
    assert err.splitlines()[0] == ("k: settings as recorded (chunks 120/0 structure, analyzer "
                                   "lucene-english, embedding ollama:nomic-embed-text)")
    after = status(capsys)
    assert after["embedding"]["spec"] == "ollama:nomic-embed-text"
    assert after["chunker"]["target"] == 120
    # every chunk of run.md has a new id (its content hash changed), yet only the last
    # chunk's text is new and only it was embedded: the others kept their vectors
    assert after["chunks"] == chunks
    assert len(SEEN) == 1 and SEEN[0].endswith("failure.\n\nA new closing paragraph.")
    code, out, _ = grk(capsys, "search", "deployment logs", "-c", "k", "--mode", "hybrid")
    assert code == 0 and "logs.md" in out


def test_an_option_changes_one_setting_says_so_and_no_embed_drops_the_vectors(
        make_tree: TreeMaker, home: Path, ollama: OllamaStandin,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree(DOCS)
    grk(capsys, "index", str(root), "-c", "k", "--embed", "ollama:nomic-embed-text",
        "--ollama-host", ollama.url)
    code, _, err = grk(capsys, "index", str(root), "-c", "k", "--chunk-size", "400")
    assert code == 0
    assert "except chunks 1000/150 structure -> 400/150 structure" in err.splitlines()[0]
    assert status(capsys)["embedding"]["spec"] == "ollama:nomic-embed-text"
    code, _, err = grk(capsys, "index", str(root), "-c", "k", "--no-embed")
    assert code == 0 and "embedding ollama:nomic-embed-text -> none (BM25 only)" in err
    assert status(capsys)["embedding"] is None
    code, _, err = grk(capsys, "search", "logs", "-c", "k", "--mode", "hybrid")
    assert code == 2 and "embedding" in err
    assert grk(capsys, "index", "-c", "k")[0] == 0  # and it stays dropped
    assert status(capsys)["embedding"] is None


def test_a_new_collection_needs_a_folder_and_no_embed_cannot_meet_embed(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = grk(capsys, "index", "-c", "fresh")
    assert code == 2 and "collection 'fresh' is new: give the folders" in err
    code, _, err = grk(capsys, "index", str(make_tree(DOCS)), "-c", "k", "--embed",
                       "local:all-MiniLM-L6-v2", "--no-embed")
    assert code == 2 and "contradict" in err


def test_a_collection_built_from_python_keeps_exactly_its_recorded_settings(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from groundkit import store
    from groundkit.collection import IndexConfig, collection_dir, index

    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)  # no analyzer, no bm25
    code, _, err = grk(capsys, "index", "-c", "k")
    assert code == 0 and " except " not in err.splitlines()[0]
    conn = store.connect(collection_dir("k", home), readonly=True)
    try:
        first, second = (store.generation_config(conn, g) for g in (1, 2))
    finally:
        conn.close()
    assert first == second and "analyzer" not in second and "bm25" not in second
