"""``grk serve`` (HTTP, and stdio) answering continuously while ``grk watch`` re-indexes
under a scripted stream of edits: real processes, real inotify, real SQLite.

Every call must succeed; every hit must verify or honestly drift (edits are atomic
saves, so no file is ever missing or half-written); the generation served only moves
forward and the server notices each move; with gc off every returned chunk is a member
of a generation that was published, never of one still being built.
"""

from __future__ import annotations

import json
import os
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from groundkit.collection import IndexConfig, index
from groundkit.testing.serve_http import http_server

pytest.importorskip("watchdog")

REPO = Path(__file__).resolve().parents[2]
TOKEN = "moving-index-token-0123456789"
DOCS = 40
SECONDS = 6.0


def _doc(i: int, version: int) -> str:
    return (f"# Note {i}\n\nRevision {version} of note {i}: the shared topic of lighthouses, "
            f"with marker m{i:02d}v{version} and words about keepers and lamps.\n") * 3


@pytest.fixture
def served(tmp_path: Path,
           request: pytest.FixtureRequest) -> Iterator[tuple[str | None, Path, dict[str, str]]]:
    """(url, docs root, environment): a watcher over one collection and, for HTTP, a server
    (over stdio the client starts its own)."""
    transport, gc = request.param
    root, home = tmp_path / "docs", tmp_path / "home"
    root.mkdir()
    for i in range(DOCS):
        (root / f"n{i:02d}.md").write_text(_doc(i, 0))
    extra = {} if gc else {"gc": {"auto": False}}
    index("k", IndexConfig(roots=(str(root),), extra=extra), home=home)
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    deadline = time.monotonic() + 60
    with _process(["watch", "-c", "k", "--json", "--debounce", "0.05"], env,
                  stdout=subprocess.PIPE) as watcher:
        assert watcher.stdout
        lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in watcher.stdout],  # type: ignore
                         daemon=True).start()
        while b'"watching"' not in lines.get(timeout=max(0.1, deadline - time.monotonic())):
            pass
        if transport == "stdio":
            yield None, root, env
            return
        with http_server(home, TOKEN) as (url, _):
            yield url, root, env


@contextmanager
def _process(argv: list[str], env: dict[str, str],
             **pipes: Any) -> Iterator[subprocess.Popen[bytes]]:
    """``grk ARGV`` as a child process, stopped with SIGTERM (then killed) at the end."""
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", *argv], cwd=REPO, env=env,
                            stdin=subprocess.DEVNULL, **{"stdout": subprocess.DEVNULL,
                                                         "stderr": subprocess.DEVNULL, **pipes})
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        finally:
            proc.kill()
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream:
                    stream.close()


def _edits(root: Path, stop: threading.Event, done: list[int]) -> None:
    """Atomic saves (write a temporary file, rename it over the note), every 40 ms."""
    rng = random.Random(20261201)
    version = 0
    while not stop.is_set():
        version += 1
        i = rng.randrange(DOCS)
        tmp = root / f".n{i:02d}.md.swp"
        tmp.write_text(_doc(i, version))
        os.replace(tmp, root / f"n{i:02d}.md")
        done.append(version)
        stop.wait(0.04)


@asynccontextmanager
async def _client(url: str | None, env: dict[str, str]) -> AsyncIterator[Client]:
    """An SDK client over HTTP to ``url``, or over stdio to a ``grk serve`` it starts."""
    if url is None:
        params = StdioServerParameters(command=sys.executable, args=["-m", "groundkit", "serve"],
                                       cwd=REPO, env=env)
        with open(os.devnull, "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                yield client
        return
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (httpx2.AsyncClient(headers=headers, timeout=60) as http,
                Client(streamable_http_client(url, http_client=http)) as client):
        yield client


async def _calls(url: str | None, env: dict[str, str], seconds: float) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    async with _client(url, env) as client:
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
            query = f"lighthouse keepers m{n % DOCS:02d}"
            found = await client.call_tool("search", {"query": query, "top_k": 5, "verify": True})
            status = await client.call_tool("index_status",
                                            {"collection": "k", "check_changes": False})
            results.append({"search_error": found.is_error, "status_error": status.is_error,
                            "search": found.structured_content,
                            "status": status.structured_content})
    return results


@pytest.mark.parametrize("served", [("http", True), ("http", False), ("stdio", True)],
                         ids=["http-gc-on", "http-gc-off", "stdio-gc-on"], indirect=True)
def test_the_server_answers_continuously_while_a_watcher_publishes_generations(
        served: tuple[str | None, Path, dict[str, str]]) -> None:
    url, root, env = served
    home = Path(env["GROUNDKIT_HOME"])
    stop, done = threading.Event(), []
    editor = threading.Thread(target=_edits, args=(root, stop, done))
    editor.start()
    try:
        results = anyio.run(_calls, url, env, SECONDS)
    finally:
        stop.set()
        editor.join()
    assert len(results) >= 20 and len(done) >= 50
    assert not any(r["search_error"] or r["status_error"] for r in results), [
        r for r in results if r["search_error"] or r["status_error"]][:2]
    verdicts = [h["verdict"]["status"] for r in results for h in r["search"]["hits"]]
    assert verdicts and set(verdicts) <= {"verified", "drifted"}
    served_generations = [r["status"]["retriever"]["serving_generation"] for r in results]
    assert served_generations == sorted(served_generations)  # only forward
    assert len(set(served_generations)) >= 3
    last = results[-1]["status"]["retriever"]
    assert last["generation_changes"] >= len(set(served_generations)) - 1
    _members_of_published_generations(home, results)


def _members_of_published_generations(home: Path, results: list[dict[str, Any]]) -> None:
    """With gc off every chunk row survives: each hit's chunk must belong to a generation
    that was published (never one still building)."""
    conn = sqlite3.connect(home / "collections" / "k" / "store.sqlite3")
    try:
        config = json.loads(conn.execute(
            "SELECT config FROM generations ORDER BY id DESC LIMIT 1").fetchone()[0])
        if config.get("gc", {}).get("auto", True):
            return
        for r in results:
            for hit in r["search"]["hits"]:
                states = {s for (s,) in conn.execute(
                    "SELECT gen.state FROM chunks c JOIN generation_chunks g "
                    "ON g.chunk_rowid = c.rowid JOIN generations gen ON gen.id = g.generation "
                    "WHERE c.chunk_id = ?", (hit["chunk_id"],))}
                assert states & {"published", "retired"}, (hit["chunk_id"], states)
    finally:
        conn.close()
