"""golden/tools/scan_table_slice.py: what golden v5's provenance says of its new files, that
the scanned copies have no text layer, the OCR alignment the author re-anchors quotes with,
and the rebuild of golden v5's files where the same programs and packages are installed."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from groundkit import extract
from groundkit.extract.pdf import SCANNED

REPO = Path(__file__).resolve().parents[2]
V4, V5 = REPO / "golden" / "v4", REPO / "golden" / "v5"
TOOL = REPO / "golden" / "tools" / "scan_table_slice.py"


def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scan_table_slice", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_v4_is_carried_and_every_new_file_is_recorded() -> None:
    tool = builder()
    v4 = json.loads((V4 / "PROVENANCE.json").read_text(encoding="utf-8"))
    v5 = json.loads((V5 / "PROVENANCE.json").read_text(encoding="utf-8"))
    assert v5["twins"] == v4["twins"]
    assert {d: v5["documents"][d] for d in v4["documents"]} == v4["documents"]
    new = {d: r for d, r in v5["documents"].items() if d not in v4["documents"]}
    expected = ([s.doc_id for s in tool.SCANS] + [d for d, *_ in tool.COPIED]
                + [d for d, *_ in tool.CONVERTED])
    assert sorted(new) == sorted(expected)
    for doc_id, record in new.items():
        assert _sha(V5 / "docs" / doc_id) == record["sha256"]
    for scan in tool.SCANS:
        record = new[scan.doc_id]
        assert record["scanned_from"] == scan.source
        assert record["source_sha256"] == _sha(V4 / "docs" / scan.source)
        assert record["pages"] == [scan.first, scan.last]
        assert [c["program"] for c in record["converter"]] == ["pdftoppm", "img2pdf"]


def test_the_scanned_copies_have_no_text_layer() -> None:
    tool = builder()
    for scan in tool.SCANS:
        with pytest.raises(extract.ExtractError, match="no text layer"):
            extract.extract("pdf", (V5 / "docs" / scan.doc_id).read_bytes())
        assert SCANNED.startswith("no text layer")


def test_align_finds_the_ocr_reading_of_a_quote() -> None:
    tool = builder()
    ocr = ("Chapter 2\n\nTo read such files set f\u00a3i11 = TRUE. It is quite common for a file "
           "exported from a\nspreadsheet to have all trailing empty fields omitted.\n\nNext.")
    exact = tool.align("It is quite common for a file exported from a spreadsheet to have all "
                       "trailing empty fields omitted.", ocr)
    assert exact is not None
    start, end, similarity = exact
    assert ocr[start:end] == ("It is quite common for a file exported from a\nspreadsheet to "
                              "have all trailing empty fields omitted.")
    assert similarity == 1.0
    misread = tool.align("To read such files set fill = TRUE.", ocr)
    assert misread is not None
    start, end, similarity = misread
    assert ocr[start:end] == "To read such files set f\u00a3i11 = TRUE."
    assert 0.8 < similarity < 1.0
    assert tool.align("nothing of this is there at all, not a word", ocr) is None


def _same_programs() -> bool:
    tool = builder()
    if not all(shutil.which(p) for p in ("pdftoppm", "img2pdf", "pandoc", "dpkg-query")):
        return False
    v5 = json.loads((V5 / "PROVENANCE.json").read_text(encoding="utf-8"))["documents"]
    sources = [Path(p) for _, _, p in tool.COPIED] + [
        Path(tool.PG_HTML) / page for _, _, pages in tool.CONVERTED for page in pages]
    if not all(p.is_file() for p in sources):
        return False
    scan = v5[tool.SCANS[0].doc_id]["converter"]
    table = v5[tool.CONVERTED[0][0]]["converter"]
    from debian_docs.packages import pkg_version  # the tool put golden/tools on sys.path

    return (pkg_version("poppler-utils"), pkg_version("img2pdf"), pkg_version("pandoc")) == (
        scan[0]["version"], scan[1]["version"], table["version"])


@pytest.mark.skipif(not _same_programs(),
                    reason="poppler-utils, img2pdf, pandoc, debian-reference-en or "
                           "postgresql-doc-15 are not installed at the versions golden v5 "
                           "was built with")
def test_golden_v5_rebuilds_byte_for_byte() -> None:
    done = subprocess.run([sys.executable, str(TOOL), "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
