"""Stopword lists the harness applies on top of an analyzer, to match another engine.

groundkit's analyzer presets carry Lucene's 33-word list. Terrier (and so
PyTerrier's published Vaswani numbers) removes far more words, which changes
both query terms and document lengths. The lists here are never copied into
this repository; each is loaded at run time from where it is published:

* ``terrier``: Terrier's ``stopword-list.txt`` (733 words). Taken from
  ``groundkit.text.analysis.STOPWORD_LISTS["terrier"]`` when the analyzer has it,
  else from ``<data>/terrier/stopword-list.txt`` verified by sha256.
* ``glasgow``: the Glasgow IR group's list (318 words) as scikit-learn ships it
  (``sklearn.feature_extraction.text.ENGLISH_STOP_WORDS``); Terrier's list
  grew from the same group's work.

Words are matched against lowercased surface tokens, before stemming (as
Terrier's ``Stopwords`` pipeline stage precedes its ``PorterStemmer``).
"""

from __future__ import annotations

import os
from functools import cache

from groundkit.errors import IntegrityError, UsageError
from groundkit.text import analysis

from .checksums import MANIFEST, data_dir, verify_file

SOURCES: dict[str, str] = {
    "terrier": "Terrier's stopword-list.txt (733 words): groundkit's 'terrier' list when the "
               "analyzer has one, else <data>/terrier/stopword-list.txt (sha256-checked)",
    "glasgow": "the Glasgow IR group list (318 words) as scikit-learn's ENGLISH_STOP_WORDS",
}
TERRIER_FILE = "terrier/stopword-list.txt"


def register(name: str, data: str | os.PathLike[str] | None = None) -> str:
    """Load list ``name`` and register it with groundkit's analyzer; returns the name.

    An analyzer naming it (``Analyzer(stopwords=name)``) then drops its words
    from documents and queries alike, and records the list in its identity.
    """
    if name not in analysis.STOPWORD_LISTS:
        analysis.register_stopwords(name, load(name, data), SOURCES[name])
    return name


def load(name: str, data: str | os.PathLike[str] | None = None) -> frozenset[str]:
    """The stopword list ``name`` (see :data:`SOURCES`); an error says how to provide it."""
    if name == "terrier":
        return _terrier(str(data_dir(data)))
    if name == "glasgow":
        return _glasgow()
    raise UsageError(f"unknown stopword list {name!r}; valid choices: {', '.join(SOURCES)}")


@cache
def _terrier(data: str) -> frozenset[str]:
    registered = analysis.STOPWORD_LISTS.get("terrier")
    if registered is not None:
        return frozenset(registered[0])
    path = data_dir(data) / TERRIER_FILE
    if not path.is_file():
        raise IntegrityError(
            f"Terrier's stopword list is not available: {path} is missing. Stage terrier-core's "
            f"stopword-list.txt there (sha256 {MANIFEST[TERRIER_FILE].sha256})")
    verify_file(path, MANIFEST[TERRIER_FILE])
    words = frozenset(w.strip().lower() for w in path.read_text("utf-8").splitlines())
    return words - {""}


def _glasgow() -> frozenset[str]:
    from groundkit.questions.rules import glasgow_stopwords

    return glasgow_stopwords()
