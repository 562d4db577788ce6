"""Running groundkit's faces in a child process and measuring what each one cost.

:func:`measured` runs a command to its end (killed at its timeout) and reads, with
``wait4``, the peak resident set of the child and of every process it waited for
(Linux reports the largest of them), so a sandboxed extraction's child counts as much
as the face itself. :data:`MCP_FETCH` is the MCP face: a real server built in the
child and ``fetch_chunk`` called through an in-memory client session.

The face is started by a small launcher (:data:`LAUNCH`), never forked from the test
process itself: Linux carries a process's peak RSS across ``fork`` and ``execve``, so a
face forked from a pytest process that earlier tests grew to 1.4 GiB would report that
peak as its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

RSS_LIMIT_MIB = 512
"""Issue 45's target: no groundkit process past 512 MiB on an input of at most 10 MiB."""

LAUNCH = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    report.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs ``argv[2:]`` and writes its peak RSS (KiB) to ``argv[1]``; exits with its code."""

MCP_FETCH = """
import sys
from groundkit.mcp_server.server import build_server
from mcp_helpers import call
result = call(build_server(), "fetch_chunk", {"chunk_id": sys.argv[1]})
print(result.structured_content or result.content[0].text)
"""


@dataclass(frozen=True, slots=True)
class Outcome:
    code: int
    out: str
    err: str
    rss_mib: float
    wall_s: float


def measured(argv: list[str], home: Path, timeout_s: float = 120.0) -> Outcome:
    """``argv`` run with ``GROUNDKIT_HOME=home``: exit code, output, peak RSS, wall time."""
    env = {**os.environ, "GROUNDKIT_HOME": str(home),
           "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1] / "mcp_server"),
                                          os.environ.get("PYTHONPATH", "")])}
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, \
            tempfile.TemporaryDirectory() as scratch:
        peak = Path(scratch) / "maxrss"
        start = time.monotonic()
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(peak), *argv],
                                stdout=out, stderr=err, env=env, start_new_session=True)
        timer = threading.Timer(timeout_s, lambda: os.killpg(proc.pid, 9))
        timer.start()
        try:
            code = proc.wait()
        finally:
            timer.cancel()
        wall = time.monotonic() - start
        out.seek(0)
        err.seek(0)
        rss = int(peak.read_text()) / 1024 if peak.is_file() else float("inf")
        return Outcome(code, out.read().decode(errors="replace"),
                       err.read().decode(errors="replace"), rss, wall)


def grk(*args: str) -> list[str]:
    """The ``grk`` command line for ``args``."""
    return [sys.executable, "-m", "groundkit", *args]


def mcp_fetch(chunk_id: str) -> list[str]:
    """A child that serves MCP and makes one ``fetch_chunk`` call."""
    return [sys.executable, "-c", MCP_FETCH, chunk_id]
