"""``grk serve --transport http`` as a child process, for tests, benchmarks and the harness.

It listens on a free loopback port with a bearer token taken from an environment
variable; :func:`http_server` yields its URL (read from the line the server prints on
stderr) and the process id, and stops the server with SIGINT (then kills it) at the end.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from ..errors import GroundkitError

TOKEN_ENV = "GROUNDKIT_SERVE_TOKEN"


@contextmanager
def http_server(home: Path, token: str, *, collections: Sequence[str] = (),
                startup_s: float = 120) -> Iterator[tuple[str, int]]:
    """``(url, pid)`` of a running ``grk serve --transport http`` over ``home``."""
    served = [arg for name in collections for arg in ("--collection", name)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundkit", "serve", "--home", str(home), *served,
         "--transport", "http", "--port", "0", "--token-env", TOKEN_ENV],
        env={**os.environ, TOKEN_ENV: token}, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    try:
        deadline, line = time.monotonic() + startup_s, ""
        while " at http://" not in line:
            ready, _, _ = select.select([proc.stderr], [], [], max(0, deadline - time.monotonic()))
            line = proc.stderr.readline().decode() if ready else ""
            if not line:
                raise GroundkitError("grk serve --transport http did not start")
        yield line.split(" at ")[1].split()[0], proc.pid
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        finally:
            proc.kill()
            proc.wait()
            proc.stderr.close()
