"""The attack corpus: hostile inputs to the MCP tools and the HTTP transport, one table.

Every row of :data:`CASES` is one hostile input with its expected outcome. Tool
rows go through the SDK's client to ``build_server`` in memory; HTTP rows are raw
requests (httpx or a bare socket) to a real ``grk serve --transport http``.
Whatever the row expects, every response must also pass ``generic``
(attack_cases.py): no traceback, no pydantic text or URL, no path of the test's
folders, no text of the SECRET file outside the root; and an error message is one
line of at most 300 characters. docs/security.md states the count and the table
by category (checked at the end).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from attack_cases import (
    INJECTION,
    SECRET,
    Case,
    Ctx,
    constant_time,
    generic,
    hits,
    hits_inside,
    http,
    no_host,
    own_origin,
    protocol_error,
    repeated,
    script,
    still_serving,
    swap_file,
    swap_parent,
    tool_error,
    tool_ok,
    unresolvable,
    vanish_before_reply,
    vanish_mid_body,
    vanish_stream,
    verified_injection,
)
from attack_helpers import ORIGIN, TOKEN, http_server, tool_call
from mcp_helpers import DOCS, call
from mcp_types import INVALID_PARAMS, METHOD_NOT_FOUND

from groundkit.collection import Collection, IndexConfig, index
from groundkit.mcp_server.server import build_server

REPO = Path(__file__).resolve().parents[2]

def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def ctx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ctx]:
    base = tmp_path_factory.mktemp("attacks")
    outside = base / "outside"
    outside.mkdir()
    (outside / "SECRET.txt").write_text(f"{SECRET}\n{DOCS['notes/codes.txt']}", encoding="utf-8")
    home = base / "home"
    docs = {**DOCS, "inject.md": f"# Release notes\n\nThe archive moved.\n\n{INJECTION}\n"}
    root = _tree(base / "k", docs)
    (root / "secret-link.txt").symlink_to(outside / "SECRET.txt")  # skipped at indexing
    index("k", IndexConfig(roots=(str(root),)), home=home)
    index("other", IndexConfig(roots=(str(_tree(base / "o", {"o.md": "other logs"})),)),
          home=home)
    for name in ("swap", "swapdir"):
        index(name, IndexConfig(roots=(str(_tree(base / name, DOCS)),)), home=home)
    with Collection.open("k", home) as k, Collection.open("other", home) as other:
        k_id = k.search("quota", top_k=1)[0].chunk.chunk_id
        other_id = other.search("logs", top_k=1)[0].chunk.chunk_id
    with http_server(home, base / "serve.log") as http:
        yield Ctx(base=base, home=home, server=build_server(home=home, collections=["k"]),
                  k_id=k_id, other_id=other_id, http=http)
    # Tracebacks while serving are checked by the last case; at SIGINT uvicorn logs the
    # cancelled tasks of sessions the attackers abandoned (a known limitation).
    assert SECRET not in (base / "serve.log").read_text(errors="replace")


# ---- the corpus ----------------------------------------------------------------------

TRAVERSAL, ABSOLUTE, IDS = "path traversal", "absolute paths and URLs", "chunk ids"
CONTROL, SIZE, TOP_K = "NUL and control characters", "sizes", "top_k"
CONFUSABLE, TYPES = "unicode confusables", "wrong types and unknown arguments"
DOCUMENTS, HOST = "hostile documents and symlinks", "HTTP Host and Origin"
UNDECLARED = "undeclared capabilities (prompts, resources)"
TOKENS, PROTOCOL, VANISHED = "HTTP bearer token", "HTTP protocol and bodies", "vanished clients"
BAD_ID, BAD_NAME = "invalid argument chunk_id", "invalid argument collection"
HEX = "0123456789abcdef0123"
TOO_BIG = 300_000


def _big_chunked() -> Iterator[bytes]:
    prefix = json.dumps(tool_call("search", {"query": ""}))[:-4].encode()
    yield prefix
    for _ in range(TOO_BIG // 65_536 + 1):
        yield b"x" * 65_536
    yield b'"}}}'


CASES: list[Case] = [
    tool_error("dotdot", TRAVERSAL, "fetch_chunk", {"chunk_id": "../../../etc/passwd"}, BAD_ID),
    tool_error("dotdot-encoded", TRAVERSAL, "fetch_chunk",
               {"chunk_id": "..%2f..%2f..%2fetc%2fpasswd"}, BAD_ID),
    tool_error("dot-encoded", TRAVERSAL, "fetch_chunk", {"chunk_id": "%2e%2e/%2e%2e/etc/passwd"},
               BAD_ID),
    tool_error("double-encoded", TRAVERSAL, "fetch_chunk",
               {"chunk_id": "%252e%252e%252fetc%252fpasswd"}, BAD_ID),
    tool_error("backslashes", TRAVERSAL, "fetch_chunk", {"chunk_id": "..\\..\\windows\\win.ini"},
               BAD_ID),
    tool_error("id-with-traversal", TRAVERSAL, "fetch_chunk",
               {"chunk_id": "k:../../../../etc/passwd"}, BAD_ID),
    tool_error("collection-dotdot", TRAVERSAL, "index_status", {"collection": ".."}, BAD_NAME),
    tool_error("collection-encoded", TRAVERSAL, "index_status", {"collection": "%2e%2e"},
               BAD_NAME),
    tool_error("collections-dotdot", TRAVERSAL, "search",
               {"query": "logs", "collections": ["../k"]}, "invalid argument collections[0]"),
    tool_error("collections-nested", TRAVERSAL, "search",
               {"query": "logs", "collections": ["k", "k/../../etc"]},
               "invalid argument collections[1]"),
    tool_error("etc-passwd", ABSOLUTE, "fetch_chunk", {"chunk_id": "/etc/passwd"}, BAD_ID),
    tool_error("file-url", ABSOLUTE, "fetch_chunk", {"chunk_id": "file:///etc/passwd"}, BAD_ID),
    tool_error("windows-path", ABSOLUTE, "fetch_chunk", {"chunk_id": "C:\\Windows\\win.ini"},
               BAD_ID),
    tool_error("collection-absolute", ABSOLUTE, "index_status", {"collection": "/etc"}, BAD_NAME),
    tool_error("collections-absolute", ABSOLUTE, "search",
               {"query": "logs", "collections": ["/home"]}, "invalid argument collections[0]"),
    tool_ok("other-collection", IDS, "fetch_chunk", lambda c: {"chunk_id": c.other_id},
            "unresolvable: not served here", unresolvable("not served here")),
    tool_ok("other-key-in-k", IDS, "fetch_chunk",
            lambda c: {"chunk_id": "k:" + c.other_id.split(":")[1]},
            "unresolvable: unknown chunk", unresolvable("")),
    tool_ok("unknown-collection-id", IDS, "fetch_chunk", {"chunk_id": f"nope:{HEX}"},
            "unresolvable: not served here", unresolvable("not served here")),
    tool_error("uppercase-hex", IDS, "fetch_chunk", {"chunk_id": f"k:{HEX.upper()}"}, BAD_ID),
    tool_error("short-key", IDS, "fetch_chunk", {"chunk_id": "k:0123"}, BAD_ID),
    tool_error("no-colon", IDS, "fetch_chunk", {"chunk_id": f"k{HEX}"}, BAD_ID),
    tool_error("two-colons", IDS, "fetch_chunk", {"chunk_id": f"k:k:{HEX}"}, BAD_ID),
    tool_error("status-unserved", IDS, "index_status", {"collection": "other"},
               "unknown collection 'other'; served: k"),
    tool_error("search-unserved", IDS, "search", {"query": "logs", "collections": ["other"]},
               "unknown collection 'other'; served: k"),
    tool_ok("query-nul", CONTROL, "search", {"query": "quota\x00/etc/passwd"},
            "searched as text; hits only from the root", hits_inside),
    tool_ok("query-escapes", CONTROL, "search", {"query": "\x1b[2J\x07\r\nquota\u202e"},
            "searched as text; hits only from the root", hits_inside),
    tool_error("id-nul", CONTROL, "fetch_chunk", {"chunk_id": f"k:{HEX}\x00"}, BAD_ID),
    tool_error("id-newline", CONTROL, "fetch_chunk", {"chunk_id": f"k:{HEX}\n"}, BAD_ID),
    tool_error("collection-nul", CONTROL, "index_status", {"collection": "k\x00"}, "'k\\x00'"),
    tool_error("collections-crlf", CONTROL, "search",
               {"query": "logs", "collections": ["k\r\nX-Injected: 1"]},
               "invalid argument collections[0]"),
    tool_error("query-over-max", SIZE, "search", {"query": "x" * 10_001},
               "got a string of 10001 characters"),
    tool_error("query-megabyte", SIZE, "search", {"query": "logs " * 200_000},
               "got a string of 1000000 characters"),
    tool_error("query-empty", SIZE, "search", {"query": ""}, "invalid argument query"),
    tool_error("collections-33", SIZE, "search", {"query": "logs", "collections": ["k"] * 33},
               "got a list of 33 items"),
    tool_error("top-k-1000", TOP_K, "search", {"query": "logs", "top_k": 1000},
               "invalid argument top_k: must be an integer from 1 to 50, got 1000"),
    tool_error("top-k-huge", TOP_K, "search", {"query": "logs", "top_k": 10 ** 30},
               "got an integer of about"),
    tool_error("top-k-negative", TOP_K, "search", {"query": "logs", "top_k": -1}, "got -1"),
    tool_error("top-k-zero", TOP_K, "search", {"query": "logs", "top_k": 0}, "got 0"),
    tool_error("top-k-fraction", TOP_K, "search", {"query": "logs", "top_k": 2.5}, "got 2.5"),
    tool_error("top-k-true", TOP_K, "search", {"query": "logs", "top_k": True}, "got true"),
    tool_error("top-k-word", TOP_K, "search", {"query": "logs", "top_k": "ten"}, "got 'ten'"),
    tool_error("top-k-null", TOP_K, "search", {"query": "logs", "top_k": None}, "got null"),
    tool_ok("top-k-string", TOP_K, "search", {"query": "logs", "top_k": "1"},
            "accepted as 1 (clients that send strings)",
            lambda out, c: hits(out, c, count=1)),
    tool_error("cyrillic-k", CONFUSABLE, "index_status", {"collection": "\u043a"}, "'\\u043a'"),
    tool_error("cyrillic-a", CONFUSABLE, "search",
               {"query": "logs", "collections": ["k\u0430"]}, "'k\\u0430'"),
    tool_error("full-width", CONFUSABLE, "index_status", {"collection": "\uff4b"}, "'\\uff4b'"),
    tool_error("rtl-override", CONFUSABLE, "index_status", {"collection": "\u202ek"},
               "'\\u202ek'"),
    tool_error("zero-width-joiner", CONFUSABLE, "index_status", {"collection": "k\u200d"},
               "'k\\u200d'"),
    tool_error("query-number", TYPES, "search", {"query": 123}, "invalid argument query"),
    tool_error("query-list", TYPES, "search", {"query": ["logs"]}, "got a list of 1 item"),
    tool_error("collections-string", TYPES, "search", {"query": "logs", "collections": "k"},
               "invalid argument collections: must be a list"),
    tool_error("verify-word", TYPES, "search", {"query": "logs", "verify": "yes"},
               "invalid argument verify: must be true or false, got 'yes'"),
    tool_error("verify-one", TYPES, "search", {"query": "logs", "verify": 1}, "got 1"),
    tool_error("mode-case", TYPES, "search", {"query": "logs", "mode": "BM25"},
               "must be one of bm25, dense, hybrid"),
    tool_error("chunk-id-object", TYPES, "fetch_chunk", {"chunk_id": {"$ref": "/etc/passwd"}},
               "got an object"),
    tool_error("unknown-path-arg", TYPES, "search", {"query": "logs", "root": "/etc/passwd"},
               "unknown argument 'root'; valid arguments: query, collections, top_k, mode"),
    tool_error("path-filter-string", TYPES, "search", {"query": "logs", "path": "/etc/passwd"},
               "invalid argument path: is not valid, got a string"),
    tool_error("unknown-arg-newline", TYPES, "search", {"query": "logs", "a\nb": 1},
               "unknown argument 'a\\nb'"),
    tool_error("list-home-arg", TYPES, "list_collections", {"home": "/"},
               "valid arguments: none"),
    tool_error("missing-query", TYPES, "search", {}, "missing argument query (required)"),
    protocol_error("unknown-tool", TYPES, lambda c: c.call_tool("../../bin/sh", {}),
                   INVALID_PARAMS, "unknown tool '../../bin/sh'"),
    protocol_error("unknown-tool-long", TYPES, lambda c: c.call_tool("x\n" * 5000, {}),
                   INVALID_PARAMS, "unknown tool 'x\\nx\\n"),
    protocol_error("prompt-get", UNDECLARED, lambda c: c.get_prompt("search"),
                   METHOD_NOT_FOUND, "Method not found"),
    protocol_error("prompt-list", UNDECLARED, lambda c: c.list_prompts(), METHOD_NOT_FOUND,
                   "Method not found"),
    protocol_error("resource-read-passwd", UNDECLARED,
                   lambda c: c.read_resource("file:///etc/passwd"), METHOD_NOT_FOUND,
                   "Method not found"),
    protocol_error("resource-list", UNDECLARED, lambda c: c.list_resources(), METHOD_NOT_FOUND,
                   "Method not found"),
    protocol_error("resource-templates", UNDECLARED, lambda c: c.list_resource_templates(),
                   METHOD_NOT_FOUND, "Method not found"),
    tool_ok("injection-search", DOCUMENTS, "search", {"query": "ignore previous instructions"},
            "hits with content_trust untrusted; text returned verbatim, not acted on",
            lambda out, c: hits(out, c, text=INJECTION)),
    tool_ok("injection-fetch", DOCUMENTS, "fetch_chunk",
            lambda c: {"chunk_id": call(c.server, "search", {"query": "ignore instructions"})
                       .structured_content["hits"][0]["chunk_id"]},
            "verified; text verbatim, labelled untrusted",
            verified_injection),
    tool_ok("symlink-at-index", DOCUMENTS, "search", {"query": "TOP-SECRET outside root"},
            "no hit from the symlinked file outside the root", hits_inside),
    script("symlink-swap-file", DOCUMENTS, "fetch after a swap: unresolvable, file not read")(
        swap_file),
    script("symlink-swap-dir", DOCUMENTS, "parent swapped for a symlink: unresolvable")(
        swap_parent),
    http("host-evil", HOST, 421, headers={"host": "evil.example"}),
    http("host-other-port", HOST, 421, headers={"host": "localhost:1"}),
    http("host-suffix", HOST, 421, headers={"host": "127.0.0.1.evil.example"}),
    script("host-missing-1.0", HOST, "HTTP 421")(no_host("HTTP/1.0", 421)),
    script("host-missing-1.1", HOST, "HTTP 400")(no_host("HTTP/1.1", 400)),
    script("host-repeated", HOST, "HTTP 400")(repeated("Host", ("evil.example",
                                                                "127.0.0.1:{port}"))),
    http("origin-evil", HOST, 403, headers={"origin": "http://evil.example"}),
    http("origin-null", HOST, 403, headers={"origin": "null"}),
    http("origin-other-port", HOST, 403, headers={"origin": "http://localhost:6275"}),
    http("origin-allowed", HOST, 200, headers={"origin": ORIGIN}),
    http("origin-and-host-evil", HOST, 403,
         headers={"origin": "http://evil.example", "host": "evil.example"}),
    http("origin-allowed-host-evil", HOST, 421, headers={"origin": ORIGIN, "host": "evil.example"}),
    script("origin-own-unlisted", HOST, "HTTP 403")(own_origin),
    http("token-missing", TOKENS, 401, headers={"authorization": None}),
    http("token-wrong", TOKENS, 401, headers={"authorization": "Bearer " + "y" * len(TOKEN)}),
    http("token-short", TOKENS, 401, headers={"authorization": "Bearer x"}),
    http("token-prefix", TOKENS, 401, headers={"authorization": f"Bearer {TOKEN[:-1]}"}),
    http("token-extended", TOKENS, 401, headers={"authorization": f"Bearer {TOKEN}0"}),
    http("token-basic", TOKENS, 401, headers={"authorization": f"Basic {TOKEN}"}),
    http("token-in-query", TOKENS, 401, headers={"authorization": None}, query=f"?token={TOKEN}"),
    script("token-repeated", TOKENS, "HTTP 400")(repeated("Authorization", (
        "Bearer wrong-token-0123456789", f"Bearer {TOKEN}"))),
    script("token-timing", TOKENS, "compare_digest; every wrong token: same 401 and body")(
        constant_time),
    http("method-put", PROTOCOL, 405, method="PUT"),
    http("content-type", PROTOCOL, 400, headers={"content-type": "text/plain"}),
    http("body-over-limit", PROTOCOL, 413,
         body=tool_call("search", {"query": "x" * TOO_BIG})),
    http("body-chunked-over-limit", PROTOCOL, 413, body=_big_chunked),
    http("nested-10000", PROTOCOL, 400, body=b"[" * 10_000 + b"]" * 10_000,
         contains="Parse error"),
    http("nested-arguments", PROTOCOL, 400, body=json.dumps(tool_call("search", {}))
         .replace("{}", '{"query": ' + "[" * 5000 + "]" * 5000 + "}").encode(),
         contains="Parse error"),
    http("not-json", PROTOCOL, 400, body=b"{not json", contains="Parse error"),
    http("batch", PROTOCOL, 400, body=[tool_call("list_collections", {}, 1),
                                       tool_call("list_collections", {}, 2)],
         contains="batches are not supported"),
    http("method-not-found", PROTOCOL, 200, body={"jsonrpc": "2.0", "id": 3, "method": "x/y"},
         contains="Method not found"),
    http("prompt-over-http", PROTOCOL, 200, body={"jsonrpc": "2.0", "id": 4, "method":
         "prompts/get", "params": {"name": "search"}}, contains='"code":-32601'),
    http("unknown-tool-over-http", PROTOCOL, 200, body=tool_call("nope", {}),
         contains='"code":-32602'),
    http("arguments-not-object", PROTOCOL, 200, body=tool_call("search", "logs"),
         contains="Invalid request parameters"),
    http("tool-error-over-http", PROTOCOL, 200,
         body=tool_call("search", {"query": "logs", "top_k": 1000}),
         contains="invalid argument top_k: must be an integer from 1 to 50, got 1000"),
    http("session-traversal", PROTOCOL, 404, headers={"mcp-session-id": "../../etc/passwd"},
         body=tool_call("list_collections", {}), contains="Session not found"),
    http("url-traversal", PROTOCOL, 404, query="/..%2f..%2fetc%2fpasswd"),
    script("vanish-mid-body", VANISHED, "next request answered normally")(vanish_mid_body),
    script("vanish-before-reply", VANISHED, "next request answered normally")(
        vanish_before_reply),
    script("vanish-stream", VANISHED, "next request answered normally")(vanish_stream),
    script("still-serving", VANISHED, "server answers; no traceback in its log")(still_serving),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_attack(case: Case, ctx: Ctx) -> None:
    for text in case.run(ctx):
        generic(text, ctx)


def test_the_corpus_is_counted_in_the_security_docs() -> None:
    assert len({c.id for c in CASES}) == len(CASES) >= 50
    doc = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    assert f"the attack corpus: {len(CASES)} hostile inputs" in doc
    for category, count in Counter(c.category for c in CASES).items():
        assert f"| {category} | {count} |" in doc, category
