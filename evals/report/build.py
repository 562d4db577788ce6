"""The evaluation report: one schema-versioned JSON document, the source of truth.

:func:`build_report` turns plain inputs (questions, qrels, each stage's ranked
hits) into the report dict: per-stage metrics and abstention, comparisons with
the baseline stage (Holm-adjusted across the whole report), breakdowns by
question kind and trait, and a per-question drill-down. :func:`write_json`
validates it against ``schema/report.schema.json`` and writes it.

Determinism: for a fixed input the output is byte-identical except the ``run``
block (time, host). Keys are sorted, floats rounded to :data:`DECIMALS`
decimals, stages keep their given order, questions are sorted by query id and
comparisons follow stage then measure order. A question is *judged* when it has
at least one gold answer; no-answer questions only count towards abstention.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema

from evals.score import metrics, stats
from groundkit.errors import GroundkitError
from groundkit.model import OFFSET_UNIT

SCHEMA_VERSION = 1
DECIMALS = 6
SCHEMA_PATH = Path(__file__).with_name("schema") / "report.schema.json"
VERDICTS = ("verified", "drifted", "unresolvable")
LIBRARIES = ("groundkit", "numpy", "scipy", "ir-measures", "pytrec-eval-terrier", "jsonschema")


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


@dataclass(frozen=True, slots=True, kw_only=True)
class HitRecord:
    """One retrieved chunk as the report shows it; ``verdict`` from verification."""

    rank: int
    chunk_id: str
    doc_id: str
    start: int
    end: int
    score: float
    text: str
    verdict: str | None = None

    @classmethod
    def from_hit(cls, hit: Mapping[str, Any], verdict: str | None = None) -> HitRecord:
        """The record of a hit in its one serialised form (:meth:`groundkit.model.Hit.to_dict`)."""
        return cls(rank=hit["rank"], chunk_id=hit["chunk_id"], doc_id=hit["path"],
                   start=hit["start"], end=hit["end"], score=hit["score"], text=hit["text"],
                   verdict=verdict)

    def __post_init__(self) -> None:
        if self.rank < 1 or not 0 <= self.start <= self.end:
            raise ReportError(f"hit {self.chunk_id!r}: bad rank or span")
        if self.verdict is not None and self.verdict not in VERDICTS:
            raise ReportError(f"hit {self.chunk_id!r}: verdict must be one of {VERDICTS}")


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
) -> dict[str, Any]:
    """The report dict (already canonical: rounded floats, stable order).

    ``run`` is the run block; by default :func:`run_metadata` of this process.
    """
    settings = settings or Settings()
    by_id = _check_inputs(questions, qrels, stages, baseline)
    measures = tuple(metrics.canonical_measure(m) for m in settings.measures)
    judged = sorted(q.query_id for q in questions if q.gold)
    if not judged:
        raise ReportError("no question has a gold answer: there is nothing to measure")
    scores = {s.name: _stage_scores(s, qrels, judged, measures) for s in stages}
    report = {
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
        "baseline": baseline,
        "stages": [_stage_block(s, scores[s.name], by_id, judged) for s in stages],
        "comparisons": _comparisons(stages, baseline, scores, measures, settings),
        "breakdowns": {
            "kind": _breakdown(by_id, judged, scores, lambda q: (q.kind,)),
            "trait": _breakdown(by_id, judged, scores, lambda q: q.traits),
        },
        "questions": [
            _question_block(by_id[q], stages, scores, qrels, settings) for q in sorted(by_id)
        ],
    }
    built: dict[str, Any] = canonical(report)
    return built


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
    for stage in stages:
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
    return by_id


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
    stage: StageResult, scores: metrics.PerQuery, by_id: dict[str, Question], judged: list[str]
) -> dict[str, Any]:
    no_answer = [q for q, question in by_id.items() if not question.gold]
    run = {q: {h.chunk_id: h.score for h in hits} for q, hits in stage.hits.items()}
    return {
        "name": stage.name,
        "description": stage.description,
        "config": dict(stage.config),
        "judged": len(judged),
        "metrics": metrics.aggregate(scores),
        "abstention": metrics.abstention(run, judged, no_answer),
    }


def _comparisons(
    stages: Sequence[StageResult],
    baseline: str,
    scores: Mapping[str, metrics.PerQuery],
    measures: tuple[str, ...],
    settings: Settings,
) -> list[dict[str, Any]]:
    keys: list[dict[str, str]] = []
    results: list[stats.Comparison] = []
    for stage in (s.name for s in stages if s.name != baseline):
        for measure in measures:
            keys.append({"stage": stage, "baseline": baseline, "measure": measure})
            results.append(
                stats.compare(
                    scores[baseline][measure],
                    scores[stage][measure],
                    resamples=settings.resamples,
                    permutations=settings.permutations,
                    confidence=settings.confidence,
                    seed=settings.seed,
                )
            )
    adjusted = stats.apply_holm(results)
    return [{**key, **asdict(c)} for key, c in zip(keys, adjusted, strict=True)]


def _breakdown(
    by_id: Mapping[str, Question],
    judged: list[str],
    scores: Mapping[str, metrics.PerQuery],
    groups_of: Callable[[Question], Iterable[str]],
) -> dict[str, Any]:
    members: dict[str, list[str]] = {}
    for query_id in judged:
        for group in groups_of(by_id[query_id]):
            members.setdefault(group, []).append(query_id)
    return {
        group: {
            "n": len(ids),
            "stages": {
                stage: {m: sum(per[m][q] for q in ids) / len(ids) for m in per}
                for stage, per in scores.items()
            },
        }
        for group, ids in members.items()
    }


def _question_block(
    question: Question,
    stages: Sequence[StageResult],
    scores: Mapping[str, metrics.PerQuery],
    qrels: metrics.Qrels,
    settings: Settings,
) -> dict[str, Any]:
    per_stage = {}
    for stage in stages:
        judgments = (stage.qrels if stage.qrels is not None else qrels).get(question.query_id) or {}
        hits = list(stage.hits[question.query_id])
        per = scores[stage.name]
        per_stage[stage.name] = {
            "abstained": not hits,
            "retrieved": len(hits),
            "scores": {m: v[question.query_id] for m, v in per.items()} if question.gold else {},
            "hits": [
                {**asdict(h), "relevance": int(judgments.get(h.chunk_id, 0))}
                for h in hits[: settings.hits_shown]
            ],
        }
    return {
        "query_id": question.query_id,
        "text": question.text,
        "kind": question.kind,
        "traits": list(question.traits),
        "judged": bool(question.gold),
        "gold": [asdict(g) for g in question.gold],
        "stages": per_stage,
    }


# --- canonical JSON, schema, files ------------------------------------------


def canonical(value: Any) -> Any:
    """``value`` with floats rounded to :data:`DECIMALS` and tuples as lists."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ReportError(f"a report cannot hold the non-finite number {value}")
        return float(round(value, DECIMALS)) + 0.0
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return canonical(value.item())
    raise ReportError(f"a report cannot hold a {type(value).__name__}: {value!r}")


def dumps(report: Mapping[str, Any]) -> str:
    """The canonical JSON text: sorted keys, rounded floats, two-space indent."""
    text = json.dumps(
        canonical(report), sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False
    )
    return text + "\n"


def schema() -> dict[str, Any]:
    """The report JSON Schema."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def validate(report: Mapping[str, Any]) -> None:
    """Raise :class:`ReportError` naming the first problems if ``report`` is invalid."""
    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(report), key=lambda e: list(e.absolute_path))
    if errors:
        details = "; ".join(
            f"at /{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5]
        )
        raise ReportError(f"report does not match schema v{SCHEMA_VERSION}: {details}")
    stage_names = {s["name"] for s in report["stages"]}
    if report["baseline"] not in stage_names:
        raise ReportError(f"baseline {report['baseline']!r} is not one of the stages")


def write_json(report: Mapping[str, Any], path: str | Path) -> Path:
    """Validate ``report`` and write its canonical JSON atomically; returns the path."""
    target = Path(path)
    text = dumps(report)
    validate(json.loads(text))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_json(path: str | Path) -> dict[str, Any]:
    """Read and validate a saved report."""
    try:
        report: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"cannot read report {str(path)!r}: {exc}") from exc
    validate(report)
    return report


# --- provenance helpers (I/O; the builder itself stays pure) ----------------


def run_metadata() -> dict[str, Any]:
    """The ``run`` block: when and where this report was produced."""
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
    }


def environment(libraries: Sequence[str] = LIBRARIES) -> tuple[str, dict[str, str]]:
    """The Python version and the installed versions of ``libraries``."""
    versions = {}
    for name in libraries:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return platform.python_version(), versions


def git_commit(repo: str | Path = ".") -> str | None:
    """``HEAD``'s commit of ``repo`` (suffixed ``-dirty`` with local changes), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if dirty else head
