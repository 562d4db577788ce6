"""Run-file stages on a collection suite: each run judged at its own granularity.

A run file (:mod:`.runfile`) from any system is judged with the golden quote rule
(:mod:`.judgments`), at the granularity it ranks:

* ``chunk``: the suite's own judgments over the baseline collection's chunks (a chunk id
  not in that collection is an error);
* ``file``: a file is relevant (grade 2, a whole quote inside) when it holds one of the
  question's answer quotes: :func:`~.judgments.judge` over one span per file;
* ``span``: :func:`~.judgments.judge` over the run's own spans, as over chunks.

So a peer is scored like for like beside groundkit's ``bm25``: a span run against
``bm25`` itself (its chunks are spans, judged by the same rule), a chunk run likewise,
and a file run against ``bm25@file`` (:data:`FILE_BASELINE`), bm25's chunk ranking
collapsed to each file's best chunk and judged at file level, which the report then
carries too (:meth:`RunFiles.companions`). The stage's config says how it was judged,
which stage it is compared with (``compared_with``; :func:`like_for_like` makes its
comparisons against that one), how deep it ranks, and how it treats the no-answer
questions (``no_answer``: how many it returned nothing for).

:meth:`RunFiles.open_entries` opens a stage on a :class:`~.runfile.RunFile` made in code
(:meth:`~.runfile.RunFile.from_entries`): a peer stage that runs its system itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any, NamedTuple, Protocol
from urllib.parse import quote

from evals import engines
from evals import report as rpt
from evals.golden.judgments import judge
from evals.golden.model import Golden
from evals.golden.runfile import CHUNK, FILE, SPAN, Entry, RunFile
from evals.harness import Log
from evals.peers import qmd
from evals.score import metrics, stats
from evals.stages import BASELINE, STAGES, Stage
from groundkit.errors import UsageError
from groundkit.model import Hit

FILE_BASELINE = f"{BASELINE}@file"
"""The baseline's chunk ranking collapsed to each file's best chunk, judged at file level."""
SNIPPET = 300
"""Characters of a file a shown file-level hit carries as its passage."""
JUDGED_AT = {
    CHUNK: "chunk: the suite's quote judgments over the baseline collection's chunks",
    FILE: "file: relevant (2) when the file holds one of the question's answer quotes",
    SPAN: "span: the quote rule (evals/golden/judgments.py) over each span, as for chunks",
}


class _Suite(Protocol):
    @property
    def golden(self) -> Golden: ...

    @property
    def questions(self) -> Sequence[rpt.Question]: ...

    @property
    def depth(self) -> int: ...

    def open(self, stage: Stage, log: Log) -> Any: ...


class _Unit(NamedTuple):
    """A file or span as :func:`judge` takes it."""

    chunk_id: str
    doc_id: str
    start: int
    end: int


def file_baseline_stage() -> Stage:
    return Stage(name=FILE_BASELINE, engine="run-file",
                 options={"derived_from": BASELINE, "granularity": FILE},
                 description=f"{BASELINE}'s chunk ranking collapsed to each file's best chunk, "
                 "judged at file level")


class RunFiles:
    """A collection suite's run-file stages: each file read and checked once."""

    def __init__(self, suite: _Suite) -> None:
        self.suite = suite
        self._read: dict[str, RunFile] = {}

    def run_file(self, stage: Stage) -> RunFile:
        """The stage's run, read, resolved and checked against the suite (once)."""
        path = str(stage.run_file)
        if path not in self._read:
            self._read[path] = self.checked(RunFile.read(path))
        return self._read[path]

    def checked(self, run: RunFile) -> RunFile:
        documents = self.suite.golden.documents
        resolved = run.resolved(documents)
        resolved.check(documents, (q.query_id for q in self.suite.questions))
        return resolved

    def unavailable(self, stage: Stage) -> str | None:
        """``None``, or a ``UsageError`` for a run file that does not fit the suite (before
        anything is ranked)."""
        if stage.run_file is not None:
            self.run_file(stage)
        return None

    def open(self, stage: Stage, log: Log) -> RunFileRun | FileBaselineRun:
        if stage.engine == "qmd":  # a peer that runs its system itself (evals/peers/qmd.py)
            return qmd.open_stage(self.suite, stage, log)  # type: ignore[no-any-return]
        if stage.run_file is None:
            return FileBaselineRun(self._baseline(log), self.suite.golden, stage.description)
        return self.open_entries(stage, self.run_file(stage), log)

    def open_entries(self, stage: Stage, run: RunFile, log: Log) -> RunFileRun:
        """A stage ranking ``run`` (checked here if it was made in code)."""
        if run.format == "entries" or run.granularity is None:
            run = self.checked(run)
        return RunFileRun(stage, run, self._baseline(log), self.suite.golden,
                          self.suite.questions, self.suite.depth)

    def companions(self, stages: Sequence[Stage]) -> list[Stage]:
        """The like-for-like stages the run-file stages among ``stages`` are compared with
        (``bm25@file`` for a file-level run) that are not among them already."""
        names = {s.name for s in stages}
        files = any((s.engine == "run-file" and s.run_file is not None
                     and self.run_file(s).granularity == FILE)
                    or (s.engine == "qmd" and engines.unavailable(s) is None) for s in stages)
        return [file_baseline_stage()] if files and FILE_BASELINE not in names else []

    def _baseline(self, log: Log) -> Any:
        """The baseline stage opened on its collection (chunks, judgments, its ranking)."""
        return self.suite.open(STAGES[BASELINE], log)


def companions(suite: Any, stages: Sequence[Stage]) -> list[Stage]:
    """:meth:`RunFiles.companions` of a collection suite; none for another suite."""
    run_files = getattr(suite, "run_files", None)
    return run_files.companions(stages) if isinstance(run_files, RunFiles) else []


def file_token(path: str) -> str:
    """A path as a TREC docid (no whitespace): itself, or percent-quoted when it holds
    whitespace or ``%`` (so no two paths share a token)."""
    if "%" in path or any(c.isspace() for c in path):
        return quote(path, safe="".join(chr(c) for c in range(33, 127) if chr(c) != "%"))
    return path


def file_units(documents: Mapping[str, str]) -> list[_Unit]:
    return [_Unit(file_token(p), p, 0, len(text)) for p, text in documents.items()]


def span_unit(entry: Entry) -> _Unit:
    assert entry.path is not None and entry.start is not None and entry.end is not None
    return _Unit(f"{file_token(entry.path)}#{entry.start}-{entry.end}", entry.path,
                 entry.start, entry.end)


def no_answer_block(questions: Sequence[rpt.Question],
                    ranked: Mapping[str, Sequence[Any]]) -> dict[str, int]:
    """How a stage treats the questions without an answer: nothing returned, or hits."""
    no_answer = [q.query_id for q in questions if not q.gold]
    nothing = sum(1 for q in no_answer if not ranked.get(q))
    return {"questions": len(no_answer), "returned_nothing": nothing,
            "returned_hits": len(no_answer) - nothing}


class RunFileRun:
    """A run file's stage: its entries, cut at the suite's depth, judged at its granularity."""

    gate_mode: str | None = None

    def __init__(self, stage: Stage, run: RunFile, baseline: Any, golden: Golden,
                 questions: Sequence[rpt.Question], depth: int) -> None:
        self.run, self.baseline, self.documents = run, baseline, golden.documents
        self.signals: dict[str, dict[str, float]] = {}
        self.description = stage.describe(f"{run.granularity}s")
        granularity = str(run.granularity)
        self.ranked = {q: list(es[:depth]) for q, es in run.ranked.items()}
        if granularity == CHUNK:
            self.positions = self._positions()
            self.qrels: metrics.Qrels | None = baseline.qrels
            units = len(self.positions)
        else:
            self.qrels = judge(golden, file_units(self.documents) if granularity == FILE
                               else sorted({span_unit(e) for es in self.ranked.values()
                                            for e in es}))
            units = len(self.documents) if granularity == FILE else 0
        deepest = max(map(len, self.ranked.values()), default=0)
        ranks = min(depth, run.depth or (depth if units and deepest >= units else deepest))
        self.depth: int | None = ranks if ranks < depth else None
        """How deep it ranks when less than the suite asks: as its producer declared, else
        its deepest list (unless a list holds every file or chunk of the collection)."""
        self.config = self._config(granularity, ranks, depth, questions)

    def _config(self, granularity: str, ranks: int, depth: int,
                questions: Sequence[rpt.Question]) -> dict[str, Any]:
        run = self.run
        config: dict[str, Any] = {
            "engine": "run-file", "run_file": run.source, "format": run.format,
            "granularity": granularity, "judged_at": JUDGED_AT[granularity],
            "compared_with": FILE_BASELINE if granularity == FILE else BASELINE,
            "depth": ranks,
            "questions_without_entries": sum(1 for q in questions if not self.ranked.get(
                q.query_id)),
            "no_answer": no_answer_block(questions, self.ranked)}
        if run.docids is not None:
            config["docids"] = run.docids
        if run.deepest > depth:
            config["cut_at"] = depth
        return config

    def _positions(self) -> dict[str, int]:
        """Each chunk id's position in the baseline collection; ``UsageError`` for any
        not in it."""
        positions = self.baseline.snapshot.positions()
        unknown = [e for es in self.run.ranked.values() for e in es
                   if e.chunk_id not in positions]
        if unknown:
            named = "; ".join(f"{e.named()}{e.chunk_id!r}" for e in unknown[:5])
            paths = sum(1 for e in unknown if e.chunk_id in self.documents)
            hint = (f" ({paths} of them are document paths: a run names chunk ids or paths, "
                    "not both)") if paths else ""
            raise UsageError(f"{self.run.source}: {len(unknown)} chunk id(s) not in the "
                             f"baseline collection {self.baseline.snapshot.name!r}{hint}: "
                             f"{named}")
        return dict(positions)

    def prime(self, queries: Sequence[str]) -> None:
        return None

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        entries = self.ranked.get(question.query_id, [])[:depth]
        scores = [float(e.score) if e.score is not None else 1.0 / rank
                  for rank, e in enumerate(entries, start=1)]
        if self.run.granularity == CHUNK:
            return self._chunk_records(entries, scores, shown)
        records = []
        for rank, (entry, score) in enumerate(zip(entries, scores, strict=True), start=1):
            path = str(entry.path)
            text = self.documents[path]
            unit = (span_unit(entry) if self.run.granularity == SPAN
                    else _Unit(file_token(path), path, 0, len(text)))
            passage = (text[unit.start:unit.end] if self.run.granularity == SPAN
                       else text[:SNIPPET]) if rank <= shown else ""
            records.append(rpt.HitRecord(rank, unit.chunk_id, path, unit.start, unit.end,
                                         score, passage))
        return records

    def _chunk_records(self, entries: Sequence[Entry], scores: Sequence[float],
                       shown: int) -> list[rpt.HitRecord]:
        """As the baseline shows its own chunks: the top ``shown`` with passage and verdict."""
        snap, base = self.baseline.snapshot, self.baseline
        stored = base.evidence.stored(snap, [self.positions[str(e.chunk_id)] for e in entries])
        records = []
        for rank, (item, score) in enumerate(zip(stored, scores, strict=True), start=1):
            if rank <= shown:
                hit = Hit(chunk=item.chunk, score=score, rank=rank)
                records.append(rpt.HitRecord.from_hit(hit.to_dict(snap.name),
                                                      base.verdicts.of(snap, item)))
            else:
                records.append(rpt.HitRecord(rank, item.chunk.chunk_id, item.chunk.doc_id,
                                             0, 0, score, ""))
        return records


class FileBaselineRun:
    """``bm25@file``: the baseline's chunk ranking collapsed to each file's best chunk (as
    deep as the suite asks in files, ranking deeper in chunks when needed)."""

    gate_mode: str | None = None
    depth: int | None = None

    def __init__(self, baseline: Any, golden: Golden, description: str) -> None:
        self.baseline, self.documents = baseline, golden.documents
        self.description = description
        self.signals: dict[str, dict[str, float]] = {}
        self.qrels: metrics.Qrels | None = judge(golden, file_units(self.documents))
        self.config: dict[str, Any] = {
            "engine": "run-file", "derived_from": BASELINE, "granularity": FILE,
            "judged_at": JUDGED_AT[FILE], "compared_with": BASELINE,
            "collapse": "each file at its best chunk's place in bm25's ranking"}
        snap = baseline.snapshot
        self._doc_of = dict(zip(snap.chunk_ids(), (c.doc_id for c in snap.chunks()),
                                strict=True))

    def prime(self, queries: Sequence[str]) -> None:
        return None

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        wanted = depth * 4
        while True:
            hits = self.baseline.rank(question, wanted, 0)
            best: dict[str, float] = {}
            for hit in hits:
                best.setdefault(self._doc_of[hit.chunk_id], hit.score)
            if len(best) >= depth or len(hits) < wanted:
                break
            wanted *= 4
        records = []
        for rank, (path, score) in enumerate(list(best.items())[:depth], start=1):
            text = self.documents[path]
            records.append(rpt.HitRecord(rank, file_token(path), path, 0, len(text), score,
                                         text[:SNIPPET] if rank <= shown else ""))
        return records


def like_for_like(report: dict[str, Any]) -> None:
    """Each stage whose config names another stage than the baseline in ``compared_with``
    is compared with that one instead (its entries in ``comparisons``, from the report's
    per-question scores, same statistics), and Holm's adjustment is made again across
    every comparison."""
    versus = {s["name"]: s["config"]["compared_with"] for s in report["stages"]
              if s["config"].get("compared_with") not in (None, report["baseline"])}
    if not versus:
        return
    scores = _question_scores(report)
    comparisons = report["comparisons"]
    statistics = report["statistics"]
    for i, c in enumerate(comparisons):
        other = versus.get(c["stage"])
        if other is None or c.get("p_value") is None:
            continue
        base, mine = scores[other].get(c["measure"]), scores[c["stage"]].get(c["measure"])
        if base is None or mine is None:
            continue
        [made] = stats.compare_all([(base, mine)], resamples=statistics["resamples"],
                                   permutations=statistics["permutations"],
                                   confidence=statistics["confidence"], seed=report["seed"])
        comparisons[i] = {"stage": c["stage"], "baseline": other, "measure": c["measure"],
                          **asdict(made)}
    family = [c for c in comparisons if c.get("p_value") is not None]
    for c, p in zip(family, stats.holm([c["p_value"] for c in family]), strict=True):
        c["p_holm"] = p
    report["comparisons"] = rpt.canonical(comparisons)


def _question_scores(report: Mapping[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """stage -> measure -> judged question -> score (a measure with a missing score left
    out for that stage)."""
    out: dict[str, dict[str, dict[str, float]]] = {s["name"]: {} for s in report["stages"]}
    missing: dict[str, set[str]] = {name: set() for name in out}
    for question in report["questions"]:
        if not question["judged"]:
            continue
        for name, block in question["stages"].items():
            for measure, value in block["scores"].items():
                if value is None:
                    missing[name].add(measure)
                else:
                    out[name].setdefault(measure, {})[question["query_id"]] = value
    return {name: {m: v for m, v in by.items() if m not in missing[name]}
            for name, by in out.items()}
