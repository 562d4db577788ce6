"""The report's inputs as values: questions with gold answers, hits, stage results, provenance."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple

from evals.score import metrics
from groundkit.errors import GroundkitError

VERDICTS = ("verified", "drifted", "unresolvable")


class ReportError(GroundkitError, ValueError):
    """Report inputs that do not fit together, or a report that fails its schema."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GoldAnswer:
    """A quote that answers a question: ``document[start:end] == quote``."""

    doc_id: str
    quote: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start < self.end or self.end - self.start != len(self.quote):
            raise ReportError(f"gold span [{self.start}, {self.end}) does not fit its quote")


@dataclass(frozen=True, slots=True, kw_only=True)
class Question:
    """A golden question; it is judged when it has gold answers."""

    query_id: str
    text: str
    kind: str
    traits: tuple[str, ...] = ()
    gold: tuple[GoldAnswer, ...] = ()
    domain: str = ""
    split: str = ""
    """``train``, ``calibration`` or ``test`` (golden v2 on); "" when the suite has no split."""
    near_miss: bool = False
    """A no-answer question whose vocabulary matches a real passage that does not answer it."""
    conflicting: tuple[GoldAnswer, ...] = ()
    """A ``conflict`` question's superseded passages that answer differently (golden v4)."""


class HitRecord(NamedTuple):
    """One retrieved chunk as the report shows it; ``verdict`` from verification.

    A run holds a million of them, most below the shown hits, so it is a named tuple
    (built in a third of a frozen dataclass's time); :meth:`problem` is checked for
    every record when a report is built. A shown hit also names where its passage sits:
    ``headings``, its heading path (outermost first), and ``source``, its compact
    locator (:func:`compact_source`: the PDF pages, or a byte range of the raw file);
    below the shown hits both stay empty.
    """

    rank: int
    chunk_id: str
    doc_id: str
    start: int
    end: int
    score: float
    text: str
    verdict: str | None = None
    headings: tuple[str, ...] = ()
    source: Mapping[str, Any] | None = None

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any], verdict: str | None = None) -> HitRecord:
        """The record of a hit in its one serialised form (:meth:`groundkit.model.Hit.to_dict`)."""
        return cls(hit["rank"], hit["chunk_id"], hit["path"], hit["start"], hit["end"],
                   hit["score"], hit["text"], verdict, tuple(hit.get("headings") or ()),
                   compact_source(hit.get("source")))

    @classmethod
    def unshown_from(cls, first: int, ranked: Iterable[tuple[str, float]],
                     doc_ids: Sequence[str] = ()) -> list[HitRecord]:
        """Hits below the shown ones, each ``(chunk_id, score)`` with its rank from ``first``
        on and no passage, verdict, headings or source (``text`` empty, span 0–0; ``doc_id``
        from ``doc_ids`` for the first of them, down to the report's document depth, else
        empty); built with ``tuple.__new__`` (as ``_make`` is), not a Python call per
        record: a golden v2 run holds over a million of them."""
        make = partial(tuple.__new__, cls)
        ranked = list(ranked)
        n = min(len(doc_ids), len(ranked))
        return [*(make((first + i, chunk_id, doc_ids[i], 0, 0, score, "", None, (), None))
                  for i, (chunk_id, score) in enumerate(ranked[:n])),
                *(make((rank, chunk_id, "", 0, 0, score, "", None, (), None))
                  for rank, (chunk_id, score) in enumerate(ranked[n:], start=first + n))]

    def problem(self) -> str | None:
        """What makes this record invalid (a bad rank, span or verdict), or ``None``."""
        if self.rank < 1 or not 0 <= self.start <= self.end:
            return f"hit {self.chunk_id!r}: bad rank or span"
        if self.verdict is not None and self.verdict not in VERDICTS:
            return f"hit {self.chunk_id!r}: verdict must be one of {VERDICTS}"
        return None


def compact_source(source: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A hit's source locator (``Hit.to_dict()["source"]``) as the report records it:
    ``{"format", "pages"}`` for a PDF (each page once, in text order); else ``{"format",
    "byte_start", "byte_end"}``, the raw bytes the pieces in the first piece's ``part``
    cover, with that ``part`` (a zip member: ``word/document.xml``) when there is one and
    ``parts`` when the passage spans several. ``None`` for a plain-text or Markdown hit."""
    if not source:
        return None
    spans = source.get("spans") or ()
    out: dict[str, Any] = {"format": str(source["format"])}
    pages = [s["page"] for s in spans if s.get("page") is not None]
    if pages:
        out["pages"] = list(dict.fromkeys(pages))
        return out
    ranged = [s for s in spans if s.get("byte_start") is not None and s.get("byte_end") is not None]
    if ranged:
        part = ranged[0].get("part")
        first = [s for s in ranged if s.get("part") == part]
        out["byte_start"] = min(s["byte_start"] for s in first)
        out["byte_end"] = max(s["byte_end"] for s in first)
        if part is not None:
            out["part"] = str(part)
        parts = len({s.get("part") for s in ranged})
        if parts > 1:
            out["parts"] = parts
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class StageResult:
    """One stage's output: every question's hits in rank order (up to the run depth).

    ``qrels`` judges this stage's chunks when stages chunk differently (each
    chunking has its own quote-derived judgments); by default the report's.
    """

    name: str
    description: str
    config: Mapping[str, Any]
    hits: Mapping[str, Sequence[HitRecord]]
    qrels: metrics.Qrels | None = None
    gate_mode: str | None = None
    """The groundkit mode whose abstention gate this stage is measured with, if any."""
    signals: Mapping[str, Mapping[str, float]] | None = None
    """Every question's confidence signals in that mode."""
    depth: int | None = None
    """How deep the stage ranks when it declares less than the suite's depth (an MCP
    stage's ``top_k``, a run file's deepest list; :attr:`evals.harness.StageRun.depth`);
    ``None``: as deep as the suite asks. A measure needing a deeper ranking is n/a for it
    (:func:`evals.report.reach.unreachable`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What was evaluated, with what: stable across runs of the same input."""

    golden_version: str
    golden_manifest_sha256: str
    groundkit_version: str
    git_commit: str | None
    python: str
    libraries: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Measures, statistics parameters, seed, and how many hits the drill-down keeps."""

    measures: tuple[str, ...] = metrics.DEFAULT_MEASURES
    seed: int = 0
    resamples: int = 10_000
    permutations: int = 10_000
    confidence: float = 0.95
    hits_shown: int = 10
