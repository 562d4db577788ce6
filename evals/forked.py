"""Work in a forked child process, its result handed back pickled: the harness's second core.

The harness is CPU-bound Python, so threads share one core. A forked child
inherits everything the parent has loaded (the suite, its questions, opened
collections and caches) at no cost, runs one function, and writes its result down
a pipe. The rules a caller keeps:

* fork before any thread starts in the parent (only the forking thread exists in
  the child, so a lock another thread held would never be released there). This one
  is enforced for the runtimes of :data:`THREADED_RUNTIMES`: once one is loaded,
  nothing is forked and :class:`Forked` runs its work here, at once (the same result,
  later; lancedb's own warning that a fork "may deadlock" cannot happen);
* the child opens its own SQLite connections: one opened before the fork must not
  be used on both sides (SQLite's rule); the harness opens each stage's
  collection in the process that ranks it;
* what the function returns, or raises, must pickle.

A child's exception is raised again in the parent, with the child's traceback as
its ``__cause__`` text. A child that dies without a word (a signal, ``os._exit``)
is a :class:`WorkerError`. :func:`available` says whether this platform forks.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

from groundkit.errors import GroundkitError

T = TypeVar("T")
_OK, _FAILED = b"o", b"e"
STOP_GRACE_S = 30.0
THREADED_RUNTIMES = ("lancedb",)
"""Modules whose import starts threads a fork does not carry (lancedb: an asyncio loop
thread and a tokio runtime, reset in a forked child with "a small chance of
deadlock"): with one loaded, work is not forked (:func:`fork_safe`)."""
"""How long :meth:`Forked.stop` waits after SIGTERM before it kills."""


class WorkerError(GroundkitError):
    """A forked worker failed in a way its own exception cannot tell."""


class ChildTraceback(Exception):
    """The traceback of an exception raised in a forked child (set as the ``__cause__``)."""


def available() -> bool:
    """Whether work is forked here: POSIX ``fork``, but not on Windows (none) or macOS,
    where a forked child may crash once system frameworks are loaded (why Python's
    ``multiprocessing`` spawns there by default)."""
    return hasattr(os, "fork") and sys.platform != "darwin"


def fork_safe() -> bool:
    """Whether work is forked now: :func:`available`, and none of
    :data:`THREADED_RUNTIMES` loaded in this process."""
    return available() and not any(name in sys.modules for name in THREADED_RUNTIMES)


@contextlib.contextmanager
def sharing_cores(active: bool = True) -> Iterator[None]:
    """While ``active``, numpy's BLAS pool is one thread in this process and in every
    child forked meanwhile (threadpoolctl), restored after.

    Forked workers already keep every core busy: a BLAS pool per core in each process
    oversubscribes them, and idle OpenBLAS threads spin. Measured on golden v2 (2 cores,
    warm): about 1.5 s less wall time and 2–3 s less CPU, same report.
    """
    if not active:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):
        yield


class Forked(Generic[T]):
    """``fn()`` running in a forked child; :meth:`result` waits for it. Where a fork is
    not safe (:func:`fork_safe`), ``fn()`` runs here at once and :meth:`result` hands
    back its value or raises its exception."""

    def __init__(self, fn: Callable[[], T], name: str) -> None:
        self.name = name
        self._here: tuple[bool, Any] | None = None
        if not fork_safe():
            self._done = True
            try:
                self._here = (True, fn())
            except Exception as exc:  # noqa: BLE001 - raised again by result(), as a child's is
                self._here = (False, exc)
            return
        sys.stdout.flush()
        sys.stderr.flush()
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: run, report, and leave without the parent's cleanup
            os.close(read)
            _child(fn, write)
        os.close(write)
        self.pid, self._read = pid, read
        self._done = False

    def result(self) -> T:
        """The child's return value; its exception raised here; a silent death a
        :class:`WorkerError`."""
        if self._here is not None:
            ok, outcome = self._here
            if not ok:
                raise outcome
            here: T = outcome
            return here
        with os.fdopen(self._read, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self._done = True
        try:
            if payload[:1] == _OK:
                value: T = pickle.loads(payload[1:])
                return value
            if payload[:1] == _FAILED:
                exc, text = pickle.loads(payload[1:])
        except Exception as error:  # noqa: BLE001 - cut short: the child died while writing
            raise WorkerError(f"worker {self.name!r} (pid {self.pid}) sent a truncated result "
                              f"({_describe(status)}: {error})") from None
        if payload[:1] == _FAILED:
            raise exc from ChildTraceback(f"in worker {self.name!r}:\n{text}")
        raise WorkerError(f"worker {self.name!r} (pid {self.pid}) ended without a result "
                          f"({_describe(status)})")

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """End the child if it is still running (the parent is failing): SIGTERM, which
        unwinds its ``finally`` blocks (an MCP worker closes its stages and servers at
        once), then SIGKILL if it is still there after ``grace_s``."""
        if self._done:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        with contextlib.suppress(OSError):
            os.close(self._read)
        deadline = time.monotonic() + grace_s
        while os.waitpid(self.pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
                break
            time.sleep(0.02)
        self._done = True


def beside(fn: Callable[[], T], name: str, *, fork: bool = True) -> Callable[[], T]:
    """Start ``fn`` in a forked child (when ``fork`` and the platform forks; else run it
    now); the returned call waits for its result. For work the caller does not need
    until later, while it does its own."""
    if not (fork and fork_safe()):
        value = fn()
        return lambda: value
    return Forked(fn, name).result


class Tasks:
    """Task numbers ``0 .. n-1`` handed out through a pipe, one byte each, to whichever
    process asks first: the parent and its forked workers share the pipe, so a worker
    that finishes early takes the next task instead of idling. Create it before forking.
    """

    LIMIT = 255

    def __init__(self, n: int) -> None:
        if not 0 <= n <= self.LIMIT:
            raise ValueError(f"at most {self.LIMIT} tasks, not {n}")
        self._read, write = os.pipe()
        os.write(write, bytes(range(n)))  # far below the pipe's buffer: never blocks
        os.close(write)

    def take(self) -> int | None:
        """The next task's number; ``None`` when every task has been taken."""
        byte = os.read(self._read, 1)  # a one-byte read from a pipe is atomic
        return byte[0] if byte else None

    def close(self) -> None:
        os.close(self._read)


def _child(fn: Callable[[], object], fd: int) -> None:
    code = 0
    try:
        signal.signal(signal.SIGTERM, _exit_on_term)
        try:
            payload = _OK + pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as exc:  # noqa: BLE001 - everything goes back, even SystemExit
            payload = _FAILED + _pickled_failure(exc)
            code = 1
        with os.fdopen(fd, "wb") as pipe:
            pipe.write(payload)
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:  # noqa: BLE001 - the pipe is gone (the parent stopped us)
        code = 2
    finally:
        os._exit(code)


def _exit_on_term(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds the child's ``finally`` blocks (servers stop)


def _pickled_failure(exc: BaseException) -> bytes:
    text = "".join(traceback.format_exception(exc))
    try:
        payload = pickle.dumps((exc, text), protocol=pickle.HIGHEST_PROTOCOL)
        pickle.loads(payload)  # an exception whose constructor takes other arguments fails here
        return payload
    except Exception:  # noqa: BLE001 - one that does not round-trip: its text still does
        return pickle.dumps((WorkerError(f"{type(exc).__name__}: {exc}"), text))


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"killed by signal {os.WTERMSIG(status)}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"
