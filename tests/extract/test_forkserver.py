"""Extractions forked from a server (groundkit.extract.forkserver, ADR 0018): outcomes as
the sandbox gives them, a crash's signal, shared by threads and forked workers, started
again when it died, and gone when its owner is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from multiprocessing import get_context
from pathlib import Path

import pytest

from groundkit.extract import ExtractError, Limits, extract, forkserver
from groundkit.testing import hostile

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="Linux only")

DEEP = b"<p>" + b"<div>" * 40_000 + b"deep" + b"</div>" * 40_000
"""Seconds of lexbor: a child that is still running when a test wants one."""


def server_children() -> set[int]:
    pid = forkserver._SERVER["pid"]
    return {int(child) for task in Path(f"/proc/{pid}/task").iterdir()
            for child in (task / "children").read_text().split()}


def test_outcomes_are_the_sandboxes() -> None:
    assert extract("html", b"<p>small page</p>").text == "small page"
    with pytest.raises(ExtractError, match=r"^empty file \(0 bytes\): not a PDF$"):
        extract("pdf", b"")
    with pytest.raises(ExtractError, match=r"^extraction timed out after 0\.3 s$"):
        extract("html", DEEP, Limits(timeout_s=0.3))
    with pytest.raises(ExtractError, match=r"^extraction ran out of memory \(limit 64 MiB\)$"):
        extract("html", hostile.quadratic_html(), Limits(memory_bytes=64 << 20))


def test_the_extraction_runs_in_a_child_of_the_server_not_of_this_process() -> None:
    extract("html", b"<p>start it</p>")
    before = server_children()  # that child may still be on its way out
    outcome: list[object] = []
    worker = threading.Thread(target=lambda: outcome.append(_reason(DEEP)))
    worker.start()
    deadline = time.monotonic() + 10
    while not (kids := server_children() - before) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert kids and not kids & set(_my_children())
    os.kill(kids.pop(), signal.SIGSEGV)
    worker.join()
    assert outcome == ["extractor crashed (signal 11)"]


def _reason(data: bytes) -> str:
    try:
        extract("html", data)
    except ExtractError as exc:
        return str(exc)
    return "view"


def _my_children() -> list[int]:
    return [int(child) for task in Path("/proc/self/task").iterdir()
            for child in (task / "children").read_text().split()]


def in_worker() -> tuple[int, str]:
    return forkserver._SERVER.get("pid", 0), extract("html", b"<p>from a worker</p>").text


def test_threads_and_forked_workers_share_the_server() -> None:
    extract("html", b"<p>start it</p>")
    server = forkserver._SERVER["pid"]
    texts: list[str] = []
    threads = [threading.Thread(target=lambda i=i: texts.append(
        extract("html", f"<p>thread {i}</p>".encode()).text)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(texts) == [f"thread {i}" for i in range(4)]
    with get_context("fork").Pool(2) as pool:
        assert pool.starmap(in_worker, [()] * 4) == [(server, "from a worker")] * 4
        pool.close()
        pool.join()
    assert forkserver._SERVER["pid"] == server


def test_a_server_that_died_is_started_again() -> None:
    extract("html", b"<p>start it</p>")
    dead = forkserver._SERVER["pid"]
    os.kill(dead, signal.SIGKILL)
    os.waitpid(dead, 0)
    assert extract("html", b"<p>again</p>").text == "again"
    assert forkserver._SERVER["pid"] != dead


SCRIPT = """
from groundkit.extract import extract, forkserver
assert extract("html", b"<p>x</p>").text == "x"
print(forkserver._SERVER["pid"])
"""


def test_the_server_ends_with_its_owner() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          check=True, timeout=60, cwd=Path(__file__).parents[2])
    pid = int(done.stdout)
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not Path(f"/proc/{pid}").exists()
    assert done.stderr == ""


def test_an_interrupted_caller_kills_its_child(monkeypatch: pytest.MonkeyPatch) -> None:
    extract("html", b"<p>start it</p>")
    real = forkserver._records
    seen: dict[bytes, object] = {}

    def interrupted(buffer: bytearray, got: dict[bytes, object]) -> int:
        taken = real(buffer, got)
        if b"P" in got:
            seen.update(got)
            raise KeyboardInterrupt
        return taken

    monkeypatch.setattr(forkserver, "_records", interrupted)
    with pytest.raises(KeyboardInterrupt):
        extract("html", DEEP)
    deadline = time.monotonic() + 5
    while seen[b"P"] in server_children() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert seen[b"P"] not in server_children()
