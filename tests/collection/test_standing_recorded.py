"""Each document's standing is recorded when it is indexed and shown on every hit."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import store
from groundkit.collection import Collection, IndexConfig, index

DOCS = {
    "policies/retention.md": "# Retention\n\nDeployment logs are kept for 30 days.\n",
    "policies/archive/retention-2022.md": "# Retention (2022)\n\nDeployment logs: 14 days.\n",
    "notes/old-plan.md": "# Plan\n\n> **DEPRECATED.** See plan.md.\n\nDeployment logs: 7 days.\n",
    "pages/logs.html": ('<html><head><meta name="status" content="archived"></head>'
                        "<body><p>Deployment logs are kept for 10 days.</p></body></html>"),
}
EXPECTED = {
    "policies/retention.md": None,
    "policies/archive/retention-2022.md": "in a folder named archive/",
    "notes/old-plan.md": "notice: **DEPRECATED.** See plan.md.",
    "pages/logs.html": 'HTML <meta name="status">: archived',
}


def _recorded(coll: Collection) -> dict[str, str | None]:
    snap = coll.snapshot
    return {d.doc_id: store.document_standing(snap.conn, snap.generation, d.doc_id)
            for d in store.generation_documents(snap.conn, snap.generation)}


def test_the_indexer_records_each_standing_and_every_hit_carries_it(
        make_tree: TreeMaker, home: Path) -> None:
    pytest.importorskip("selectolax")
    root = make_tree(DOCS)
    index("p", IndexConfig(roots=(str(root),), include=("*.md", "*.html")), home=home)
    with Collection.open("p", home) as coll:
        assert _recorded(coll) == {d: e or "" for d, e in EXPECTED.items()}
        hits = coll.search("deployment logs", top_k=10)
        assert {h.chunk.doc_id: h.superseded for h in hits} == EXPECTED
        assert {h.to_dict("p")["path"]: h.to_dict("p")["superseded"] for h in hits} == EXPECTED
    report = index("p", IndexConfig(roots=(str(root),), include=("*.md", "*.html")), home=home)
    assert report.unchanged == 4  # carried documents keep their standing
    with Collection.open("p", home) as coll:
        assert _recorded(coll) == {d: e or "" for d, e in EXPECTED.items()}


def test_a_document_indexed_before_standings_were_recorded_is_judged_from_its_path_and_text(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({k: v for k, v in DOCS.items() if k.endswith(".md")})
    index("p", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("p", home) as coll:
        directory = coll.snapshot.directory
    conn = sqlite3.connect(directory / store.STORE_FILE, isolation_level=None)
    conn.execute("UPDATE documents SET standing = NULL")
    conn.close()
    with Collection.open("p", home) as coll:
        assert set(_recorded(coll).values()) == {None}
        hits = coll.search("deployment logs", top_k=10)
        assert {h.chunk.doc_id: h.superseded for h in hits} == {
            d: e for d, e in EXPECTED.items() if d.endswith(".md")}


def test_grk_search_shows_the_standing_in_both_faces(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from groundkit.cli import main

    root = make_tree({k: v for k, v in DOCS.items() if k.endswith(".md")})
    index("p", IndexConfig(roots=(str(root),)), home=home)
    main(["search", "deployment logs", "-c", "p", "--home", str(home)])
    out = capsys.readouterr().out
    assert "     superseded: in a folder named archive/" in out
    assert out.count("superseded:") == 2
    main(["search", "deployment logs", "-c", "p", "--home", str(home), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert {h["path"]: h["superseded"] for h in data["hits"]} == {
        d: e for d, e in EXPECTED.items() if d.endswith(".md")}
