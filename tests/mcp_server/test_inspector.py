"""An independent client: the MCP Inspector's CLI (Node) lists and calls the four tools.

Skipped unless the Inspector is installed: point ``GROUNDKIT_INSPECTOR_DIR`` at a
folder where ``npm install @modelcontextprotocol/inspector`` ran (or install it
globally). ``GROUNDKIT_REQUIRE_INSPECTOR=1`` turns the skip into a failure, for CI.
See docs/mcp-clients.md for the same commands by hand.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_process import indexed_home, interrupt

REPO = Path(__file__).resolve().parents[2]
DOCS = {"logs.md": "# Logs\n\nDeployment logs are kept for 30 days.\n",
        "oncall.md": "The on-call engineer restarts the ingest worker.\n"}


def _inspector_dir() -> Path | None:
    configured = os.environ.get("GROUNDKIT_INSPECTOR_DIR")
    if configured and (Path(configured) / "node_modules" / ".bin" / "mcp-inspector").exists():
        return Path(configured)
    if shutil.which("mcp-inspector"):
        return Path.cwd()
    return None


@pytest.fixture(scope="module")
def inspector() -> Path:
    where = _inspector_dir()
    if where is None or shutil.which("npx") is None:
        message = "the MCP Inspector is not installed (set GROUNDKIT_INSPECTOR_DIR)"
        if os.environ.get("GROUNDKIT_REQUIRE_INSPECTOR") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return where


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return indexed_home(tmp_path_factory.mktemp("inspector"), DOCS)


def _inspect(where: Path, *target_and_method: str) -> dict[str, Any]:
    done = subprocess.run(
        ["npx", "--no-install", "@modelcontextprotocol/inspector", "--cli", *target_and_method],
        cwd=where, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _grk_serve(home: Path) -> list[str]:
    return [sys.executable, "-m", "groundkit", "serve", "--home", str(home)]


def test_the_inspector_lists_the_four_tools_and_calls_each_over_stdio(
        inspector: Path, home: Path) -> None:
    server = _grk_serve(home)
    tools = _inspect(inspector, *server, "--method", "tools/list")["tools"]
    assert sorted(t["name"] for t in tools) == ["fetch_chunk", "index_status",
                                                 "list_collections", "search"]
    assert all(t["annotations"]["readOnlyHint"] for t in tools)

    def call(tool: str, *args: str) -> dict[str, Any]:
        argv = [a for arg in args for a in ("--tool-arg", arg)]
        out = _inspect(inspector, *server, "--method", "tools/call", "--tool-name", tool, *argv)
        assert out["isError"] is False, out
        return dict(out["structuredContent"])

    hit = call("search", "query=deployment logs", "top_k=3", "verify=true")["hits"][0]
    assert hit["path"] == "logs.md" and hit["verdict"]["status"] == "verified"
    assert call("fetch_chunk", f"chunk_id={hit['chunk_id']}")["status"] == "verified"
    assert call("list_collections")["collections"][0]["documents"] == 2
    assert call("index_status", "collection=k")["chunks"] == 2
    bad = _inspect(inspector, *server, "--method", "tools/call", "--tool-name", "search",
                   "--tool-arg", "query=logs", "--tool-arg", "bogus=1")
    assert bad["isError"] is True and "unknown argument 'bogus'" in json.dumps(bad)


@pytest.fixture
def http_server(home: Path) -> Iterator[str]:
    proc = subprocess.Popen([*_grk_serve(home), "--transport", "http", "--port", "0"],
                            cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr
    try:
        deadline = time.monotonic() + 60
        line = ""
        while " at http://" not in line:  # the first line announcing the URL
            ready = select.select([proc.stderr], [], [], max(0.0, deadline - time.monotonic()))
            assert ready[0], "grk serve did not start"
            line = proc.stderr.readline()
            assert line, "grk serve exited"
        yield line.split(" at ")[1].split()[0]
    finally:
        interrupt(proc, proc.stderr)


def test_the_inspector_calls_the_tools_over_streamable_http(
        inspector: Path, http_server: str) -> None:
    tools = _inspect(inspector, http_server, "--method", "tools/list")["tools"]
    assert len(tools) == 4
    out = _inspect(inspector, http_server, "--method", "tools/call", "--tool-name", "search",
                   "--tool-arg", "query=ingest worker")
    assert out["structuredContent"]["hits"][0]["path"] == "oncall.md"
