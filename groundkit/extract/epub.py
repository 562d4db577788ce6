"""EPUB: a book's spine documents in reading order, each mapped to its member's bytes.

The package is found as a reader finds it: ``META-INF/container.xml`` names the
package document (the OPF; the first ``rootfile``, preferring the OPF media type), whose
``spine`` lists manifest items in reading order. Each spine item that is a markup
document (``application/xhtml+xml``, or ``text/html`` from lax writers) is read with
the HTML extractor's :func:`~groundkit.extract.html.markup_view` (selectolax; segments
carry the member as ``part`` and byte ranges of its bytes, ``h1``-``h6`` are the
outline, data tables are marked row by row: :mod:`.tables`), and the chapters are joined
by a blank line (:func:`~groundkit.extract.base.join_views`). Items marked ``linear="no"`` are read
too, in spine order (they are the book's text, merely off the main path); the EPUB 3
navigation document (manifest ``properties="nav"``) is left out, since it repeats the
headings as a table of contents; a 0-byte chapter adds nothing; a spine item in
another format (an SVG page, an image) is skipped.

container.xml and the OPF are parsed with defusedxml (entities and external
references refused; a DTD, which some EPUB 2 packages carry, is tolerated). Every
``href`` is resolved against the OPF's folder, URL-decoded, and must stay inside the
container (:func:`~groundkit.extract.zipsafe.check_name`): a spine item pointing at
``../../etc/passwd`` or ``/etc/passwd`` makes the file an
:class:`~groundkit.extract.base.ExtractError` and is never read. So does a spine entry
missing from the manifest or the container (fail closed, rather than index a book
with holes). The container itself is read through
:class:`~groundkit.extract.zipsafe.SafeZip`. Like every extractor it runs in the
sandbox (:mod:`~groundkit.extract.sandbox`): a small container can hold chapters that
are large, or small and quadratic for the HTML parser.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import posixpath
from collections.abc import Iterator
from urllib.parse import unquote, urldefrag
from xml.etree.ElementTree import Element

from ..errors import MissingDependencyError
from .base import ExtractError, Extractor, Limits, TextView, join_views
from .zipsafe import SafeZip, check_name, xml_tree

ALGORITHM = "v1"
"""Bumped whenever the text view or its map would change for the same file (the HTML
extractor's own tag is part of the identity too)."""

_CONTAINER = "META-INF/container.xml"
_OPF_TYPE = "application/oebps-package+xml"
_MARKUP = frozenset(("application/xhtml+xml", "text/html"))
_LIBRARIES = ("selectolax", "defusedxml")


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _children(parent: Element | None, name: str) -> Iterator[Element]:
    """Children of ``parent`` named ``name`` in any namespace (lax OPFs omit it)."""
    return (child for child in parent if _local(child.tag) == name) if parent is not None \
        else iter(())


def _resolve(base: str, href: str) -> str:
    """The member ``href`` names, relative to member ``base``; refused if it leaves the
    container."""
    path = unquote(urldefrag(href).url)
    if not path:
        raise ExtractError(f"empty href in {base}")
    return check_name(posixpath.normpath(posixpath.join(posixpath.dirname(base), path)))


def package_path(archive: SafeZip) -> str:
    """The member name of the package document, from ``META-INF/container.xml``."""
    container = xml_tree(archive.read(_CONTAINER), _CONTAINER)
    rootfiles = [r for r in container.iter() if _local(r.tag) == "rootfile" and r.get("full-path")]
    rootfiles.sort(key=lambda r: r.get("media-type") != _OPF_TYPE)
    if not rootfiles:
        raise ExtractError(f"{_CONTAINER} names no package document")
    return check_name(rootfiles[0].get("full-path", ""))


def spine(archive: SafeZip) -> list[str]:
    """The member names of the spine's markup documents, in reading order."""
    opf_path = package_path(archive)
    opf = xml_tree(archive.read(opf_path), opf_path)
    manifest = {item.get("id"): item
                for item in _children(next(_children(opf, "manifest"), None), "item")}
    order = next(_children(opf, "spine"), None)
    if order is None:
        raise ExtractError(f"package document {opf_path} has no spine")
    names: list[str] = []
    for ref in _children(order, "itemref"):
        item = manifest.get(ref.get("idref"))
        if item is None:
            raise ExtractError(f"spine item {ref.get('idref')!r} is not in the manifest")
        nav = "nav" in (item.get("properties") or "").split()
        if item.get("media-type") in _MARKUP and not nav:
            names.append(_resolve(opf_path, item.get("href", "")))
    return names


class EpubExtractor:
    """EPUB 2 and 3 books: see the module."""

    name = "epub"
    library = "selectolax"
    extra = "office"
    suffixes: tuple[str, ...] = ("*.epub",)

    def available(self) -> bool:
        return all(importlib.util.find_spec(lib) is not None for lib in _LIBRARIES)

    def identity(self) -> str:
        for lib in _LIBRARIES:
            if importlib.util.find_spec(lib) is None:
                raise MissingDependencyError(lib, self.extra, "Extracting EPUB")
        from .html import OPTIONS

        versions = ",".join(f"{lib}={importlib.metadata.version(lib)}" for lib in _LIBRARIES)
        return f"{self.name}/{versions};{ALGORITHM},html-{OPTIONS}"

    def extract(self, data: bytes, limits: Limits) -> TextView:
        with SafeZip(data, limits) as archive:
            chapters = [(name, archive.read(name)) for name in spine(archive)]
        return _view(chapters, limits)


def _view(chapters: list[tuple[str, bytes]], limits: Limits) -> TextView:
    """The book's view: its non-empty chapters read as HTML, joined."""
    from .html import markup_view

    view = join_views("epub", [markup_view(chapter, part=name, limits=limits)
                               for name, chapter in chapters if chapter])
    if len(view.text) > limits.max_view_chars:
        raise ExtractError(f"text view longer than {limits.max_view_chars} characters")
    return view


EXTRACTORS: dict[str, Extractor] = {"epub": EpubExtractor()}
