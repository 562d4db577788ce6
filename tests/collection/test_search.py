"""BM25 search through the real index and store: the API the CLI and MCP server share."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index, integrity
from groundkit.errors import IndexMismatchError, IntegrityError, UsageError
from groundkit.model import Status

DOCS = {
    "logs.md": "# Logs\n\nDeployment logs are kept for 30 days. Audit logs for a year.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer restarts the ingest worker.\n",
    "cjk.md": "東京の天気は晴れです。\n",
    "codes.txt": "Error E4012 means the upload quota was exceeded.\n",
}


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return Collection.open("k", home)


def test_search_ranks_the_matching_chunk_first_with_its_exact_span(coll: Collection) -> None:
    [top, *_] = coll.search("how long are deployment logs kept")
    assert top.chunk.doc_id == "logs.md" and top.rank == 1
    assert DOCS["logs.md"][top.chunk.start : top.chunk.end] == top.chunk.text


def test_a_query_matching_nothing_abstains(coll: Collection) -> None:
    assert coll.search("zebra xylophone") == []
    assert coll.search("the of and") == []  # only stopwords
    assert coll.search("") == [] and coll.search("?!…") == []


def test_identifiers_and_cjk_text_are_findable(coll: Collection) -> None:
    assert coll.search("E4012")[0].chunk.doc_id == "codes.txt"
    assert coll.search("東京")[0].chunk.doc_id == "cjk.md"


def test_score_threshold_drops_weaker_hits(coll: Collection) -> None:
    hits = coll.search("logs engineer")
    assert len(hits) == 2
    kept = coll.search("logs engineer", score_threshold=hits[0].score)
    assert [h.chunk.chunk_id for h in kept] == [hits[0].chunk.chunk_id]


def test_verify_attaches_a_verdict_to_every_hit(coll: Collection) -> None:
    hits = coll.search("ingest worker", verify=True)
    assert hits and all(h.verdict and h.verdict.status is Status.VERIFIED for h in hits)


def test_explain_gives_each_query_terms_contribution(coll: Collection) -> None:
    [hit] = coll.search("ingest worker", explain=True)
    terms = hit.explanation[0].detail["terms"]
    assert {t["term"] for t in terms} == {"ingest", "worker"}
    assert sum(t["score"] for t in terms) == pytest.approx(hit.score, rel=1e-5)


@pytest.mark.parametrize(("kw", "message"), [
    (dict(top_k=0), "top_k"), (dict(top_k=1001), "top_k"), (dict(mode="magic"), "valid modes"),
])
def test_bad_search_options_are_usage_errors(coll: Collection, kw: dict[str, object],
                                             message: str) -> None:
    with pytest.raises(UsageError, match=message):
        coll.search("logs", **kw)


def test_a_10000_character_query_works_and_a_longer_one_is_refused(coll: Collection) -> None:
    assert coll.search(("logs " * 2000)[:10_000])
    with pytest.raises(UsageError, match="limit"):
        coll.search("x" * 10_001)


def test_the_cli_returns_the_same_hits_as_the_api(
    coll: Collection, capsys: pytest.CaptureFixture[str],
) -> None:
    api = [h.to_dict("k") for h in coll.search("logs worker", top_k=5)]
    assert main(["search", "logs worker", "-c", "k", "--top-k", "5", "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)["hits"]
    views = [(h.pop("view_command"), h.pop("view_url")) for h in cli]  # the CLI's own links
    assert cli == api and cli[0]["offset_unit"] == "codepoint"
    assert all(command.split()[:3] == ["grk", "open", h["chunk_id"]] and url is None
               for h, (command, url) in zip(api, views, strict=True))


def test_reindexing_gives_the_same_scores_as_a_from_scratch_build(
    make_tree: TreeMaker, tmp_path: Path,
) -> None:
    root = make_tree({**DOCS, "extra.md": "Deployment notes."})
    index("k", IndexConfig(roots=(str(root),)), home=tmp_path / "a")
    (root / "extra.md").write_text("Deployment logs rotate nightly.")
    (root / "oncall.md").unlink()
    index("k", IndexConfig(roots=(str(root),)), home=tmp_path / "a")
    index("k", IndexConfig(roots=(str(root),)), home=tmp_path / "b")
    runs = []
    for home in ("a", "b"):
        with Collection.open("k", tmp_path / home) as c:
            runs.append([(h.chunk.chunk_id, h.score) for h in c.search("deployment logs")])
    assert runs[0] == runs[1] and len(runs[0]) == 2


def test_a_bm25_index_from_another_generation_fails_closed(coll: Collection) -> None:
    gen_dir = coll.snapshot.generation_dir
    meta = json.loads((gen_dir / "bm25" / "meta.json").read_text())
    meta["stamp"]["generation"] += 1
    (gen_dir / "bm25" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(IntegrityError, match=r"gen-1/bm25/meta.json.*grk check k"):
        coll.search("logs")  # the checksum recorded at publish no longer holds
    rerecord_checksums(coll)  # a foreign index whose checksums hold: the stamp decides
    with pytest.raises(IndexMismatchError, match="rebuild"):
        coll.search("logs")
    assert any("BM25" in p for p in coll.check())


def test_a_damaged_or_missing_derived_index_is_reported_by_check(coll: Collection) -> None:
    np.save(coll.snapshot.generation_dir / "rowids.npy", np.arange(3))
    shutil.rmtree(coll.snapshot.generation_dir / "bm25")
    problems = coll.check()
    assert any(p.startswith("gen-1/rowids.npy: ") for p in problems)
    assert "gen-1/bm25/meta.json: missing (recorded" in "\n".join(problems)
    rerecord_checksums(coll)  # without checksums to go by, the loaders still find it
    problems = coll.check()
    assert any("chunk order" in p for p in problems) and any("BM25" in p for p in problems)


def test_a_hit_is_stale_once_its_file_changes_and_verify_still_decides(
        coll: Collection, make_tree: TreeMaker) -> None:
    [fresh] = coll.search("E4012")
    assert fresh.stale is False and fresh.to_dict("k")["stale"] is False
    path = Path(coll.snapshot.config["roots"][0]) / "codes.txt"
    path.write_text(DOCS["codes.txt"] + "More.\n", encoding="utf-8")  # the span is intact
    [changed] = coll.search("E4012", verify=True)
    assert changed.stale is True and changed.verdict and changed.verdict.status is Status.VERIFIED
    [logs] = coll.search("deployment logs kept")
    assert logs.stale is False  # only the changed file's hits
    path.unlink()
    [gone] = coll.search("E4012", verify=True)
    assert gone.stale is True and gone.verdict and gone.verdict.status is Status.UNRESOLVABLE


def test_touching_a_file_marks_it_stale_and_a_same_size_same_mtime_rewrite_does_not(
        coll: Collection) -> None:
    import os

    path = Path(coll.snapshot.config["roots"][0]) / "codes.txt"
    st = path.stat()
    path.write_text(DOCS["codes.txt"].replace("E4012", "E4013"), encoding="utf-8")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert coll.search("quota")[0].stale is False  # the documented blind spot: verify sees it
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert coll.search("quota")[0].stale is True


def rerecord_checksums(coll: Collection) -> None:
    """Record the generation's files as they are now (simulating a foreign, intact index)."""
    conn = store.connect(coll.snapshot.directory)
    with store.transaction(conn):
        store.record_derived_files(conn, coll.generation,
                                   integrity.manifest(coll.snapshot.generation_dir))
    conn.close()
    coll.snapshot.__dict__.pop("_verified", None)
