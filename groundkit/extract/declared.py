"""What a file's own metadata says about whether it still holds.

Formats carry a status outside their text: an HTML page's ``<meta>`` and ``<link>``
elements, a PDF's document information dictionary, an office file's properties.
Each reader here returns the *evidence* (a short line naming the field and its value)
when that metadata says the document is archived, superseded, deprecated, obsolete,
replaced or withdrawn, and ``""`` otherwise. The extractor puts it on
:attr:`groundkit.extract.TextView.status`; :mod:`groundkit.text.standing` weighs it
with the document's path and first lines.

What counts (and nothing else, so a word in passing does not mark a document):

* HTML: ``<meta name="status|document-status|doc-status" content="… archived …">``,
  ``<meta name="dcterms.isReplacedBy" content="…">`` (Dublin Core; ``dc.`` too) and
  ``<link rel="successor-version" href="…">`` (RFC 5829).
* PDF: a status word in ``/Keywords`` or ``/Subject``, or a ``/Title`` that opens with
  one (``ARCHIVED: Retention policy``, ``[Superseded] …``).
* DOCX: ``cp:contentStatus`` or ``cp:keywords`` in ``docProps/core.xml``; ODT:
  ``meta:keyword`` or a ``meta:user-defined`` field named ``Status`` in ``meta.xml``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .zipsafe import SafeZip

WORDS = ("superseded", "archived", "deprecated", "obsolete", "replaced", "withdrawn")
WORD = "(?:" + "|".join(WORDS) + ")"
"""The status words, as a regular expression group (shared with the text rules)."""
_IN_VALUE = re.compile(rf"(?i)\b({WORD})\b")
_OPENS_WITH = re.compile(rf"(?i)^\W*({WORD})\b")
_STATUS_NAMES = frozenset({"status", "document-status", "doc-status"})
_REPLACED_BY = frozenset({"dcterms.isreplacedby", "dc.isreplacedby", "dcterms.is_replaced_by"})
MAX_SHOWN = 120


def status_word(value: str) -> str | None:
    """The first status word in ``value`` (lower-cased), or ``None``."""
    found = _IN_VALUE.search(value)
    return found.group(1).lower() if found else None


def _shown(value: str) -> str:
    value = " ".join(value.split())
    return value if len(value) <= MAX_SHOWN else value[:MAX_SHOWN - 1] + "…"


def from_html(elements: Iterable[tuple[str, Mapping[str, Any]]]) -> str:
    """Evidence from a page's ``(tag, attributes)`` of its ``meta`` and ``link`` elements."""
    for tag, attrs in elements:
        if tag == "meta":
            name = str(attrs.get("name") or attrs.get("property") or "").strip().lower()
            content = str(attrs.get("content") or "").strip()
            if name in _STATUS_NAMES and status_word(content):
                return f'HTML <meta name="{name}">: {_shown(content)}'
            if name in _REPLACED_BY and content:
                return f'HTML <meta name="{name}">: replaced by {_shown(content)}'
        elif tag == "link":
            rel = str(attrs.get("rel") or "").lower().split()
            if "successor-version" in rel:
                href = str(attrs.get("href") or "").strip()
                return f'HTML <link rel="successor-version">: {_shown(href) or "(no href)"}'
    return ""


def from_pdf(info: Mapping[str, str]) -> str:
    """Evidence from a PDF's document information (``Title``, ``Subject``, ``Keywords``)."""
    for key in ("Keywords", "Subject"):
        value = str(info.get(key) or "")
        if status_word(value):
            return f"PDF {key}: {_shown(value)}"
    title = str(info.get("Title") or "")
    if _OPENS_WITH.search(title):
        return f"PDF Title: {_shown(title)}"
    return ""


def from_properties(fmt: str, properties: Mapping[str, str]) -> str:
    """Evidence from an office file's properties (field name -> value), in order."""
    for name, value in properties.items():
        if status_word(value):
            return f"{fmt.upper()} {name}: {_shown(value)}"
    return ""


_CORE = "{http://schemas.openxmlformats.org/package/2006/metadata/core-properties}"
_META = "{urn:oasis:names:tc:opendocument:xmlns:meta:1.0}"
_OFFICE = "{urn:oasis:names:tc:opendocument:xmlns:office:1.0}"


def office_properties(fmt: str, archive: SafeZip) -> dict[str, str]:
    """The properties of a DOCX (``docProps/core.xml``) or ODT (``meta.xml``) that can
    carry a status, by field name; empty when the part is absent."""
    from .zipsafe import xml_tree

    part = "docProps/core.xml" if fmt == "docx" else "meta.xml"
    if part not in archive:
        return {}
    root = xml_tree(archive.read(part), part)
    if fmt == "docx":
        return {f"cp:{name}": (node.text or "").strip() for name in ("contentStatus", "keywords")
                if (node := root.find(_CORE + name)) is not None}
    meta = root.find(_OFFICE + "meta")
    if meta is None:
        return {}
    found = {"meta:keyword": " ".join((k.text or "").strip() for k in meta.iter(_META + "keyword"))}
    for field in meta.iter(_META + "user-defined"):
        if (field.get(_META + "name") or "").strip().lower() == "status":
            found["meta:user-defined Status"] = (field.text or "").strip()
    return found
