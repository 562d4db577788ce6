"""Serving a citation's page: ``grk open``'s one-shot server and ``grk serve``'s /view route,
each a real process, asked over real loopback HTTP."""

from __future__ import annotations

import http.client
import json
import os
import select
import shlex
import signal
import subprocess
import sys
import threading
import time
import webbrowser
from collections.abc import Iterator
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

import pytest
from conftest import REPO

from groundkit.collection import Collection, IndexConfig, index
from groundkit.viewer.links import view_key, view_path

TEXT = "# Retention\n\nDeployment logs are kept for 30 days.\n"
TOKEN = "t" * 32


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("viewer")
    (base / "docs").mkdir()
    (base / "docs" / "notes.md").write_text(TEXT, encoding="utf-8")
    index("docs", IndexConfig(roots=(str(base / "docs"),)), home=base / "home")
    return base / "home"


def chunk_id(home: Path) -> str:
    with Collection.open("docs", home) as coll:
        return coll.chunks()[0].chunk_id


def readline(stream: IO[bytes], deadline: float) -> str:
    ready, _, _ = select.select([stream], [], [], max(0.0, deadline - time.monotonic()))
    assert ready, "timed out waiting for the process"
    return stream.readline().decode()


def get(url: str, *, host: str | None = None, method: str = "GET",
        headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
    try:
        conn.putrequest(method, parts.path + ("?" + parts.query if parts.query else ""),
                        skip_host=True)
        conn.putheader("Host", host or parts.netloc)
        for name, value in (headers or {}).items():
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return (response.status, {k.lower(): v for k, v in response.getheaders()},
                response.read().decode())
    finally:
        conn.close()


def grk_open(home: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "groundkit", "open", "--home", str(home),
                             *args], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def test_grk_open_serves_the_page_once_to_its_own_url_and_refuses_the_rest(home):
    ident = chunk_id(home)
    proc = grk_open(home, ident, "--print", "--timeout", "60")
    assert proc.stdout and proc.stderr
    try:
        url = readline(proc.stdout, time.monotonic() + 60).strip()
        parts = urlsplit(url)
        assert parts.hostname == "127.0.0.1" and parts.fragment == "quote"
        page_url = url.split("#")[0]
        assert get(page_url.replace("key=", "key=x"))[0] == 404
        assert get(page_url, host=f"evil.test:{parts.port}")[0] == 421
        assert get(page_url, headers={"Origin": "http://evil.test"})[0] == 403
        assert proc.poll() is None  # refusals do not end it

        status, headers, page = get(page_url)

        assert status == 200 and "default-src 'none'" in headers["content-security-policy"]
        assert '<mark class="hl" id="quote">' in page and "verified" in page
        assert proc.wait(timeout=30) == 0  # served once, then gone
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()


def test_grk_open_checks_the_id_before_it_listens_and_stops_at_its_timeout(home):
    missing = subprocess.run([sys.executable, "-m", "groundkit", "open", "--home", str(home),
                              "docs:" + "0" * 20, "--print"], cwd=REPO, capture_output=True,
                             text=True, timeout=60, check=False)
    assert missing.returncode == 3 and missing.stdout == ""
    quote = subprocess.run([sys.executable, "-m", "groundkit", "open", "--home", str(home),
                            chunk_id(home), "--start", "0", "--end", "10000", "--print"],
                           cwd=REPO, capture_output=True, text=True, timeout=60, check=False)
    assert quote.returncode == 2 and "inside the chunk" in quote.stderr

    waited = subprocess.run([sys.executable, "-m", "groundkit", "open", "--home", str(home),
                             chunk_id(home), "--print", "--timeout", "0.5"], cwd=REPO,
                            capture_output=True, text=True, timeout=60, check=False)
    assert waited.returncode == 1 and "nobody opened the page" in waited.stderr
    assert waited.stdout.startswith("http://127.0.0.1:")


@pytest.fixture(scope="module")
def served(home: Path) -> Iterator[str]:
    env = {**os.environ, "GRK_VIEW_TOKEN": TOKEN}
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", "serve", "--home", str(home),
                             "--transport", "http", "--port", "0", "--token-env",
                             "GRK_VIEW_TOKEN", "-c", "docs"], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert proc.stdout and proc.stderr
    try:
        deadline, line = time.monotonic() + 60, ""
        while "streamable HTTP at http://127.0.0.1:" not in line:
            line = readline(proc.stderr, deadline)
            assert line, "grk serve exited"
        yield line.split(" at ")[1].split()[0].removesuffix("/mcp")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def test_the_view_route_wants_the_token_or_the_pages_key(served, home):
    ident = chunk_id(home)
    bare = served + view_path(ident, None)
    keyed = served + view_path(ident, view_key(TOKEN, ident))

    assert get(bare)[0] == 401
    assert get(served + view_path(ident, view_key("u" * 32, ident)))[0] == 401
    assert get(served + view_path(ident, view_key(TOKEN, "docs:" + "1" * 20)))[0] == 401
    status, headers, page = get(keyed)
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert "default-src 'none'" in headers["content-security-policy"]
    assert '<mark class="hl" id="quote">' in page
    assert get(bare, headers={"Authorization": f"Bearer {TOKEN}"})[0] == 200


def test_the_view_route_keeps_the_mcp_host_and_origin_rules(served, home):
    ident = chunk_id(home)
    keyed = served + view_path(ident, view_key(TOKEN, ident))
    port = urlsplit(served).port

    assert get(keyed, host=f"attacker.test:{port}")[0] == 421
    assert get(keyed, headers={"Origin": "http://attacker.test"})[0] == 403
    assert get(keyed, method="POST")[0] == 405
    assert get(keyed + "&start=5")[0] == 400


def test_the_view_route_resolves_ids_only_in_the_served_collections(served):
    other = "other:" + "2" * 20
    status, _, page = get(served + view_path(other, view_key(TOKEN, other)))
    assert status == 200 and "not served here" in page and 'class="hl"' not in page


def test_grk_open_hands_the_url_to_the_default_browser(home, monkeypatch, capsys):
    from groundkit.cli import main

    readers: list[threading.Thread] = []
    pages: list[tuple[int, dict[str, str], str]] = []

    def default_browser(url: str) -> bool:
        reader = threading.Thread(target=lambda: pages.append(get(url.split("#")[0])))
        reader.start()
        readers.append(reader)
        return True

    monkeypatch.setattr(webbrowser, "open", default_browser)
    assert main(["open", "--home", str(home), chunk_id(home)]) == 0
    readers[0].join(timeout=30)
    assert pages[0][0] == 200 and capsys.readouterr().out == ""

    monkeypatch.setattr(webbrowser, "open", lambda url: False)  # no browser here
    assert main(["open", "--home", str(home), chunk_id(home), "--timeout", "0.5"]) == 1
    assert capsys.readouterr().out.startswith("http://127.0.0.1:")


def _mcp(served: str, method: str, params: dict[str, object]) -> dict[str, object]:
    """One MCP request to ``grk serve`` over streamable HTTP (a 2025-11-25 session)."""
    import httpx

    headers = {"authorization": f"Bearer {TOKEN}", "content-type": "application/json",
               "accept": "application/json, text/event-stream"}
    init = httpx.post(served + "/mcp", timeout=30, headers=headers, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "viewer-test", "version": "0"}}})
    assert init.status_code == 200, init.text
    headers |= {"mcp-session-id": init.headers["mcp-session-id"],
                "mcp-protocol-version": "2025-11-25"}
    httpx.post(served + "/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
               headers=headers, timeout=30)
    reply = httpx.post(served + "/mcp", headers=headers, timeout=60, json={
        "jsonrpc": "2.0", "id": 2, "method": method, "params": params})
    assert reply.status_code == 200, reply.text
    result: dict[str, object] = reply.json()["result"]
    return result


def test_mcp_hits_and_fetched_chunks_over_http_link_to_their_page_on_this_server(
        served, home):
    found = _mcp(served, "tools/call", {"name": "search", "arguments": {"query": "logs"}})
    hit = found["structuredContent"]["hits"][0]  # type: ignore[index]
    fetched = _mcp(served, "tools/call", {"name": "fetch_chunk",
                                          "arguments": {"chunk_id": hit["chunk_id"]}})
    links = [hit["view_url"], fetched["structuredContent"]["view_url"]]  # type: ignore[index]

    assert links[0] == links[1] == served + view_path(
        hit["chunk_id"], view_key(TOKEN, hit["chunk_id"])) + "#quote"
    assert [c["type"] for c in found["content"]] == ["text"]  # type: ignore[attr-defined]
    status, _, page = get(links[0].split("#")[0])
    assert status == 200 and '<mark class="hl" id="quote">' in page and "verified" in page
    assert str(home) not in json.dumps(found) + json.dumps(fetched)


def test_mcp_results_over_stdio_have_no_view_url(home):
    import anyio
    from mcp import Client

    from groundkit.mcp_server.server import build_server

    async def search() -> dict[str, object]:
        async with Client(build_server(home=home)) as client:
            result = await client.call_tool("search", {"query": "logs"})
            return result.structured_content or {}

    hits = anyio.run(search)["hits"]
    assert hits and all(h["view_url"] is None for h in hits)  # type: ignore[union-attr]


def _grk(home: Path, *args: str, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "groundkit", *args, "--home", str(home)],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, **(env or {})})


def test_search_and_ask_give_a_view_command_that_opens_the_cited_page(home):
    found = json.loads(_grk(home, "search", "logs kept", "-c", "docs", "--json").stdout)
    asked = json.loads(_grk(home, "ask", "how long are deployment logs kept", "-c", "docs",
                            "--json").stdout)
    hit, cited = found["hits"][0], asked["sentences"][0]["citations"][0]

    assert hit["view_url"] is None and cited["view_url"] is None  # no server named
    assert hit["view_command"] == f"grk open {hit['chunk_id']} --home {home}"
    assert cited["view_command"] == (f"grk open {cited['chunk_id']} --start {cited['start']} "
                                     f"--end {cited['end']} --home {home}")
    argv = shlex.split(cited["view_command"])
    assert argv[:2] == ["grk", "open"]
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", *argv[1:], "--print",
                             "--timeout", "60"], cwd=REPO, stdout=subprocess.PIPE)
    assert proc.stdout
    try:
        url = readline(proc.stdout, time.monotonic() + 60).strip()
        status, _, page = get(url.split("#")[0])
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    assert status == 200 and '<mark class="hl" id="quote">' in page
    assert f'<mark class="hl" id="quote">{cited["text"]}</mark>' in page

    human = _grk(home, "search", "logs kept", "-c", "docs").stdout.splitlines()
    assert human[-1] == f"     view: {hit['view_command']}"


def test_search_and_ask_link_to_the_server_their_environment_names(served, home):
    env = {"GROUNDKIT_VIEW_SERVER": served, "GROUNDKIT_VIEW_TOKEN": TOKEN}
    found = json.loads(_grk(home, "search", "logs kept", "-c", "docs", "--json",
                            env=env).stdout)
    asked = _grk(home, "ask", "how long are deployment logs kept", "-c", "docs", env=env)
    ident = found["hits"][0]["chunk_id"]

    assert found["hits"][0]["view_url"] == served + view_path(
        ident, view_key(TOKEN, ident)) + "#quote"
    url = asked.stdout.splitlines()[-1].removeprefix("      view: ")
    assert url.startswith(served + "/view/") and "&start=" in url
    status, _, page = get(url.split("#")[0])
    assert status == 200 and '<mark class="hl" id="quote">' in page

    for bad in ("http://192.0.2.1:8765", "https://127.0.0.1:8765", "http://127.0.0.1",
                "http://127.0.0.1:8765/mcp", "file:///tmp"):
        refused = _grk(home, "search", "logs", "-c", "docs",
                       env={"GROUNDKIT_VIEW_SERVER": bad})
        assert refused.returncode == 2 and "GROUNDKIT_VIEW_SERVER" in refused.stderr, bad
    short = _grk(home, "search", "logs", "-c", "docs", env={**env, "GROUNDKIT_VIEW_TOKEN": "x"})
    assert short.returncode == 2 and "GROUNDKIT_VIEW_TOKEN" in short.stderr
