"""What an answer is made of: passages offered to the answerer, and exact citations.

A :class:`Passage` is one search hit whose span was re-read from its file just now;
only verified passages are offered to an answerer. Whatever the answerer quotes
becomes a :class:`Citation` through :meth:`Passage.cite`, which maps an offset range
of the passage's text to the file's own offsets (code points, UTF-16, bytes, lines),
so a citation always points at the file, never at text a model produced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidSpanError
from ..model import (
    OFFSET_UNIT,
    Chunk,
    Hit,
    Locator,
    Replaced,
    Status,
    open_link,
    page_place,
    utf16_len,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Citation:
    """An exact span of a source file, with the verdict its passage got when it was cited."""

    collection: str
    chunk_id: str
    """The chunk the span lies in (``grk fetch`` re-checks the whole chunk)."""
    path: str
    start: int
    end: int
    utf16_start: int
    utf16_end: int
    byte_start: int | None
    """``None`` when the chunk's byte length matches neither UTF-8 nor UTF-16."""
    byte_end: int | None
    start_line: int
    end_line: int
    text: str
    verdict: str
    passage: int
    """The number of the passage it was cited from (1-based)."""
    headings: tuple[str, ...] = ()
    locator: Locator | None = None
    """Where the quote came from in an extracted format (its PDF pages and page offsets)."""
    superseded: str | None = None
    """Why its document says it no longer holds (:mod:`.standing`); ``None``: current."""
    replaced: tuple[Replaced, ...] = ()
    """The places of the passage that did not verify, when its verified copy is cited in
    their place (:attr:`groundkit.model.Hit.replaced`)."""
    file: str | None = None
    """The source file's absolute path (for :attr:`link`), where the search knew it."""

    @property
    def link(self) -> str | None:
        """Where a person opens the quote at its place (:func:`~groundkit.model.open_link`)."""
        return open_link(self.file, self.locator, self.start_line) if self.file else None

    def to_dict(self) -> dict[str, Any]:
        return {"collection": self.collection, "chunk_id": self.chunk_id, "path": self.path,
                "offset_unit": OFFSET_UNIT, "start": self.start, "end": self.end,
                "utf16_start": self.utf16_start, "utf16_end": self.utf16_end,
                "byte_start": self.byte_start, "byte_end": self.byte_end,
                "start_line": self.start_line, "end_line": self.end_line, "text": self.text,
                "verdict": self.verdict, "passage": self.passage,
                "headings": list(self.headings),
                "source": self.locator.to_dict() if self.locator else None,
                "superseded": self.superseded,
                "replaced": [r.to_dict() for r in self.replaced],
                "page": page_place(self.locator) or None, "file": self.file,
                "link": self.link}

    def page_location(self, document_index: int) -> dict[str, Any] | None:
        """The citation as an Anthropic Citations ``page_location`` (PDF pages, the end page
        exclusive), or ``None`` when it did not come from PDF pages."""
        pages = self.locator.pages if self.locator else ()
        if not pages:
            return None
        return {"type": "page_location", "cited_text": self.text,
                "document_index": document_index, "document_title": self.path,
                "start_page_number": pages[0], "end_page_number": pages[-1] + 1}

    def char_location(self, document_index: int) -> dict[str, Any]:
        """The citation as an Anthropic Citations ``char_location`` over the whole file
        (``document_index`` numbers the cited files in the answer's ``documents``)."""
        return {"type": "char_location", "cited_text": self.text,
                "document_index": document_index, "document_title": self.path,
                "start_char_index": self.start, "end_char_index": self.end}


@dataclass(frozen=True, slots=True, kw_only=True)
class Passage:
    """A hit offered to an answerer, numbered, with the verdict of re-reading it now."""

    number: int
    collection: str
    hit: Hit
    verdict: Status
    superseded: str | None = None
    """Why its document says it no longer holds (:mod:`.standing`); ``None``: current."""

    @property
    def chunk(self) -> Chunk:
        return self.hit.chunk

    @property
    def text(self) -> str:
        return self.hit.chunk.text

    @property
    def verified(self) -> bool:
        return self.verdict is Status.VERIFIED

    def cite(self, start: int, end: int) -> Citation:
        """The citation of ``text[start:end]`` (offsets into this passage's text)."""
        c = self.chunk
        if not 0 <= start < end <= len(c.text):
            raise InvalidSpanError(f"[{start}, {end}) is not inside passage {self.number} "
                                   f"(length {len(c.text)})")
        before, quoted = c.text[:start], c.text[start:end]
        byte_start, byte_end = _byte_span(c, before, quoted)
        first = c.start_line + before.count("\n")
        return Citation(
            collection=self.collection, chunk_id=c.chunk_id, path=c.doc_id,
            start=c.start + start, end=c.start + end,
            utf16_start=c.utf16_start + utf16_len(before),
            utf16_end=c.utf16_start + utf16_len(before) + utf16_len(quoted),
            byte_start=byte_start, byte_end=byte_end, start_line=first,
            end_line=first + quoted.rstrip("\n").count("\n"), text=quoted,
            verdict=self.verdict.value, passage=self.number,
            headings=c.heading_path_at(start),
            locator=c.locator.narrow(c.start + start, c.start + end) if c.locator else None,
            superseded=self.superseded, replaced=self.hit.replaced, file=self.hit.file)

    def search_result(self) -> dict[str, Any]:
        """The passage as an Anthropic ``search_result`` content block."""
        c = self.chunk
        return {"type": "search_result", "source": f"{c.doc_id}#{c.start}-{c.end}",
                "title": c.doc_id, "content": [{"type": "text", "text": c.text}],
                "citations": {"enabled": True}}


def _byte_span(chunk: Chunk, before: str, quoted: str) -> tuple[int | None, int | None]:
    """Byte offsets of a sub-span, in whichever encoding the chunk's byte length implies."""
    size = chunk.byte_end - chunk.byte_start
    if size == len(chunk.text.encode("utf-8")):
        lead, width = len(before.encode("utf-8")), len(quoted.encode("utf-8"))
    elif size == 2 * utf16_len(chunk.text):
        lead, width = 2 * utf16_len(before), 2 * utf16_len(quoted)
    else:  # pragma: no cover - every decoder groundkit has is UTF-8 or UTF-16
        return None, None
    return chunk.byte_start + lead, chunk.byte_start + lead + width


@dataclass(frozen=True, slots=True, kw_only=True)
class Sentence:
    """One sentence of an answer, with the citations that support it."""

    text: str
    citations: tuple[Citation, ...] = ()
    supported: bool = True
    """False for an LLM sentence with no verified quote (shown, marked unsupported)."""
    quotes: tuple[dict[str, Any], ...] = ()
    """For LLM answers: every quote the model made, with its own check result."""
    context: Citation | None = None
    """For a quoted table row: its table's header row (the column names), cited."""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "supported": self.supported,
                "citations": [c.to_dict() for c in self.citations],
                "quotes": [dict(q) for q in self.quotes],
                "context": self.context.to_dict() if self.context else None}


@dataclass(frozen=True, slots=True, kw_only=True)
class Side:
    """One source's values, with the citation that says them."""

    values: tuple[str, ...]
    citation: Citation

    def to_dict(self) -> dict[str, Any]:
        return {"values": list(self.values), "superseded": self.citation.superseded,
                "citation": self.citation.to_dict()}


@dataclass(frozen=True, slots=True, kw_only=True)
class Conflict:
    """Sources that give different values for the same thing."""

    about: str
    """What the sides are about: a table row's first cell, or the words they share."""
    kind: str
    """The kind of value that differs: a unit (``day``, ``mb``), ``version``, ``date``,
    ``year`` or ``number``."""
    sides: tuple[Side, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"about": self.about, "kind": self.kind,
                "sides": [s.to_dict() for s in self.sides]}


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What ``grk ask`` returns: an answer, an abstention, or a withheld LLM reply."""

    question: str
    collection: str
    mode: str
    kind: str
    """``extractive``, ``llm``, ``abstained`` (the gate), ``empty`` (nothing verified to
    answer from) or ``withheld`` (an LLM reply none of whose quotes held)."""
    sentences: tuple[Sentence, ...] = ()
    passages: tuple[Passage, ...] = ()
    message: str = ""
    conflicts: tuple[Conflict, ...] = ()
    """Where the cited sources and the other passages give different values for the
    same thing (:mod:`.conflicts`): each side with its citation."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Mode-specific evidence: the gate's decision, the rewrite, the advisory judgement,
    the model's name."""

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    @property
    def citations(self) -> list[Citation]:
        return [c for s in self.sentences for c in s.citations]

    def to_dict(self) -> dict[str, Any]:
        cited = list(dict.fromkeys(c.path for c in self.citations))
        return {
            "question": self.question, "collection": self.collection, "mode": self.mode,
            "kind": self.kind, "answer": self.text, "message": self.message,
            "sentences": [s.to_dict() for s in self.sentences],
            "citations": [c.to_dict() for c in self.citations],
            "conflicts": [c.to_dict() for c in self.conflicts],
            "passages": [{"number": p.number, "verdict": p.verdict.value,
                          "superseded": p.superseded, **p.hit.to_dict(p.collection)}
                         for p in self.passages],
            "anthropic": {
                # document_index numbers cited_documents (send those files as documents)
                "cited_documents": cited,
                "char_locations": [c.char_location(cited.index(c.path))
                                   for c in self.citations],
                "page_locations": [page for c in self.citations
                                   if (page := c.page_location(cited.index(c.path)))],
                "search_results": [p.search_result() for p in self.passages],
            },
            **self.extra,
        }
