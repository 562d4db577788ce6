"""Running a native-code extractor in a disposable child process.

Every extractor parses untrusted bytes, mostly in native code (PDFium, lexbor, expat): a
malformed or hostile file may make it loop, allocate without bound, take quadratic time
(3,000 unclosed ``<b>`` in a 56 KB page make lexbor build 9M elements) or crash.
:func:`run_isolated` therefore runs every extraction (ADR 0018) in a disposable child:
on Linux one forked from the fork server (:mod:`groundkit.extract.forkserver`: a small
process, so the child's size does not grow with the caller's, and a caller with threads
is never forked), elsewhere one forked from the caller by :func:`isolate`. Either way
the child has the extractors already imported, it works inside worker processes (where
``multiprocessing`` forbids daemonic children), and everything it does dies with it.

:func:`isolate` is the primitive, for any callable (the fork server's children keep
the same limits and report the same reasons):

* **time**: the parent waits at most ``timeout_s`` wall-clock seconds for the result,
  then kills the child (``SIGKILL``) and raises ``extraction timed out after N s``;
* **memory**: the child caps its address space (``RLIMIT_AS``) at its size at the fork
  plus ``memory_bytes``, so what the parent had already mapped does not count; a
  ``MemoryError``, or any failure with the address space's peak at the cap (lexbor
  reports a failed allocation as a parse error), becomes ``extraction ran out of memory
  (limit N MiB)`` (native code that aborts on a failed allocation, as PDFium does, is a
  crash);
* **crashes**: a child killed by a signal is ``extractor crashed (signal N)``;
* **errors**: an :class:`ExtractError` raised in the child is raised again in the
  parent with its reason; any other exception is ``extractor failed: Type: reason``.

The result comes back pickled over a pipe and is unpickled with only builtin scalars
and containers and the types of :mod:`groundkit.extract.base` allowed, so a child
subverted by a hostile file cannot make the parent construct anything else. The child
resets ``SIGINT``/``SIGTERM`` to their defaults, turns off ``faulthandler`` (a crash is
one line, not a traceback), freezes the objects it inherited (the parent's cyclic
garbage is never finalised in the child) and leaves with ``os._exit``: no ``atexit``
handlers, no flush of buffers it inherited. The parent always reaps the child and closes both ends
of the pipe, whether it returns, raises or is interrupted.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import io
import os
import pickle
import resource
import selectors
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from .base import ExtractError, Heading, Limits, Segment, TextView

T = TypeVar("T")

_ALLOWED: dict[tuple[str, str], Any] = {
    (cls.__module__, cls.__qualname__): cls for cls in (TextView, Segment, Heading)
}
"""The classes a result may contain besides builtin containers and scalars."""
_CHUNK = 1 << 20
_NEAR_LIMIT = 8 << 20
"""A failure with the address space's peak this close to its cap ran out of memory: lexbor
reports a failed allocation as a parse error (\"unparsable HTML\"), not as ``MemoryError``."""


def run_isolated(name: str, data: bytes, limits: Limits) -> TextView:
    """Format ``name``'s extractor run on ``data`` in a child of this process within
    ``limits`` (where there is no fork server). The extractor's library is imported
    here first: every child shares it, and what it maps does not count against a
    child's memory limit."""
    from . import extractor

    found = extractor(name)
    importlib.import_module(found.library)
    return isolate(lambda: found.extract(data, limits), timeout_s=limits.timeout_s,
                   memory_bytes=limits.memory_bytes)


def isolate(work: Callable[[], T], *, timeout_s: float, memory_bytes: int) -> T:
    """``work()`` run in a forked child with a wall-clock and an address-space limit.

    Returns what ``work`` returns (a pickled copy); raises :class:`ExtractError` with a
    one-line reason when it raises, runs out of time or memory, or crashes.
    """
    read_end, write_end = os.pipe()
    try:
        with warnings.catch_warnings():
            # lancedb, when loaded, warns at every fork that its runtime was reset in the
            # child: this child never calls it, and one that hangs dies at the time limit
            warnings.filterwarnings("ignore", message="lancedb fork support is experimental")
            pid = os.fork()
    except OSError as exc:
        os.close(read_end)
        os.close(write_end)
        raise ExtractError(f"extractor could not start: {exc.strerror}") from None
    if pid == 0:
        os.close(read_end)
        _child(work, write_end, memory_bytes)
    os.close(write_end)
    payload: bytes | None = None
    try:
        payload = _read_until(read_end, time.monotonic() + timeout_s)
    finally:  # reap the child whatever happened here: past the deadline, interrupted
        os.close(read_end)
        if payload is None:
            os.kill(pid, signal.SIGKILL)  # not reaped yet, so it exists: never ESRCH
        _, status = os.waitpid(pid, 0)
    if payload is None:
        raise ExtractError(f"extraction timed out after {timeout_s:g} s")
    if os.WIFSIGNALED(status):
        raise ExtractError(f"extractor crashed (signal {os.WTERMSIG(status)})")
    result: T = _outcome(payload, os.waitstatus_to_exitcode(status), memory_bytes)
    return result


def _child(work: Callable[[], Any], write_end: int, memory_bytes: int) -> NoReturn:
    code = 1
    try:
        _prepare_child()
        limit = limit_memory(memory_bytes)
        view = memoryview(_encode(_run(work, limit)))
        while view:
            view = view[os.write(write_end, view):]
        code = 0
    finally:
        os._exit(code)


def _prepare_child() -> None:
    """Signals back to their defaults, no faulthandler traceback, and the objects
    inherited frozen: the parent's garbage is not the child's to finalise."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    faulthandler.disable()
    gc.freeze()


def _run(work: Callable[[], Any], limit: int) -> tuple[str, Any]:
    try:
        return "ok", work()
    except MemoryError:
        return "memory", None
    except Exception as exc:  # noqa: BLE001  -- any failure of the parser is a reason
        if _peak_address_space() + _NEAR_LIMIT >= limit:
            return "memory", None  # a native parser's failed allocation, told as its error
        if isinstance(exc, ExtractError):
            return "extract", str(exc)
        return "failed", f"{type(exc).__name__}: {_one_line(str(exc))}"


def _peak_address_space() -> int:
    """This process's largest address space so far (``VmPeak``), in bytes."""
    with open("/proc/self/status", "rb") as status:
        for line in status:
            if line.startswith(b"VmPeak:"):
                return int(line.split()[1]) * 1024
    return 0


def _encode(outcome: tuple[str, Any]) -> bytes:
    try:
        return pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return pickle.dumps(("memory", None))
    except Exception as exc:  # noqa: BLE001  -- an unpicklable result is a failure
        return pickle.dumps(("failed", f"unpicklable result: {_one_line(str(exc))}"))


def limit_memory(memory_bytes: int) -> int:
    """Cap the address space at its current size plus ``memory_bytes``; the cap."""
    with open("/proc/self/statm", "rb") as statm:
        current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = current + memory_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    return limit


def _read_until(fd: int, deadline: float) -> bytes | None:
    """Everything written to ``fd`` until its writer closes it; ``None`` past ``deadline``."""
    chunks: list[bytes] = []
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not selector.select(remaining):
                continue
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)


def _outcome(payload: bytes, exit_code: int, memory_bytes: int) -> Any:
    if not payload:
        raise ExtractError(f"extractor failed: no result (exit status {exit_code})")
    try:
        kind, value = _RestrictedUnpickler(io.BytesIO(payload)).load()
    except Exception as exc:  # noqa: BLE001  -- a truncated or forged message is a failure
        raise ExtractError(f"extractor failed: unreadable result: {_one_line(str(exc))}"
                           ) from None
    if kind == "ok":
        return value
    if kind == "memory":
        raise ExtractError(f"extraction ran out of memory (limit {memory_bytes >> 20} MiB)")
    if kind == "extract":
        raise ExtractError(str(value))
    raise ExtractError(f"extractor failed: {value}")


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        found = _ALLOWED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"{module}.{name} is not an extraction result")
        return found


def _one_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else "(no message)"
    return line if len(line) <= 200 else line[:199] + "…"
