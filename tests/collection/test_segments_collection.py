"""BM25 segments in a collection (opt-in ``segments`` setting, ADR-0025): after any stream of
edits, hits equal a fresh full build's; ``grk check`` covers the segment files; gc keeps only
what a retained generation names; a kill during a segmented update leaves the previous
generation searchable."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import faults
from groundkit.collection import Collection, IndexConfig, collect_garbage, index
from groundkit.collection.bm25_segmented import BM25, ORDER, CanonicalSegments
from groundkit.errors import StorageError
from groundkit.retrieval import bm25_segment_store as segment_store

WORDS = [f"w{i}" for i in range(40)] + ["lamp", "harbour", "tide", "storm"]
QUERIES = ["lamp", "harbour tide", "storm w3 w7", "w1", "w2 w2 lamp", "tide storm harbour",
           "w11 w12 w13", "w0", "w39 lamp", "nothing-here"]


def note(r: random.Random) -> str:
    """A short note; a few texts repeat (ties across files)."""
    if r.random() < 0.2:
        return "lamp harbour tide\n"
    return "\n\n".join(" ".join(r.choice(WORDS) for _ in range(r.randrange(3, 30)))
                       for _ in range(r.randrange(1, 4))) + "\n"


def segmented(root: Path) -> IndexConfig:
    return IndexConfig(roots=(str(root),), extra={"segments": "on"})


def hits(home: Path, name: str) -> list[object]:
    """Every query's top 7 (chunk id without the collection, score), best first, and what
    the lexical evidence reads of its best hit: the explanation and the terms it holds."""
    with Collection.open(name, home) as coll:
        snap = coll.snapshot
        ids = [c.split(":", 1)[1] for c in snap.chunk_ids()]
        index_ = snap.bm25()
        assert isinstance(index_, CanonicalSegments) == (name == "seg")
        found: list[object] = []
        for q in QUERIES:
            ranked = index_.search(q, 7)
            found.append([(ids[p], s) for p, s in ranked])
            if ranked:
                tids = [index_.term_id(t) for t in index_.analyzer.analyze(q)]
                found.append((index_.explain(q, ranked[0][0]),
                              index_.holds(tids, [p for p, _ in ranked]),
                              [index_.idf(t) for t in tids if t >= 0]))
        return found


def test_a_segmented_collection_answers_as_a_fresh_full_build_through_random_edits(
        make_tree: TreeMaker, tmp_path: Path) -> None:
    r = random.Random(48)
    root = make_tree({f"n{i}.md": note(r) for i in range(30)})
    home = tmp_path / "home"
    index("seg", segmented(root), home=home)
    merged_at_least_once, numbered = False, 0
    for step in range(24):
        for _ in range(r.randrange(1, 3)):
            path = root / f"n{r.randrange(40)}.md"
            if r.random() < 0.25 and path.exists():
                path.unlink()
            else:
                path.write_text(note(r))
        index("seg", segmented(root), home=home)
        fresh = tmp_path / f"fresh-{step}"
        index("full", IndexConfig(roots=(str(root),)), home=fresh)
        assert hits(home, "seg") == hits(fresh, "full"), step
        with Collection.open("seg", home) as coll:
            assert coll.check() == []
            manifest = segment_store.read_manifest(coll.snapshot.generation_dir / BM25)
            merged_at_least_once |= "seg-000001" not in [e["name"] for e in
                                                         manifest["segments"]]
            assert manifest["next_segment"] >= numbered  # extended, never rebuilt from scratch
            numbered = manifest["next_segment"]
        shutil.rmtree(fresh)
    assert merged_at_least_once  # the tiered policy merged along the way


def test_an_update_writes_a_small_segment_and_shares_the_previous_ones(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"note {i} about lamps\n" for i in range(20)})
    index("seg", segmented(root), home=home)
    (root / "n3.md").write_text("note 3 rewritten: harbour\n")
    index("seg", segmented(root), home=home)
    with Collection.open("seg", home) as coll:
        gen = coll.snapshot.generation_dir
        previous = gen.parent / f"gen-{coll.generation - 1}"
        manifest = segment_store.read_manifest(gen / BM25)
        assert [e["name"] for e in manifest["segments"]] == ["seg-000001", "seg-000002"]
        assert manifest["segments"][0]["deleted"]  # n3's old chunk, tombstoned
        base = "seg-000001/meta.json"
        assert os.path.samefile(gen / BM25 / base, previous / BM25 / base)  # linked, not copied
        assert coll.search("harbour")[0].chunk.doc_id == "n3.md"


def test_grk_check_detects_a_damaged_segment_file(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"note {i} about lamps\n" for i in range(12)})
    index("seg", segmented(root), home=home)
    (root / "n1.md").write_text("lighthouses\n")
    index("seg", segmented(root), home=home)
    with Collection.open("seg", home) as coll:
        assert coll.check() == []
        gen = coll.snapshot.generation_dir
    victim = next(p for p in sorted((gen / BM25 / "seg-000002").iterdir()) if p.stat().st_size)
    data = bytearray(victim.read_bytes())
    data[-1] ^= 0xFF
    victim.write_bytes(bytes(data))
    with Collection.open("seg", home) as coll:
        problems = coll.check()
    assert any(f"{BM25}/seg-000002/{victim.name}: checksum mismatch" in p for p in problems), \
        problems


def test_gc_removes_generations_and_leaves_only_segment_files_a_kept_one_names(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"note {i} about lamps\n" for i in range(12)})
    config = IndexConfig(roots=(str(root),), extra={"segments": "on", "gc": {"auto": False}})
    index("seg", config, home=home)
    for step in range(6):
        (root / f"n{step}.md").write_text(f"edit {step}: harbour\n")
        index("seg", config, home=home)
    report = collect_garbage("seg", home=home, keep=2)
    assert report is not None
    with Collection.open("seg", home) as coll:
        directory = coll.snapshot.directory
        current = coll.generation
        assert coll.check() == []
        assert len(coll.search("harbour", top_k=10)) == 6
    kept = sorted(p.name for p in directory.glob("gen-*"))
    assert kept == [f"gen-{current - 1}", f"gen-{current}"]
    for name in kept:
        root_ = directory / name / BM25
        manifest = segment_store.read_manifest(root_)
        named = {"segments.json", f"manifest-{manifest['version']:06d}.json"}
        named |= {e["name"] for e in manifest["segments"]}
        named |= {e["deleted"] for e in manifest["segments"] if e["deleted"]}
        assert {p.name for p in root_.iterdir()} == named  # nothing unreferenced is left
        assert (directory / name / ORDER).is_file()


def grk_index(root: Path, home: Path, *extra: str,
              fault: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    env.pop(faults.VARIABLE, None)
    if fault:
        env[faults.VARIABLE] = fault
    return subprocess.run([sys.executable, "-m", "groundkit", "index", str(root),
                           "--collection", "k", *extra], env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("point", ["derived.bm25", "publish"])
def test_a_kill_during_a_segmented_update_leaves_the_previous_generation_searchable(
        make_tree: TreeMaker, home: Path, point: str) -> None:
    root = make_tree({f"n{i}.md": f"# Note {i}\n\nNote {i} is about lamps.\n" for i in range(12)})
    assert grk_index(root, home, "--segments", "on").returncode == 0
    (root / "n1.md").write_text("# Note 1\n\nRewritten: lighthouses.\n")
    assert grk_index(root, home, "--segments", "on").returncode == 0  # a segmented update
    with Collection.open("k", home) as coll:
        before = coll.generation
        assert coll.snapshot.config.get("segments") == "on"
    (root / "n2.md").write_text("# Note 2\n\nRewritten: harbours.\n")
    assert grk_index(root, home, fault=f"{point}:kill").returncode == -9  # recorded setting
    with Collection.open("k", home) as coll:
        assert coll.generation == before
        assert coll.check() == []
        assert coll.search("lighthouses")[0].chunk.doc_id == "n1.md"
        assert coll.search("harbours") == []
    assert grk_index(root, home).returncode == 0  # the next run recovers
    with Collection.open("k", home) as coll:
        assert coll.generation > before and coll.check() == []
        assert coll.search("harbours")[0].chunk.doc_id == "n2.md"
        assert isinstance(coll.snapshot.bm25(), CanonicalSegments)


def test_segments_are_opt_in_sticky_and_can_be_turned_off(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"note {i} about lamps\n" for i in range(5)})
    assert grk_index(root, home).returncode == 0
    with Collection.open("k", home) as coll:
        assert "segments" not in coll.snapshot.config  # default: off, nothing changes
        assert not isinstance(coll.snapshot.bm25(), CanonicalSegments)
    assert grk_index(root, home, "--segments", "on").returncode == 0
    (root / "n0.md").write_text("harbour\n")
    assert grk_index(root, home).returncode == 0
    with Collection.open("k", home) as coll:
        assert coll.snapshot.config.get("segments") == "on"
        assert coll.search("harbour")[0].chunk.doc_id == "n0.md"
    assert grk_index(root, home, "--segments", "off").returncode == 0
    with Collection.open("k", home) as coll:
        assert "segments" not in coll.snapshot.config and coll.check() == []
        assert not (coll.snapshot.generation_dir / ORDER).exists()
        assert coll.search("harbour")[0].chunk.doc_id == "n0.md"


def test_random_kills_during_segmented_updates_never_leave_a_broken_collection(
        tmp_path: Path) -> None:
    """``testing.kills``'s campaign over a collection recorded with segments on (the setting
    sticks to every killed run); 3% of the files change each round, so that even what the
    killed rounds left adds up to less than the share that builds anew: the runs, the last
    included, are segment updates."""
    from groundkit.testing.kills import campaign

    root, home = tmp_path / "tree", tmp_path / "home"
    (root / "d0").mkdir(parents=True)
    (root / "d0" / "seed.md").write_text("seed\n")
    index("killed", segmented(root), home=home)
    kills = int(os.environ.get("GROUNDKIT_KILLS", "6"))
    result = campaign(root, home, kills=kills, files=150, share=0.03)
    assert result.problems == []
    assert result.kills == kills
    assert result.generations == sorted(result.generations)
    with Collection.open("killed", home) as coll:
        assert coll.snapshot.config.get("segments") == "on"
        manifest = segment_store.read_manifest(coll.snapshot.generation_dir / BM25)
        assert manifest["next_segment"] > 3  # segments were appended, not rebuilt each run


@pytest.mark.parametrize("action", ["ENOSPC", "EIO"])
@pytest.mark.parametrize("point", ["derived.bm25", "publish"])
def test_a_failing_disk_during_a_segmented_update_keeps_the_previous_generation(
        make_tree: TreeMaker, home: Path, monkeypatch: pytest.MonkeyPatch, point: str,
        action: str) -> None:
    root = make_tree({f"n{i}.md": f"# Note {i}\n\nNote {i} is about lamps.\n" for i in range(12)})
    index("k", segmented(root), home=home)
    (root / "n1.md").write_text("# Note 1\n\nRewritten: lighthouses.\n")
    index("k", segmented(root), home=home)
    with Collection.open("k", home) as coll:
        before = coll.generation
    (root / "n2.md").write_text("# Note 2\n\nRewritten: harbours.\n")
    monkeypatch.setenv(faults.VARIABLE, f"{point}:{action}")
    with pytest.raises(StorageError, match=f"injected at {point}.*previous generation is intact"):
        index("k", segmented(root), home=home)
    monkeypatch.delenv(faults.VARIABLE)
    with Collection.open("k", home) as coll:
        assert coll.generation == before and coll.check() == []
        assert coll.search("harbours") == []
    index("k", segmented(root), home=home)
    with Collection.open("k", home) as coll:
        assert coll.generation > before and coll.check() == []
        assert coll.search("harbours")[0].chunk.doc_id == "n2.md"
        manifest = segment_store.read_manifest(coll.snapshot.generation_dir / BM25)
        assert manifest["next_segment"] > 2  # the recovery appended a segment


def test_ties_beyond_the_first_widening_rank_as_a_full_build(
        make_tree: TreeMaker, tmp_path: Path) -> None:
    """40 identical notes tie on every query: the segments must be asked again (more than
    ``top_k + 8``) before canonical order can pick the best 3."""
    root = make_tree({f"n{i:02d}.md": "lamp harbour tide\n" for i in range(40)})
    home = tmp_path / "home"
    index("seg", segmented(root), home=home)
    for i in (0, 1, 2, 5):  # rewritten identically elsewhere: new rows at the segments' end
        (root / f"n{i:02d}.md").unlink()
        index("seg", segmented(root), home=home)
        (root / f"n{i:02d}.md").write_text("lamp harbour tide\n")
        index("seg", segmented(root), home=home)
    index("full", IndexConfig(roots=(str(root),)), home=tmp_path / "fresh")
    with Collection.open("seg", home) as seg, Collection.open("full", tmp_path / "fresh") as full:
        for coll in (seg, full):
            assert len(coll.snapshot.bm25().search("lamp", 100)) == 40
        got, want = ([(c.chunk.doc_id, s) for c, (_, s) in zip(
            coll.snapshot.stored_chunks([p for p, _ in ranked]), ranked, strict=True)]
            for coll in (seg, full) for ranked in [coll.snapshot.bm25().search("lamp", 3)])
    assert got == want
    assert [doc for doc, _ in got] == ["n00.md", "n01.md", "n02.md"]  # canonical order
