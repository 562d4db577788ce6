"""Quote-anchored judgments: the relevance of chunks derived from answer spans.

Golden questions name the exact quote that answers them, resolved to a span
``[qs, qe)`` of code points in the decoded document (:mod:`evals.golden`). A
chunk is any span ``[cs, ce)`` of a document, so judgments survive re-chunking:
they are computed, never stored. The rule, for an answer and a chunk of the
*same* document::

    overlap   = max(0, min(ce, qe) - max(cs, qs))
    relevance = 2  if overlap == qe - qs                       # the whole quote is inside
              = 1  elif overlap >= 0.5 * min(qe - qs, ce - cs)  # a substantial part
              = 0  otherwise                                   # not relevant

A chunk's relevance for a question is the maximum over the question's answers;
chunks of other documents are not relevant. Every question gets an entry, and
``no_answer`` questions (and any question no chunk overlaps) get an empty one,
so an evaluation counts them rather than skipping them.

Chunk offsets must index the same text as the golden offsets: the file decoded
by :func:`groundkit.sources.decode_bytes`, BOM stripped, no newline translation.
A collection indexed at ``golden/vN/docs`` has exactly the golden ``doc_id`` s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Protocol

from groundkit.errors import UsageError

from .model import Golden

WHOLE_QUOTE = 2
"""Relevance of a chunk that contains a whole answer quote."""
SUBSTANTIAL_PART = 1
"""Relevance of a chunk that overlaps a substantial part of a quote (or is mostly quote)."""
SUBSTANTIAL_FRACTION = 0.5
"""The share of the shorter of quote and chunk that the overlap must reach for relevance 1."""

Judgments = dict[str, dict[str, int]]
"""``query_id -> {chunk_id: relevance}``, relevance 1 or 2; the qrels of :mod:`evals.metrics`."""


class ChunkSpan(Protocol):
    """What judging needs of a chunk: its id and its span of one document."""

    @property
    def chunk_id(self) -> str: ...

    @property
    def doc_id(self) -> str: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def overlap(quote_start: int, quote_end: int, chunk_start: int, chunk_end: int) -> int:
    """How many code points a quote span and a chunk span share (both half-open)."""
    return max(0, min(chunk_end, quote_end) - max(chunk_start, quote_start))


def span_relevance(quote_start: int, quote_end: int, chunk_start: int, chunk_end: int) -> int:
    """The relevance (0, 1 or 2) of chunk ``[chunk_start, chunk_end)`` for one answer quote."""
    shared = overlap(quote_start, quote_end, chunk_start, chunk_end)
    if shared <= 0:
        return 0
    if shared == quote_end - quote_start:
        return WHOLE_QUOTE
    if shared >= SUBSTANTIAL_FRACTION * min(quote_end - quote_start, chunk_end - chunk_start):
        return SUBSTANTIAL_PART
    return 0


def judge(golden: Golden, chunks: Iterable[ChunkSpan]) -> Judgments:
    """``query_id -> {chunk_id: relevance}`` for every golden question, in golden order.

    Only relevant chunks (1 or 2) appear. Raises :class:`UsageError` if one
    chunk id is given with two different spans.
    """
    by_doc = _chunks_by_doc(chunks)
    judgments: Judgments = {}
    for question in golden.questions:
        relevant: dict[str, int] = {}
        for answer in question.answers:
            for chunk in by_doc.get(answer.doc_id, ()):
                grade = span_relevance(answer.start, answer.end, chunk.start, chunk.end)
                if grade > relevant.get(chunk.chunk_id, 0):
                    relevant[chunk.chunk_id] = grade
        judgments[question.id] = relevant
    return judgments


def qrels_rows(judgments: Mapping[str, Mapping[str, int]]) -> Iterator[tuple[str, str, int]]:
    """``(query_id, doc_id, relevance)`` rows, sorted; ``doc_id`` is the chunk id.

    Each row fits ``ir_measures.Qrel(*row)``. Questions without relevant chunks
    yield no rows: keep the judgments' keys to know which queries are judged.
    """
    for query_id in sorted(judgments):
        for chunk_id in sorted(judgments[query_id]):
            yield query_id, chunk_id, judgments[query_id][chunk_id]


def _chunks_by_doc(chunks: Iterable[ChunkSpan]) -> dict[str, list[ChunkSpan]]:
    by_doc: dict[str, list[ChunkSpan]] = defaultdict(list)
    spans: dict[str, tuple[str, int, int]] = {}
    for chunk in chunks:
        span = (chunk.doc_id, chunk.start, chunk.end)
        if chunk.chunk_id in spans:  # the same chunk twice is harmless; two spans are not
            if spans[chunk.chunk_id] != span:
                raise UsageError(
                    f"chunk id {chunk.chunk_id!r} is given for two spans, "
                    f"{spans[chunk.chunk_id]} and {span}: chunk ids must be unique"
                )
            continue
        spans[chunk.chunk_id] = span
        by_doc[chunk.doc_id].append(chunk)
    return by_doc
