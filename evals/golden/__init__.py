"""The golden corpus: a versioned, quote-anchored test set (one kind of suite).

:mod:`.model` holds the value types and the rules per version, :mod:`.parse`
reads question lines, :mod:`.rules` checks each question, :mod:`.split` deals
the train/calibration/test split, :mod:`.corpus` loads, lints and writes the
manifest of a ``golden/vN`` folder, and :mod:`.judgments` turns quotes into
chunk relevance. See ``golden/README.md``.
"""

from .corpus import (
    DOCS_DIR,
    MANIFEST_FILE,
    QUESTIONS_FILE,
    lint_golden,
    load_golden,
    write_manifest,
)
from .model import (
    KINDS,
    LONG_DOCUMENT_CHARS,
    PARTS,
    TRAITS,
    Answer,
    Golden,
    Question,
    rules_for,
)
from .parse import find_all

__all__ = [
    "DOCS_DIR", "KINDS", "LONG_DOCUMENT_CHARS", "MANIFEST_FILE", "PARTS", "QUESTIONS_FILE",
    "TRAITS", "Answer", "Golden", "Question", "find_all", "lint_golden", "load_golden",
    "rules_for", "write_manifest",
]
