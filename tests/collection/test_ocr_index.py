"""A scanned PDF and an image indexed, cited and verified: OCR's text works as a text PDF's.

The index records OCR's identity for the document and each page's OCR confidence in its
chunks' locators; citations say OCR in the CLI and in JSON; verification re-OCRs a
changed file (same engine, same options: the same view) and judges the cited span.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import TreeMaker
from extract import scans

from groundkit.cli import main
from groundkit.cli.render import where
from groundkit.collection import Collection, IndexConfig, fetch_chunk, index
from groundkit.extract.ocr import OcrExtractor
from groundkit.model import Chunk, Status
from groundkit.sources import DEFAULT_INCLUDE

pytest.importorskip("pypdfium2")
if os.environ.get("GROUNDKIT_REQUIRE_OCR") != "1" and not OcrExtractor().available():
    pytest.skip("OCR not installed (make ocr; GROUNDKIT_REQUIRE_OCR=1 makes this a failure)",
                allow_module_level=True)


def _index(root: Path, home: Path) -> list[Chunk]:
    report = index("scans", IndexConfig(roots=(str(root),),
                                        include=(*DEFAULT_INCLUDE, "*.png")), home=home)
    assert report.skipped == []
    with Collection.open("scans", home) as coll:
        return coll.chunks()


def _longest(chunks: list[Chunk], suffix: str) -> Chunk:
    return max((c for c in chunks if c.doc_id.endswith(suffix)), key=lambda c: len(c.text))


def test_a_scanned_pdf_and_an_image_are_indexed_by_ocr_and_say_so(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree({"scan.pdf": scans.scanned_pdf(pages=(1,)),
                      "page.png": scans.image_file(index=0)})
    chunks = _index(root, home)
    assert {c.doc_id.rsplit("/", 1)[-1] for c in chunks} == {"scan.pdf", "page.png"}
    identity = OcrExtractor().identity()
    for chunk in chunks:
        assert chunk.extractor == identity
        assert chunk.locator is not None and chunk.locator.pages == (1,)
        assert all(s.ocr_confidence is not None and 50 < s.ocr_confidence <= 100
                   for s in chunk.locator.spans)
        assert "[OCR, confidence " in where(chunk)
    assert main(["search", "Gentleman Ihaka", "-c", "scans", "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    text = json.dumps(hits)
    assert '"ocr_confidence"' in text and "page.png" in text
    assert main(["search", "Gentleman Ihaka", "-c", "scans"]) == 0
    assert "[OCR, confidence " in capsys.readouterr().out


def test_a_re_ocrd_scan_verifies_and_a_changed_scan_drifts(make_tree: TreeMaker,
                                                           home: Path) -> None:
    root = make_tree({"scan.pdf": scans.scanned_pdf(pages=(1,))})
    cited = _longest(_index(root, home), "scan.pdf")
    path = root / "scan.pdf"
    assert fetch_chunk(cited.chunk_id, home).status is Status.VERIFIED
    path.write_bytes(path.read_bytes() + b"\n% a trailing comment: the same page\n")
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.VERIFIED, verdict.reason
    assert verdict.reason == "file changed elsewhere; the cited span is intact"
    path.write_bytes(scans.scanned_pdf(pages=(2,)))
    verdict = fetch_chunk(cited.chunk_id, home)
    assert verdict.status is Status.DRIFTED, verdict.reason


def test_an_unchanged_scan_is_carried_over_not_read_again(make_tree: TreeMaker,
                                                          home: Path) -> None:
    root = make_tree({"scan.pdf": scans.scanned_pdf(pages=(1,))})
    first = _index(root, home)
    report = index("scans", IndexConfig(roots=(str(root),)), home=home)
    assert (report.unchanged, report.changed, report.added) == (1, 0, 0)
    with Collection.open("scans", home) as coll:
        assert [c.chunk_id for c in coll.chunks()] == [c.chunk_id for c in first]
