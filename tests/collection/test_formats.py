"""Documents in other formats through the indexer, the store and the verdicts.

The extractors themselves are tested in ``tests/extract``; these tests follow a file
from disk to a hit and back: heading paths, locators, skip reasons, extractor
identities recorded and checked, and stores of the older schema.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TreeMaker

from groundkit import extract, store
from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.status import collection_status
from groundkit.errors import MissingDependencyError
from groundkit.sources import count_by_kind, reason_kind
from groundkit.text.chunking import ChunkerConfig

FILLER = "Each section here is long enough to be cut into a chunk of its own."
MARKDOWN = (f"# Handbook\n\nIntro text about the handbook. {FILLER}\n\n"
            f"## Users\n\nAccounts and groups. {FILLER}\n\n"
            f"### sudo\n\nThe sudo command grants rights. {FILLER}\n\n"
            f"## Network\n\nInterfaces. {FILLER}\n")


def test_markdown_chunks_carry_their_heading_path(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"guide.md": MARKDOWN, "notes.txt": "# not a heading in a text file\n"})
    index("docs", IndexConfig(roots=(str(root),), chunker=_small()), home=home)
    with Collection.open("docs", home) as coll:
        chunks = {c.text.split("\n")[0]: c for c in coll.chunks()}
        hits = coll.search("sudo rights", top_k=1)
    assert chunks["### sudo"].headings == ("Handbook", "Users", "sudo")
    assert chunks["## Network"].headings == ("Handbook", "Network")
    assert chunks["# not a heading in a text file"].headings == ()
    assert hits[0].chunk.headings == ("Handbook", "Users", "sudo")
    as_dict = hits[0].to_dict("docs")
    assert as_dict["headings"] == ["Handbook", "Users", "sudo"]
    assert as_dict["source"] is None and as_dict["extractor"] is None


def test_markdown_offsets_and_ids_are_those_of_the_plain_file(make_tree: TreeMaker,
                                                              home: Path) -> None:
    """Markdown keeps the identity mapping: offsets index the file, ids hash its bytes."""
    root = make_tree({"guide.md": MARKDOWN})
    index("docs", IndexConfig(roots=(str(root),), chunker=_small()), home=home)
    raw = (root / "guide.md").read_bytes()
    with Collection.open("docs", home) as coll:
        for chunk in coll.chunks():
            assert raw[chunk.byte_start:chunk.byte_end].decode() == chunk.text
            assert MARKDOWN[chunk.start:chunk.end] == chunk.text
            assert chunk.extractor == "" and chunk.locator is None


def _small() -> ChunkerConfig:


    return ChunkerConfig(target=80, overlap=0)


def test_skip_reasons_are_counted_by_kind() -> None:
    assert reason_kind("too large (123 bytes > limit 10)") == "too large"
    assert reason_kind("unreadable: Permission denied") == "unreadable"
    assert reason_kind("binary file (NUL byte)") == "binary file"
    assert count_by_kind(["binary file (NUL byte)", "unreadable: x", "binary file (NUL byte)"]
                         ) == {"binary file": 2, "unreadable": 1}


def test_a_file_whose_extractor_is_missing_is_skipped_with_the_install_command(
        make_tree: TreeMaker, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pdf = extract.extractor("pdf")

    def missing() -> str:
        raise MissingDependencyError("pypdfium2", "pdf", "Extracting PDF")

    monkeypatch.setattr(type(pdf), "identity", lambda self: missing())
    root = make_tree({"manual.pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "a.md": "# A\n\ntext\n"})
    report = index("docs", IndexConfig(roots=(str(root),)), home=home)
    reasons = {s.path: s.reason for s in report.skipped}
    assert "pip install 'groundkit[pdf]'" in reasons["manual.pdf"]
    assert report.to_dict()["skipped_by_reason"] == {"PDF extractor not installed": 1}
    with Collection.open("docs", home) as coll:
        status = collection_status(coll.snapshot, changes=False)
    assert status.to_dict()["skipped_by_reason"] == {"PDF extractor not installed": 1}
    assert status.formats == {"text": 1}


@pytest.mark.parametrize("name", ["empty.pdf", "empty.docx", "empty.odt", "empty.epub"])
def test_a_zero_byte_file_of_a_container_format_is_skipped_with_a_reason(
        make_tree: TreeMaker, home: Path, name: str) -> None:
    root = make_tree({name: b"", "a.md": "# A\n\ntext\n"})
    report = index("docs", IndexConfig(roots=(str(root),)), home=home)
    (skip,) = report.skipped
    assert skip.path == name and "empty file" in skip.reason


def test_a_name_that_claims_a_container_the_bytes_are_not_is_skipped(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"report.docx": "just text, renamed\n", "a.md": "# A\n\ntext\n"})
    report = index("docs", IndexConfig(roots=(str(root),)), home=home)
    assert [(s.path, s.reason) for s in report.skipped] == [
        ("report.docx", "not a DOCX file (its content does not say so)")]


def test_a_store_of_schema_1_is_migrated_and_read_only_opens_see_the_new_columns(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"guide.md": MARKDOWN})
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        directory = coll.snapshot.directory
        before = [c.chunk_id for c in coll.chunks()]
    _downgrade(directory)
    ro = store.connect(directory, readonly=True)  # cannot migrate: a view stands in front
    generation = store.current_generation(ro)
    assert generation is not None
    old = list(store.iter_generation_chunks(ro, generation))
    assert [c.chunk_id for c in old] == before
    assert all(c.extractor == "" and c.headings == () for c in old)
    ro.close()
    conn = store.connect(directory)  # writable: migrated in place
    assert store.get_meta(conn, "schema_version") == store.SCHEMA_VERSION
    conn.close()
    report = index("docs", IndexConfig(roots=(str(root),)), home=home)
    assert report.unchanged == 1  # same bytes, same (plain-text) extractor: carried


def _downgrade(directory: Path) -> None:
    """Rewrite a store as schema version 1 wrote it (no extractor, locator, headings)."""
    conn = sqlite3.connect(directory / store.STORE_FILE, isolation_level=None)
    conn.execute("UPDATE chunks SET headings = NULL")
    for table, columns in (("chunks", ("extractor", "locator", "headings")),
                           ("documents", ("extractor", "standing"))):
        for column in columns:
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    conn.close()


def test_plain_text_collections_never_import_an_extractor_library(make_tree: TreeMaker,
                                                                  tmp_path: Path) -> None:
    """The extractors' parsers are optional extras, imported only for a file that needs
    one: indexing, searching and verifying Markdown loads none of them."""
    root = make_tree({"guide.md": MARKDOWN})
    script = (
        "import json, sys\n"
        "from groundkit.collection import Collection, IndexConfig, index\n"
        f"index('docs', IndexConfig(roots=({str(root)!r},)), home={str(tmp_path / 'h')!r})\n"
        f"with Collection.open('docs', {str(tmp_path / 'h')!r}) as coll:\n"
        "    hits = coll.search('sudo', top_k=2, verify=True)\n"
        "    assert hits and hits[0].verdict.status == 'verified'\n"
        "print(json.dumps(sorted(m for m in ('pypdfium2', 'selectolax', 'defusedxml')\n"
        "                        if m in sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert json.loads(done.stdout) == []


def test_every_page_is_extracted_in_a_child_with_a_time_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """lexbor's time grows with the square of the nesting depth, and a 56 KB page can be
    quadratic too: no page is parsed in the indexing process, whatever its size
    (ADR 0018), and a deep one runs into the time limit."""
    pytest.importorskip("selectolax")
    deep = b"<html><body>" + b"<div>" * 60_000 + b"deep" + b"</div>" * 60_000
    with pytest.raises(extract.ExtractError, match="timed out after 1 s"):
        extract.extract("html", deep, extract.Limits(timeout_s=1.0))
    import groundkit.extract.forkserver as forkserver
    import groundkit.extract.sandbox as sandbox

    forked: list[str] = []

    def counting(real: Any) -> Any:
        def counted(name: str, data: bytes, limits: extract.Limits) -> extract.TextView:
            forked.append(name)
            result: extract.TextView = real(name, data, limits)
            return result
        return counted

    monkeypatch.setattr(forkserver, "run", counting(forkserver.run))
    monkeypatch.setattr(sandbox, "run_isolated", counting(sandbox.run_isolated))
    assert extract.extract("html", b"<p>small page</p>").text == "small page"
    assert forked == ["html"]


def test_an_extracted_view_is_cut_at_its_headings(make_tree: TreeMaker, home: Path) -> None:
    """HTML's h1-h6 (like a PDF's outline or DOCX heading styles) are the chunker's best
    boundaries, as Markdown's heading lines are: a section starts a chunk of its own."""
    pytest.importorskip("selectolax")
    paragraphs = "".join(f"<p>Paragraph {j} of the section. {FILLER}</p>" for j in range(4))
    sections = "".join(f"<h2>Section {i}</h2>{paragraphs}" for i in range(6))
    root = make_tree({"page.html": f"<html><body><h1>Guide</h1>{sections}</body></html>"})
    index("docs", IndexConfig(roots=(str(root),), chunker=ChunkerConfig(target=340,
                                                                         overlap=40)), home=home)
    with Collection.open("docs", home) as coll:
        chunks = coll.chunks()
    starts = [c.text.split("\n")[0] for c in chunks]
    assert sum(s.startswith("Section ") for s in starts) == 5, starts  # without: 1
    for chunk in chunks:
        if chunk.text.startswith("Section "):
            assert chunk.headings == ("Guide", chunk.text.split("\n")[0])
