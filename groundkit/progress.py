"""A progress bar on stderr, drawn only when stderr is a terminal."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class ProgressBar:
    """``with ProgressBar("indexing") as bar: ... bar.update(done, total, label)``."""

    def __init__(self, title: str, stream: TextIO | None = None, interval: float = 0.1) -> None:
        self.title = title
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self.interval = interval
        self._last = 0.0
        self._drawn = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()

    def update(self, done: int, total: int, label: str = "") -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._last < self.interval:
            return
        self._last = now
        width = 30
        filled = width * done // total if total else width
        label = label if len(label) <= 40 else "…" + label[-39:]
        self.stream.write(
            f"\r{self.title} [{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<40}"
        )
        self.stream.flush()
        self._drawn = True
