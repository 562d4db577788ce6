"""Tools on a read-only collection: files and index chmod -R a-w, served by an unprivileged
process; the store falls back to immutable when WAL cannot be opened."""

from __future__ import annotations

import os
import select
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_helpers import N_DOCS, many_docs, write_tree

from groundkit.collection import IndexConfig, index


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A writable collection like the read-only one, to warm imports before the fork."""
    base = tmp_path_factory.mktemp("mcp-ro")
    index("k", IndexConfig(roots=(str(write_tree(base / "docs", many_docs())),)),
          home=base / "home")
    return base / "home"


def _chmod_tree(path: Path, writable: bool) -> None:
    for p in [path, *path.rglob("*")]:
        mode = p.stat().st_mode
        p.chmod(mode | stat.S_IWUSR if writable else mode & ~0o222)


def _tree_state(path: Path) -> dict[str, tuple[int, int, int]]:
    return {str(p.relative_to(path)): (p.stat().st_mode, p.stat().st_size, p.stat().st_mtime_ns)
            for p in [path, *path.rglob("*")]}


@pytest.fixture
def readonly_home() -> Iterator[Path]:
    """A world-readable home and docs, then made read-only (chmod -R a-w)."""
    base = Path(tempfile.mkdtemp(prefix="grk-ro-"))
    base.chmod(0o755)
    try:
        docs = write_tree(base / "docs", many_docs())
        index("k", IndexConfig(roots=(str(docs),)), home=base / "home")
        for p in [base, *base.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
        _chmod_tree(docs, writable=False)
        _chmod_tree(base / "home", writable=False)
        yield base / "home"
    finally:
        _chmod_tree(base, writable=True)
        shutil.rmtree(base)


def _fork_server(home: Path, warm: Path) -> tuple[int, str]:
    """Serve ``home`` over loopback HTTP from a forked child running as nobody (if root).

    Everything the server needs is imported before the fork (the interpreter's
    own files may be unreadable to nobody); the child gets a fresh server whose
    collection pool has opened nothing.
    """
    import uvicorn

    from groundkit.mcp_server.http import HttpGuard, HttpOptions, bind
    from groundkit.mcp_server.server import build_server, http_app

    _run_in_memory(build_server(home=warm))  # import every lazily imported module
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    hosts = HttpOptions().allowed_hosts(port)
    app = HttpGuard(http_app(build_server(home=home), hosts, []), hosts=hosts, origins=[],
                    token=None)
    config = uvicorn.Config(app, log_config=None, access_log=False, log_level="warning",
                            timeout_graceful_shutdown=2)
    config.load()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            if os.geteuid() == 0:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            uvicorn.Server(config).run(sockets=[sock])
        finally:
            os._exit(0)
    sock.close()
    return pid, f"http://127.0.0.1:{port}/mcp"


def _run_in_memory(server: Any) -> None:
    async def main() -> None:
        async with Client(server) as client:
            hit = (await client.call_tool("search", {"query": "logs"})).structured_content
            await client.call_tool("fetch_chunk", {"chunk_id": hit["hits"][0]["chunk_id"]})
            await client.call_tool("list_collections", {})
            await client.call_tool("index_status", {"collection": "k"})

    anyio.run(main)


def _stop(pid: int) -> None:
    os.kill(pid, signal.SIGTERM)
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], 20)[0]:
            os.kill(pid, signal.SIGKILL)
    finally:
        os.close(fd)
        os.waitpid(pid, 0)


def test_tools_work_on_a_read_only_collection_served_by_an_unprivileged_process(
        readonly_home: Path, home: Path) -> None:
    before = _tree_state(readonly_home)
    pid, url = _fork_server(readonly_home, warm=home)
    try:
        async def body(client: Client) -> list[Any]:
            found = await client.call_tool("search", {"query": "word09", "verify": True})
            return [found] + [await client.call_tool(name, args) for name, args in [
                ("fetch_chunk", {"chunk_id": found.structured_content["hits"][0]["chunk_id"]}),
                ("list_collections", {}), ("index_status", {"collection": "k"})]]

        async def main() -> list[Any]:
            async with (httpx2.AsyncClient(timeout=60) as http,
                        Client(streamable_http_client(url, http_client=http)) as client):
                return await body(client)

        results = anyio.run(main)
    finally:
        _stop(pid)
    assert not any(r.is_error for r in results), [r.content for r in results]
    search, fetched, listed, status = (r.structured_content for r in results)
    assert search["hits"][0]["path"] == "doc09.md"
    assert search["hits"][0]["verdict"]["status"] == fetched["status"] == "verified"
    assert listed["collections"][0]["chunks"] == N_DOCS + 1
    assert status["changed_since_indexing"] == {"modified": [], "missing": [], "added": []}
    assert _tree_state(readonly_home) == before  # not a byte, mode or mtime changed


def test_the_read_only_store_falls_back_to_immutable_when_wal_cannot_be_opened(
        readonly_home: Path) -> None:
    """As nobody, ``mode=ro`` cannot open the WAL store; ``connect`` opens it immutable."""
    import sqlite3

    from groundkit import store

    directory = readonly_home / "collections" / "k"
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            if os.geteuid() == 0:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
            try:
                plain = sqlite3.connect(f"file:{directory / store.STORE_FILE}?mode=ro", uri=True)
                plain.execute("SELECT 1 FROM meta").fetchall()
                plain_ok = "yes"
            except sqlite3.OperationalError:
                plain_ok = "no"
            conn = store.connect(directory, readonly=True)
            generation = store.current_generation(conn)
            os.write(w, f"{plain_ok} {generation}".encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as pipe:
        answer = pipe.read().decode()
    os.waitpid(pid, 0)
    assert answer == "no 1"
