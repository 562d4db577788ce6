"""golden/tools/debian_docs: its HTML tree (lexbor's, through groundkit's decoder), the
blocks a real page gives, and the rebuild of golden v2's documents.

The real page is a Debian Administrator's Handbook page (DocBook XHTML) from
``tests/extract/fixtures/html``; the rebuild runs only where the Debian packages are
installed at the versions golden/v2/PROVENANCE.json records.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("selectolax")

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "golden" / "tools"
APPARMOR = REPO / "tests" / "extract" / "fixtures" / "html" / "en-US_sect.apparmor.html"


def tool(name: str) -> ModuleType:
    """A module of the debian_docs package (a folder under golden/tools, not installed)."""
    if "debian_docs" not in sys.modules:
        folder = TOOLS / "debian_docs"
        spec = importlib.util.spec_from_file_location(
            "debian_docs", folder / "__init__.py", submodule_search_locations=[str(folder)])
        assert spec is not None and spec.loader is not None
        package = importlib.util.module_from_spec(spec)
        sys.modules["debian_docs"] = package
        spec.loader.exec_module(package)
    return importlib.import_module(f"debian_docs.{name}")


tree = tool("tree")
html2md = tool("html2md")
profiles = tool("profiles")


def blocks_of(html: str | bytes) -> list[Any]:
    page = html.encode() if isinstance(html, str) else html
    return html2md.Renderer().blocks(tree.parse_html(page))


def apparmor_blocks() -> list[Any]:
    root = tree.parse_html(APPARMOR.read_bytes())
    return profiles.profile_docbook(root, {"doc": "apparmor.md", "src": str(APPARMOR)})


def test_a_real_page_gives_its_headings_as_blocks() -> None:
    heads = [b for b in apparmor_blocks() if b[0] == "h"]
    assert heads == [("h", 1, "14.4.\xa0Introduction to AppArmor"),
                     ("h", 2, "14.4.1.\xa0Principles"),
                     ("h", 2, "14.4.2.\xa0Enabling AppArmor and managing AppArmor profiles"),
                     ("h", 2, "14.4.3.\xa0Creating a new profile")]


def test_a_real_page_keeps_its_code_blocks_with_their_entities_decoded() -> None:
    pres = [b[1] for b in apparmor_blocks() if b[0] == "pre"]
    assert len(pres) == 4
    assert pres[0].startswith("# aa-status\napparmor module is loaded.\n32 profiles are loaded.")
    assert pres[1] == ("# aa-enforce /usr/bin/pidgin\nSetting /usr/bin/pidgin to enforce mode.\n"
                       "# aa-complain /usr/sbin/dnsmasq\n"
                       "Setting /usr/sbin/dnsmasq to complain mode.")
    assert " [1 - #include <abstractions/nis>]" in pres[3].split("\n")


def test_a_real_page_has_its_table_rows_and_cells() -> None:
    root = tree.parse_html(APPARMOR.read_bytes())
    table = tree.find_first(root, lambda n: n.tag == "table")
    rows, head_rows = html2md.table_rows(table)
    assert [len(cells) for cells in rows] == [2, 2, 2, 2]  # lexbor's implied <tbody> is read
    assert head_rows == set()
    assert html2md.Renderer().cell_text(rows[1][1]).startswith(
        "At the kernel level, the special powers of the root user have been split")


def test_the_callout_table_becomes_a_description_list_of_its_rows() -> None:
    dls = [b for b in apparmor_blocks() if b[0] == "dl"]
    assert len(dls) == 1
    assert len(dls[0][1]) == 4  # one entry per table row
    assert dls[0][1][0][1][0][1].startswith("The first event detected is the execution")


def test_implied_end_tags_follow_the_html_standard() -> None:
    page = ("<p>one<p>two<ul><li>a<li>b</ul>"
            "<table><tr><th>k<th>v<tr><td>x<td>1</table>"
            "<dl><dt>term<dd>text</dl>")
    assert blocks_of(page) == [
        ("p", "one"), ("p", "two"), ("list", False, 1, [[("p", "a")], [("p", "b")]]),
        ("table", ["k", "v"], [["x", "1"]]),
        ("dl", [[["term"], [("p", "text")]]])]


def test_a_misnested_heading_end_tag_closes_the_heading() -> None:
    # sqlite3-doc's c_interface.html: <h4>...</h3>; html.parser kept the <h4> open
    assert blocks_of("<h4>3.10 Jobs</h3><p>Text.</p>") == [("h", 4, "3.10 Jobs"), ("p", "Text.")]


def test_an_xhtml_empty_anchor_does_not_swallow_what_follows() -> None:
    page = ('<html xmlns="http://www.w3.org/1999/xhtml"><body>'
            '<h3><a id="rules"/>Rules</h3><ul><li><p>one</p></li><li><p>two</p></li>'
            '<li><p>three <a href="#x">link</a></p></li></ul></body></html>')
    assert blocks_of(page) == [
        ("h", 3, "Rules"),
        ("list", False, 1, [[("p", "one")], [("p", "two")], [("p", "three link")]])]
    assert "rules" in tree.by_id(tree.parse_html(page.encode()))


def test_the_xhtml_rewrite_touches_only_empty_non_void_elements() -> None:
    text = ('<a id="x"/><br/><img src="a.png" /><!-- <b/> --><p title="<i/>">t</p>'
            '<script>if (a<b/>c) {}</script><a href=x/>')
    assert tree.close_empty_elements(text) == (
        '<a id="x"></a><br/><img src="a.png" /><!-- <b/> --><p title="<i/>">t</p>'
        '<script>if (a<b/>c) {}</script><a href=x/>')


def test_the_page_is_decoded_in_the_encoding_it_declares() -> None:
    page = b'<meta charset="iso-8859-1"><p>caf\xe9 &amp; cr\xe8me</p>'
    assert blocks_of(page) == [("p", "caf\u00e9 & cr\u00e8me")]


def test_undecodable_bytes_stop_the_build_naming_the_document() -> None:
    entry = {"doc": "x/bad.md", "src": "/bad.html", "profile": "sphinx"}
    with pytest.raises(SystemExit, match=r"x/bad\.md: /bad\.html: not valid utf-8"):
        profiles.convert_html(entry, b"<p>caf\xe9</p>")


def pinned_packages_installed() -> bool:
    """Whether every package golden v2 was built from is installed at its recorded version."""
    packages = tool("packages")
    records = json.loads((REPO / "golden" / "v2" / "PROVENANCE.json").read_text("utf-8"))
    pins = {r["package"]: r["version"] for r in records["documents"].values()
            if not r["package"].startswith("groundkit")}
    try:
        return all(packages.pkg_version(p) == v for p, v in pins.items())
    except SystemExit:  # a package is not installed
        return False


@pytest.mark.skipif(not pinned_packages_installed(),
                    reason="the Debian packages of golden v2 are not installed at its versions")
def test_the_converter_rebuilds_golden_v2_byte_for_byte(tmp_path: Path) -> None:
    build = tool("build")
    build.build(tmp_path)
    assert build.compare(REPO / "golden" / "v2", tmp_path) == []
