"""The MCP server's four tools, driven in memory through the SDK's own client.

Every test talks MCP: ``mcp.Client(server)`` dispatches in-process (the
2026-07-28 per-request path), ``mode="legacy"`` runs the 2025-11-25 initialize
handshake over in-memory streams. Transports are in test_transports.py, the
collection pool (reloads per generation) in test_pool.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import TreeMaker
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_helpers import DOCS, MODES, call, error, ok, session, tool_definitions

from groundkit.collection import Collection, IndexConfig, index
from groundkit.mcp_server import schema as mcp_schema
from groundkit.mcp_server.schema import MAX_TOP_K
from groundkit.mcp_server.server import build_server
from groundkit.model import OFFSET_UNIT

SNAPSHOT = Path(__file__).resolve().parents[1] / "snapshots" / "mcp_tools.json"
SECRET = "TOP-SECRET-OUTSIDE-THE-ROOT"


@pytest.fixture
def root(make_tree: TreeMaker) -> Path:
    return make_tree(DOCS)


@pytest.fixture
def server(root: Path, home: Path) -> MCPServer:
    index("k", IndexConfig(roots=(str(root),)), home=home)
    return build_server(home=home)


def test_the_server_offers_exactly_four_tools_all_annotated_read_only(
        server: MCPServer) -> None:
    tools = {t["name"]: t for t in tool_definitions(server)}
    assert sorted(tools) == ["fetch_chunk", "index_status", "list_collections", "search"]
    for tool in tools.values():
        hints = tool["annotations"]
        assert (hints["readOnlyHint"], hints["destructiveHint"], hints["idempotentHint"],
                hints["openWorldHint"]) == (True, False, True, False)
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["outputSchema"]["type"] == "object"


def test_tool_definitions_match_the_committed_snapshot(server: MCPServer) -> None:
    """Names, descriptions, schemas and annotations are a contract; change them on purpose.

    Regenerate with GROUNDKIT_UPDATE_SNAPSHOTS=1 after a deliberate change.
    """
    current = json.dumps(tool_definitions(server), indent=2, sort_keys=True,
                         ensure_ascii=False) + "\n"
    if os.environ.get("GROUNDKIT_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert current == SNAPSHOT.read_text(encoding="utf-8")


@pytest.mark.parametrize("mode", MODES)
def test_search_hits_are_citations_whose_offsets_slice_the_document(
        server: MCPServer, root: Path, mode: str) -> None:
    out = ok(server, "search", {"query": "how long are deployment logs kept"}, mode)
    assert out["mode"] == "bm25" and out["collections"] == ["k"]
    top = out["hits"][0]
    text = (root / top["path"]).read_text(encoding="utf-8")
    assert top["rank"] == 1 and top["collection"] == "k" and top["chunk_id"].startswith("k:")
    assert top["offset_unit"] == OFFSET_UNIT == "codepoint"
    assert text[top["start"]:top["end"]] == top["text"]
    utf16 = text.encode("utf-16-le")
    assert utf16[2 * top["utf16_start"]:2 * top["utf16_end"]].decode("utf-16-le") == top["text"]
    assert top["utf16_end"] == top["end"] + 1  # the rocket is two UTF-16 code units
    raw = (root / top["path"]).read_bytes()
    assert raw[top["byte_start"]:top["byte_end"]].decode() == top["text"]
    assert (top["start_line"], top["end_line"]) == (1, 3) and top["verdict"] is None


def test_search_agrees_with_the_python_api(server: MCPServer, home: Path) -> None:
    out = ok(server, "search", {"query": "logs worker quota", "top_k": 5})
    with Collection.open("k", home) as coll:
        api = [(h.chunk.chunk_id, h.score) for h in coll.search("logs worker quota", top_k=5)]
    assert [(h["chunk_id"], h["score"]) for h in out["hits"]] == api


def test_every_hit_says_whether_its_file_changed_since_indexing(
        server: MCPServer, root: Path) -> None:
    [hit] = ok(server, "search", {"query": "quota", "top_k": 1})["hits"]
    assert hit["stale"] is False
    path = root / hit["path"]
    path.write_text(path.read_text(encoding="utf-8") + "\nappended\n", encoding="utf-8")
    [hit] = ok(server, "search", {"query": "quota", "top_k": 1, "verify": True})["hits"]
    assert hit["stale"] is True and hit["verdict"]["status"] == "verified"


def test_search_abstains_with_no_hits_when_nothing_matches(server: MCPServer) -> None:
    assert ok(server, "search", {"query": "zebra xylophone"})["hits"] == []
    assert ok(server, "search", {"query": "the of and"})["hits"] == []


def test_search_with_verify_attaches_a_verdict_to_every_hit(server: MCPServer) -> None:
    hits = ok(server, "search", {"query": "logs engineer", "verify": True})["hits"]
    assert len(hits) == 2
    assert all(h["verdict"]["status"] == "verified" for h in hits)


@pytest.mark.parametrize("mode", ["dense", "hybrid"])
def test_a_mode_the_collection_cannot_serve_is_an_error_never_a_silent_bm25_search(
        server: MCPServer, mode: str) -> None:
    message = error(server, "search", {"query": "logs", "mode": mode})
    assert "embedding" in message or mode in message


def test_search_over_several_collections_merges_by_score_and_names_each_collection(
        make_tree: TreeMaker, home: Path) -> None:
    index("a", IndexConfig(roots=(str(make_tree({"x.md": "logs logs logs rotate"})),)),
          home=home)
    index("b", IndexConfig(roots=(str(make_tree({"y.md": "logs once, then more words"})),)),
          home=home)
    out = ok(build_server(home=home), "search", {"query": "logs", "collections": ["b", "a"]})
    assert out["collections"] == ["b", "a"]
    assert [h["collection"] for h in out["hits"]] == ["a", "b"]
    assert [h["rank"] for h in out["hits"]] == [1, 2]
    assert out["hits"][0]["score"] >= out["hits"][1]["score"]


def test_every_retrieved_text_is_labelled_untrusted(server: MCPServer) -> None:
    found = ok(server, "search", {"query": "logs"})
    fetched = ok(server, "fetch_chunk", {"chunk_id": found["hits"][0]["chunk_id"]})
    assert found["content_trust"] == fetched["content_trust"] == "untrusted-document-text"
    descriptions = {t["name"]: t["description"] for t in tool_definitions(server)}
    assert "untrusted" in descriptions["search"] and "untrusted" in descriptions["fetch_chunk"]


def test_the_text_block_repeats_the_structured_json(server: MCPServer) -> None:
    result = call(server, "search", {"query": "logs"})
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]


def test_fetch_chunk_verifies_an_unchanged_citation(server: MCPServer) -> None:
    hit = ok(server, "search", {"query": "E4012"})["hits"][0]
    out = ok(server, "fetch_chunk", {"chunk_id": hit["chunk_id"]})
    assert (out["status"], out["collection"], out["path"]) == ("verified", "k", "notes/codes.txt")
    assert out["current_text"] == out["stored_text"] == hit["text"]
    assert (out["start"], out["end"], out["utf16_start"]) == (hit["start"], hit["end"],
                                                             hit["utf16_start"])


def test_fetch_chunk_reports_a_moved_span_as_drifted_with_relocated_offsets(
        server: MCPServer, root: Path) -> None:
    hit = ok(server, "search", {"query": "ingest worker"})["hits"][0]
    (root / "oncall.md").write_text("Moved down.\n" + DOCS["oncall.md"], encoding="utf-8")
    out = ok(server, "fetch_chunk", {"chunk_id": hit["chunk_id"]})
    assert out["status"] == "drifted" and "relocated" in out["reason"]
    assert (out["relocated_start"], out["relocated_end"]) == (hit["start"] + 12, hit["end"] + 12)


def test_a_file_swapped_for_a_symlink_out_of_the_root_is_unresolvable_and_unread(
        server: MCPServer, root: Path, tmp_path: Path) -> None:
    hit = ok(server, "search", {"query": "E4012"})["hits"][0]
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET + "\n" + DOCS["notes/codes.txt"])
    (root / "notes" / "codes.txt").unlink()
    (root / "notes" / "codes.txt").symlink_to(outside)
    result = call(server, "fetch_chunk", {"chunk_id": hit["chunk_id"]})
    out = result.structured_content
    assert out["status"] == "unresolvable" and "outside" in out["reason"]
    assert out["current_text"] is None and SECRET not in result.model_dump_json()
    (root / "notes").rename(root / "gone")
    (root / "notes").symlink_to(tmp_path)
    assert ok(server, "fetch_chunk", {"chunk_id": hit["chunk_id"]})["status"] == "unresolvable"


@pytest.mark.parametrize("chunk_id", ["k:0123456789abcdef0123", "nope:0123456789abcdef0123"])
def test_fetch_chunk_of_an_unknown_chunk_or_collection_is_unresolvable(
        server: MCPServer, chunk_id: str) -> None:
    out = ok(server, "fetch_chunk", {"chunk_id": chunk_id})
    assert out["status"] == "unresolvable" and out["current_text"] is None


@pytest.mark.parametrize(("tool", "args"), [
    ("fetch_chunk", {"chunk_id": "../../../etc/passwd"}),
    ("fetch_chunk", {"chunk_id": "/etc/passwd"}),
    ("fetch_chunk", {"chunk_id": "k:../../../../etc/passwd"}),
    ("fetch_chunk", {"chunk_id": "..:0123456789abcdef0123"}),
    ("fetch_chunk", {"chunk_id": "k:0123456789abcdef0123\n"}),
    ("search", {"query": "logs", "collections": ["../k"]}),
    ("search", {"query": "logs", "collections": ["/etc"]}),
    ("search", {"query": "logs", "collections": ["k/../../x"]}),
    ("index_status", {"collection": ".."}),
    ("index_status", {"collection": "k/../k"}),
])
def test_traversal_strings_and_absolute_paths_are_rejected_before_any_file_is_opened(
        server: MCPServer, tool: str, args: dict[str, Any]) -> None:
    message = error(server, tool, args)
    assert "invalid argument c" in message and "must be a c" in message
    assert "Traceback" not in message and "\n" not in message


@pytest.mark.parametrize(("tool", "args"), [
    ("search", {"query": "logs", "root": "/etc/passwd"}),
    ("search", {"query": "logs", "topk": 3}),
    ("fetch_chunk", {"chunk_id": "k:0123456789abcdef0123", "root": "/"}),
    ("list_collections", {"home": "/tmp"}),
    ("index_status", {"collection": "k", "verbose": True}),
])
def test_unknown_arguments_are_rejected_not_ignored(
        server: MCPServer, tool: str, args: dict[str, Any]) -> None:
    assert "unknown argument '" in error(server, tool, args)


@pytest.mark.parametrize(("args", "message"), [
    ({"query": "x" * 10_001}, "query: must be a string of 1 to 10000 characters, got a "
                              "string of 10001 characters"),
    ({"query": ""}, "query: must be a string of 1 to 10000 characters, got ''"),
    ({"query": "logs", "top_k": 0}, f"top_k: must be an integer from 1 to {MAX_TOP_K}, got 0"),
    ({"query": "logs", "top_k": MAX_TOP_K + 1}, f"top_k: must be an integer from 1 to "
                                                f"{MAX_TOP_K}, got {MAX_TOP_K + 1}"),
    ({"query": "logs", "collections": ["k"] * 33}, "collections: must be a list of 1 to 32 "
                                                   "collection names"),
    ({"query": "logs", "collections": []}, "got a list of 0 items"),
    ({"query": "logs", "mode": "magic"}, "mode: must be one of bm25, dense, hybrid, got 'magic'"),
    ({"query": ["logs"]}, "query: must be a string of 1 to 10000 characters, got a list of 1 item"),
])
def test_oversize_and_out_of_range_inputs_are_rejected_with_a_clear_message(
        server: MCPServer, args: dict[str, Any], message: str) -> None:
    text = error(server, "search", args)
    assert message in text and "invalid argument" in text and "\n" not in text
    assert "pydantic" not in text and len(text) <= 330


def test_a_10000_character_query_is_accepted(server: MCPServer) -> None:
    assert ok(server, "search", {"query": ("logs " * 2000)[:10_000]})["hits"]


def test_an_unknown_collection_is_an_error_naming_the_served_ones(server: MCPServer) -> None:
    assert "unknown collection 'nope'; served: k" in error(
        server, "search", {"query": "logs", "collections": ["nope"]})
    assert "unknown collection" in error(server, "index_status", {"collection": "nope"})


def test_a_damaged_index_is_an_error_without_traceback_or_path(
        server: MCPServer, home: Path) -> None:
    with Collection.open("k", home) as coll:
        (coll.snapshot.generation_dir / "rowids.npy").write_bytes(b"junk")
    message = error(server, "search", {"query": "logs"})
    assert "damaged" in message and "grk check" in message
    assert str(home) not in message and "/" not in message.replace("grk check", "")


def test_a_result_over_the_size_cap_cuts_the_lowest_ranked_text_and_flags_it(
        server: MCPServer, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    full = ok(server, "search", {"query": "logs engineer ingest worker"})
    cap = len(json.dumps(full, ensure_ascii=False, separators=(",", ":")).encode()) - 30
    monkeypatch.setattr(mcp_schema, "MAX_RESPONSE_BYTES", cap)
    result = call(server, "search", {"query": "logs engineer ingest worker"})
    out = result.structured_content
    assert len(result.content[0].text.encode()) <= cap  # type: ignore[union-attr]
    assert out["truncated"] and [h["text_truncated"] for h in out["hits"]] == [False, True]
    last = out["hits"][-1]
    whole = (root / last["path"]).read_text(encoding="utf-8")[last["start"]:last["end"]]
    assert whole.startswith(last["text"]) and len(last["text"]) < len(whole)


def test_status_lists_are_capped_and_flagged() -> None:
    stats = mcp_schema.RetrieverStats(serving_generation=1, opens=1, bm25_loads=1,
                                      generation_changes=0, last_generation_change_at=None,
                                      server_started_at="now")
    out = mcp_schema.StatusOutput(
        collection="k", generation=1, indexed_at="now", documents=0, chunks=0, roots=[],
        chunker={}, analyzer={}, bm25={}, embedding=None, retriever=stats, skipped_total=5000,
        skipped=[mcp_schema.Skipped(path=f"{i:0200d}", reason="too large") for i in range(5000)],
        changed_since_indexing=mcp_schema.Changes(modified=[], missing=[], added=["a"] * 999),
        truncated=False)
    fitted = mcp_schema.fit_status(out)
    assert fitted.truncated and len(fitted.skipped) <= mcp_schema.MAX_LIST_ITEMS
    assert len(fitted.model_dump_json()) <= mcp_schema.MAX_RESPONSE_BYTES


def test_list_collections_gives_names_roots_and_counts(
        server: MCPServer, root: Path) -> None:
    [info] = ok(server, "list_collections", {})["collections"]
    assert (info["name"], info["roots"], info["documents"], info["chunks"]) == (
        "k", [str(root.resolve())], 3, 3)


def test_index_status_reports_counts_settings_skips_and_changes(
        root: Path, home: Path) -> None:
    (root / "big.md").write_text("x" * 200)
    index("k", IndexConfig(roots=(str(root),), max_bytes=100), home=home)
    server = build_server(home=home)
    (root / "logs.md").write_text("changed", encoding="utf-8")
    (root / "new.md").write_text("new", encoding="utf-8")
    (root / "oncall.md").unlink()
    out = ok(server, "index_status", {"collection": "k"})
    assert (out["documents"], out["chunks"], out["generation"]) == (3, 3, 1)
    assert out["analyzer"]["stemmer"] == "porter" and out["bm25"]["k1"] == 0.9
    assert out["embedding"] is None
    assert out["skipped"] == [{"path": "big.md", "reason": "too large (200 bytes > limit 100)"}]
    assert out["changed_since_indexing"] == {"modified": ["logs.md"], "missing": ["oncall.md"],
                                             "added": ["new.md"]}
    quick = ok(server, "index_status", {"collection": "k", "check_changes": False})
    assert quick["changed_since_indexing"] is None and "directory" not in quick


@pytest.mark.parametrize("mode", MODES)
def test_both_protocol_revisions_negotiate_and_call_every_tool(
        server: MCPServer, mode: str) -> None:
    async def body(client: Client) -> tuple[str, list[bool]]:
        hit = (await client.call_tool("search", {"query": "logs"})).structured_content
        results = [await client.call_tool(name, args) for name, args in [
            ("fetch_chunk", {"chunk_id": hit["hits"][0]["chunk_id"]}),
            ("list_collections", {}), ("index_status", {"collection": "k"})]]
        return client.session.protocol_version, [r.is_error for r in results]

    version, errors = session(server, body, mode)
    assert version == {"legacy": "2025-11-25"}.get(mode, mode) and errors == [False] * 3


def test_search_with_abstain_tells_nothing_found_from_not_looked(
        root: Path, home: Path, tmp_path: Path) -> None:
    from groundkit.collection import calibration

    questions = tmp_path / "q.jsonl"
    no_answer = ["who restarts the mail server", "what does error E9999 mean for printers",
                 "how long are chat logs archived", "which engineer approves holidays",
                 "where is the upload button", "what quota applies to parking",
                 "how are audit reports published", "when does the night shift start",
                 "are deployment freezes announced", "what year is kept in the archive"]
    questions.write_text("".join(json.dumps({"question": q, "kind": "no_answer"}) + "\n"
                                 for q in no_answer))
    index("k", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("k", home) as coll:
        found, sha = calibration.read_questions(questions)
        calibration.save(coll.snapshot.directory,
                         [calibration.compute(coll.snapshot, "bm25", found, sha)])
    server = build_server(home=home)
    refused = ok(server, "search", {"query": "who restarts the mail server", "abstain": True})
    assert refused["abstained"] is True and refused["hits"] == []
    [decision] = refused["decisions"]
    assert decision["collection"] == "k" and decision["p_value"] > decision["alpha"] == 0.1
    assert decision["n0"] == 10 and decision["mode"] == "bm25"
    answered = ok(server, "search", {"query": "what does error E4012 mean", "abstain": True})
    assert answered["abstained"] is False and answered["hits"][0]["path"] == "notes/codes.txt"
    plain = ok(server, "search", {"query": "what does error E4012 mean"})
    assert plain["abstained"] is None and plain["decisions"] is None  # not asked, not looked


def test_abstain_without_a_calibration_is_an_error_naming_the_fix(server: MCPServer) -> None:
    message = error(server, "search", {"query": "logs", "abstain": True})
    assert "no calibration" in message and "grk calibrate" in message


def test_a_hit_from_a_superseded_document_says_so(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"retention.md": "# Retention\n\nDeployment logs are kept for 30 days.\n",
                      "archive/retention-2022.md": "# Retention\n\nDeployment logs: 14 days.\n"})
    index("r", IndexConfig(roots=(str(root),)), home=home)
    out = ok(build_server(home=home), "search", {"query": "deployment logs", "collections": ["r"]})
    assert {h["path"]: h["superseded"] for h in out["hits"]} == {
        "retention.md": None, "archive/retention-2022.md": "in a folder named archive/"}
