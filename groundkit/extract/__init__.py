"""Formats: raw files turned into text views with source maps.

:func:`for_file` chooses the extractor for a file (by content where the content says
so, then by name); ``None`` means plain text, whose view is the decoded file and whose
offsets index it directly (:mod:`groundkit.extract.markdown` adds Markdown's headings).
:func:`extract` runs the chosen one in a separate process with a time and memory limit
(:mod:`groundkit.extract.forkserver`, :mod:`groundkit.extract.sandbox`), whatever the
file's size or format: a 56 KB HTML page can cost lexbor seconds and gigabytes, so no
threshold decides which bytes are parsed in the calling process (ADR 0018). The format
sniff (:func:`sniff`) is the one parse of a file's bytes done in the caller, and it is
bounded: a zip container's directory of at most ``Limits.max_members`` records, and at
most :data:`MIMETYPE_READ` decompressed bytes of its ``mimetype`` member, stored or
deflated only.

Each extractor's library is an optional extra; one that is missing is a clear
:class:`~groundkit.errors.MissingDependencyError`, and the indexer lists the file as
skipped with the install command.
"""

from __future__ import annotations

import importlib
import zipfile
from io import BytesIO
from pathlib import PurePosixPath

from ..errors import MissingDependencyError
from .base import DEFAULT_LIMITS, ExtractError, Extractor, Heading, Limits, Segment, TextView
from .zipsafe import _CENTRAL_RECORD, _ZIP_ERRORS

_SNIFF_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)

__all__ = [
    "DEFAULT_LIMITS", "EXTRACTORS", "ExtractError", "Extractor", "Heading", "Limits",
    "Segment", "TextView", "extract", "extractor", "for_file", "identity_of", "install_hint",
    "read",
]

_MODULES: dict[str, str] = {
    "pdf": "groundkit.extract.pdf",
    "html": "groundkit.extract.html",
    "docx": "groundkit.extract.office",
    "odt": "groundkit.extract.office",
    "epub": "groundkit.extract.epub",
    "ocr": "groundkit.extract.ocr",
}
"""Format name -> the module whose ``EXTRACTORS`` mapping holds its extractor."""

_BY_SUFFIX: dict[str, str] = {
    ".pdf": "pdf", ".html": "html", ".htm": "html", ".xhtml": "html",
    ".docx": "docx", ".odt": "odt", ".epub": "epub",
    # Image files are read only when an include glob asks for them (not in the defaults).
    ".png": "ocr", ".jpg": "ocr", ".jpeg": "ocr", ".tif": "ocr", ".tiff": "ocr",
}

EXTRACTORS: tuple[str, ...] = tuple(_MODULES)
"""Every format groundkit can extract, whether or not its library is installed."""


def extractor(name: str) -> Extractor:
    """The extractor of format ``name`` (its module imported on first use)."""
    if name not in _MODULES:
        raise ExtractError(f"no extractor for format {name!r}")
    module = importlib.import_module(_MODULES[name])
    found: Extractor = module.EXTRACTORS[name]
    return found


def sniff(data: bytes) -> str | None:
    """The format the content itself declares (PDF header, zip container), if any."""
    if data[:1024].lstrip(b"\0\t\n\r ").startswith(b"%PDF-"):
        return "pdf"
    if data.startswith(b"PK\x03\x04"):
        return _zip_format(data)
    return None


MIMETYPE_READ = 128
"""Decompressed bytes of a zip's ``mimetype`` member the sniff reads, at most: the
longest type it knows is 39 bytes, and the member's declared size is not trusted."""
_MIMETYPES = {b"application/epub+zip": "epub", b"application/vnd.oasis.opendocument.text": "odt"}


def _zip_format(data: bytes) -> str | None:
    """The format a zip container declares, read within fixed bounds in this process.

    The directory is read only when it lists at most ``max_members`` records (counted on
    the raw bytes first, as :class:`~groundkit.extract.zipsafe.SafeZip` does); the
    ``mimetype`` member only when it is stored or deflated and unencrypted, and then at
    most :data:`MIMETYPE_READ` bytes of its actual output (deflate's output is capped
    per call, whatever the header claims). Any other member is never decompressed here.
    """
    if data.count(_CENTRAL_RECORD) > DEFAULT_LIMITS.max_members:
        raise ExtractError(f"zip lists more than {DEFAULT_LIMITS.max_members} members")
    try:
        with zipfile.ZipFile(BytesIO(data)) as archive:
            names = set(archive.namelist())
            if "mimetype" in names:
                info = archive.getinfo("mimetype")
                if info.compress_type in _SNIFF_METHODS and not info.flag_bits & 0x1:
                    with archive.open(info) as member:
                        head = member.read(MIMETYPE_READ + 1)
                    found = _MIMETYPES.get(head.strip()) if len(head) <= MIMETYPE_READ else None
                    if found is not None:
                        return found
            if "word/document.xml" in names and "[Content_Types].xml" in names:
                return "docx"
    except _ZIP_ERRORS:  # a corrupt directory or mimetype member
        return None
    return None


def for_file(relpath: str, data: bytes) -> str | None:
    """The format to extract ``relpath`` as, or ``None`` for plain text.

    Content decides where it can (a ``%PDF-`` header, a zip container's declared
    type): a file whose name and content disagree is read as what it is. A name that
    claims a container the bytes are not is refused with a reason (a ``.docx`` that is
    not a DOCX would otherwise be read as binary text).
    """
    suffix = PurePosixPath(relpath).suffix.lower()
    declared = _BY_SUFFIX.get(suffix)
    found = sniff(data)
    if found is not None:
        return found
    if declared in ("pdf", "docx", "odt", "epub"):
        if not data:
            raise ExtractError(f"empty file (0 bytes): not a {declared.upper()}")
        article = "an" if declared in ("epub", "odt") else "a"
        raise ExtractError(f"not {article} {declared.upper()} file (its content does not say so)")
    return declared


def install_hint(name: str) -> str:
    """``install groundkit[EXTRA] to index PDFs``: the skip reason for a missing library."""
    found = extractor(name)
    return (f"{name.upper()} extractor not installed: "
            f"pip install 'groundkit[{found.extra}]' to index {name.upper()} files")


def identity_of(name: str) -> str:
    """The identity of format ``name``'s installed extractor (raises when missing)."""
    return extractor(name).identity()


def extract(name: str, data: bytes, limits: Limits = DEFAULT_LIMITS) -> TextView:
    """``data`` extracted as format ``name``, always in a child process with a time and
    memory limit: forked from the fork server (:mod:`~groundkit.extract.forkserver`),
    or from this process where there is none (:func:`~.sandbox.run_isolated`). Raises
    :class:`ExtractError` for a file it cannot read (a one-line reason, the sandbox's
    included) and :class:`~groundkit.errors.MissingDependencyError` for a missing
    library."""
    found = extractor(name)
    if not found.available():
        raise MissingDependencyError(found.library, found.extra, f"Extracting {name.upper()}")
    from . import forkserver, sandbox

    if name == "ocr" and limits is DEFAULT_LIMITS:
        from .ocr import OCR_LIMITS

        limits = OCR_LIMITS

    if forkserver.available():
        return forkserver.run(name, data, limits)
    return sandbox.run_isolated(name, data, limits)


def read(name: str, data: bytes) -> tuple[TextView, str]:
    """``data`` extracted as format ``name`` (:func:`extract`), and the identity of the
    extractor that made the view. A PDF with pages that hold images but no text is read
    by OCR (:mod:`groundkit.extract.ocr`: its text pages as the PDF extractor reads
    them, the others recognised) where OCR is installed; where it is not, or where OCR
    fails on it (too many pages, past its time), a partly scanned PDF keeps its text
    pages, and a wholly scanned one says why it is skipped."""
    from .pdf import SCANNED

    try:
        view = extract(name, data)
    except ExtractError as exc:
        if name != "pdf" or str(exc) != SCANNED:
            raise
        view = None
    ocr = extractor("ocr")
    if view is not None and (not view.scanned_pages or not ocr.available()):
        return view, identity_of(name)
    if not ocr.available():
        raise ExtractError("no text layer (scanned?): pip install 'groundkit[ocr]' and "
                           "Debian's tesseract-ocr-eng (make ocr) to read it by OCR")
    try:
        return extract("ocr", data), ocr.identity()
    except ExtractError:
        if view is None:
            raise
        return view, identity_of(name)  # OCR failed (too many pages, time): the text pages
