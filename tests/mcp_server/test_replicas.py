"""Read-only replicas: two ``grk serve`` processes over one home, one writer under ``grk watch``.

Real processes (two HTTP servers, a watcher), real inotify, real SQLite, the SDK client.
Generations are immutable, so any number of servers can read the published one while one
writer builds the next: after the writer publishes a change both replicas' ``search`` find it
within a bounded wait, every call meanwhile succeeds, each replica's generation only moves
forward and is always a published one, and (gc off) every chunk served belongs to a
published generation, never to one still being built (docs/scale.md, "Serving").
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_moving_index import TOKEN, _client, _edits, _members_of_published_generations, _process

from groundkit.collection import IndexConfig, index
from groundkit.testing.serve_http import http_server

pytest.importorskip("watchdog")

DOCS = 40
"""As many notes as test_moving_index's editor edits."""
WAIT_S = 30.0
"""How long a replica may take to serve what the writer published."""
MARKER = "zephyrine"


def _note(i: int) -> str:
    return (f"# Note {i}\n\nNote {i} about lighthouses, keepers and lamps, marker m{i:02d}.\n") * 3


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[tuple[list[str], Path, Path]]:
    """(two replicas' URLs, docs root, home): one collection, gc off, one ``grk watch``."""
    root, home = tmp_path / "docs", tmp_path / "home"
    root.mkdir()
    for i in range(DOCS):
        (root / f"n{i:02d}.md").write_text(_note(i))
    index("k", IndexConfig(roots=(str(root),), extra={"gc": {"auto": False}}), home=home)
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    with ExitStack() as stack:
        log = stack.enter_context(open(tmp_path / "watch.jsonl", "wb"))
        watcher = stack.enter_context(_process(
            ["watch", "-c", "k", "--json", "--debounce", "0.05"], env, stdout=log))
        urls = [stack.enter_context(http_server(home, TOKEN))[0] for _ in range(2)]
        deadline = time.monotonic() + 60
        while b'"watching"' not in (tmp_path / "watch.jsonl").read_bytes():
            assert watcher.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        yield urls, root, home


async def _search(url: str, query: str, env: dict[str, str]) -> tuple[Any, Any]:
    async with _client(url, env) as client:
        found = await client.call_tool("search", {"query": query, "top_k": 5, "verify": True})
        status = await client.call_tool("index_status", {"collection": "k",
                                                         "check_changes": False})
    assert not found.is_error and not status.is_error
    return found.structured_content, status.structured_content


async def _follow(url: str, env: dict[str, str], until: float) -> list[dict[str, Any]]:
    """One replica asked over one session until ``until``: every search and status."""
    results: list[dict[str, Any]] = []
    async with _client(url, env) as client:
        n = 0
        while time.monotonic() < until:
            n += 1
            found = await client.call_tool("search", {"query": f"keepers m{n % DOCS:02d}",
                                                      "top_k": 5, "verify": True})
            status = await client.call_tool("index_status", {"collection": "k",
                                                             "check_changes": False})
            results.append({"search_error": found.is_error, "status_error": status.is_error,
                            "search": found.structured_content,
                            "status": status.structured_content})
    return results


def _published(home: Path) -> set[int]:
    conn = sqlite3.connect(f"file:{home / 'collections' / 'k' / 'store.sqlite3'}?mode=ro",
                           uri=True)
    try:
        return {g for (g,) in conn.execute(
            "SELECT id FROM generations WHERE state IN ('published', 'retired')")}
    finally:
        conn.close()


def test_two_replicas_follow_one_writer_and_serve_only_published_generations(
    replicas: tuple[list[str], Path, Path],
) -> None:
    urls, root, home = replicas
    env = {**os.environ}
    for url in urls:  # nothing knows the marker yet
        found, _ = anyio.run(_search, url, MARKER, env)
        assert found["hits"] == []
    stop, done = threading.Event(), []
    editor = threading.Thread(target=_edits, args=(root, stop, done))  # atomic saves, 40 ms
    editor.start()
    followed: list[list[dict[str, Any]]] = [[], []]
    try:
        until = time.monotonic() + 4.0
        threads = [threading.Thread(target=lambda i=i: followed[i].extend(
            anyio.run(_follow, urls[i], env, until))) for i in range(2)]
        for t in threads:
            t.start()
        tmp = root / ".new.md.swp"
        tmp.write_text(f"# New\n\nThe {MARKER} lantern was lit by the writer.\n")
        os.replace(tmp, root / "new.md")  # the writer publishes it; both replicas must see it
        for t in threads:
            t.join()
    finally:
        stop.set()
        editor.join()
    seen_at = {}
    started = time.monotonic()
    for url in urls:
        while True:
            found, status = anyio.run(_search, url, MARKER, env)
            if any(h["path"] == "new.md" for h in found["hits"]):
                seen_at[url] = time.monotonic() - started
                break
            assert time.monotonic() - started < WAIT_S, f"{url} never served new.md"
            time.sleep(0.2)
        assert status["retriever"]["serving_generation"] in _published(home)
    published = _published(home)
    for results in followed:
        assert len(results) >= 5
        assert not any(r["search_error"] or r["status_error"] for r in results)
        verdicts = {h["verdict"]["status"] for r in results for h in r["search"]["hits"]}
        assert verdicts and verdicts <= {"verified", "drifted"}
        generations = [r["status"]["retriever"]["serving_generation"] for r in results]
        assert generations == sorted(generations) and set(generations) <= published
        _members_of_published_generations(home, results)
    assert len(set(done)) >= 20 and len(published) >= 3


def sync(source: Path, replica: Path) -> None:
    """The copy step of docs/scale.md ("Serving", copied generations): the new generations'
    folders first (immutable: copied whole, never changed after), then the store through
    SQLite's online backup into the replica's live store (a reader sees the old store or
    the new one, never a mix), so the store never names a folder the replica lacks."""
    src, dst = source / "collections" / "k", replica / "collections" / "k"
    dst.mkdir(parents=True, exist_ok=True)
    for folder in sorted(src.glob("gen-*")):
        if not (dst / folder.name).exists():
            shutil.copytree(folder, dst / f".{folder.name}.copying")
            os.replace(dst / f".{folder.name}.copying", dst / folder.name)
    with sqlite3.connect(src / "store.sqlite3") as a, sqlite3.connect(dst / "store.sqlite3") as b:
        a.backup(b)
    a.close()
    b.close()


def test_a_replica_with_its_own_copy_serves_each_generation_once_it_is_synced(
    tmp_path: Path,
) -> None:
    root, writer, replica = tmp_path / "docs", tmp_path / "writer", tmp_path / "replica"
    root.mkdir()
    for i in range(DOCS):
        (root / f"n{i:02d}.md").write_text(_note(i))
    config = IndexConfig(roots=(str(root),))
    index("k", config, home=writer)
    sync(writer, replica)
    env = {**os.environ}
    with http_server(replica, TOKEN) as (url, _):
        found, status = anyio.run(_search, url, MARKER, env)
        assert found["hits"] == [] and status["retriever"]["serving_generation"] == 1
        (root / "new.md").write_text(f"# New\n\nThe {MARKER} lantern was lit by the writer.\n")
        index("k", config, home=writer)  # the writer publishes generation 2 in its own home
        found, _ = anyio.run(_search, url, MARKER, env)
        assert found["hits"] == []  # not synced yet: the replica serves generation 1
        sync(writer, replica)
        started = time.monotonic()
        while True:
            found, status = anyio.run(_search, url, MARKER, env)
            if found["hits"]:
                break
            assert time.monotonic() - started < WAIT_S, "the replica never served the copy"
            time.sleep(0.2)
        assert [h["path"] for h in found["hits"]][:1] == ["new.md"]
        assert {h["verdict"]["status"] for h in found["hits"]} == {"verified"}
        assert status["retriever"]["serving_generation"] == 2
        assert status["retriever"]["generation_changes"] == 1
