"""A collection as a question file is checked against: its documents' text and chunks now.

Quotes are exact spans of the text a document was indexed from (an extracted
format's text view, made again by the extractor that indexed it); a file changed
since indexing fails closed, since the quotes would be checked against text the
index does not hold.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from .. import store
from ..collection import Collection
from ..collection.home import Home
from ..errors import DecodeError, IntegrityError
from ..extract.reread import as_indexed
from ..sources import decode_bytes
from ..text.analysis import Analyzer, split_tokens
from ..verify import Unreadable, read_inside


def current_documents(coll: Collection) -> dict[str, str]:
    """Every document's text as it is now (an extracted format's text view, made by the
    extractor that indexed it); ``IntegrityError`` if any changed since indexing."""
    snap = coll.snapshot
    texts, changed = {}, []
    for row in store.generation_documents(snap.conn, snap.generation):
        raw = read_inside(row.root, row.relpath, snap.max_bytes)
        if isinstance(raw, Unreadable):
            changed.append(f"{row.doc_id} ({raw.reason})")
            continue
        if hashlib.sha256(raw).hexdigest() != row.sha256:
            changed.append(f"{row.doc_id} (modified)")
            continue
        try:
            texts[row.doc_id] = (as_indexed(row.relpath, raw, row.extractor).text
                                 if row.extractor else decode_bytes(raw).text)
        except DecodeError as exc:  # the extractor changed; plain text decoded when indexed
            changed.append(f"{row.doc_id} ({exc})")
    if changed:
        raise IntegrityError(
            f"{len(changed)} document(s) of collection {coll.name!r} changed since indexing "
            f"({', '.join(changed[:5])}); re-index with grk index before evaluating")
    return texts


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    chunk_id: str
    start: int
    end: int


class Words:
    """Which documents hold which surface tokens: narrows an exact-text search.

    A text can occur in a document only if the document holds every one of the
    text's *interior* tokens (its first and last may be cut mid-word); a text of
    fewer than three tokens narrows nothing. The answer is then checked by an
    exact search, so this never changes a result, only how many documents are read.
    """

    def __init__(self, documents: dict[str, str]) -> None:
        self._documents = documents
        self._postings: dict[str, set[str]] | None = None

    def _built(self) -> dict[str, set[str]]:
        if self._postings is None:
            postings: dict[str, set[str]] = defaultdict(set)
            for doc_id, text in self._documents.items():
                for token in set(split_tokens(text)):
                    postings[token].add(doc_id)
            self._postings = dict(postings)
        return self._postings

    def candidates(self, text: str) -> list[str]:
        """The documents that may contain ``text`` (sorted), a superset of those that do."""
        tokens = split_tokens(text)[1:-1]
        if not tokens:
            return sorted(self._documents)
        postings = self._built()
        sets = sorted((postings.get(t, set()) for t in set(tokens)), key=len)
        found = set(sets[0])
        for other in sets[1:]:
            found &= other
            if not found:
                break
        return sorted(found)

    def containing(self, text: str) -> list[str]:
        """The documents that contain ``text`` word for word (sorted)."""
        return [d for d in self.candidates(text) if text in self._documents[d]]


@dataclass(frozen=True, slots=True)
class Indexed:
    """One generation of a collection: documents as indexed, their chunks, the analyzer."""

    name: str
    generation: int
    documents: dict[str, str]
    chunks: dict[str, list[ChunkSpan]]
    """doc_id -> its chunks by start offset."""
    analyzer: Analyzer
    words: Words = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "words", Words(self.documents))

    @classmethod
    def open(cls, name: str, home: Home = None) -> Indexed:
        with Collection.open(name, home) as coll:
            documents = current_documents(coll)
            snap = coll.snapshot
            chunks: dict[str, list[ChunkSpan]] = defaultdict(list)
            for c in snap.chunks():
                chunks[c.doc_id].append(ChunkSpan(c.chunk_id, c.start, c.end))
            analyzer = snap.bm25().analyzer
            generation = snap.generation
        for spans in chunks.values():
            spans.sort(key=lambda s: (s.start, s.end))
        return cls(name, generation, documents, dict(chunks), analyzer)

    def chunks_over(self, doc_id: str, start: int, end: int) -> list[ChunkSpan]:
        """The chunks overlapping ``[start, end)`` of ``doc_id``, the one holding it whole first."""
        spans = self.chunks.get(doc_id, [])
        hi = bisect.bisect_left([s.start for s in spans], end)
        over = [s for s in spans[:hi] if s.end > start]
        return sorted(over, key=lambda s: (not (s.start <= start and end <= s.end), s.start))
