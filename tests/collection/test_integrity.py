"""Every derived file is checksummed at publish; check names damage; search fails closed.

Real files, a real SQLite store, the real CLI (``groundkit.cli.main``). The byte-flip
campaign flips one byte in every file under ``gen-<N>/`` of a freshly indexed
collection, one at a time (restoring between), for a BM25-only and an embedded
collection. The store files (``store.sqlite3`` and its WAL) are left out: SQLite's
own ``PRAGMA integrity_check`` does not checksum page contents, so a flipped byte in
a free page or in unused space of a page goes unnoticed, and harmlessly so; the
expectation "check fails every time" cannot honestly be made for them.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit.cli import main
from groundkit.collection import IndexConfig, index, integrity

DOCS = {
    "cars.md": "# Fleet\n\nEvery automobile in the fleet is serviced each spring.\n",
    "logs.md": "# Logs\n\nDeployment logs are kept for 30 days, then deleted.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer restarts the ingest worker.\n",
    "codes.txt": "Error E4012 means the ingest worker lost its lease; restart it.\n",
    "backup.md": "# Backups\n\nBackups of the logs run nightly and are kept 90 days.\n",
}
QUERY = "logs kept ingest worker"


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def results(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, object, str]:
    code, out, err = grk(capsys, "search", QUERY, "-c", "k", "--json", *extra)
    hits = json.loads(out) if code == 0 else None
    ranked = [(h["chunk_id"], h["score"]) for h in hits] if isinstance(hits, list) else hits
    return code, ranked, err


def flip(path: Path, at: int) -> bytes:
    data = path.read_bytes()
    damaged = bytearray(data)
    damaged[at] ^= 0xFF
    path.write_bytes(bytes(damaged))
    return data


def derived_paths(coll_dir: Path) -> list[str]:
    gen = next(coll_dir.glob("gen-*"))
    return [f"{gen.name}/{p}" for p in sorted(integrity.files_on_disk(gen))]


def campaign(coll_dir: Path, capsys: pytest.CaptureFixture[str],
             *extra: str) -> dict[str, str]:
    """Flip the middle byte of every derived file in turn; the search outcome of each."""
    code, baseline, _ = results(capsys, *extra)
    assert code == 0 and baseline
    outcomes = {}
    paths = derived_paths(coll_dir)
    for rel in paths:
        path = coll_dir / rel
        original = flip(path, path.stat().st_size // 2)
        try:
            code, out, err = grk(capsys, "check", "k")
            assert code == 4, rel
            assert f"{rel}: checksum mismatch (expected sha256" in out, (rel, out)
            code, ranked, err = results(capsys, *extra)
            assert "Traceback" not in err
            if code == 0:
                assert ranked == baseline, rel  # undamaged results, or nothing
                outcomes[rel] = "same results"
            else:
                assert code == 4 and rel in err and "grk check k" in err, (rel, err)
                assert "--rebuild" in err
                outcomes[rel] = "failed closed"
        finally:
            path.write_bytes(original)
    assert grk(capsys, "check", "k")[0] == 0
    assert results(capsys, *extra)[1] == baseline
    return outcomes


def test_every_derived_file_of_a_bm25_collection_is_checksummed_and_flips_are_caught(
    make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert grk(capsys, "index", str(make_tree(DOCS)), "-c", "k")[0] == 0
    coll_dir = home / "collections" / "k"
    conn = store.connect(coll_dir, readonly=True)
    recorded = store.derived_files(conn, 1)
    conn.close()
    assert recorded is not None
    assert sorted("gen-1/" + p for p in recorded) == derived_paths(coll_dir)
    assert {"rowids.npy", "bm25/meta.json", "bm25/terms.bin", "bm25/scores.npy",
            "bm25/docs.npy", "bm25/term_hashes.npy"} <= set(recorded)
    outcomes = campaign(coll_dir, capsys)
    assert len(outcomes) == len(recorded) >= 13
    assert set(outcomes.values()) == {"failed closed"}  # a small generation: hashed on open


def test_an_embedded_collection_checksums_every_lancedb_file(
    make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("lancedb")
    from groundkit.testing.ollama_standin import OllamaStandin, hashing_embedder

    with OllamaStandin(hashing_embedder(64), models=["nomic-embed-text"]) as server:
        extra = {"embedding": {"spec": "ollama:nomic-embed-text",
                               "options": {"host": server.url}}}
        index("k", IndexConfig(roots=(str(make_tree(DOCS)),), extra=extra), home=home)
        paths = derived_paths(home / "collections" / "k")
        vectors = [p for p in paths if p.startswith("gen-1/vectors/")]
        assert "gen-1/vectors/meta.json" in vectors
        assert any(p.endswith(".lance") for p in vectors)
        assert any("/_versions/" in p for p in vectors)
        outcomes = campaign(home / "collections" / "k", capsys, "--mode", "hybrid")
    assert set(outcomes) == set(paths)
    assert set(outcomes.values()) == {"failed closed"}


@pytest.fixture
def bm25_only(make_tree: TreeMaker, home: Path,
              capsys: pytest.CaptureFixture[str]) -> Iterator[Path]:
    assert grk(capsys, "index", str(make_tree(DOCS)), "-c", "k")[0] == 0
    yield home / "collections" / "k" / "gen-1"


@pytest.fixture
def sizes_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """Open as for a large generation: sizes, headers and lengths only, no hashing."""
    monkeypatch.setattr(integrity, "FULL_ON_OPEN", 0)
    monkeypatch.setattr(integrity, "SMALL_FILE", -1)


@pytest.mark.parametrize("name", ["bm25/scores.npy", "bm25/docs.npy", "bm25/terms.bin",
                                  "rowids.npy", "bm25/meta.json"])
def test_a_truncated_file_fails_closed_on_open_even_without_hashing(
    bm25_only: Path, sizes_only: None, capsys: pytest.CaptureFixture[str], name: str,
) -> None:
    path = bm25_only / name
    path.write_bytes(path.read_bytes()[:-4])
    code, _, err = results(capsys)
    assert code == 4 and f"gen-1/{name}: size" in err and "grk check k" in err
    assert "grk index --collection k --rebuild" in err and "Traceback" not in err
    code, out, _ = grk(capsys, "check", "k")
    assert code == 4 and f"gen-1/{name}: size" in out


@pytest.mark.parametrize("name", ["bm25/scores.npy", "bm25/indptr.npy", "rowids.npy"])
def test_a_damaged_npy_header_fails_closed_without_hashing(
    bm25_only: Path, sizes_only: None, capsys: pytest.CaptureFixture[str], name: str,
) -> None:
    flip(bm25_only / name, 8)  # inside the header's length or dict
    code, _, err = results(capsys)
    assert code == 4 and "grk check k" in err and "Traceback" not in err


def test_a_deleted_file_and_an_extra_file_are_named_by_check(
    bm25_only: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    (bm25_only / "bm25" / "tfs.npy").unlink()
    (bm25_only / "bm25" / "stray.npy").write_bytes(b"x")
    code, out, err = grk(capsys, "check", "k")
    assert code == 4 and "2 problem(s)" in err
    assert "gen-1/bm25/tfs.npy: missing (recorded " in out
    assert "gen-1/bm25/stray.npy: unexpected file" in out
    code, _, err = results(capsys)
    assert code == 4 and "gen-1/bm25/" in err and "(and 1 more)" in err


def test_a_store_from_before_checksums_is_reported_by_check_and_still_opens(
    bm25_only: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, before, _ = results(capsys)
    conn = sqlite3.connect(bm25_only.parent / store.STORE_FILE)
    conn.execute("DROP TABLE derived_files")
    conn.commit()
    conn.close()
    code, out, _ = grk(capsys, "check", "k")
    assert code == 4
    assert out.strip() == ("no checksums recorded for generation 1 (indexed before checksums "
                           "existed); re-index to add them")
    assert results(capsys) == (0, before, "")
    assert grk(capsys, "index", "--collection", "k", "--rebuild")[0] == 0  # adds them
    assert grk(capsys, "check", "k")[:2] == (0, "k: ok\n")


def test_rebuild_replaces_damaged_files_from_the_store_with_the_recorded_settings(
    bm25_only: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, before, _ = results(capsys)
    scores = np.load(bm25_only / "bm25" / "scores.npy").copy()
    flip(bm25_only / "bm25" / "scores.npy", (bm25_only / "bm25" / "scores.npy").stat().st_size - 1)
    assert results(capsys)[0] == 4
    code, out, _ = grk(capsys, "index", "--collection", "k", "--rebuild", "--json")
    assert code == 0 and json.loads(out)["generation"] == 2
    assert grk(capsys, "check", "k")[:2] == (0, "k: ok\n")
    assert np.array_equal(np.load(bm25_only.parent / "gen-2" / "bm25" / "scores.npy"), scores)
    assert results(capsys)[:2] == (0, before)
    assert grk(capsys, "index", "-c", "k")[0] == 0  # no PATH: the recorded folders


def test_a_plain_reindex_does_not_carry_damage_over_from_the_previous_index(
    bm25_only: Path, home: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = bm25_only / "bm25" / "scores.npy"
    flip(path, path.stat().st_size - 1)  # the last score: an update would keep it
    conn = store.connect(home / "collections" / "k", readonly=True)
    root = Path(store.generation_config(conn, 1)["roots"][0])
    conn.close()
    (root / "new.md").write_text("Nothing about the others.\n")  # few changes: an update
    assert grk(capsys, "index", str(root), "-c", "k")[0] == 0
    assert grk(capsys, "check", "k")[:2] == (0, "k: ok\n")
    assert grk(capsys, "index", str(root), "-c", "k", "--home", str(home / "fresh"))[0] == 0
    for name in ("scores", "docs", "indptr", "term_hashes"):
        ours = np.load(home / "collections/k/gen-2/bm25" / f"{name}.npy")
        fresh = np.load(home / "fresh/collections/k/gen-1/bm25" / f"{name}.npy")
        assert np.array_equal(ours, fresh), name
