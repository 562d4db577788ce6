"""The approximate dense index inside a collection's generations (ADR-0015)."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index, integrity
from groundkit.errors import IndexMismatchError, IntegrityError
from groundkit.retrieval import ann

pytest.importorskip("lancedb")

from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

WORDS = ["refund", "invoice", "deploy", "logs", "cat", "office", "backup", "restore", "pager",
         "rota", "disk", "kernel", "network", "latency", "cache", "queue", "budget", "audit",
         "badge", "lunch", "train"]
VOCABULARY = [f"{w}{n}" for w in WORDS for n in range(10)]


def docs(count: int, salt: str = "") -> dict[str, str]:
    """``count`` one-chunk files of eight words drawn from 210 (seeded): few equal vectors."""
    rng = random.Random(5)
    return {f"d{i:04d}.md": " ".join(rng.sample(VOCABULARY, 8)) + f" {salt}\n"
            for i in range(count)}


@pytest.fixture
def server() -> Iterator[OllamaStandin]:
    with OllamaStandin(hashing_embedder(64), models=["nomic-embed-text"]) as standin:
        yield standin


def indexed(root: Path, home: Path, server: OllamaStandin, mode: str) -> Collection:
    extra = {"embedding": {"spec": "ollama:nomic-embed-text", "options": {"host": server.url}},
             "ann": mode}
    index("k", IndexConfig(roots=(str(root),), extra=extra), home=home)
    return Collection.open("k", home)


def test_forced_on_the_index_is_in_the_generation_and_recalls_exact_search(
    make_tree: TreeMaker, home: Path, server: OllamaStandin,
) -> None:
    root = make_tree(docs(400))
    with indexed(root, home, server, "on") as coll:
        gen = coll.snapshot.generation
        recorded = store.derived_files(coll.snapshot.conn, gen) or {}
        vectors = coll.snapshot.vectors()
        assert vectors.ann_entry is not None and vectors.ann_entry["stamp"]["generation"] == gen
        assert any(p.startswith("vectors/vectors.lance/_indices/") for p in recorded)
        recalls = []
        for i, word in enumerate(WORDS):
            query = f"{word}{i % 10} {WORDS[(i + 5) % len(WORDS)]}{i % 7}"
            exact = [h.chunk.chunk_id for h in
                     coll.search(query, mode="dense", exact=True, collapse=False)]
            approx = [h.chunk.chunk_id for h in coll.search(query, mode="dense", collapse=False)]
            recalls.append(len(set(exact) & set(approx)) / len(exact))
            assert coll.search(query, mode="hybrid", exact=True) is not None
        assert sum(recalls) / len(recalls) >= 0.95


def test_a_new_generation_gets_its_own_index_and_off_builds_none(
    make_tree: TreeMaker, home: Path, server: OllamaStandin,
) -> None:
    root = make_tree(docs(300))
    with indexed(root, home, server, "on") as coll:
        first = coll.snapshot.vectors().ann_entry
    (root / "d0000.md").write_text("a changed file about the lunch rota\n")
    with indexed(root, home, server, "on") as coll:
        second = coll.snapshot.vectors().ann_entry
        assert first is not None and second is not None
        assert second["stamp"]["generation"] == first["stamp"]["generation"] + 1
        assert set(second["files"]).isdisjoint(k for k in first["files"] if "_indices" in k)
    with indexed(root, home, server, "off") as coll:
        assert coll.snapshot.vectors().ann_entry is None
    with indexed(root, home, server, "auto") as coll:  # far below the threshold
        assert coll.snapshot.vectors().ann_entry is None and ann.THRESHOLD > 300


@pytest.mark.parametrize("hash_on_open", [True, False])
def test_a_corrupted_index_in_a_published_generation_fails_closed(
    make_tree: TreeMaker, home: Path, server: OllamaStandin, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch, hash_on_open: bool,
) -> None:
    """Refused on open by the generation's manifest (small generations are hashed in full)
    or, where only sizes are checked on open (large ones), by the index's own record."""
    root = make_tree(docs(300))
    with indexed(root, home, server, "on") as coll:
        gen_dir = coll.snapshot.generation_dir
    [index_file] = (gen_dir / "vectors" / "vectors.lance" / "_indices").rglob("index.idx")
    data = bytearray(index_file.read_bytes())
    data[len(data) // 3] ^= 0x01
    index_file.write_bytes(bytes(data))
    if not hash_on_open:
        monkeypatch.setattr(integrity, "FULL_ON_OPEN", 0)
        monkeypatch.setattr(integrity, "SMALL_FILE", -1)
    expected = IntegrityError if hash_on_open else IndexMismatchError
    with Collection.open("k", home) as coll:
        with pytest.raises(expected, match="checksum mismatch" if hash_on_open
                           else "do not hash as recorded"):
            coll.search("refund logs", mode="dense")
        if not hash_on_open:
            assert coll.search("refund logs", mode="dense", exact=True)
    assert main(["check", "k"]) != 0
    assert "index.idx" in capsys.readouterr().out


def test_the_cli_builds_with_ann_on_and_searches_exactly_on_request(
    make_tree: TreeMaker, home: Path, server: OllamaStandin, capsys: pytest.CaptureFixture[str],
) -> None:
    root = make_tree(docs(300))
    embed = ["--embed", "ollama:nomic-embed-text", "--ollama-host", server.url]
    assert main(["index", str(root), "-c", "k", *embed, "--ann", "on", "--json"]) == 0
    capsys.readouterr()
    with Collection.open("k", home) as coll:
        assert coll.snapshot.config["ann"] == "on"
        assert coll.snapshot.vectors().ann_entry is not None
    query = ["search", VOCABULARY[3], "-c", "k", "--mode", "dense", "--json", "--no-collapse"]
    assert main([*query, "--exact"]) == 0
    exact = [h["chunk_id"] for h in json.loads(capsys.readouterr().out)["hits"]]
    assert main(query) == 0
    approx = [h["chunk_id"] for h in json.loads(capsys.readouterr().out)["hits"]]
    assert len(exact) == 10 and len(set(exact) & set(approx)) >= 9
    assert main(["index", str(root), "-c", "k", "--ann", "off"]) == 0  # the embedding sticks
    with Collection.open("k", home) as coll:
        assert coll.snapshot.config["ann"] == "off" and coll.snapshot.vectors().ann_entry is None
    capsys.readouterr()
    assert main(["index", str(root), "-c", "bare", "--ann", "on"]) != 0  # nothing to index
    assert "--ann only applies with --embed" in capsys.readouterr().err


def test_the_eval_harness_pins_exact_search_for_dense_and_hybrid() -> None:
    from evals.engines import pinned_exact

    assert pinned_exact("dense", {}) == {"exact": True}
    assert pinned_exact("hybrid", {"rrf_k": 60}) == {"rrf_k": 60, "exact": True}
    assert pinned_exact("bm25", {}) == {}
