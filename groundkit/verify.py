"""Re-reading a cited span from its source and judging it.

:func:`verify` never raises for a bad citation: every way a citation can fail
is a :class:`~groundkit.model.Verdict` with a reason.

* **verified** — the file's current text at the cited code-point offsets is
  exactly the stored text.
* **drifted** — the file is readable and decodable but the text at the cited
  offsets changed; when the stored text still occurs exactly once in the
  current file, its new offsets are given (``relocated``).
* **unresolvable** — unknown chunk or collection, file missing, not a regular
  file, unreadable, now a symlink out of the collection root, or undecodable.

The comparison is by content, never by size or mtime: an edit that keeps both
is still caught.

A chunk of an extracted format (PDF, HTML, DOCX, ...) indexes the file's *text view*.
An unchanged file (the same sha256) verifies at once: its view is what was indexed.
A changed one is extracted again and the span compared in the new view, but only by
the extractor that indexed it (its recorded identity): a file that changed format, an
extractor that is no longer installed, or one of another version is *unresolvable*
with the reason and what to do (re-index), never a verdict from a different view.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass

from .errors import DecodeError
from .extract.reread import as_indexed
from .model import Chunk, Status, Verdict
from .sources import decode_bytes, lies_under, read_fd
from .store import StoredChunk


def unresolvable(chunk_id: str, reason: str, stored: StoredChunk | None = None) -> Verdict:
    chunk = stored.chunk if stored else None
    return Verdict(
        chunk_id=chunk_id, status=Status.UNRESOLVABLE, reason=reason,
        doc_id=chunk.doc_id if chunk else None, start=chunk.start if chunk else None,
        end=chunk.end if chunk else None, stored_text=chunk.text if chunk else None,
        headings=chunk.headings if chunk else (), extractor=chunk.extractor if chunk else "",
        locator=chunk.locator if chunk else None,
    )


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Why a cited file cannot be read from inside its collection root right now."""

    reason: str


MISSING = Unreadable("file missing (deleted or renamed)")


OUTSIDE = Unreadable("path now resolves outside the collection root (symlink swapped in?)")
_PROC_FD = "/proc/self/fd"
BY_HANDLE = hasattr(os, "O_PATH") and os.path.isdir(_PROC_FD)
"""Whether a file is resolved through an ``O_PATH`` handle (Linux), else by ``realpath``."""


def read_inside(root: str, relpath: str, max_bytes: int, *,
                real_root: str | None = None) -> bytes | Unreadable:
    """The file's bytes, or why it cannot be read from inside ``root``.

    ``max_bytes`` is the collection's size limit (``config["max_bytes"]``): a file
    that grew past it since indexing is unreadable, as it would not be indexed.
    ``real_root`` is ``os.path.realpath(root)`` when the caller resolved it just now
    (:func:`verify_all` does, once for the files of one call).

    On Linux the file is looked up once, as an ``O_PATH`` handle (which opens nothing
    for reading), the kernel says where that handle really is, and only a regular file
    inside the root is then opened, through the handle itself: the file checked is the
    file read, whatever is renamed meanwhile. Elsewhere its path is resolved with
    ``realpath`` first and the result opened without following a final symlink.
    """
    if real_root is None:
        real_root = os.path.realpath(root)
    path = os.path.join(real_root, relpath)
    if BY_HANDLE:
        return _read_by_handle(path, real_root, max_bytes)
    try:
        real = os.path.realpath(path, strict=True)
    except OSError as exc:
        return _unopened(exc)
    if not lies_under(real, real_root):
        return OUTSIDE
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return _unopened(exc)
    try:
        return _read_regular(fd, os.fstat(fd), max_bytes)
    except OSError as exc:
        return Unreadable(f"unreadable: {exc.strerror or exc}")
    finally:
        os.close(fd)


def _read_by_handle(path: str, real_root: str, max_bytes: int) -> bytes | Unreadable:
    try:
        handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError as exc:
        return _unopened(exc)
    try:
        where = f"{_PROC_FD}/{handle}"
        if not lies_under(os.readlink(where), real_root):
            return OUTSIDE
        st = os.fstat(handle)
        if not stat.S_ISREG(st.st_mode):  # a device or FIFO is never opened
            return Unreadable("not a regular file")
        try:
            fd = os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            return _unopened(exc)
        try:
            return _read_regular(fd, os.fstat(fd), max_bytes)
        finally:
            os.close(fd)
    except OSError as exc:
        return Unreadable(f"unreadable: {exc.strerror or exc}")
    finally:
        os.close(handle)


def _unopened(exc: OSError) -> Unreadable:
    if exc.errno == errno.ENOENT:
        return MISSING
    if exc.errno in (errno.EACCES, errno.EPERM):
        return Unreadable("permission denied")
    return Unreadable(f"unreadable: {exc.strerror or exc}")


def _read_regular(fd: int, st: os.stat_result, max_bytes: int) -> bytes | Unreadable:
    if not stat.S_ISREG(st.st_mode):
        return Unreadable("not a regular file")
    if st.st_size > max_bytes:
        return Unreadable(f"file grew past the size limit ({st.st_size} bytes)")
    return read_fd(fd, st.st_size, max_bytes + 1)


def _verdict(
    chunk: Chunk,
    status: Status,
    reason: str,
    current_text: str | None,
    relocated: tuple[int, int] | None = None,
) -> Verdict:
    return Verdict(
        chunk_id=chunk.chunk_id, status=status, reason=reason, doc_id=chunk.doc_id,
        start=chunk.start, end=chunk.end, stored_text=chunk.text, current_text=current_text,
        relocated=relocated, headings=chunk.headings, extractor=chunk.extractor,
        locator=chunk.locator,
    )


def verify(stored: StoredChunk, *, max_bytes: int) -> Verdict:
    """Re-read ``stored``'s span from its file now and judge it.

    ``max_bytes`` is the collection's size limit; every path that verifies a
    citation (search ``--verify``, fetch, the MCP tools) passes the same one.
    """
    return verify_all([stored], max_bytes=max_bytes)[0]


def verify_all(stored: Sequence[StoredChunk], *, max_bytes: int) -> list[Verdict]:
    """:func:`verify` for each of ``stored``, in order, reading each file once.

    Hits of one search often share a file: it is read (and hashed) once for all of
    them, so they are judged against the same bytes.
    """
    files: dict[tuple[str, str], tuple[bytes | Unreadable, str | None]] = {}
    views: dict[tuple[str, str, str], str | Unreadable] = {}  # changed files, extracted once
    roots: dict[str, str] = {}  # each root resolved once a call, each file resolved apart
    verdicts = []
    for item in stored:
        where = (item.root, item.relpath)
        if where not in files:
            if item.root not in roots:
                roots[item.root] = os.path.realpath(item.root)
            data = read_inside(item.root, item.relpath, max_bytes, real_root=roots[item.root])
            digest = None if isinstance(data, Unreadable) else hashlib.sha256(data).hexdigest()
            files[where] = (data, digest)
        verdicts.append(_judge(item, *files[where], views))
    return verdicts


def _judge(stored: StoredChunk, data: bytes | Unreadable, digest: str | None,
           views: dict[tuple[str, str, str], str | Unreadable]) -> Verdict:
    """The verdict on ``stored`` given its file's bytes now (and their sha256);
    ``views`` keeps the text views of changed files extracted so far in this call."""
    chunk = stored.chunk
    if isinstance(data, Unreadable):
        return unresolvable(chunk.chunk_id, data.reason, stored)
    if digest == chunk.doc_sha256:
        return _verdict(chunk, Status.VERIFIED, "file unchanged since indexing", chunk.text)
    if chunk.extractor:
        key = (stored.root, stored.relpath, chunk.extractor)
        if key not in views:
            views[key] = _view_text(stored, data)
        text_or_reason = views[key]
        if isinstance(text_or_reason, Unreadable):
            return unresolvable(chunk.chunk_id, text_or_reason.reason, stored)
        text = text_or_reason
    else:
        try:
            text = decode_bytes(data).text
        except DecodeError as exc:
            return unresolvable(chunk.chunk_id, f"file no longer decodes: {exc}", stored)
    current = text[chunk.start : chunk.end]
    if current == chunk.text:
        return _verdict(
            chunk, Status.VERIFIED, "file changed elsewhere; the cited span is intact", current
        )
    first = text.find(chunk.text)
    if first == -1:
        return _verdict(chunk, Status.DRIFTED, "the cited text is no longer in the file",
                        current or None)
    if text.find(chunk.text, first + 1) != -1:
        return _verdict(chunk, Status.DRIFTED,
                        "the cited text moved and now occurs more than once", current or None)
    return _verdict(
        chunk, Status.DRIFTED, "the cited text moved; it occurs once at the relocated offsets",
        current or None, (first, first + len(chunk.text)),
    )


def _view_text(stored: StoredChunk, data: bytes) -> str | Unreadable:
    """The text view of a changed file, made by the extractor that indexed it, or why
    it cannot be: the view of another format or extractor version would compare the
    cited span with text the index never saw."""
    try:
        return as_indexed(stored.relpath, data, stored.chunk.extractor).text
    except DecodeError as exc:  # ExtractError included
        reason = str(exc)
        return Unreadable(reason if reason.startswith("file ") else f"the file changed: {reason}")
