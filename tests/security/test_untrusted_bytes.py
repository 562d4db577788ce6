"""One boundary for untrusted bytes (issue 45, ADR 0018): the hostile inputs that took a
groundkit process past 3 GiB, built here by :mod:`groundkit.testing.hostile`, in every
face (index, fetch, search --verify, MCP fetch_chunk) and in the sniff itself."""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import pytest
from faces import RSS_LIMIT_MIB, grk, mcp_fetch, measured

from groundkit.collection import Collection
from groundkit.extract import DEFAULT_LIMITS, ExtractError, extract, for_file
from groundkit.testing import hostile

SLACK_S = 5.0
"""Issue 45: a face's wall time is at most the sandbox's time limit plus this."""


@pytest.mark.parametrize(("name", "data"), [
    ("notes.txt", hostile.mimetype_bomb(1024, hostile.DEFLATED)),
    ("book.epub", hostile.mimetype_bomb(1024, hostile.DEFLATED)),
    ("notes.odt", hostile.mimetype_bomb(16, hostile.BZIP2)),
    ("notes.odt", hostile.mimetype_bomb(16, hostile.LZMA)),
], ids=["deflate-1GiB-txt", "deflate-1GiB-epub", "bzip2-odt", "lzma-odt"])
def test_the_format_sniff_never_inflates_a_lying_mimetype_member(name: str, data: bytes) -> None:
    tracemalloc.start()
    try:
        try:
            found = for_file(name, data)
        except ExtractError as exc:
            found = str(exc)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # a GiB declared as 20 bytes: at most a few KiB are inflated
    assert found in (None, f"not an {name[-4:].lstrip('.').upper()} file (its content does "
                           "not say so)")


def test_a_zip_listing_too_many_members_is_refused_before_its_directory_is_read() -> None:
    data = hostile.zip_bytes([hostile.member(f"m{i}", b"") for i in range(10_001)])
    with pytest.raises(ExtractError, match=r"^zip lists more than 10000 members$"):
        for_file("a.docx", data)


@pytest.mark.parametrize(("fmt", "data"), [
    ("html", hostile.quadratic_html()), ("epub", hostile.quadratic_epub())])
def test_a_small_quadratic_page_is_parsed_in_the_sandbox_whatever_its_size(
        fmt: str, data: bytes) -> None:
    assert len(data) < 64 * 1024  # under the old 256 KiB threshold: it was parsed in process
    with pytest.raises(ExtractError, match=r"^extraction ran out of memory \(limit 256 MiB\)$"):
        extract(fmt, data)


@pytest.fixture(scope="module")
def swapped(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A collection of a text file, a page and a book, each then replaced by a hostile
    file of its kind: the chunk id of each."""
    base = tmp_path_factory.mktemp("swapped")
    root, home = base / "docs", base / "home"
    root.mkdir()
    (root / "notes.txt").write_text("wombat notes here\n")
    (root / "page.html").write_text("<p>wombat page here</p>")
    assert measured(grk("index", str(root), "--collection", "c"), home).code == 0
    with Collection.open("c", home) as coll:
        ids = {c.doc_id: c.chunk_id for c in coll.chunks()}
    (root / "notes.txt").write_bytes(hostile.mimetype_bomb(1024, hostile.DEFLATED))
    (root / "page.html").write_bytes(hostile.quadratic_html())
    (root / "book.epub").write_bytes(hostile.quadratic_epub())
    return home, root, ids


def within_bounds(argv: list[str], home: Path) -> str:
    """Run a face: within 512 MiB and the time limit, one-line reasons, no traceback."""
    outcome = measured(argv, home, timeout_s=DEFAULT_LIMITS.timeout_s + 30)
    assert outcome.rss_mib <= RSS_LIMIT_MIB, outcome
    assert outcome.wall_s <= DEFAULT_LIMITS.timeout_s + SLACK_S, outcome
    assert "Traceback" not in outcome.out + outcome.err
    return outcome.out + outcome.err


def test_fetch_of_a_citation_whose_file_became_hostile_is_bounded(
        swapped: tuple[Path, Path, dict[str, str]]) -> None:
    home, _, ids = swapped
    assert "file no longer decodes: binary file" in within_bounds(
        grk("fetch", ids["notes.txt"]), home)
    assert "file no longer extracts: extraction ran out of memory (limit 256 MiB)" in (
        within_bounds(grk("fetch", ids["page.html"]), home))


def test_search_verify_over_hostile_files_is_bounded(
        swapped: tuple[Path, Path, dict[str, str]]) -> None:
    home, _, _ = swapped
    shown = within_bounds(grk("search", "wombat", "--collection", "c", "--verify"), home)
    assert shown.count("[unresolvable]") == 2


def test_mcp_fetch_chunk_of_a_hostile_file_is_bounded(
        swapped: tuple[Path, Path, dict[str, str]]) -> None:
    home, _, ids = swapped
    shown = within_bounds(mcp_fetch(ids["page.html"]), home)
    assert "ran out of memory" in shown and "'status': 'unresolvable'" in shown


def test_indexing_hostile_files_skips_each_with_its_reason_within_bounds(
        swapped: tuple[Path, Path, dict[str, str]]) -> None:
    home, root, _ = swapped
    shown = within_bounds(grk("index", str(root), "--collection", "fresh"), home)
    assert "skipped notes.txt: binary file (NUL byte)" in shown
    assert "skipped page.html: extraction ran out of memory (limit 256 MiB)" in shown
    assert "skipped book.epub: extraction ran out of memory (limit 256 MiB)" in shown


BIG_FACE = """
import sys
from groundkit.extract import ExtractError, extract
from groundkit.testing import hostile
ballast = bytearray(300 << 20)
ballast[::4096] = b"\\1" * len(ballast[::4096])  # resident, as a large served collection is
try:
    extract("html", hostile.quadratic_html())
except ExtractError as exc:
    print(exc)
"""


def test_a_large_face_does_not_make_its_extractions_larger(tmp_path: Path) -> None:
    """A face holding 300 MiB: a child forked from it would count those pages too and end
    past 512 MiB at its 256 MiB limit; a child of the fork server does not."""
    shown = within_bounds([sys.executable, "-c", BIG_FACE], tmp_path)
    assert shown == "extraction ran out of memory (limit 256 MiB)\n"
