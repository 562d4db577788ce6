"""The pace of the last embedding run, remembered per model, so the next one can say how
long it should take before it starts (``embedding 12,163 chunks, about 7 min at the last
run's 28.9/s``).

One small JSON file in the home, ``pace.json``: for each embedding model (its identity,
and where the batches ran: here, or spread over a Ray cluster) the chunks per second of the
last run that embedded at least :data:`MIN_ROWS` chunks for at least :data:`MIN_SECONDS`.
It is a hint for a person, never an input to a result: a missing, unreadable or damaged
file means no estimate, and a home that cannot be written is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from ..embeddings.base import EmbeddingIdentity
from ..progress import EMBEDDING, embedding_label

FILE = "pace.json"
MIN_ROWS = 64
"""Runs embedding fewer chunks say too little about the pace to remember."""
MIN_SECONDS = 1.0

Progress = Callable[[int, int, str], None]


def key(identity: EmbeddingIdentity, where: str) -> str:
    """What a pace is remembered under: the model's identity and where it ran."""
    return f"{identity.describe()} on {where}, {os.cpu_count() or 1} cpus"


def remembered(home: Path, name: str) -> float | None:
    """Chunks per second of the last run remembered under ``name``, if any."""
    try:
        pace = json.loads((home / FILE).read_text(encoding="utf-8")).get(name)
    except (OSError, ValueError, AttributeError):
        return None
    return float(pace) if isinstance(pace, int | float) and pace > 0 else None


def remember(home: Path, name: str, pace: float) -> None:
    """Record ``pace`` under ``name`` (atomically; nothing happens where it cannot)."""
    path = home / FILE
    with contextlib.suppress(OSError, ValueError):
        try:
            paces = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            paces = {}
        if not isinstance(paces, dict):
            paces = {}
        paces[name] = round(pace, 3)
        temporary = path.with_name(f".{FILE}.{os.getpid()}")
        temporary.write_text(json.dumps(paces, indent=1, sort_keys=True) + "\n",
                             encoding="utf-8")
        os.replace(temporary, path)


def timed(progress: Progress | None, home: Path, name: str,
          clock: Callable[[], float] = time.monotonic) -> Progress:
    """``progress`` with the embedding phase's estimate added to its start, and the
    phase's own pace remembered when it ends."""
    started: list[float] = []

    def report(done: int, total: int, label: str) -> None:
        if label == EMBEDDING and done == 0:
            started[:] = [clock()]
            label = embedding_label(total, remembered(home, name))
        elif label == EMBEDDING and done >= total and started:
            seconds = clock() - started.pop()
            if total >= MIN_ROWS and seconds >= MIN_SECONDS:
                remember(home, name, total / seconds)
        if progress is not None:
            progress(done, total, label)

    return report
