"""Verification through formats, on real files: the verdict follows the *text*, not the
markup around it, and a changed extractor or format is said, never judged silently."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit import extract
from groundkit.collection import Collection, IndexConfig, fetch_chunk, index
from groundkit.model import Chunk, Status

FIXTURES = Path(__file__).resolve().parents[1] / "extract" / "fixtures"
HTML = FIXTURES / "html" / "en-US_sect.apparmor.html"
PDF = FIXTURES / "pdf" / "gnuplot-p21-23.pdf"
OTHER_PDF = FIXTURES / "pdf" / "r-intro-p2-p9-11.pdf"
ENCRYPTED_PDF = FIXTURES / "pdf" / "encrypted-user-password.pdf"

pytest.importorskip("selectolax")
pytest.importorskip("pypdfium2")


def _indexed(make_tree: TreeMaker, home: Path, source: Path) -> tuple[Path, list[Chunk]]:
    root = make_tree({source.name: source.read_bytes()})
    report = index("docs", IndexConfig(roots=(str(root),)), home=home)
    assert report.skipped == [] and report.added == 1
    with Collection.open("docs", home) as coll:
        return root / source.name, coll.chunks()


def _longest(chunks: list[Chunk]) -> Chunk:
    return max(chunks, key=lambda c: (len(c.text), -c.start))


def test_an_html_hit_locates_its_text_in_the_raw_bytes(make_tree: TreeMaker,
                                                       home: Path) -> None:
    path, chunks = _indexed(make_tree, home, HTML)
    raw = path.read_bytes()
    for chunk in chunks:
        assert chunk.extractor.startswith("html/selectolax=")
        assert chunk.locator is not None and chunk.locator.format == "html"
        (span,) = chunk.locator.spans
        assert span.byte_start is not None and span.byte_end is not None
        first_word = re.search(r"\w{4,}", chunk.text)
        assert first_word is not None
        assert first_word.group().encode() in raw[span.byte_start:span.byte_end]
    view = "".join(c.text for c in chunks)
    assert "<div" not in view and 'class="' not in view  # no markup in the view
    assert "#include <abstractions/nis>" in view  # text that looks like a tag stays text
    assert any(c.headings for c in chunks)


def test_editing_an_html_attribute_only_keeps_the_citation_verified(
        make_tree: TreeMaker, home: Path) -> None:
    path, chunks = _indexed(make_tree, home, HTML)
    cited = _longest(chunks)
    raw = path.read_text(encoding="utf-8")
    edited = raw.replace('class="section"', 'class="section renamed"')
    assert edited != raw
    path.write_text(edited, encoding="utf-8")
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.VERIFIED, verdict.reason
    assert verdict.reason == "file changed elsewhere; the cited span is intact"
    assert verdict.locator == cited.locator and verdict.headings == cited.headings


def test_cited_html_text_that_moved_is_drifted_and_relocated(make_tree: TreeMaker,
                                                             home: Path) -> None:
    path, chunks = _indexed(make_tree, home, HTML)
    cited = _longest(chunks)
    raw = path.read_text(encoding="utf-8")
    body = raw.index("<body")
    insert = raw.index(">", body) + 1
    path.write_text(raw[:insert] + "<p>A new opening paragraph, added since.</p>"
                    + raw[insert:], encoding="utf-8")
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.DRIFTED
    assert verdict.relocated is not None
    assert verdict.relocated[0] > cited.start


def test_changed_html_words_are_drifted(make_tree: TreeMaker, home: Path) -> None:
    path, chunks = _indexed(make_tree, home, HTML)
    cited = _longest(chunks)
    word = re.findall(r"[A-Za-z]{6,}", cited.text)[-1]
    raw = path.read_text(encoding="utf-8")
    path.write_text(raw.replace(word, word.upper()), encoding="utf-8")
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.DRIFTED and verdict.relocated is None
    assert verdict.reason == "the cited text is no longer in the file"


def test_a_pdf_hit_names_its_pages(make_tree: TreeMaker, home: Path) -> None:
    _, chunks = _indexed(make_tree, home, PDF)
    assert all(c.locator is not None and c.locator.pages for c in chunks)
    pages = sorted({p for c in chunks for p in (c.locator.pages if c.locator else ())})
    assert pages == [1, 2, 3]
    for chunk in chunks:
        assert chunk.locator is not None
        for span in chunk.locator.spans:
            assert span.page_start is not None and span.page_end is not None
            assert 0 <= span.page_start <= span.page_end


@pytest.mark.parametrize(("replacement", "status", "reason"), [
    (OTHER_PDF, Status.DRIFTED, "the cited text is no longer in the file"),
    (ENCRYPTED_PDF, Status.UNRESOLVABLE, "file no longer extracts: encrypted PDF"),
    (HTML, Status.UNRESOLVABLE, "file no longer extracts: not a PDF file"),
])
def test_a_replaced_pdf_is_drifted_or_unresolvable(make_tree: TreeMaker, home: Path,
                                                   replacement: Path, status: Status,
                                                   reason: str) -> None:
    path, chunks = _indexed(make_tree, home, PDF)
    shutil.copyfile(replacement, path)
    verdict = fetch_chunk(_longest(chunks).chunk_id, home)
    assert verdict.status is status
    assert verdict.reason.startswith(reason), verdict.reason


def test_an_html_page_replaced_by_a_pdf_changed_format(make_tree: TreeMaker,
                                                       home: Path) -> None:
    """The same name, another format: the content says PDF now; no verdict is computed
    on a view the index never saw."""
    path, chunks = _indexed(make_tree, home, HTML)
    shutil.copyfile(PDF, path)
    verdict = fetch_chunk(_longest(chunks).chunk_id, home)
    assert verdict.status is Status.UNRESOLVABLE
    assert verdict.reason == ("file changed format (indexed as HTML, now PDF): "
                              "re-index the collection")
    report = index("docs", IndexConfig(roots=(str(path.parent),)), home=home)
    assert report.changed == 1
    with Collection.open("docs", home) as coll:
        assert {c.extractor.split("/")[0] for c in coll.chunks()} == {"pdf"}


def test_a_changed_extractor_version_is_stated_not_judged(
        make_tree: TreeMaker, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path, chunks = _indexed(make_tree, home, HTML)
    cited = _longest(chunks)
    html = extract.extractor("html")
    indexed = html.identity()
    monkeypatch.setattr(type(html), "identity", lambda self: indexed + "-next")
    # unchanged bytes: verified by hash, whatever extractor is installed now
    assert fetch_chunk(cited.chunk_id, home).status is Status.VERIFIED
    path.write_bytes(path.read_bytes() + b"\n<!-- an edit -->\n")
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.UNRESOLVABLE
    assert indexed in verdict.reason and "re-index" in verdict.reason
    # a re-index reads the file again with the installed extractor
    report = index("docs", IndexConfig(roots=(str(path.parent),)), home=home)
    assert report.changed == 1 and report.unchanged == 0
    with Collection.open("docs", home) as coll:
        assert {c.extractor for c in coll.chunks()} == {indexed + "-next"}


def test_an_unchanged_formats_file_is_carried_over(make_tree: TreeMaker, home: Path) -> None:
    path, chunks = _indexed(make_tree, home, PDF)
    report = index("docs", IndexConfig(roots=(str(path.parent),)), home=home)
    assert (report.unchanged, report.changed, report.added) == (1, 0, 0)
    with Collection.open("docs", home) as coll:
        assert [c.chunk_id for c in coll.chunks()] == [c.chunk_id for c in chunks]


def test_an_answer_from_a_pdf_cites_its_page(make_tree: TreeMaker, home: Path) -> None:
    """``grk ask`` over a PDF: each citation's source is the page it came from, with
    the quote's offsets in that page's text, and a ``page_location`` block."""
    from groundkit.answer import ask

    path, _ = _indexed(make_tree, home, PDF)
    with Collection.open("docs", home) as coll:
        answer = ask(coll, "how do I get help and where do I ask questions about gnuplot")
    data = answer.to_dict()
    assert answer.kind == "extractive" and answer.citations
    view = extract.extract("pdf", path.read_bytes())
    for citation in answer.citations:
        assert citation.locator is not None and citation.locator.pages
        assert view.text[citation.start:citation.end] == citation.text
        for piece in citation.locator.spans:
            assert piece.view_start is not None and piece.view_end is not None
            assert piece.view_start >= citation.start and piece.view_end <= citation.end
    pages = data["anthropic"]["page_locations"]
    assert len(pages) == len(answer.citations)
    first = answer.citations[0].locator
    assert first is not None
    assert pages[0]["start_page_number"] == first.pages[0]
    assert pages[0]["end_page_number"] == first.pages[-1] + 1
