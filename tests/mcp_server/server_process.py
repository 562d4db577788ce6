"""A home for ``grk serve`` subprocesses to serve, and stopping one the way a person does."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from groundkit.collection import IndexConfig, index


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


def indexed_home(base: Path, docs: Mapping[str, str]) -> Path:
    """``docs`` written under ``base/docs`` and indexed as collection ``k`` in ``base/home``."""
    (base / "docs").mkdir()
    for name, text in docs.items():
        (base / "docs" / name).write_text(text, encoding="utf-8")
    index("k", IndexConfig(roots=(str(base / "docs"),)), home=base / "home")
    return base / "home"
