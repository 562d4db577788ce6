"""Run files from any system, for golden and your own questions: the format and its checks.

A run file ranks, for each question, units of one *granularity*:

* ``chunk``: groundkit chunk ids of the suite's baseline collection
  (``{"query_id": "q0001", "rank": 1, "score": 12.5, "chunk_id": "..."}``);
* ``file``: document paths as the collection names them (``{..., "path": "bash/bashref.md"}``);
* ``span``: a path and a half-open span ``[start, end)`` of code points of the file's text
  as indexed, as groundkit's chunk offsets are (``{..., "path": ..., "start": 1200,
  "end": 1650}``).

It is JSON Lines, one entry a line; ``score`` and ``rank`` are optional (without ranks,
a question's entries rank in file order; ranks are given on every line or on none); an
optional first line ``{"depth": 100}`` says how deep the system was asked to rank. A
TREC run (``query_id Q0 docid rank score tag``) is read too, in trec_eval's order: its
docids are chunk ids, or paths when every one is a document path of the collection
(:meth:`RunFile.resolved`). Everything is checked before anything is ranked, and each
problem is a :class:`~groundkit.errors.UsageError` naming the file and line: a malformed
line, an unknown key, two granularities in one file, a duplicate rank or unit for a
question, a question id not among the questions, an unknown path, a span outside its
file's text (unknown chunk ids are checked against the collection, :mod:`.runfile_stage`).

:meth:`RunFile.from_entries` takes entries already parsed (a peer stage that produces
them itself); :meth:`RunFile.read` reads a file.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evals import trec
from groundkit.errors import UsageError

CHUNK, FILE, SPAN = "chunk", "file", "span"
GRANULARITIES = (CHUNK, FILE, SPAN)
KEYS = ("query_id", "rank", "score", "chunk_id", "path", "start", "end")
SHOWN_ERRORS = 5


@dataclass(frozen=True, slots=True)
class Entry:
    """One ranked unit of one question; ``where`` names its line in messages (``FILE:LINE``)."""

    query_id: str
    rank: int | None = None
    score: float | None = None
    chunk_id: str | None = None
    path: str | None = None
    start: int | None = None
    end: int | None = None
    where: str = ""

    @property
    def granularity(self) -> str:
        if self.chunk_id is not None:
            return CHUNK
        return SPAN if self.start is not None or self.end is not None else FILE

    @property
    def unit(self) -> tuple[Any, ...]:
        """What the entry ranks: a chunk id, a path, or a path and a span."""
        return (self.chunk_id,) if self.chunk_id is not None else (self.path, self.start,
                                                                   self.end)

    def problem(self) -> str | None:
        """What makes this entry invalid on its own, or ``None``."""
        if not isinstance(self.query_id, str) or not self.query_id:
            return "query_id must be a non-empty string"
        if (self.chunk_id is None) == (self.path is None):
            return "an entry names a chunk_id or a path, exactly one of them"
        if any(v is not None and (not isinstance(v, str) or not v)
               for v in (self.chunk_id, self.path)):
            return "chunk_id and path must be non-empty strings"
        if self.rank is not None and (not _is_int(self.rank) or self.rank < 1):
            return f"rank must be a whole number from 1, got {self.rank!r}"
        if self.score is not None and (not isinstance(self.score, int | float)
                                       or isinstance(self.score, bool)
                                       or not math.isfinite(self.score)):
            return f"score must be a finite number, got {self.score!r}"
        return self._span_problem()

    def _span_problem(self) -> str | None:
        if self.start is None and self.end is None:
            return None
        if self.path is None:
            return "start and end go with a path, not a chunk_id"
        if not (_is_int(self.start) and _is_int(self.end)):
            return "start and end come together, both whole numbers"
        assert self.start is not None and self.end is not None
        if not 0 <= self.start < self.end:
            return f"span [{self.start}, {self.end}) is empty or negative"
        return None

    def named(self) -> str:
        return f"{self.where}: " if self.where else f"{self.query_id}: "


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class RunFile:
    """A checked run: each question's entries best first, all of one granularity.

    ``granularity`` is ``None`` only for a TREC run before :meth:`resolved` decides
    whether its docids are chunk ids or paths.
    """

    source: str
    format: str
    """``jsonl``, ``trec`` or ``entries`` (made in code)."""
    granularity: str | None
    ranked: Mapping[str, Sequence[Entry]]
    docids: str | None = None
    """A TREC run's docids once resolved: ``chunk ids`` or ``document paths``."""
    depth: int | None = None
    """How deep the system was asked to rank, when its producer says so; ``None``: as deep
    as the run's deepest list (a list holding every unit of the collection ranks fully)."""

    @classmethod
    def from_entries(cls, entries: Iterable[Entry], *, source: str, format: str = "entries",
                     depth: int | None = None) -> RunFile:
        """Entries in any order, checked: one granularity, ranks on all or none, no rank
        or unit twice for a question. Ranked by ``rank`` when given, else as given.
        ``depth``: how deep the system was asked to rank (see :attr:`depth`)."""
        if depth is not None and (not _is_int(depth) or depth < 1):
            raise UsageError(f"{source}: depth must be a whole number from 1, got {depth!r}")
        given = list(entries)
        for entry in given:
            if (problem := entry.problem()) is not None:
                raise UsageError(f"{source}: {entry.named()}{problem}")
        if not given:
            return cls(source, format, None, {}, depth=depth)
        first = given[0]
        ranked = first.rank is not None
        for entry in given:
            if entry.granularity != first.granularity:
                raise UsageError(
                    f"{source}: {entry.named()}a {entry.granularity} entry in a run of "
                    f"{first.granularity} entries: one granularity per run file")
            if (entry.rank is not None) != ranked:
                raise UsageError(f"{source}: {entry.named()}ranks are given on every line or "
                                 "on none")
        return cls(source, format, first.granularity, _grouped(given, source, ranked),
                   depth=depth)

    @classmethod
    def read(cls, path: str | Path) -> RunFile:
        """A JSON Lines run file, or a TREC run (its first line does not start with ``{``)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read the run file {path}: "
                             f"{getattr(exc, 'strerror', None) or exc}") from None
        first = next((line.strip() for line in text.splitlines() if line.strip()), "")
        if first.startswith("{"):
            entries, depth = _jsonl(text, str(path))
            return cls.from_entries(entries, source=str(path), format="jsonl", depth=depth)
        try:
            run = trec.ranking(trec.read_run(path))
        except trec.TrecFormatError as exc:
            raise UsageError(f"{exc} (a run file is JSON Lines or a TREC run)") from None
        entries = [Entry(q, rank, score, chunk_id=docid, where=f"{path} ({q}, rank {rank})")
                   for q, docs in run.items()
                   for rank, (docid, score) in enumerate(docs, start=1)]
        made = cls.from_entries(entries, source=str(path), format="trec")
        return replace(made, granularity=None)

    def resolved(self, documents: Mapping[str, str]) -> RunFile:
        """A TREC run's docids decided: paths when every one is a path of ``documents``,
        else chunk ids. Any other run as it is."""
        if self.granularity is not None or self.format != "trec":
            return self
        entries = [e for es in self.ranked.values() for e in es]
        if entries and all(e.chunk_id in documents for e in entries):
            ranked = {q: [replace(e, chunk_id=None, path=e.chunk_id) for e in es]
                      for q, es in self.ranked.items()}
            return replace(self, granularity=FILE, ranked=ranked, docids="document paths")
        return replace(self, granularity=CHUNK, docids="chunk ids")

    def check(self, documents: Mapping[str, str], query_ids: Iterable[str]) -> None:
        """Every question id is one of ``query_ids``, every path one of ``documents``,
        every span inside its file's text; else a ``UsageError`` naming the first few."""
        known = set(query_ids)
        stray = sorted(q for q in self.ranked if q not in known)
        if stray:
            raise UsageError(f"{self.source}: {len(stray)} question id(s) not among the "
                             f"questions: {', '.join(stray[:SHOWN_ERRORS])}")
        problems = [f"{e.named()}{p}" for es in self.ranked.values() for e in es
                    if (p := _unit_problem(e, documents)) is not None]
        if problems:
            many = "entries name" if len(problems) > 1 else "entry names"
            raise UsageError(f"{len(problems)} {many} no unit of the collection: "
                             f"{'; '.join(problems[:SHOWN_ERRORS])}")

    @property
    def deepest(self) -> int:
        """The longest list the run holds for a question."""
        return max(map(len, self.ranked.values()), default=0)


def _unit_problem(entry: Entry, documents: Mapping[str, str]) -> str | None:
    if entry.path is None:
        return None
    if entry.path not in documents:
        return f"unknown path {entry.path!r} (paths are as grk search prints them)"
    length = len(documents[entry.path])
    if entry.end is not None and entry.end > length:
        return (f"span [{entry.start}, {entry.end}) ends past the {length} code points of "
                f"{entry.path}'s text")
    return None


def _grouped(entries: Sequence[Entry], source: str,
             ranked: bool) -> dict[str, list[Entry]]:
    by_query: dict[str, list[Entry]] = {}
    for entry in entries:
        by_query.setdefault(entry.query_id, []).append(entry)
    for query_id, group in by_query.items():
        if ranked:
            group.sort(key=lambda e: e.rank or 0)
        twice = _twice([(e.rank, e) for e in group]) if ranked else None
        if twice is not None:
            raise UsageError(f"{source}: {twice.named()}rank {twice.rank} appears twice for "
                             f"{query_id}")
        twice = _twice([(e.unit, e) for e in group])
        if twice is not None:
            raise UsageError(f"{source}: {twice.named()}{twice.granularity} {_shown(twice)} "
                             f"appears twice for {query_id}")
    return by_query


def _twice(keyed: Sequence[tuple[Any, Entry]]) -> Entry | None:
    """The first entry whose key an earlier one has, or ``None``."""
    seen: set[Any] = set()
    for key, entry in keyed:
        if key in seen:
            return entry
        seen.add(key)
    return None


def _shown(entry: Entry) -> str:
    if entry.chunk_id is not None:
        return repr(entry.chunk_id)
    span = f" [{entry.start}, {entry.end})" if entry.start is not None else ""
    return f"{entry.path!r}{span}"


def _jsonl(text: str, source: str) -> tuple[list[Entry], int | None]:
    """The entries, and the depth the first line declares (``{"depth": 100}``), if it does."""
    entries: list[Entry] = []
    depth = None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{source}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{where}: not JSON ({exc.msg})") from None
        if not isinstance(data, dict):
            raise UsageError(f"{where}: an entry is a JSON object")
        if set(data) == {"depth"}:
            if entries or depth is not None:
                raise UsageError(f"{where}: a depth line comes first, once")
            depth = data["depth"]
            if not _is_int(depth) or depth < 1:
                raise UsageError(f"{where}: depth must be a whole number from 1, got {depth!r}")
            continue
        unknown = sorted(set(data) - set(KEYS))
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(unknown)}; an entry has "
                             f"{', '.join(KEYS)}")
        fields: dict[str, Any] = {k: data.get(k) for k in KEYS}
        entries.append(Entry(**fields, where=where))
    return entries, depth
