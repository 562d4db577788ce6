"""The MCP tools over documents in other formats: locators, heading paths, collapsed
duplicates and skip counts travel through the schemas to a real SDK client."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TreeMaker
from mcp.server.mcpserver import MCPServer
from mcp_helpers import ok

from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.server import build_server

FIXTURES = Path(__file__).resolve().parents[1] / "extract" / "fixtures"
README = "# Lamp\n\nThe lamp keeper trims the wick every evening at dusk.\n"

pytest.importorskip("pypdfium2")
pytest.importorskip("selectolax")


@pytest.fixture
def server(make_tree: TreeMaker, home: Path) -> MCPServer:
    root = make_tree({
        "manual.pdf": (FIXTURES / "pdf" / "gnuplot-p21-23.pdf").read_bytes(),
        "locked.pdf": (FIXTURES / "pdf" / "encrypted-user-password.pdf").read_bytes(),
        "apparmor.html": (FIXTURES / "html" / "en-US_sect.apparmor.html").read_bytes(),
        "a/README.md": README, "b/README.md": README,
    })
    index("k", IndexConfig(roots=(str(root),)), home=home)
    return build_server(home=home)


def test_a_pdf_hit_carries_its_pages_and_fetch_keeps_them(server: MCPServer) -> None:
    out = ok(server, "search", {"query": "gnuplot copyright Thomas Williams", "top_k": 1})
    (hit,) = out["hits"]
    assert hit["path"] == "manual.pdf"
    assert hit["extractor"].startswith("pdf/pypdfium2=")
    assert hit["source"]["format"] == "pdf"
    assert all(span["page"] in (1, 2, 3) for span in hit["source"]["spans"])
    fetched = ok(server, "fetch_chunk", {"chunk_id": hit["chunk_id"]})
    assert fetched["status"] == "verified"
    assert fetched["source"] == hit["source"] and fetched["headings"] == hit["headings"]


def test_an_html_hit_names_its_byte_range_and_headings(server: MCPServer) -> None:
    out = ok(server, "search", {"query": "AppArmor profiles", "top_k": 1, "verify": True})
    (hit,) = out["hits"]
    assert hit["path"] == "apparmor.html" and hit["verdict"]["status"] == "verified"
    (span,) = hit["source"]["spans"]
    assert 0 <= span["byte_start"] < span["byte_end"]
    assert hit["headings"]


def test_copies_fold_into_also_in_unless_collapse_is_false(server: MCPServer) -> None:
    folded = ok(server, "search", {"query": "lamp keeper wick", "top_k": 5})["hits"]
    readmes = [h for h in folded if h["path"].endswith("README.md")]
    assert len(readmes) == 1
    assert [d["path"] for d in readmes[0]["also_in"]] == ["b/README.md"]
    every = ok(server, "search", {"query": "lamp keeper wick", "top_k": 5,
                                  "collapse": False})["hits"]
    assert sorted(h["path"] for h in every if h["path"].endswith("README.md")) == [
        "a/README.md", "b/README.md"]


def test_index_status_counts_formats_and_skips(server: MCPServer) -> None:
    status = ok(server, "index_status", {"collection": "k", "check_changes": False})
    assert status["formats"] == {"text": 2, "html": 1, "pdf": 1}
    assert status["skipped_by_reason"] == {"encrypted PDF": 1}
    assert status["skipped"] == [{"path": "locked.pdf",
                                  "reason": "encrypted PDF (password required)"}]
