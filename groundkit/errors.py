"""The exception hierarchy.

Every error groundkit raises on purpose derives from :class:`GroundkitError`.
Subclasses also inherit the builtin they refine, so callers that already catch
``ValueError`` or ``OSError`` keep working. A citation that no longer holds is
*not* an error: verification returns a :class:`groundkit.model.Verdict`.

Each class carries ``exit_code``: the CLI maps it to the process exit status
(documented in ``docs/cli.md``)::

    GroundkitError            1  anything else deliberate
    InvalidSpanError          1  a chunk or chunk id that does not fit its document
    DecodeError               1  bytes that are not text in a supported encoding
    UsageError                2  a bad option, query or argument
    CollectionNotFoundError   3  no such collection
    ChunkNotFoundError        3  no such chunk
    IndexMismatchError        4  a derived index of another generation or identity
    IntegrityError            4  a store, manifest or checksum that fails its check
    MissingDependencyError    5  an optional extra is not installed (names the command)
    ProviderError             6  an embedding server or model is missing or failed
    CollectionBusyError       7  another process is indexing the collection
    CalibrationError          9  no calibration for the mode, a stale one, or too few questions
    RootMissingError         13  a watched folder is gone (``grk watch --on-missing-root exit``)
    StorageError             14  writing the index failed: the disk is full or failing
"""

from __future__ import annotations


class GroundkitError(Exception):
    """Root of every deliberate groundkit error."""

    exit_code = 1


class UsageError(GroundkitError, ValueError):
    """Bad input from the caller: an invalid option, query or argument."""

    exit_code = 2


class InvalidSpanError(GroundkitError, ValueError):
    """A chunk whose offsets do not slice its text out of its document."""

    exit_code = 1


class DecodeError(GroundkitError, ValueError):
    """Bytes that are binary or not valid text in a supported encoding (the file is skipped)."""

    exit_code = 1


class CollectionNotFoundError(GroundkitError, LookupError):
    """The named collection does not exist."""

    exit_code = 3


class ChunkNotFoundError(GroundkitError, LookupError):
    """A chunk id that names no chunk."""

    exit_code = 3


class IndexMismatchError(GroundkitError, RuntimeError):
    """A derived index does not belong to the generation or identity asked for."""

    exit_code = 4


class IntegrityError(GroundkitError, RuntimeError):
    """A store, manifest or checksum failed its integrity check."""

    exit_code = 4


class MissingDependencyError(GroundkitError, ImportError):
    """An optional extra is not installed; the message names the install command."""

    exit_code = 5

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        super().__init__(
            f"{purpose} needs the optional package {module!r}, which is not installed. "
            f"Install it with: pip install 'groundkit[{extra}]'"
        )
        self.module = module
        self.extra = extra


class ProviderError(GroundkitError, RuntimeError):
    """An external provider (embedding server, model) is missing or failed."""

    exit_code = 6


class CollectionBusyError(GroundkitError, RuntimeError):
    """Another process is indexing this collection right now."""

    exit_code = 7


class CalibrationError(GroundkitError, RuntimeError):
    """Abstention was asked for without a usable calibration; the message says how to fix it."""

    exit_code = 9


class RootMissingError(GroundkitError, FileNotFoundError):
    """A folder ``grk watch`` watches was removed, and the watcher was told to exit."""

    exit_code = 13


class StorageError(GroundkitError, OSError):
    """Writing a generation failed (a full disk, an I/O error); the previous one is intact."""

    exit_code = 14
