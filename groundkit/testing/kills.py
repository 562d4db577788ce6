"""A kill campaign: ``grk index`` killed with SIGKILL at random moments, then checked.

Each round rewrites a seeded share of a tree's files, starts ``grk index`` as a
subprocess and kills it after a random delay, drawn between 0 and the measured length
of an undisturbed re-index (interpreter start included), so kills land in every
phase: start-up, discovery, chunking, the SQLite writes, the derived indexes, the
publish. After every kill the collection must open
at a published generation, pass ``Collection.check`` and answer a search whose hits
all verify or honestly drift; the next round's run must then succeed where the killed
one left off. Used by ``tests/collection/test_kills.py`` (a short campaign) and
``bench/bench_kills.py`` (200 kills).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..collection import Collection
from ..model import Status


@dataclass
class Campaign:
    kills: int = 0
    finished_before_kill: int = 0
    problems: list[str] = field(default_factory=list)
    generations: list[int] = field(default_factory=list)
    run_s: float = 0.0
    """How long an undisturbed run took (the range of kill delays)."""


def write_tree(root: Path, files: int, round_: int, share: float, rng: random.Random) -> None:
    for i in range(files):
        path = root / f"d{i % 10}" / f"f{i:04d}.md"
        if round_ == 0 or rng.random() < share:  # round -1: the undisturbed re-index
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"# Note {i}\n\nRound {round_} of note {i}: topic{i % 17} "
                            f"marker r{round_}n{i}.\n" * (3 + i % 7), encoding="utf-8")


def _index(root: Path, home: Path, name: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "GROUNDKIT_HOME": str(home)}
    return subprocess.Popen([sys.executable, "-m", "groundkit", "index", str(root),
                             "--collection", name], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def check(home: Path, name: str) -> list[str]:
    """What is wrong with the collection now (empty when it opens, checks and verifies)."""
    try:
        with Collection.open(name, home) as coll:
            problems = coll.check()
            hits = coll.search("note topic3 marker", top_k=10, verify=True)
            if not hits:
                problems.append("a search found nothing")
            problems += [f"hit {h.chunk.chunk_id}: {h.verdict}" for h in hits
                         if h.verdict is None or h.verdict.status is Status.UNRESOLVABLE]
            return problems
    except Exception as exc:  # noqa: BLE001 - any failure to open is the finding
        return [f"cannot open: {exc!r}"]


def campaign(root: Path, home: Path, *, kills: int, files: int = 400, share: float = 0.3,
             seed: int = 20261201, name: str = "killed") -> Campaign:
    """Rounds of edit, index, SIGKILL, check until ``kills`` runs were killed mid-way."""
    rng = random.Random(seed)
    result = Campaign()
    write_tree(root, files, 0, share, rng)
    if _index(root, home, name).wait() != 0:
        raise RuntimeError("the first index run failed")
    write_tree(root, files, -1, share, rng)  # an undisturbed re-index sets the delay range
    started = time.perf_counter()
    if _index(root, home, name).wait() != 0:
        raise RuntimeError("the undisturbed re-index failed")
    result.run_s = time.perf_counter() - started
    round_ = 0
    while result.kills < kills and round_ < 3 * kills:  # a run may finish before its kill
        round_ += 1
        write_tree(root, files, round_, share, rng)
        proc = _index(root, home, name)
        time.sleep(rng.uniform(0, result.run_s))
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            result.kills += 1
        else:
            result.finished_before_kill += 1
        proc.wait()
        result.problems += [f"round {round_}: {p}" for p in check(home, name)]
        with Collection.open(name, home) as coll:
            result.generations.append(coll.generation)
    final = _index(root, home, name).wait()
    if final != 0:
        result.problems.append(f"the run after the campaign exited {final}")
    result.problems += [f"after the campaign: {p}" for p in check(home, name)]
    return result
