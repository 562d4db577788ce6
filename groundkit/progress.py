"""Progress on stderr, terminal or not: a bar on a terminal, plain log lines elsewhere.

A long run is never silent. On a terminal a bar is redrawn in place with the count, the
rate and the time left. Elsewhere (a pipe, a log file, ``make``) a plain line is written
when a phase starts (``embedding 12,163 chunks``), every ``log_every`` seconds while it
runs (``embedding: 1,536/12,163 chunks (13%), 24.1/s, about 7 min left``; for embedding,
also right after the first batch, the first estimate) and, after such a line, when it
ends; a phase with nothing to do says nothing.

A run has phases: the files being read (the bar's title, e.g. ``indexing``), then the
chunks being embedded (reported with the label ``embedding``). A phase's rate and time
left are measured from its own start. Where the pace of an earlier run is known, the
embedding phase's first line already says how long it should take
(``embedding 12,163 chunks, about 7 min at the last run's 28.9/s``; see
:func:`embedding_label`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

EMBEDDING = "embedding"
"""The label the embedding phase reports with (:mod:`groundkit.retrieval.vectors`)."""
LOG_EVERY = 10.0
"""Seconds between two plain log lines of one phase."""
_ESTIMATED = f"{EMBEDDING}, about "


def embedding_label(total: int, pace: float | None) -> str:
    """The label that starts the embedding phase: ``embedding``, or with an estimate from
    ``pace`` (chunks per second of an earlier run) ``embedding, about 7 min at the last
    run's 28.9/s``, which the bar adds to its first line."""
    if pace is None or pace <= 0 or total <= 0:
        return EMBEDDING
    return f"{_ESTIMATED}{duration(total / pace)} at the last run's {pace:.1f}/s"


def duration(seconds: float) -> str:
    """``45 s``, ``7 min``, ``2 h 05 min``: how long, as a person reads it."""
    if seconds < 90:
        return f"{max(seconds, 0):.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60:02d} min"


class ProgressBar:
    """``with ProgressBar("indexing") as bar: ... bar.update(done, total, label)``."""

    def __init__(self, title: str, stream: TextIO | None = None, interval: float = 0.1, *,
                 log_every: float = LOG_EVERY, unit: str = "files",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.title = title
        self.unit = unit  # what the title's phase counts; the embedding phase counts chunks
        self.stream = stream if stream is not None else sys.stderr
        self.tty = self.stream.isatty()
        self.interval = interval
        self.log_every = log_every
        self.clock = clock
        self._phase: str | None = None
        self._started = 0.0
        self._last = 0.0
        self._drawn = False
        self._finished = False
        self._logged = False

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        self._end_line()

    def update(self, done: int, total: int, label: str = "") -> None:
        if total <= 0:
            return
        now = self.clock()
        embedding = label == EMBEDDING or label.startswith(_ESTIMATED)  # not a file's name
        phase = EMBEDDING if embedding else self.title
        if phase != self._phase:
            self._start(phase, total, now, label[len(EMBEDDING):] if phase == EMBEDDING else "")
        elif done >= total and self._finished:
            return
        ended = done >= total
        first = phase == EMBEDDING and done > 0 and not self._logged  # the first estimate
        if now - self._last < (self.interval if self.tty else self.log_every) and not (
                ended or first):
            return
        self._last = now
        if self.tty:
            self._draw(done, total, "" if phase == EMBEDDING else label, now)
        elif done and (first or not ended or self._logged):
            self.stream.write(self._line(done, total, now) + "\n")
            self.stream.flush()
            self._logged = True
        self._finished = ended

    def _start(self, phase: str, total: int, now: float, estimate: str) -> None:
        self._end_line()
        self._phase, self._started, self._last = phase, now, now
        self._finished = self._logged = False
        unit = "chunks" if phase == EMBEDDING else self.unit
        self.stream.write(f"{phase} {total:,} {unit}{estimate}\n")
        self.stream.flush()

    def _rate(self, done: int, now: float) -> float | None:
        elapsed = now - self._started
        return done / elapsed if done and elapsed > 0 else None

    def _line(self, done: int, total: int, now: float) -> str:
        """``embedding: 1,536/12,163 chunks (13%), 24.1/s, about 7 min left``."""
        unit = "chunks" if self._phase == EMBEDDING else self.unit
        share = f" ({100 * done // total}%)" if total else ""
        line = f"{self._phase}: {done:,}/{total:,} {unit}{share}"
        rate = self._rate(done, now)
        if rate is not None:
            line += f", {rate:.1f}/s"
            line += (f", about {duration((total - done) / rate)} left" if done < total
                     else f", done in {duration(now - self._started)}")
        return line

    def _draw(self, done: int, total: int, label: str, now: float) -> None:
        width = 30
        filled = width * done // total if total else width
        rate = self._rate(done, now)
        pace = (f" {rate:.1f}/s, {duration((total - done) / rate)} left"
                if rate is not None and done < total else "")
        label = label if len(label) <= 40 else "…" + label[-39:]
        self.stream.write(f"\r{self._phase} [{'#' * filled}{'.' * (width - filled)}] "
                          f"{done}/{total}{pace} {label:<40}")
        self.stream.flush()
        self._drawn = True

    def _end_line(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
