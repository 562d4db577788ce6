"""The sandbox's children forked from a small server, not from the calling process.

Forking the caller for every extraction (:func:`~groundkit.extract.sandbox.isolate`) has
two costs that grow with the caller: the child's resident set counts every page it
shares with its parent (an MCP server holding a large collection makes every child
large, whatever its memory limit), and a caller with threads (the MCP server's workers,
lancedb's runtime) is forked mid-flight, where a lock another thread held stays held in
the child. So extractions are forked from a server instead (ADR 0018):

* **start**: the first extraction in a process starts the server with ``posix_spawn``: a
  fresh interpreter in its own session (no thread, no state, no terminal signals, stdin
  and stdout on ``/dev/null``), which imports every extractor and its library once and
  waits on a Unix ``SOCK_SEQPACKET`` socket;
* **a request** is one message on that socket carrying one end of a new socket pair; the
  server forks a child for it, which reads ``(format, bytes, limits)`` from the pair,
  sends its pid, arms ``ITIMER_REAL`` at the time limit (``SIGALRM``'s default action
  ends it, whatever native code it is in), caps its address space at its size plus
  ``Limits.memory_bytes``, runs the extractor and writes its outcome (as
  :mod:`~groundkit.extract.sandbox` encodes it). The server reaps it and, when it died
  without an outcome, writes its exit status, so the caller learns a crash's signal
  (or ``SIGALRM``: timed out) as before;
* **the caller** waits for the outcome or the status until the time limit plus
  :data:`GRACE_S`, then kills the child itself; interrupted, it kills the child before
  it leaves. An outcome is used as soon as it is whole (the child's exit is not waited
  for).

A process forked from the caller (an indexing worker) inherits the socket and shares
the server: requests are single messages, and each reply comes through its own pair. The
server ends when the last process holding the socket closes it (their exits); one that
died is started again on the next request. Where there is no ``SOCK_SEQPACKET`` or
``posix_spawn`` (not Linux), :func:`available` is false and the sandbox forks the caller.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import pickle
import select
import signal
import socket
import struct
import sys
import threading
import time
from typing import Any, NoReturn

from .base import ExtractError, Limits, TextView

GRACE_S = 5.0
"""How long past the time limit the caller waits for the server's word before it kills
the child itself (the child's own timer normally ends it first)."""
STOP_WAIT_S = 2.0
"""How long a process leaving waits for its server to end (a forked worker still
holding the socket keeps it alive: then it is left to end with that worker)."""
_LOCK = threading.Lock()
_SERVER: dict[str, Any] = {}
"""``socket`` (the control socket) and ``pid`` (the server) of this process's server."""
_LENGTH = struct.Struct("<Q")
_PID = struct.Struct("<q")
_STATUS = struct.Struct("<i")
os.register_at_fork(after_in_child=_LOCK._at_fork_reinit)  # type: ignore[attr-defined]


def available() -> bool:
    """Whether extractions are forked from a server here (Linux)."""
    return sys.platform == "linux" and hasattr(socket, "SOCK_SEQPACKET") \
        and hasattr(os, "posix_spawn")


def run(name: str, data: bytes, limits: Limits) -> TextView:
    """Format ``name``'s extractor run on ``data`` in a child of the server, within
    ``limits``; :class:`ExtractError` with a one-line reason when it fails."""
    from .sandbox import _outcome

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    deadline = time.monotonic() + limits.timeout_s + GRACE_S
    ours.settimeout(limits.timeout_s + GRACE_S)  # a server that stops reading: no hang
    got: dict[bytes, Any] = {}  # filled as replies come: the pid is known if interrupted
    try:
        with theirs:
            _send_request(theirs)
        request = _framed(pickle.dumps((name, data, limits), protocol=pickle.HIGHEST_PROTOCOL))
        with contextlib.suppress(BrokenPipeError):  # the child died reading it: its status
            ours.sendall(request)
        _replies(ours, deadline, got)
    except OSError as exc:
        raise ExtractError(f"extractor could not start: {exc.strerror or exc}") from None
    finally:
        ours.close()
        if b"P" in got and not (b"S" in got or b"R" in got):
            _kill(got[b"P"])
    if b"R" in got:  # the whole outcome came: the child only exits now
        result: TextView = _outcome(got[b"R"], 0, limits.memory_bytes)
        return result
    status: int | None = got.get(b"S")
    if status is None and got.get(b"E"):
        raise ExtractError("extractor failed: the fork server went away")
    if status is None:
        raise ExtractError(f"extraction timed out after {limits.timeout_s:g} s")
    if os.WIFSIGNALED(status):
        if os.WTERMSIG(status) == signal.SIGALRM:
            raise ExtractError(f"extraction timed out after {limits.timeout_s:g} s")
        raise ExtractError(f"extractor crashed (signal {os.WTERMSIG(status)})")
    raise ExtractError(f"extractor failed: no result (exit status "
                       f"{os.waitstatus_to_exitcode(status)})")


def _send_request(end: socket.socket) -> None:
    """Hand ``end`` to the server, starting it (again) when there is none."""
    with _LOCK:
        for attempt in (1, 2):
            if "socket" not in _SERVER:
                _start()
            try:
                socket.send_fds(_SERVER["socket"], [b"x"], [end.fileno()])
                return
            except OSError:
                if attempt == 2:
                    raise
                _forget()


def _start() -> None:
    if not _SERVER.get("atexit"):
        atexit.register(_stop, os.getpid())
        _SERVER["atexit"] = True
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    theirs.set_inheritable(True)
    code = (f"import sys; sys.path[:0] = {sys.path!r}; "
            f"from groundkit.extract.forkserver import serve; serve({theirs.fileno()})")
    try:
        pid = os.posix_spawn(sys.executable, [sys.executable, "-c", code], os.environ,
                             file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                                           (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0)],
                             setsid=True)
    finally:
        theirs.close()
    _SERVER.update(socket=ours, pid=pid)


def _stop(owner: int) -> None:
    """At exit: close this process's end and give the server a moment to finish and be
    reaped here (so its children's resource use is this process's too)."""
    if os.getpid() != owner or "socket" not in _SERVER:
        return
    _SERVER.pop("socket").close()
    pid = _SERVER.pop("pid")
    deadline = time.monotonic() + STOP_WAIT_S
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(pid, os.WNOHANG) == (0, 0) and time.monotonic() < deadline:
            time.sleep(0.005)


def _forget() -> None:
    """Drop a server that no longer answers (reaped if it was this process's child)."""
    _SERVER.pop("socket").close()
    pid = _SERVER.pop("pid")
    with contextlib.suppress(ChildProcessError):  # the process this one was forked from
        os.waitpid(pid, os.WNOHANG)  # started it


def _framed(payload: bytes) -> bytes:
    return _LENGTH.pack(len(payload)) + payload


def _replies(conn: socket.socket, deadline: float, got: dict[bytes, Any]) -> None:
    """Into ``got``: the child's pid (``P``), then its outcome (``R``) or, when it died
    without one, its exit status (``S``, from the server), as they arrive, until one of
    those comes, the pair closes (the server went away: ``E``) or ``deadline`` passes."""
    buffer = bytearray()
    while b"S" not in got and b"R" not in got:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([conn], [], [], remaining)[0]:
            break
        chunk = conn.recv(1 << 20)
        if not chunk:
            got[b"E"] = True
            break
        buffer += chunk
        del buffer[:_records(buffer, got)]


def _records(buffer: bytearray, got: dict[bytes, Any]) -> int:
    """Read the complete tagged records at the start of ``buffer`` into ``got`` (``P``
    the child's pid, ``R`` its outcome, ``S`` its exit status); how many bytes they took."""
    at = 0
    while at < len(buffer):
        tag = bytes(buffer[at:at + 1])
        if tag == b"R":
            if len(buffer) < at + 1 + _LENGTH.size:
                break
            end = at + 1 + _LENGTH.size + _LENGTH.unpack_from(buffer, at + 1)[0]
            if len(buffer) < end:
                break
            got[tag] = bytes(buffer[at + 1 + _LENGTH.size:end])
        else:
            field = _PID if tag == b"P" else _STATUS
            end = at + 1 + field.size
            if len(buffer) < end:
                break
            got[tag] = field.unpack_from(buffer, at + 1)[0]
        at = end
    return at


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # already gone (the server reaps it)
        os.kill(pid, signal.SIGKILL)


# --- the server ----------------------------------------------------------------------


def serve(fd: int) -> NoReturn:
    """The server's loop (see the module): fork a child per request, reap each and send
    its status, until every client has closed the control socket."""
    control = socket.socket(fileno=fd)
    _preload()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    signal.set_wakeup_fd(wake_write)
    pending: dict[int, socket.socket] = {}
    open_ = True
    while open_ or pending:
        watched = [control.fileno(), wake_read] if open_ else [wake_read]
        ready = select.select(watched, [], [], 1.0)[0]
        if control.fileno() in ready:
            message, fds, _, _ = socket.recv_fds(control, 16, 1)
            if not message and not fds:
                open_ = False
            for conn_fd in fds:
                conn = socket.socket(fileno=conn_fd)
                pid = os.fork()
                if pid == 0:
                    os.close(wake_read)
                    os.close(wake_write)
                    control.close()
                    for other in pending.values():
                        other.close()
                    _child(conn)
                pending[pid] = conn
        if wake_read in ready:
            os.read(wake_read, 512)
        _reap(pending)
    os._exit(0)


def _preload() -> None:
    """Import every extractor and what it runs, so each child starts with them mapped: its
    library, and what it imports on first use (a tiny page extracted by each: lexbor's
    parser module; defusedxml's parser)."""
    import importlib
    import importlib.util

    from . import DEFAULT_LIMITS, EXTRACTORS, extractor

    for name in EXTRACTORS:
        found = extractor(name)
        if found.available():
            importlib.import_module(found.library)
            with contextlib.suppress(ExtractError):
                found.extract(b"<p>x</p>", DEFAULT_LIMITS)
    if importlib.util.find_spec("defusedxml") is not None:
        importlib.import_module("defusedxml.ElementTree")


def _reap(pending: dict[int, socket.socket]) -> None:
    while pending:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = pending.pop(pid, None)
        if conn is not None:
            with contextlib.suppress(OSError):  # the caller may have given up on it
                conn.sendall(b"S" + _STATUS.pack(status))
            conn.close()


def _child(conn: socket.socket) -> NoReturn:
    from .sandbox import _encode, _prepare_child, _run, limit_memory

    code = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        _prepare_child()
        name, data, limits = pickle.loads(_read_framed(conn))
        conn.sendall(b"P" + _PID.pack(os.getpid()))
        signal.setitimer(signal.ITIMER_REAL, limits.timeout_s)
        limit = limit_memory(limits.memory_bytes)
        from . import extractor

        found = extractor(name)
        conn.sendall(b"R" + _framed(_encode(_run(lambda: found.extract(data, limits), limit))))
        code = 0
    finally:
        os._exit(code)


def _read_framed(conn: socket.socket) -> bytes:
    head = _read_exactly(conn, _LENGTH.size)
    return _read_exactly(conn, _LENGTH.unpack(head)[0])


def _read_exactly(conn: socket.socket, size: int) -> bytes:
    parts = bytearray()
    while len(parts) < size:
        chunk = conn.recv(min(size - len(parts), 1 << 20))
        if not chunk:
            raise EOFError("the caller closed the request")
        parts += chunk
    return bytes(parts)
