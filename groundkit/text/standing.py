"""Whether a document says it no longer holds: archived, superseded, deprecated, replaced.

A document is *superseded* when

* a folder of its path is named ``archive``, ``archived``, ``superseded``, ``deprecated``,
  ``obsolete`` or ``old``;
* the file's own metadata says so (an HTML ``<meta>``, a PDF's document information,
  an office file's properties: the extractor reports it as ``TextView.status``);
* its front matter (a leading ``---`` block) says ``status: archived`` (or superseded,
  deprecated, obsolete, replaced); or
* a line near its start opens with such a word as a notice (``> **SUPERSEDED.** …``,
  ``ARCHIVED:``, ``Note: deprecated …``) or says "this document (page, policy, version)
  is archived / has been superseded / was replaced".

A word in passing ("Version 1 of the API is deprecated", "the archived 2022 version")
is not a notice. The indexer records which rule matched (the *evidence*) with each
document, so every hit and answer can show it and a reader can judge it; the document is
never hidden.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ..extract.declared import WORD

FOLDERS = frozenset({"archive", "archived", "superseded", "deprecated", "obsolete", "old"})
HEAD = 600
"""How far into a document a notice is looked for (code points)."""
_WORD = WORD
_FRONT = re.compile(r"\A\ufeff?---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
_STATUS = re.compile(rf"(?im)^\s*status\s*:\s*[\"']?({_WORD})\b")
_NOTICE = re.compile(
    r"(?im)^[ \t]*(?:>[ \t]*)*[*_\[\]! \t]*"
    r"(?:(?:note|notice|warning|important)[ \t]*:?[*_ \t]*:?[ \t]*)?"
    rf"({_WORD}(?=[*_]*[ \t]*(?:[.:!\u2014\u2013-]|$))"
    rf"|this (?:document|page|policy|version|file|guide) (?:is|has been|was) {_WORD}\b)")


def superseded(path: str, head: str | None, declared: str = "") -> str | None:
    """The evidence that the document at ``path`` (starting with ``head``, with
    ``declared`` its file metadata's word on it) is superseded, or ``None`` when nothing
    says so."""
    folders = [p for p in PurePosixPath(path).parts[:-1] if p.lower() in FOLDERS]
    if folders:
        return f"in a folder named {folders[-1]}/"
    if declared:
        return declared
    if not head:
        return None
    front = _FRONT.match(head)
    if front and (status := _STATUS.search(front.group(1))):
        return f"front matter: status {status.group(1).lower()}"
    notice = _NOTICE.search(head[:HEAD])
    if notice:
        line = head[notice.start():].lstrip(" \t>").splitlines()[0].strip()
        return f"notice: {line[:120]}"
    return None

