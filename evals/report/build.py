"""The evaluation report: one schema-versioned JSON document, the source of truth.

:func:`build_report` turns plain inputs (questions, qrels, each stage's ranked
hits) into the report dict: per-stage metrics, abstention and distinct documents
in the top 10, comparisons with the baseline stage (Holm-adjusted across the
whole report), breakdowns by question kind, trait and domain (:mod:`.breakdown`),
and a per-question drill-down whose hits name their passage (document, span, text,
and its heading path and source locator when it has them) by index into one
``passages`` table, so a passage shown by many stages and questions is stored once.
:func:`write_json` (:mod:`.files`) validates it against ``schema/report.schema.json``
and writes it.

Determinism: for a fixed input the output is byte-identical except the ``run``
block (time, host). Keys are sorted, floats rounded to :data:`DECIMALS`
decimals, stages keep their given order, questions are sorted by query id and
comparisons follow stage then measure order. A question is *judged* when it has
at least one gold answer; no-answer questions only count towards abstention.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from evals import forked
from evals.score import abstention, metrics, stats
from evals.score.metrics import DOCUMENTS, DOCUMENTS_DEPTH
from groundkit.model import OFFSET_UNIT

from .breakdown import breakdowns
from .files import SCHEMA_VERSION, canonical, run_metadata
from .model import HitRecord, Provenance, Question, ReportError, Settings, StageResult
from .reach import blanked, blanked_breakdowns, declared, unreachable, unreached

FORK_QUESTIONS = 200
"""From this many questions on, the comparisons and the hybrid rivals of the gate (the
resampling that needs every stage: about 1 s for golden v2) are computed in a forked child
while the rest of the report is built; below it, a fork would cost more than it saves."""


def build_report(
    *,
    questions: Sequence[Question],
    qrels: metrics.Qrels,
    stages: Sequence[StageResult],
    baseline: str,
    provenance: Provenance,
    config: Mapping[str, Any],
    settings: Settings | None = None,
    run: Mapping[str, Any] | None = None,
    scored: Mapping[str, Scored] | None = None,
) -> dict[str, Any]:
    """The report dict (already canonical: rounded floats, stable order).

    ``run`` is the run block; by default :func:`run_metadata` of this process.
    ``scored`` holds stages already put through :func:`score_stage` (the harness does it
    in the worker that ranked the stage); the others are scored here, the same way.
    """
    settings = settings or Settings()
    by_id = _check_inputs(questions, qrels, stages, baseline)
    measures = tuple(metrics.canonical_measure(m) for m in settings.measures)
    judged = _judged(questions)
    done = {s.name: _scored(s, (scored or {}).get(s.name), questions, qrels, measures)
            for s in stages}
    scores = {name: d.scores for name, d in done.items()}
    statistics = _statistics(stages, baseline, done, scores, measures, settings,
                             _rivals(by_id, stages, done, qrels), len(by_id))
    passages = _Passages()
    report = {
        **_header(provenance, config, settings, measures, run),
        "baseline": baseline,
        "stages": [done[s.name].block for s in stages],
        "breakdowns": blanked_breakdowns(breakdowns(by_id, judged, scores),
                                         {name: d.unreachable for name, d in done.items()}),
        "passages": passages.rows,
    }
    blocks = [_question_block(by_id[q], stages, done, qrels, settings, passages)
              for q in sorted(by_id)]
    built: dict[str, Any] = canonical(report)  # the passages as _question_block filled them
    built["questions"] = blocks  # canonical as built: the bulk of the report, not walked
    built.update(statistics())
    return built


def _header(provenance: Provenance, config: Mapping[str, Any], settings: Settings,
            measures: tuple[str, ...], run: Mapping[str, Any] | None) -> dict[str, Any]:
    """What was run, with what and how it is measured: the report's first blocks."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run": dict(run) if run is not None else run_metadata(),
        "golden": {
            "version": provenance.golden_version,
            "manifest_sha256": provenance.golden_manifest_sha256,
        },
        "groundkit": {"version": provenance.groundkit_version, "git_commit": provenance.git_commit},
        "environment": {"python": provenance.python, "libraries": dict(provenance.libraries)},
        "config": dict(config),
        "seed": settings.seed,
        "offset_unit": OFFSET_UNIT,
        "statistics": _statistics_block(settings),
        "measures": list(measures),
    }


@dataclass(frozen=True, slots=True)
class Scored:
    """A stage whose hits are checked, with its per-question scores, how many hits it
    retrieved for each question, and its report block (:func:`score_stage`). With it, the
    report needs no more of the stage's hits than :func:`kept_hits` says."""

    measures: tuple[str, ...]
    scores: metrics.PerQuery
    retrieved: dict[str, int]
    block: dict[str, Any]
    gate: dict[str, Any] | None = None
    """Its entry in the ``gate`` block, default scorer only (``None``: not gated, or
    nothing to calibrate on)."""
    unreachable: dict[str, str] = field(default_factory=dict)
    """The measures it ranks too shallow for, each with its n/a text (:mod:`.reach`)."""


GATE_DEPTH = 10
"""A question's gold counts as retrieved for the gate when it is in the stage's top 10."""


def kept_hits(settings: Settings) -> int:
    """How many of each question's hits a report reads once its stage is scored: those it
    shows, and the gate's depth (the distinct documents are counted in the scoring)."""
    return max(settings.hits_shown, GATE_DEPTH)


def score_stage(stage: StageResult, questions: Sequence[Question], qrels: metrics.Qrels,
                measures: Sequence[str]) -> Scored:
    """Check ``stage``'s hits (it answers exactly ``questions``, ranks increase, records are
    valid) and score it: what :func:`build_report` needs of one stage, computable apart
    from the others (in the process that ranked it)."""
    by_id = {q.query_id: q for q in questions}
    _check_stage(stage, by_id)
    canonical_measures = tuple(metrics.canonical_measure(m) for m in measures)
    judged = _judged(questions)
    scores = _stage_scores(stage, qrels, judged, canonical_measures)
    gate = (abstention.stage_block(str(stage.gate_mode), _gate_items(stage, by_id, qrels))
            if _gated(stage) else None)
    missing = unreachable(stage.depth, canonical_measures)
    return Scored(canonical_measures, scores, {q: len(h) for q, h in stage.hits.items()},
                  _stage_block(stage, scores, by_id, judged, missing), gate, missing)


def _gated(stage: StageResult) -> bool:
    """Whether the stage has confidence signals (the report then has a ``gate`` block)."""
    return stage.gate_mode is not None and bool(stage.signals)


def _scored(stage: StageResult, given: Scored | None, questions: Sequence[Question],
            qrels: metrics.Qrels, measures: tuple[str, ...]) -> Scored:
    if given is None:
        return score_stage(stage, questions, qrels, measures)
    if given.measures != measures:
        raise ReportError(f"stage {stage.name!r} was scored with {list(given.measures)}, "
                          f"not the report's measures {list(measures)}")
    return given


def _statistics(stages: Sequence[StageResult], baseline: str, done: Mapping[str, Scored],
                scores: Mapping[str, metrics.PerQuery], measures: tuple[str, ...],
                settings: Settings, rivals: tuple[str, list[abstention.Item]] | None,
                questions: int) -> Callable[[], dict[str, Any]]:
    """The report's ``comparisons`` and (when a stage is gated) ``gate``, canonical. The
    resampling that needs every stage (the comparisons, and the hybrid rivals of the first
    hybrid stage's gate) runs in a child beside the rest of the report
    (:data:`FORK_QUESTIONS`); each stage's own gate entry came with its scores."""

    def compute() -> dict[str, Any]:
        out: dict[str, Any] = {
            "comparisons": _comparisons(stages, baseline, done, measures, settings)}
        if rivals is not None:
            out["rivals"] = abstention.rival_scorers("hybrid", rivals[1])
        return dict(canonical(out))

    computed = forked.beside(compute, "report statistics", fork=questions >= FORK_QUESTIONS)

    def joined() -> dict[str, Any]:
        out = computed()
        gate = {s.name: entry for s in stages if (entry := done[s.name].gate) is not None}
        if rivals is not None:
            first = gate[rivals[0]]
            gate[rivals[0]] = {**first, "scorers": {**first["scorers"], **out.pop("rivals")}}
        if any(map(_gated, stages)):
            out["gate"] = canonical(abstention.gate_block(gate))
        return out

    return joined


def _judged(questions: Sequence[Question]) -> list[str]:
    judged = sorted(q.query_id for q in questions if q.gold)
    if not judged:
        raise ReportError("no question has a gold answer: there is nothing to measure")
    return judged


def _check_inputs(
    questions: Sequence[Question],
    qrels: metrics.Qrels,
    stages: Sequence[StageResult],
    baseline: str,
) -> dict[str, Question]:
    by_id = {q.query_id: q for q in questions}
    if len(by_id) != len(questions):
        raise ReportError("question ids are not unique")
    names = [s.name for s in stages]
    if len(set(names)) != len(names) or baseline not in names:
        raise ReportError(f"stage names must be unique and include the baseline {baseline!r}")
    stray = sorted(
        q for judgments in (qrels, *(s.qrels for s in stages if s.qrels is not None))
        for q, judged in judgments.items() if judged and not (q in by_id and by_id[q].gold)
    )
    if stray:
        raise ReportError(f"qrels judge questions without gold answers: {stray[:5]}")
    return by_id


def _check_stage(stage: StageResult, by_id: Mapping[str, Question]) -> None:
    unknown = sorted(set(stage.hits) - set(by_id))
    missing = sorted(set(by_id) - set(stage.hits))
    if unknown or missing:
        raise ReportError(
            f"stage {stage.name!r} must answer exactly the questions: unknown {unknown[:5]}, "
            f"missing {missing[:5]} (an empty hit list means the stage abstained)"
        )
    for query_id, hits in stage.hits.items():
        ranks = [h.rank for h in hits]
        if ranks != sorted(set(ranks)):
            raise ReportError(f"stage {stage.name!r}, {query_id!r}: ranks must increase")
        bad = next((p for p in map(HitRecord.problem, hits) if p is not None), None)
        if bad is not None:
            raise ReportError(f"stage {stage.name!r}, {query_id!r}: {bad}")


def _stage_scores(
    stage: StageResult, qrels: metrics.Qrels, judged: list[str], measures: tuple[str, ...]
) -> metrics.PerQuery:
    ranking = {q: [h.chunk_id for h in hits] for q, hits in stage.hits.items()}
    run = metrics.run_from_ranking(ranking)
    return metrics.per_query(stage.qrels if stage.qrels is not None else qrels, run, measures,
                             query_ids=judged)


def _statistics_block(settings: Settings) -> dict[str, Any]:
    return {
        "interval": "paired percentile bootstrap of the mean difference",
        "test": "paired sign-flip randomisation, two-sided",
        "correction": "holm",
        "resamples": settings.resamples,
        "permutations": settings.permutations,
        "confidence": settings.confidence,
        "tie_tolerance": stats.TIE_TOLERANCE,
    }


def _stage_block(
    stage: StageResult, scores: metrics.PerQuery, by_id: Mapping[str, Question],
    judged: list[str], missing: Mapping[str, str],
) -> dict[str, Any]:
    """The stage's ``stages`` entry; a measure it ranks too shallow for is ``None`` in its
    metrics and named, with why, in ``unreachable`` (with ``depth``, when it declares one)."""
    no_answer = [q for q, question in by_id.items() if not question.gold]
    run = {q: {h.chunk_id: h.score for h in hits} for q, hits in stage.hits.items()}
    block = {
        "name": stage.name,
        "description": stage.description,
        "config": dict(stage.config),
        "judged": len(judged),
        "metrics": blanked(metrics.aggregate(scores), missing),
        "abstention": metrics.abstention(run, judged, no_answer),
    }
    block.update(declared(stage.depth, missing))
    documents = metrics.distinct_documents(
        {q: [h.doc_id for h in hits[:DOCUMENTS_DEPTH]] for q, hits in stage.hits.items()},
        judged)
    if documents is not None:
        block[DOCUMENTS] = documents
    return block


def _comparisons(stages: Sequence[StageResult], baseline: str, done: Mapping[str, Scored],
                 measures: tuple[str, ...], settings: Settings) -> list[dict[str, Any]]:
    """Every stage against the baseline on every measure, Holm-adjusted across those made;
    one a side ranks too shallow for is not made (:func:`.reach.unreached`)."""
    keys = [(stage, measure) for stage in (s.name for s in stages if s.name != baseline)
            for measure in measures]
    base = done[baseline]
    made = [k for k in keys if k[1] not in done[k[0]].unreachable | base.unreachable]
    results = dict(zip(made, stats.compare_all(
        [(base.scores[m], done[stage].scores[m]) for stage, m in made],
        resamples=settings.resamples, permutations=settings.permutations,
        confidence=settings.confidence, seed=settings.seed), strict=True))
    every = [results.get((stage, m)) or unreached(
        len(base.scores[m]), base.block["metrics"][m], done[stage].block["metrics"][m],
        settings.confidence, done[stage].unreachable.get(m) or base.unreachable[m])
        for stage, m in keys]
    return [{"stage": stage, "baseline": baseline, "measure": m, **asdict(c)}
            for (stage, m), c in zip(keys, stats.apply_holm(every), strict=True)]


def _gate_items(stage: StageResult, by_id: Mapping[str, Question],
                qrels: metrics.Qrels) -> list[abstention.Item]:
    """Each question as the gate analysis needs it, for a stage with confidence signals."""
    judged = stage.qrels if stage.qrels is not None else qrels
    signals = stage.signals or {}
    items = []
    for qid, q in by_id.items():
        relevant = judged.get(qid) or {}
        retrieved = any(relevant.get(h.chunk_id, 0) > 0 for h in stage.hits[qid][:GATE_DEPTH])
        items.append(abstention.Item(query_id=qid, answerable=bool(q.gold),
                                     near_miss=q.near_miss, retrieved=retrieved,
                                     split=q.split, signals=signals[qid]))
    return items


def _rivals(by_id: Mapping[str, Question], stages: Sequence[StageResult],
            done: Mapping[str, Scored], qrels: metrics.Qrels
            ) -> tuple[str, list[abstention.Item]] | None:
    """The first hybrid stage with a gate entry, whose entry also measures the hybrid
    rivals (they share its evidence): its name and items."""
    for stage in stages:
        if stage.gate_mode == "hybrid" and done[stage.name].gate is not None:
            return stage.name, _gate_items(stage, by_id, qrels)
    return None


class _Passages:
    """The passages shown hits point at, each stored once, numbered in order of first use;
    a passage under headings has its heading path, one from an extracted format its source
    (both left out when empty, as for an external suite's documents)."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self._index: dict[tuple[Any, ...], int] = {}

    def index(self, hit: HitRecord) -> int:
        source = hit.source
        key = (hit.doc_id, hit.start, hit.end, hit.text, hit.headings,
               None if source is None else repr(sorted(source.items())))
        if key not in self._index:
            self._index[key] = len(self.rows)
            row: dict[str, Any] = {"doc_id": hit.doc_id, "start": hit.start, "end": hit.end,
                                   "text": hit.text}
            if hit.headings:
                row["headings"] = list(hit.headings)
            if source is not None:
                row["source"] = dict(source)
            self.rows.append(row)
        return self._index[key]


def _question_block(
    question: Question,
    stages: Sequence[StageResult],
    done: Mapping[str, Scored],
    qrels: metrics.Qrels,
    settings: Settings,
    passages: _Passages,
) -> dict[str, Any]:
    """The question's drill-down, canonical as built: each float rounded here
    (:func:`canonical`), every other value a plain ``str``, ``int``, ``bool`` or ``None``."""
    per_stage = {}
    for stage in stages:
        judgments = (stage.qrels if stage.qrels is not None else qrels).get(question.query_id) or {}
        hits = stage.hits[question.query_id]
        ran = done[stage.name]
        per, retrieved = ran.scores, ran.retrieved[question.query_id]
        per_stage[stage.name] = {
            "abstained": not retrieved,
            "retrieved": retrieved,
            "scores": (blanked({m: canonical(v[question.query_id]) for m, v in per.items()},
                               ran.unreachable) if question.gold else {}),
            "hits": [
                {"rank": int(h.rank), "chunk_id": str(h.chunk_id), "passage": passages.index(h),
                 "score": canonical(h.score), "verdict": h.verdict,
                 "relevance": int(judgments.get(h.chunk_id, 0))}
                for h in hits[: settings.hits_shown]
            ],
        }
    return {
        "query_id": question.query_id,
        "text": question.text,
        "kind": question.kind,
        "traits": canonical(list(question.traits)),
        "domain": question.domain,
        "split": question.split,
        "near_miss": bool(question.near_miss),
        "judged": bool(question.gold),
        "gold": [canonical(asdict(g)) for g in question.gold],
        "stages": per_stage,
    }
