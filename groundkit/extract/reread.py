"""Making a file's text view again, exactly as the index made it, or saying why not.

Verification (:mod:`groundkit.verify`) and the harness's bring-your-own suites
(``grk eval``) both need a changed or re-read file's view *as indexed*: by the
extractor whose identity the document recorded. Anything else would compare a citation
with text the index never saw, so each way that can fail is an :class:`ExtractError`
naming what happened and what to do.
"""

from __future__ import annotations

from ..errors import MissingDependencyError
from . import extract, for_file, identity_of, install_hint
from .base import DEFAULT_LIMITS, ExtractError, Limits, TextView


def as_indexed(relpath: str, data: bytes, indexed: str,
               limits: Limits = DEFAULT_LIMITS) -> TextView:
    """The view of ``data`` made by the extractor with identity ``indexed``.

    Raises :class:`ExtractError` when the file is now another format, when the installed
    extractor is missing or of another identity (re-index), or when it no longer
    extracts.
    """
    fmt = indexed.split("/", 1)[0]
    try:
        now = for_file(relpath, data)
    except ExtractError as exc:
        raise ExtractError(f"file no longer extracts: {exc}") from None
    if now != fmt and not (fmt == "ocr" and now == "pdf"):  # a scanned PDF read by OCR
        raise ExtractError(f"file changed format (indexed as {fmt.upper()}, now "
                           f"{(now or 'plain text').upper()}): re-index the collection")
    try:
        installed = identity_of(fmt)
        if installed != indexed:
            raise ExtractError(f"the installed extractor ({installed}) is not the one that "
                               f"indexed the file ({indexed}): re-index the collection")
        return extract(fmt, data, limits)
    except MissingDependencyError:
        raise ExtractError(install_hint(fmt)) from None
    except ExtractError as exc:
        if str(exc).endswith("re-index the collection"):
            raise
        raise ExtractError(f"file no longer extracts: {exc}") from None
