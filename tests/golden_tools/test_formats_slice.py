"""golden/tools/formats_slice.py: deterministic zips, and the rebuild of golden v3's files
where the Debian packages (and pandoc) are installed at the versions PROVENANCE.json records."""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
V3 = REPO / "golden" / "v3"


def builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "formats_slice", REPO / "golden" / "tools" / "formats_slice.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_repacking_fixes_the_dates_and_keeps_every_member_in_order() -> None:
    tool = builder()
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:  # members dated now, as pandoc writes an ODT
        z.writestr("mimetype", "application/vnd.oasis.opendocument.text")
        z.writestr("content.xml", "<office:document-content/>" * 50)
    first, again = tool.repack(out.getvalue()), tool.repack(out.getvalue())
    assert first == again
    with zipfile.ZipFile(io.BytesIO(first)) as z:
        assert [i.filename for i in z.infolist()] == ["mimetype", "content.xml"]
        assert {i.date_time for i in z.infolist()} == {tool.ZIP_DATE}
        assert z.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
        assert z.read("content.xml") == b"<office:document-content/>" * 50


def _installed_as_recorded() -> bool:
    if shutil.which("pandoc") is None or shutil.which("dpkg-query") is None:
        return False
    provenance = json.loads((V3 / "PROVENANCE.json").read_text(encoding="utf-8"))
    v2 = json.loads((REPO / "golden" / "v2" / "PROVENANCE.json").read_text(encoding="utf-8"))
    new = [r for d, r in provenance["documents"].items() if d not in v2["documents"]]
    wanted = {(r["package"], r["version"]) for r in [*new, *provenance["twins"].values()]}
    wanted |= {("pandoc", r["converter"]["version"]) for r in new if "converter" in r}
    for package, version in wanted:
        found = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                               capture_output=True, text=True).stdout.strip()
        if found != version:
            return False
    return True


@pytest.mark.skipif(not _installed_as_recorded(),
                    reason="the Debian packages golden v3 was built from are not installed "
                           "at the recorded versions")
def test_golden_v3_rebuilds_byte_for_byte(tmp_path: Path) -> None:
    tool = builder()
    tool.build(tmp_path)
    assert tool._files(tmp_path) == tool._files(V3)
