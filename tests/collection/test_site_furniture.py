"""Blocks repeated across a site's pages are marked site furniture, offsets untouched."""

from __future__ import annotations

import hashlib
import io
import json
import sqlite3
import zipfile
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import extract, store
from groundkit.answer.sentences import units
from groundkit.collection import site_furniture
from groundkit.collection.indexer import IndexConfig, index_collection
from groundkit.collection.site_furniture import KIND, view_runs
from groundkit.model import Chunk, Document
from groundkit.text.chunking import make_chunks

MENU = ("<div class='menu'><p>Getting started with the tool</p>"
        "<p>Reference manual of every option</p><p>Frequently asked questions</p></div>")
MENU_LINES = ("Getting started with the tool", "Reference manual of every option",
              "Frequently asked questions")


def page(title: str, body: str, menu: str = MENU) -> str:
    return (f"<html><head><title>{title}</title></head><body>{menu}<h1>{title}</h1>"
            f"<p>{body}</p></body></html>")


def site(pages: int, menu_on: int | None = None) -> dict[str, str | bytes]:
    """``pages`` HTML pages in ``site/``, the first ``menu_on`` (default all) with the menu."""
    on = pages if menu_on is None else menu_on
    return {f"site/p{i:02d}.html": page(
        f"Page {i} heading", f"The sprocket number {i} turns {i * 3} times a minute.",
        MENU if i < on else "") for i in range(pages)}


def index(root: Path, home: Path, dirty: list[Path] | None = None) -> Path:
    directory = home / "c"
    index_collection("c", directory, IndexConfig(roots=(str(root),)), workers=1,
                     dirty=None if dirty is None else [str(p) for p in dirty])
    return directory


def chunks(directory: Path) -> list[Chunk]:
    conn = store.connect(directory, readonly=True)
    try:
        generation = store.current_generation(conn)
        assert generation is not None
        return list(store.iter_generation_chunks(conn, generation))
    finally:
        conn.close()


def recorded(monkeypatch: pytest.MonkeyPatch) -> list[site_furniture.Marked]:
    """What each site pass of the indexer does from now on."""
    passes: list[site_furniture.Marked] = []
    real = site_furniture.mark

    def mark(conn: sqlite3.Connection, generation: int) -> site_furniture.Marked:
        passes.append(real(conn, generation))
        return passes[-1]

    monkeypatch.setattr(site_furniture, "mark", mark)
    return passes


def marked(chunk: Chunk) -> list[str]:
    return [chunk.text[a:b] for a, b, kind in chunk.furniture if kind == KIND]


def test_a_menu_on_every_page_is_marked_and_the_content_is_not(
        make_tree: TreeMaker, tmp_path: Path) -> None:
    found = chunks(index(make_tree(site(6)), tmp_path / "home"))
    assert {c.doc_id for c in found} == {f"site/p{i:02d}.html" for i in range(6)}
    for doc in {c.doc_id for c in found}:
        runs = [t for c in found if c.doc_id == doc for t in marked(c)]
        assert tuple(runs) == MENU_LINES
    for c in found:
        quotable = [c.text[u.start:u.end] for u in units(c.text, c.furniture)]
        assert any("sprocket" in q for q in quotable)
        assert not any(line in q for q in quotable for line in MENU_LINES)


def test_the_pass_changes_no_text_and_no_offset(make_tree: TreeMaker, tmp_path: Path) -> None:
    root = make_tree(site(4))
    stored = {c.chunk_id: c for c in chunks(index(root, tmp_path / "home"))}
    for path in sorted((root / "site").iterdir()):
        data = path.read_bytes()
        view, identity = extract.read("html", data)
        document = Document(doc_id=f"site/{path.name}", root=str(root),
                            relpath=f"site/{path.name}", sha256=hashlib.sha256(data).hexdigest(),
                            size=len(data), encoding="utf-8", bom_len=0, text=view.text,
                            extractor=identity)
        for own in make_chunks("c", document, IndexConfig(roots=(str(root),)).chunker, view):
            kept = stored[own.chunk_id]
            assert (kept.start, kept.end, kept.text, kept.byte_start, kept.locator) == (
                own.start, own.end, own.text, own.byte_start, own.locator)
            assert [r for r in kept.furniture if r[2] != KIND] == list(own.furniture)


def test_a_block_on_too_few_pages_is_content(make_tree: TreeMaker, tmp_path: Path) -> None:
    # 10 pages, the menu on 4: under half of them.
    found = chunks(index(make_tree(site(10, menu_on=4)), tmp_path / "home"))
    assert not any(marked(c) for c in found)


def test_a_two_page_site_is_never_marked(make_tree: TreeMaker, tmp_path: Path) -> None:
    assert not any(marked(c) for c in chunks(index(make_tree(site(2)), tmp_path / "home")))


def test_a_pages_own_title_that_is_also_its_menu_entry_stays_content() -> None:
    menu = "Getting started with the tool\nReference manual of every option\nFAQ and answers\n"
    pages = {"start": menu + "\nGetting started with the tool\n\nInstall it first.\n",
             "reference": menu + "\nReference manual of every option\n\nEvery flag.\n",
             "faq": menu + "\nFAQ and answers\n\nAsk away.\n"}
    runs = view_runs(pages)
    for name, text in pages.items():
        assert [text[a:b] for a, b in runs[name]] == menu.splitlines()


def test_short_lines_and_lines_without_letters_are_not_counted() -> None:
    pages = {f"p{i}": f"Note\n12345678 90\n}}\nbody {i} of this page\n" for i in range(5)}
    assert all(not runs for runs in view_runs(pages).values())


def test_pages_in_other_folders_are_other_sites(make_tree: TreeMaker, tmp_path: Path) -> None:
    files = {f"{folder}/p{i}.html": page(f"T{folder}{i}", f"body {folder} {i}", MENU if
                                         (folder == "a") == (i == 0) else "")
             for folder in ("a", "b") for i in range(4)}
    # The menu is on a/p0 and b/p1..p3: on 1 of a's 4 pages, 3 of b's.
    found = chunks(index(make_tree(files), tmp_path / "home"))
    assert {c.doc_id for c in found if marked(c)} == {"b/p1.html", "b/p2.html", "b/p3.html"}


def test_reindexing_one_page_re_marks_its_site_and_reads_no_other(
        make_tree: TreeMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {**site(4), **{f"other/q{i}.html": page(f"Q{i}", f"other body {i}", MENU)
                           for i in range(3)}}
    root = make_tree(files)
    home = tmp_path / "home"
    index(root, home)
    passes = recorded(monkeypatch)
    for i in range(3):  # the menu leaves three of site/'s four pages
        (root / f"site/p{i:02d}.html").write_text(page(f"Page {i}", f"new body {i}", ""))
        index(root, home, dirty=[root / f"site/p{i:02d}.html"])
    assert [(m.sites, m.pages) for m in passes] == [(1, 4)] * 3
    found = chunks(home / "c")
    assert not any(marked(c) for c in found if c.doc_id.startswith("site/"))
    assert all(tuple(t for c in found if c.doc_id == f"other/q{i}.html" for t in marked(c))
               == MENU_LINES for i in range(3))


def test_marks_after_dirty_runs_are_those_of_a_full_run(make_tree: TreeMaker,
                                                         tmp_path: Path) -> None:
    files = site(6)
    edited, fresh = make_tree(files), tmp_path / "home"
    index(edited, fresh)
    for i, menu in ((0, ""), (1, ""), (2, MENU), (0, MENU), (3, "")):
        path = edited / f"site/p{i:02d}.html"
        path.write_text(page(f"Page {i} heading", f"Edited body {i}.", menu))
        index(edited, fresh, dirty=[path])
    (edited / "site/p05.html").unlink()
    index(edited, fresh, dirty=[edited / "site/p05.html"])
    again = make_tree({str(p.relative_to(edited)): p.read_bytes()
                       for p in sorted((edited / "site").iterdir())})
    layouts = [{(c.doc_id, c.start, c.end): c.furniture for c in chunks(d)}
               for d in (fresh / "c", index(again, tmp_path / "again"))]
    assert layouts[0] == layouts[1]
    assert any(f for f in layouts[0].values())


def test_an_unchanged_run_reads_no_site_and_a_new_detector_reads_all(
        make_tree: TreeMaker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = make_tree(site(4))
    home = tmp_path / "home"
    index(root, home)
    passes = recorded(monkeypatch)
    index(root, home)
    conn = store.connect(home / "c")
    with store.transaction(conn):
        store.set_meta(conn, site_furniture.META_KEY, {"version": 0})
    conn.close()
    index(root, home)
    assert [(m.sites, m.chunks) for m in passes] == [(0, 0), (1, 0)]
    assert all(tuple(t for c in chunks(home / "c") if c.doc_id == doc for t in marked(c))
               == MENU_LINES for doc in {f"site/p{i:02d}.html" for i in range(4)})


def test_a_block_repeated_in_an_epubs_chapters_is_marked(
        make_tree: TreeMaker, tmp_path: Path) -> None:
    chapters = {f"c{i}.xhtml": page(f"Chapter {i}", f"Chapter {i} tells of sprocket {i}.")
                for i in range(4)}
    found = chunks(index(make_tree({"book.epub": _epub(chapters)}), tmp_path / "home"))
    texts = [t for c in found for t in marked(c)]
    assert texts == list(MENU_LINES) * 4


def test_marks_are_stored_in_the_layout_column(make_tree: TreeMaker, tmp_path: Path) -> None:
    directory = index(make_tree(site(3)), tmp_path / "home")
    conn = store.connect(directory, readonly=True)
    layouts = [json.loads(row[0]) for row in conn.execute("SELECT layout FROM chunks")
               if row[0]]
    conn.close()
    assert layouts and all(any(k == KIND for _, _, k in data["furniture"]) for data in layouts)


def _epub(chapters: dict[str, str]) -> bytes:
    manifest = "".join(f'<item id="i{n}" href="{name}" media-type="application/xhtml+xml"/>'
                       for n, name in enumerate(chapters))
    spine = "".join(f'<itemref idref="i{n}"/>' for n in range(len(chapters)))
    opf = ('<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
           f"<metadata/><manifest>{manifest}</manifest><spine>{spine}</spine></package>")
    container = ('<?xml version="1.0"?><container version="1.0" '
                 'xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
                 '<rootfile full-path="OEBPS/content.opf" '
                 'media-type="application/oebps-package+xml"/></rootfiles></container>')
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("mimetype", "application/epub+zip")
        z.writestr("META-INF/container.xml", container)
        z.writestr("OEBPS/content.opf", opf)
        for name, text in chapters.items():
            z.writestr(f"OEBPS/{name}", text)
    return out.getvalue()
