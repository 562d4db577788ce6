"""Zip containers made and taken apart in tests (DOCX, ODT, EPUB, hostile zips)."""

from __future__ import annotations

import zipfile
from io import BytesIO


def members(data: bytes) -> dict[str, bytes]:
    """Every member of a zip, by name."""
    with zipfile.ZipFile(BytesIO(data)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def packed(files: dict[str, bytes] | dict[str, bytes | str]) -> bytes:
    """A deflated zip holding ``files`` in the order given."""
    buffer = BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()
