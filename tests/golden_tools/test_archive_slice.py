"""golden/tools/archive_slice.py: where archived documents go, what golden v4's provenance
says of them, and the rebuild of golden v4's files where the pinned bullseye .deb files
are in the cache folder."""

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

REPO = Path(__file__).resolve().parents[2]
V4 = REPO / "golden" / "v4"
TOOL = REPO / "golden" / "tools" / "archive_slice.py"


def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("archive_slice", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_archived_document_sits_below_archive_and_its_release() -> None:
    tool = builder()
    by_name = {p.name: p for p in tool.PACKAGES}
    assert tool.archived_id("postgresql/routine-vacuuming.md", by_name["postgresql-doc-13"]) \
        == "postgresql/archive/13/routine-vacuuming.md"
    assert tool.archived_id("debian-reference/en/ch03.md", by_name["debian-reference-en"]) \
        == "debian-reference/archive/2.78/en/ch03.md"


def test_every_archived_document_is_recorded_with_its_pinned_deb() -> None:
    tool = builder()
    documents = json.loads((V4 / "PROVENANCE.json").read_text(encoding="utf-8"))["documents"]
    v3 = json.loads((REPO / "golden" / "v3" / "PROVENANCE.json").read_text(encoding="utf-8"))
    new = {d: r for d, r in documents.items() if d not in v3["documents"]}
    chosen = tool.selection()
    assert sorted(new) == sorted(doc_id for doc_id, *_ in chosen)
    for doc_id, entry, package, source in chosen:
        record = new[doc_id]
        assert "/archive/" in doc_id and record["current"] == entry["doc"] in v3["documents"]
        assert (record["suite"], record["deb"], record["deb_sha256"]) == (
            "bullseye", package.deb, package.sha256)
        assert (record["package"], record["version"], record["source_path"]) == (
            package.name, package.version, source)
        text = (V4 / "docs" / doc_id).read_bytes()
        assert hashlib.sha256(text).hexdigest() == record["sha256"]


def _debs_cached() -> bool:
    if shutil.which("dpkg-deb") is None:
        return False
    tool = builder()
    return all((tool.DEBS / p.deb).is_file() for p in tool.PACKAGES)


@pytest.mark.skipif(not _debs_cached(),
                    reason="the bullseye .deb files golden v4's archive slice is built from "
                           "are not in /tmp/groundkit-archive-debs "
                           "(python golden/tools/archive_slice.py --check downloads them)")
def test_golden_v4_rebuilds_byte_for_byte() -> None:
    done = subprocess.run([sys.executable, str(TOOL), "--check"], cwd=REPO,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
