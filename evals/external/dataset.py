"""The format-neutral form of an external test collection: documents, queries, judgments.

Every reader (BEIR directories, ir_datasets, the Glasgow SMART files) produces a
:class:`Dataset`; every writer and the importer consume one. Formats (how to
parse) live in their own modules; which files and checksums make up a named
dataset lives in :mod:`evals.external.registry`.

Judgments are document-level: ``qrels[query_id][doc_id] = relevance``. Only
positive relevance is kept (:func:`positive_qrels`): a zero or negative
judgment never changes nDCG, AP or recall, and a query left with no relevant
document is not a judged query (trec_eval's convention).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groundkit.errors import GroundkitError

Qrels = dict[str, dict[str, int]]


class DatasetError(GroundkitError, ValueError):
    """A dataset whose files or values do not fit together."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Doc:
    """One document as its collection ships it (BEIR: ``_id``, ``title``, ``text``)."""

    doc_id: str
    title: str = ""
    text: str = ""

    def __post_init__(self) -> None:
        if not self.doc_id or self.doc_id != self.doc_id.strip() or "\t" in self.doc_id:
            raise DatasetError(f"document id {self.doc_id!r} is empty or has tabs/edge spaces")


@dataclass(frozen=True, slots=True, kw_only=True)
class Dataset:
    """Documents, queries and judgments of one split, plus where they came from."""

    name: str
    docs: tuple[Doc, ...]
    queries: Mapping[str, str]
    qrels: Mapping[str, Mapping[str, int]]
    split: str = "test"
    source: Mapping[str, Any] = field(default_factory=dict)
    _fingerprint: list[str] = field(default_factory=list, init=False, repr=False,
                                    compare=False)
    """The memoised :meth:`fingerprint` (a dataset is a value: its content never changes)."""

    def __post_init__(self) -> None:
        ids = Counter(d.doc_id for d in self.docs)
        if len(ids) != len(self.docs):
            dupes = sorted(i for i, n in ids.items() if n > 1)
            raise DatasetError(f"{self.name}: duplicate document ids {dupes[:5]}")
        missing = sorted(q for q in self.qrels if q not in self.queries)
        if missing:
            raise DatasetError(f"{self.name}: judged queries without text {missing[:5]}")

    @property
    def judged_query_ids(self) -> list[str]:
        """Queries with at least one relevant document, sorted."""
        return sorted(q for q, docs in self.qrels.items() if any(r > 0 for r in docs.values()))

    def counts(self) -> dict[str, int]:
        return {"docs": len(self.docs), "queries": len(self.queries),
                "judged_queries": len(self.judged_query_ids),
                "qrels": sum(len(d) for d in self.qrels.values())}

    def fingerprint(self) -> str:
        """sha256 of the content (documents, queries, judgments): what a report measured."""
        if not self._fingerprint:
            self._fingerprint.append(self._digest())
        return self._fingerprint[0]

    def _digest(self) -> str:
        h = hashlib.sha256()
        for d in self.docs:
            h.update(json.dumps([d.doc_id, d.title, d.text], ensure_ascii=False).encode())
            h.update(b"\n")
        h.update(json.dumps(dict(sorted(self.queries.items())), ensure_ascii=False).encode())
        rows = sorted((q, d, r) for q, docs in self.qrels.items() for d, r in docs.items())
        h.update(json.dumps(rows, ensure_ascii=False).encode())
        return h.hexdigest()


def positive_qrels(qrels: Mapping[str, Mapping[str, int]]) -> Qrels:
    """Only relevance > 0, and only queries left with a relevant document."""
    out: Qrels = {}
    for query_id, docs in qrels.items():
        kept = {d: int(r) for d, r in docs.items() if r > 0}
        if kept:
            out[query_id] = kept
    return out


JOINS: dict[str, str] = {
    "flat": "title + '\\n' + text, always (Anserini's BeirFlatCollection 'contents')",
    "text": "text only; the title is dropped",
}
"""How a document's title and text become the one text groundkit indexes."""


def join_text(doc: Doc, join: str) -> str:
    """The text a document is indexed as under ``join`` (see :data:`JOINS`)."""
    if join == "flat":
        return f"{doc.title}\n{doc.text}"
    if join == "text":
        return doc.text
    raise DatasetError(f"unknown title/text join {join!r}; valid choices: {', '.join(JOINS)}")


def split_text(joined: str, title: str, join: str) -> str | None:
    """The ``text`` that :func:`join_text` joined with ``title``; None when it does not fit."""
    if join == "flat":
        head = f"{title}\n"
        return joined[len(head):] if joined.startswith(head) else None
    if join == "text":
        return joined
    raise DatasetError(f"unknown title/text join {join!r}; valid choices: {', '.join(JOINS)}")
