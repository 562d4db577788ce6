"""Reading source files exactly: decoding, discovery and path containment.

Offsets index the decoded text, so decoding must be exact and reversible:
no newline translation, no Unicode normalisation, and the byte-order mark is
stripped from the text but remembered (``bom_len``) so byte offsets still
index the raw file.
"""

from __future__ import annotations

import fnmatch
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .errors import DecodeError as DecodeError

BOMS: tuple[tuple[bytes, str], ...] = (
    (b"\xef\xbb\xbf", "utf-8"),
    (b"\xff\xfe", "utf-16-le"),
    (b"\xfe\xff", "utf-16-be"),
)

DEFAULT_INCLUDE: tuple[str, ...] = (
    "*.md", "*.markdown", "*.txt", "*.rst", "*.adoc", "*.org", "*.tex",
    "*.py", "*.pyi", "*.js", "*.jsx", "*.ts", "*.tsx", "*.java", "*.kt", "*.go", "*.rs",
    "*.c", "*.h", "*.cc", "*.cpp", "*.hpp", "*.cs", "*.rb", "*.php", "*.swift", "*.scala",
    "*.sh", "*.bash", "*.sql", "*.r", "*.R", "*.lua", "*.pl", "*.hs", "*.ex", "*.exs",
    "*.toml", "*.yaml", "*.yml", "*.ini", "*.cfg", "*.json", "*.csv", "*.css",
    # Extracted formats (groundkit.extract): a file whose extractor is not installed is
    # skipped with the install command, never silently.
    "*.html", "*.htm", "*.xhtml", "*.pdf", "*.docx", "*.odt", "*.epub",
)
DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".git/", ".hg/", ".svn/", ".bzr/", "node_modules/", ".venv/", "venv/", "__pycache__/",
    ".tox/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", "site-packages/", "dist/",
    "build/", ".idea/", ".vscode/",
)
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
BINARY_SNIFF = 8192
MAX_DEPTH = 64
"""Folders nested deeper than this under a root are skipped with a reason, not walked
(the walk is iterative, so this is a stated policy, not a recursion limit)."""
NOT_UTF8 = "name is not valid UTF-8 (rename it to index it)"
"""The skip reason of a file or folder whose name is not valid UTF-8 (ADR 0018)."""


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str
    bom_len: int


def decode_bytes(data: bytes) -> Decoded:
    """Decode file bytes exactly, or raise :class:`DecodeError` saying why.

    Supported: UTF-8 with or without BOM, UTF-16 LE/BE with BOM. Anything else
    (including NUL-bearing binary data and legacy 8-bit encodings) is refused
    rather than guessed at: a wrong guess would be mojibake with valid-looking
    offsets.
    """
    for bom, encoding in BOMS:
        if data.startswith(bom):
            if encoding.startswith("utf-16") and data.startswith(b"\xff\xfe\x00\x00"):
                raise DecodeError("UTF-32 is not supported")
            try:
                return Decoded(data[len(bom):].decode(encoding), encoding, len(bom))
            except UnicodeDecodeError as exc:
                raise DecodeError(f"invalid {encoding} at byte {exc.start + len(bom)}") from None
    if b"\x00" in data[:BINARY_SNIFF]:
        raise DecodeError("binary file (NUL byte)")
    try:
        return Decoded(data.decode("utf-8"), "utf-8", 0)
    except UnicodeDecodeError as exc:
        raise DecodeError(f"not UTF-8 (invalid byte at offset {exc.start})") from None


READ_SIZE = 1 << 16
"""The smallest read :func:`read_fd` asks for beyond the size ``fstat`` reported."""


def read_fd(fd: int, size: int, limit: int) -> bytes:
    """An open file's bytes to its end, at most ``limit``; ``size`` is what ``fstat`` said.

    Reads are sized by ``size``: asking for ``limit`` at once would allocate that much
    (the collection's size limit, up to a gibibyte) for every file read.
    """
    parts: list[bytes] = []
    total = 0
    while total < limit:
        part = os.read(fd, min(limit - total, max(size + 1 - total, READ_SIZE)))
        if not part:
            break
        parts.append(part)
        total += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def encode_len(text: str, encoding: str) -> int:
    """How many bytes ``text`` takes in ``encoding`` (no BOM)."""
    if encoding == "utf-8":
        return len(text) if text.isascii() else len(text.encode("utf-8"))
    return len(text.encode(encoding))


def is_within(path: Path, root: Path) -> bool:
    """Whether resolved ``path`` lies under resolved ``root``, component-wise."""
    try:
        return lies_under(os.path.realpath(path), os.path.realpath(root))
    except (OSError, ValueError):
        return False


def lies_under(real: str, real_root: str) -> bool:
    """Whether already resolved ``real`` is ``real_root`` or below it, component by
    component (``/data/root-evil`` is not under ``/data/root``), as plain strings."""
    return real == real_root or real.startswith(
        real_root if real_root.endswith(os.sep) else real_root + os.sep)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A regular file found under a root, not yet read."""

    root: Path
    relpath: str
    size: int
    mtime_ns: int
    identity: tuple[int, int] = (0, 0)
    """``(st_dev, st_ino)`` of the file discovered: the indexer reads that file or none
    (:func:`groundkit.collection.ingest.read_regular`); ``(0, 0)``: not checked."""
    symlink: bool = False
    """Reached through a symlink (inside the root): opened following it, else with
    ``O_NOFOLLOW``."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path that was deliberately not indexed, and why."""

    path: str
    reason: str

    @property
    def kind(self) -> str:
        """The reason without its particulars, to count skips by (``binary file``,
        ``PDF extractor not installed``, ``no text layer``)."""
        return reason_kind(self.reason)


def reason_kind(reason: str) -> str:
    """``too large (…)`` -> ``too large``; ``unreadable: …`` -> ``unreadable``."""
    return re.split(r"[:(]", reason, maxsplit=1)[0].strip() or reason


def count_by_kind(reasons: Iterable[str]) -> dict[str, int]:
    """How many skips of each kind, most common first (ties by name)."""
    counts = Counter(reason_kind(r) for r in reasons)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _matches(relpath: str, patterns: Sequence[str]) -> bool:
    name = PurePosixPath(relpath).name
    for pattern in patterns:
        if pattern.endswith("/"):
            if f"/{pattern}" in f"/{relpath}/" or relpath.startswith(pattern):
                return True
        elif "/" in pattern:
            if fnmatch.fnmatchcase(relpath, pattern):
                return True
        elif fnmatch.fnmatchcase(name, pattern):
            return True
    return False


def discover(
    root: Path,
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    max_bytes: int = DEFAULT_MAX_BYTES,
    skip_dirs: Sequence[Path] = (),
) -> Iterator[Candidate | Skipped]:
    """Walk ``root`` in sorted order, yielding files to index and skipped paths.

    Symlinks are followed only while their target stays inside ``root``; a
    directory reached twice (a symlink loop) is visited once. FIFOs, devices
    and sockets are skipped, as are files over ``max_bytes``.
    """
    walker = _Walker(root=root, real_root=Path(os.path.realpath(root)), include=include,
                     exclude=exclude, max_bytes=max_bytes,
                     skip_real={Path(os.path.realpath(p)) for p in skip_dirs})
    yield from walker.walk(walker.listing(walker.real_root, ""))


def discover_paths(
    root: Path,
    relpaths: Sequence[str],
    *,
    include: Sequence[str] = DEFAULT_INCLUDE,
    exclude: Sequence[str] = DEFAULT_EXCLUDE,
    max_bytes: int = DEFAULT_MAX_BYTES,
    skip_dirs: Sequence[Path] = (),
) -> Iterator[Candidate | Skipped]:
    """:func:`discover` restricted to ``relpaths`` (files or folders under ``root``).

    Each path is judged exactly as the full walk would judge it: under an excluded
    folder or a skipped directory it yields nothing; reached through a symlink that
    leaves ``root`` it is skipped; a folder is walked. A path that no longer exists
    yields nothing (it was removed). Paths are visited in sorted order, each once.
    """
    walker = _Walker(root=root, real_root=Path(os.path.realpath(root)), include=include,
                     exclude=exclude, max_bytes=max_bytes,
                     skip_real={Path(os.path.realpath(p)) for p in skip_dirs})
    wanted = set(relpaths)
    for relpath in sorted(wanted):
        if not is_utf8(relpath):
            yield Skipped(shown_name(relpath), NOT_UTF8)
            continue
        parts = PurePosixPath(relpath).parts
        if any("/".join(parts[:i]) in wanted for i in range(1, len(parts))):
            continue  # a folder above it is walked anyway
        parents = ["/".join(parts[: i + 1]) + "/" for i in range(len(parts) - 1)]
        if not parts or any(_matches(d, exclude) for d in parents):
            continue
        path = walker.real_root.joinpath(*parts)
        real = Path(os.path.realpath(path))
        if any(real == s or real.is_relative_to(s) for s in walker.skip_real):
            continue
        if not os.path.lexists(path):
            continue
        outside = not real.is_relative_to(walker.real_root)
        yield from walker.walk(walker.visit(path, relpath, outside or path.is_symlink()))


def is_utf8(name: str) -> bool:
    """Whether ``name`` (a path as ``os`` gives it, undecodable bytes as surrogates) is
    valid UTF-8: document ids, chunk ids and SQLite hold only such names."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """``name`` with each byte that is not UTF-8 written ``\\xNN``: valid text to report."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


@dataclass(frozen=True, slots=True)
class _Folder:
    """A folder to walk: found by :meth:`_Walker.visit`, listed by :meth:`_Walker.walk`."""

    path: Path
    rel: str
    """Its path relative to the root, ending with ``/``."""


@dataclass(slots=True, kw_only=True)
class _Walker:
    root: Path
    real_root: Path
    include: Sequence[str]
    exclude: Sequence[str]
    max_bytes: int
    skip_real: set[Path]
    seen_dirs: set[tuple[int, int]] = field(default_factory=set)

    def walk(self, found: Iterator[Candidate | Skipped | _Folder],
             ) -> Iterator[Candidate | Skipped]:
        """What ``found`` holds, each folder in it listed in its place, depth first: an
        explicit stack of listings, so depth costs no recursion."""
        stack = [found]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
            elif not isinstance(item, _Folder):
                yield item
            elif item.rel.count("/") > MAX_DEPTH:
                yield Skipped(item.rel, f"folder nested deeper than {MAX_DEPTH} levels")
            else:
                stack.append(self.listing(item.path, item.rel))

    def listing(self, directory: Path, rel: str) -> Iterator[Candidate | Skipped | _Folder]:
        """The entries of one folder, in name order (its folders unlisted)."""
        try:
            st = directory.stat()
            if (st.st_dev, st.st_ino) in self.seen_dirs:
                return
            self.seen_dirs.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(rel or ".", f"unreadable directory: {exc.strerror}")
            return
        for entry in entries:
            if is_utf8(entry.name):
                yield from self.visit(Path(entry.path), f"{rel}{entry.name}",
                                      entry.is_symlink())
            else:
                yield Skipped(f"{rel}{shown_name(entry.name)}", NOT_UTF8)

    def visit(self, path: Path, relpath: str, symlink: bool,
              ) -> Iterator[Candidate | Skipped | _Folder]:
        try:
            # lstat first: an entry swapped for a symlink since the directory was listed
            # is judged as the symlink it now is, never followed unchecked
            st = path.lstat()
            symlink = symlink or stat.S_ISLNK(st.st_mode)
            if symlink:
                if not Path(os.path.realpath(path)).is_relative_to(self.real_root):
                    yield Skipped(relpath, "symlink points outside the collection root")
                    return
                st = path.stat()
        except OSError as exc:
            yield Skipped(relpath, f"unreadable: {exc.strerror or exc}")
            return
        if stat.S_ISDIR(st.st_mode):
            if not (_matches(relpath + "/", self.exclude)
                    or Path(os.path.realpath(path)) in self.skip_real):
                yield _Folder(path, relpath + "/")
        elif not _matches(relpath, self.include) or _matches(relpath, self.exclude):
            return
        elif not stat.S_ISREG(st.st_mode):
            yield Skipped(relpath, "not a regular file (FIFO, device or socket)")
        elif st.st_size > self.max_bytes:
            yield Skipped(relpath, f"too large ({st.st_size} bytes > limit {self.max_bytes})")
        else:
            yield Candidate(self.root, relpath, st.st_size, st.st_mtime_ns,
                            (st.st_dev, st.st_ino), symlink)
