"""What every benchmark shares, so figures are comparable across scripts.

One definition each of: percentiles (nearest rank), a latency summary, timing (best of
n), memory (current and peak RSS), CPU seconds, machine facts, the result file
(``.bench/<name>.json``) and ratio formatting. Scripts run as ``python bench/<x>.py``
have ``bench/`` on ``sys.path`` and import this as ``common``.
"""

from __future__ import annotations

import json
import math
import os
import platform
import resource
import time
import tracemalloc
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / ".bench"
T = TypeVar("T")


# -- percentiles ----------------------------------------------------------------------

def percentile(values: Iterable[float], pct: float) -> float:
    """The ``pct``-th percentile by nearest rank: the smallest value with at least
    ``pct`` percent of the values at or below it.

    On the sorted values ``v[1..n]`` that is ``v[ceil(pct / 100 * n)]`` (rank clamped to
    ``1..n``), always one of the measured values, never an interpolation. So p50 of
    1,000 values is the 500th smallest and p99 the 990th; p50 of an even count is the
    lower middle value, not the mean of the two middle values.
    """
    ordered = sorted(values)
    if not ordered:
        raise ValueError("percentile of no values")
    if not 0 <= pct <= 100:
        raise ValueError(f"percentile {pct} is outside 0..100")
    rank = math.ceil(pct / 100 * len(ordered))
    return ordered[min(len(ordered), max(1, rank)) - 1]


def latency_summary(ms_values: Iterable[float], digits: int | None = 3) -> dict[str, float]:
    """``p50_ms``, ``p99_ms`` (nearest rank, :func:`percentile`), ``mean_ms`` and ``n``."""
    values = list(ms_values)
    out = {"p50_ms": percentile(values, 50), "p99_ms": percentile(values, 99),
           "mean_ms": math.fsum(values) / len(values)}
    if digits is not None:
        out = {key: round(value, digits) for key, value in out.items()}
    return {**out, "n": len(values)}


# -- timing ---------------------------------------------------------------------------

def samples_ms(fn: Callable[[], object], repeat: int = 1, warmup: int = 0) -> list[float]:
    """Wall time of ``repeat`` calls of ``fn`` in milliseconds, after ``warmup`` untimed."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter_ns()
        fn()
        out.append((time.perf_counter_ns() - start) / 1e6)
    return out


def timed_ms(fn: Callable[[], T], repeat: int = 1) -> tuple[float, T]:
    """The best (smallest) wall time in ms of ``repeat`` calls, and the last call's value.

    The minimum filters out other processes' time slices on a shared machine.
    """
    best = math.inf
    for _ in range(max(1, repeat)):
        start = time.perf_counter_ns()
        value = fn()
        best = min(best, (time.perf_counter_ns() - start) / 1e6)
    return best, value


class Stopwatch:
    """Wall time of a ``with`` block: ``with Stopwatch() as sw: ...``, then ``sw.ms``, ``sw.s``."""

    def __init__(self) -> None:
        self.start_ns = 0
        self.ms = math.nan

    def __enter__(self) -> Stopwatch:
        self.start_ns = time.perf_counter_ns()
        return self

    def __exit__(self, *exc: object) -> None:
        self.ms = (time.perf_counter_ns() - self.start_ns) / 1e6

    @property
    def s(self) -> float:
        return self.ms / 1e3


def timed_cpu_ms(fn: Callable[[], T]) -> tuple[float, float, T]:
    """Wall and this thread's CPU time in ms of one call, and its value. The wall clock is
    read inside the CPU clock, so neither figure carries more than one read of the other."""
    cpu0 = time.thread_time_ns()
    start = time.perf_counter_ns()
    value = fn()
    wall = time.perf_counter_ns() - start
    return wall / 1e6, (time.thread_time_ns() - cpu0) / 1e6, value


def cpu_s() -> float:
    """CPU seconds this process has used so far (user + system, ``getrusage``)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- memory ---------------------------------------------------------------------------

def rss_mib() -> float:
    """This process's resident set size now (``VmRSS`` in /proc/self/status), MiB."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return math.nan


def peak_rss_mib() -> float:
    """This process's peak resident set size (``getrusage`` ``ru_maxrss``, KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def traced_peak_mib(fn: Callable[[], object]) -> float:
    """Peak Python-heap allocation (tracemalloc) while ``fn`` runs, MiB; not RSS."""
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()


def disk_bytes(path: Path) -> int:
    """Size of a file, or of every file under a folder, in bytes."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def dir_mib(path: Path) -> float:
    """:func:`disk_bytes` in MiB."""
    return disk_bytes(path) / 2**20


# -- machine facts --------------------------------------------------------------------

def load_average() -> list[float]:
    """The 1-, 5- and 15-minute load averages, rounded to 2 places as /proc shows them."""
    return [round(x, 2) for x in os.getloadavg()]


def machine(**extra: Any) -> dict[str, Any]:
    """CPU count, platform, Python version and the load average now (``loadavg_before``);
    ``extra`` adds versions of the libraries measured. Call :func:`load_average` again at
    the end for ``loadavg_after``."""
    return {"cpu_count": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), **extra,
            "loadavg_before": load_average()}


# -- results --------------------------------------------------------------------------

def write_result(name: str, result: Mapping[str, Any], out: Path | None = None,
                 sort_keys: bool = False) -> Path:
    """Write ``result`` as JSON to ``out`` (default ``.bench/<name>.json``); returns the path."""
    path = out or BENCH_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2, sort_keys=sort_keys) + "\n", encoding="utf-8")
    return path


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or zero."""
    return numerator / denominator if numerator and denominator else None


def format_ratio(value: float | None, digits: int = 2) -> str:
    """``1.23x``, or ``-`` for a missing ratio."""
    return "-" if value is None else f"{value:.{digits}f}x"
