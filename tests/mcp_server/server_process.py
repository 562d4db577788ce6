"""Stopping a ``grk serve`` subprocess the way a person does."""

from __future__ import annotations

import signal
import subprocess
from typing import IO, Any


def interrupt(proc: subprocess.Popen[Any], *pipes: IO[Any]) -> None:
    """Ctrl-C (SIGINT) and wait; killed if still running after 20 s; ``pipes`` closed."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=20)
    finally:
        proc.kill()
        proc.wait()
        for pipe in pipes:
            pipe.close()
