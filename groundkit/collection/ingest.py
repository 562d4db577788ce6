"""Reading, decoding and chunking files for the indexer, in one process or several.

The indexer (:mod:`groundkit.collection.indexer`) decides what to keep and writes SQLite;
this module turns candidate files into :class:`Prepared` results: bytes read
and hashed in the main process, decoding and chunking in worker processes
when there are cores to spare. Results come back in input order, so the
outcome is identical whatever the number of workers.
"""

from __future__ import annotations

import errno
import hashlib
import multiprocessing
import os
import stat
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass

from .. import extract, store
from ..errors import DecodeError, MissingDependencyError
from ..extract import ExtractError, TextView
from ..extract.markdown import headings as markdown_headings
from ..extract.markdown import is_markdown
from ..model import Document
from ..sources import Candidate, Decoded, Skipped, decode_bytes, lies_under, read_fd
from ..text.chunking import ChunkerConfig, make_chunks
from ..text.standing import HEAD, superseded
from ..verify import BY_HANDLE

WINDOW = 32
"""Files in flight at once when workers are used."""


@dataclass(frozen=True, slots=True)
class Job:
    """One readable file: its bytes, hash, and whether its old chunks can be carried."""

    doc_id: str
    root: str
    relpath: str
    mtime_ns: int
    data: bytes
    sha256: str
    carry: bool
    format: str | None = None
    """The extractor's format (``pdf``, ``html``, ...); ``None`` for plain text."""
    extractor: str = ""
    """That extractor's identity, recorded with the document."""


@dataclass(frozen=True, slots=True)
class Prepared:
    job: Job
    encoding: str = ""
    bom_len: int = 0
    rows: tuple[store.ChunkRow, ...] = ()
    error: str | None = None
    extractor: str = ""
    standing: str = ""
    """The evidence that the document is superseded (:mod:`groundkit.text.standing`), or
    ``""`` for a current one."""


def read_jobs(
    candidates: list[tuple[str, Candidate]],
    max_bytes: int,
    reusable: dict[str, tuple[str, int, str]],
    skipped: list[Skipped],
) -> Iterator[Job]:
    """Read and hash each file and choose its extractor; a file that cannot be read, or
    whose extractor is not installed, is appended to ``skipped`` with the reason.

    ``reusable`` maps a document id to the content hash, generation and extractor
    identity whose chunks can be carried over unchanged: a file is carried only when its
    bytes and the extractor that would read them are both the same.
    """
    identities: dict[str, str] = {}
    for label, cand in candidates:
        doc_id = label + cand.relpath
        try:
            data = read_regular(cand, max_bytes)
        except OSError as exc:
            skipped.append(Skipped(doc_id, f"unreadable: {exc.strerror or exc}"))
            continue
        try:
            fmt = extract.for_file(cand.relpath, data)
            if fmt is not None and fmt not in identities:
                identities[fmt] = extract.identity_of(fmt)
        except ExtractError as exc:
            skipped.append(Skipped(doc_id, str(exc)))
            continue
        except MissingDependencyError:
            skipped.append(Skipped(doc_id, extract.install_hint(str(fmt))))
            continue
        identity = identities[fmt] if fmt is not None else ""
        sha = hashlib.sha256(data).hexdigest()
        old = reusable.get(doc_id)
        carry = old is not None and old[0] == sha and (
            old[2] == identity or _same_ocr(fmt, old[2], identities))
        yield Job(doc_id, str(cand.root), cand.relpath, cand.mtime_ns, data, sha,
                  carry=carry, format=fmt, extractor=identity)


def _same_ocr(fmt: str | None, indexed: str, identities: dict[str, str]) -> bool:
    """Whether a PDF indexed by OCR (no text layer) would be read by the same OCR now."""
    if fmt != "pdf" or not indexed.startswith("ocr/"):
        return False
    if "ocr" not in identities:
        try:
            identities["ocr"] = extract.identity_of("ocr")
        except MissingDependencyError:
            identities["ocr"] = ""
    return indexed == identities["ocr"]


def prepare(job: Job, name: str, chunker: ChunkerConfig) -> Prepared:
    """Decode (or extract) and chunk one changed file. Runs in a worker process."""
    if job.carry:
        return Prepared(job)
    view: TextView | None = None
    identity = job.extractor
    try:
        if job.format is None:
            decoded = decode_bytes(job.data)
            if is_markdown(job.relpath):
                view = TextView(decoded.text, "markdown", headings=markdown_headings(
                    decoded.text))
        else:
            view, identity = extract.read(job.format, job.data)  # a scanned PDF: OCR's
            decoded = Decoded(view.text, "utf-8", 0)
    except DecodeError as exc:  # ExtractError included
        return Prepared(job, error=str(exc))
    except MissingDependencyError:
        return Prepared(job, error=extract.install_hint(job.format or ""))
    document = Document(
        doc_id=job.doc_id, root=job.root, relpath=job.relpath, sha256=job.sha256,
        size=len(job.data), encoding=decoded.encoding, bom_len=decoded.bom_len,
        text=decoded.text, extractor=identity,
    )
    rows = tuple(store.chunk_row(c) for c in make_chunks(name, document, chunker, view))
    standing = superseded(job.doc_id, decoded.text[:HEAD], view.status if view else "")
    return Prepared(job, decoded.encoding, decoded.bom_len, rows, extractor=identity,
                    standing=standing or "")


@contextmanager
def worker_pool(workers: int) -> Iterator[ProcessPoolExecutor | None]:
    if workers <= 1:
        yield None
        return
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        yield pool


def prepared_in_order(
    pool: ProcessPoolExecutor | None, jobs: Iterator[Job], name: str, chunker: ChunkerConfig
) -> Iterator[Prepared]:
    """``prepare`` over ``jobs`` in order, with a bounded window of work in flight."""
    if pool is None:
        for job in jobs:
            yield prepare(job, name, chunker)
        return
    window: deque[Future[Prepared]] = deque()
    for job in jobs:
        if job.carry:
            carried: Future[Prepared] = Future()
            carried.set_result(Prepared(job))
            window.append(carried)
        else:
            window.append(pool.submit(prepare, job, name, chunker))
        if len(window) >= WINDOW:
            yield window.popleft().result()
    while window:
        yield window.popleft().result()


def read_regular(cand: Candidate, max_bytes: int) -> bytes:
    """The bytes of the regular file discovery found as ``cand``, or :class:`OSError`.

    What was discovered is what is read: the file is opened with ``O_NOFOLLOW`` (unless
    discovery reached it through a symlink inside the root), and the open descriptor
    must be the discovered file (``st_dev``, ``st_ino``) and, on Linux, lie inside the
    collection root as the kernel sees it (``/proc/self/fd``). A file swapped for a
    symlink to a file outside the root, or a folder above it swapped for one, between
    discovery and this read is refused ("changed since discovery"), never read through.
    The type and size are checked with ``fstat`` on the same descriptor (``O_NONBLOCK``
    keeps a FIFO from blocking the open). Reads until end of file, at most
    ``max_bytes + 1`` bytes (a file that grew past the limit shows it), in reads sized
    by ``fstat`` (:func:`~groundkit.sources.read_fd`).
    """
    nofollow = 0 if cand.symlink else os.O_NOFOLLOW
    try:
        fd = os.open(cand.root / cand.relpath,
                     os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | nofollow)
    except OSError as exc:
        if exc.errno == errno.ELOOP and nofollow:
            raise OSError(0, "changed since discovery (now a symlink)") from None
        raise
    try:
        st = os.fstat(fd)
        if cand.identity != (0, 0) and (st.st_dev, st.st_ino) != cand.identity:
            raise OSError(0, "changed since discovery (another file at this path now)")
        if BY_HANDLE and not lies_under(os.readlink(f"/proc/self/fd/{fd}"),
                                        os.path.realpath(cand.root)):
            raise OSError(0, "changed since discovery (now resolves outside the root)")
        if not stat.S_ISREG(st.st_mode):
            raise OSError(0, "not a regular file")
        if st.st_size > max_bytes:
            raise OSError(0, f"too large ({st.st_size} bytes)")
        return read_fd(fd, st.st_size, max_bytes + 1)
    finally:
        os.close(fd)
