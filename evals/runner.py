"""The harness runner: golden corpus -> indexes -> runs -> judgments -> report.

Every stage goes through the real index and search path (``grk index`` /
``Collection.search``), never a side path. Judgments come from the golden
quotes (:mod:`evals.judgments`), derived separately for each chunking.
Everything that can be checked before retrieval is checked first
(:func:`preflight`), so a bad experiment fails in one clear error before any
compute is spent.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import groundkit
from evals import report as rpt
from evals import trec
from evals.golden import MANIFEST_FILE, Golden, load_golden
from evals.golden.judgments import judge
from evals.stages import BASELINE, Stage, resolve
from groundkit.collection import Collection, IndexConfig, index
from groundkit.errors import GroundkitError, MissingDependencyError
from groundkit.model import Hit
from groundkit.text.chunking import ChunkerConfig

DEPTH = 100
"""Hits retrieved per question: enough for R@100."""

Log = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Plan:
    golden: Golden
    manifest_sha256: str
    stages: list[Stage]


def preflight(golden_path: str | Path, stage_names: list[str] | None, *,
              coverage: bool = True) -> Plan:
    """Validate the whole experiment; raise one clear error before any retrieval.

    ``coverage=False`` skips the golden corpus's size minimums (for small
    fixture corpora); quotes, checksums and ids are always checked.
    """
    stages = resolve(stage_names)
    for stage in stages:
        for module in stage.needs:
            if importlib.util.find_spec(module) is None:
                raise MissingDependencyError(module, "dense", f"stage {stage.name!r}")
    golden = load_golden(golden_path, coverage=coverage)  # IntegrityError on any problem
    manifest = (Path(golden_path) / MANIFEST_FILE).read_bytes()
    return Plan(golden, hashlib.sha256(manifest).hexdigest(), stages)


def _index_config(stage: Stage, docs: Path) -> IndexConfig:
    extra: dict[str, Any] = {"analyzer": stage.analyzer.to_dict(), "bm25": stage.bm25.to_dict()}
    if stage.embedding:
        extra["embedding"] = {"spec": stage.embedding}
    return IndexConfig(roots=(str(docs),), include=("*",),
                       chunker=ChunkerConfig(target=stage.chunk_size,
                                             overlap=stage.chunk_overlap),
                       extra=extra)


def _search_stage(coll: Collection, stage: Stage, golden: Golden, shown: int,
                  ) -> tuple[dict[str, list[rpt.HitRecord]], dict[str, list[tuple[str, float]]]]:
    records: dict[str, list[rpt.HitRecord]] = {}
    ranked: dict[str, list[tuple[str, float]]] = {}
    for q in golden.questions:
        hits = coll.search(q.question, top_k=DEPTH, mode=stage.mode, **stage.options)
        records[q.id] = [_record(coll, h, verify=h.rank <= shown) for h in hits]
        ranked[q.id] = [(h.chunk.chunk_id, h.score) for h in hits]
    return records, ranked


def _record(coll: Collection, hit: Hit, *, verify: bool) -> rpt.HitRecord:
    c = hit.chunk
    verdict = coll.fetch(c.chunk_id).status.value if verify else None
    return rpt.HitRecord(rank=hit.rank, chunk_id=c.chunk_id, doc_id=c.doc_id, start=c.start,
                         end=c.end, score=hit.score, text=c.text, verdict=verdict)


def run_stages(plan: Plan, home: Path, out_dir: Path, log: Log,
               shown: int = 10) -> list[rpt.StageResult]:
    """Index once per distinct index configuration, then run every stage.

    Collections stay open across the stages that share them, so query
    embeddings (computed once, in a batch) and loaded indexes are reused.
    """
    docs = plan.golden.root / "docs"
    opened: dict[tuple[Any, ...], Collection] = {}
    judged: dict[tuple[Any, ...], dict[str, dict[str, int]]] = {}
    results = []
    try:
        for stage in plan.stages:
            key = stage.index_key()
            if key not in opened:
                opened[key] = _build(stage, docs, home, f"golden{len(opened)}", log)
                judged[key] = judge(plan.golden, opened[key].chunks())
            coll = opened[key]
            t = time.perf_counter()
            if stage.embedding:
                coll.snapshot.query_embedder().prime(q.question for q in plan.golden.questions)
            records, ranked = _search_stage(coll, stage, plan.golden, shown)
            trec.write_run(out_dir / "runs" / f"{stage.name}.trec", ranked, tag=stage.name)
            log(f"ran {stage.name}: {len(records)} questions in {time.perf_counter() - t:.1f}s")
            results.append(rpt.StageResult(name=stage.name, description=stage.description,
                                           config=stage.config(), hits=records,
                                           qrels=judged[key]))
    finally:
        for coll in opened.values():
            coll.close()
    return results


def _build(stage: Stage, docs: Path, home: Path, name: str, log: Log) -> Collection:
    t = time.perf_counter()
    report = index(name, _index_config(stage, docs), home=home)
    log(f"indexed {report.chunks} chunks for {stage.name} in {time.perf_counter() - t:.1f}s")
    return Collection.open(name, home)


def questions_of(golden: Golden) -> list[rpt.Question]:
    return [
        rpt.Question(query_id=q.id, text=q.question, kind=q.kind, traits=tuple(q.traits),
                     gold=tuple(rpt.GoldAnswer(doc_id=a.doc_id, quote=a.quote, start=a.start,
                                               end=a.end) for a in q.answers))
        for q in golden.questions
    ]


def evaluate(
    golden_path: str | Path,
    out_dir: str | Path,
    *,
    stage_names: list[str] | None = None,
    settings: rpt.Settings | None = None,
    coverage: bool = True,
    run_block: dict[str, Any] | None = None,
    log: Log = lambda line: print(line, file=sys.stderr),
) -> dict[str, Any]:
    """Run the experiment and write ``latest.json`` and the TREC runs into ``out_dir``."""
    plan = preflight(golden_path, stage_names, coverage=coverage)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    shown = (settings or rpt.Settings()).hits_shown
    with tempfile.TemporaryDirectory(prefix="groundkit-eval-") as home:
        stages = run_stages(plan, Path(home), out, log, shown)
    python, libraries = rpt.environment()
    provenance = rpt.Provenance(
        golden_version=f"v{plan.golden.version}", golden_manifest_sha256=plan.manifest_sha256,
        groundkit_version=groundkit.__version__,
        git_commit=rpt.git_commit(Path(__file__).resolve().parent.parent),
        python=python, libraries=libraries,
    )
    config = {"depth": DEPTH, "judgments": "quote overlap (evals/judgments.py)",
              "stages": [s.name for s in plan.stages]}
    built = rpt.build_report(questions=questions_of(plan.golden), qrels={}, stages=stages,
                             baseline=BASELINE, provenance=provenance, config=config,
                             settings=settings, run=run_block)
    rpt.write_json(built, out / "latest.json")
    return built


def summary_table(report: dict[str, Any], measures: Sequence[str] | None = None) -> str:
    """A plain-text table: one row per stage, metrics with delta and interval vs baseline."""
    measures = list(measures or report["measures"])
    comps = {(c["stage"], c["measure"]): c for c in report["comparisons"]}
    head = f"{'stage':<18}" + "".join(f"{m:>30}" for m in measures) + f"{'abstained':>12}"
    lines = [head, "-" * len(head)]
    for stage in report["stages"]:
        cells = []
        for m in measures:
            value = stage["metrics"][m]
            c = comps.get((stage["name"], m))
            cells.append(f"{value:.3f}" + (f"  {c['delta']:+.3f} [{c['ci_low']:+.3f},"
                                           f"{c['ci_high']:+.3f}]" if c else ""))
        ab = stage["abstention"]
        lines.append(f"{stage['name']:<18}" + "".join(f"{cell:>30}" for cell in cells)
                     + f"{ab['no_answer_abstained']:>8}/{ab['no_answer_total']:<3}")
    lines.append("cells: value  delta vs baseline [95% bootstrap CI]; abstained: no-answer "
                 "questions answered with nothing")
    return "\n".join(lines)


__all__ = ["DEPTH", "GroundkitError", "evaluate", "preflight", "summary_table"]
