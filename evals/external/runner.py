"""Run external benchmarks: rank every stage, score them in one report, check them.

One report per dataset, in the harness's schema (:mod:`evals.report`), so the
same statistics, gates and HTML apply. The judged unit is the *document*: the
report's ``chunk_id`` field carries the dataset's doc id (what the judgments
name), ``doc_id`` the collection path of its file, ``start``/``end`` the best
unit's span in that file. Gold "quotes" are the first :data:`SNIPPET`
characters of each relevant document, standing for the whole document.

Checks, recorded in ``config.checks`` and printed: every published
:class:`~evals.external.registry.Reference` whose stage ran, and the strict
differential (``bm25-exact-norms`` vs ``bm25s``, nDCG@10 within
:data:`DIFFERENTIAL_TOLERANCE`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import groundkit
from evals import report as rpt
from evals import trec
from evals.external import engines, runs
from evals.external.dataset import Dataset, positive_qrels
from evals.external.prepare import Prepared
from evals.external.registry import DatasetSpec, Reference
from evals.external.stages import BASELINE, ExternalStage
from groundkit.errors import GroundkitError

MEASURES = ("nDCG@10", "R@100", "R@1000", "AP", "nDCG")
DEPTH = 1000
SNIPPET = 300
DIFFERENTIAL = ("bm25-exact-norms", "bm25s", "nDCG@10")
DIFFERENTIAL_TOLERANCE = 0.005
Log = Callable[[str], None]
DocHits = dict[str, list[tuple[int, float, int]]]
"""query id -> [(doc index, score, best unit)], best first."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    kind: str
    stage: str
    measure: str
    observed: float | None
    expected: float
    tolerance: float
    passed: bool
    source: str


def rank_stage(stage: ExternalStage, prep: Prepared, query_ids: Sequence[str],
               depth: int = DEPTH) -> DocHits:
    """Every query's documents for a built-in stage (run-file stages: :func:`run_file_hits`)."""
    units = prep.units(stage.units)
    unit_depth = depth if len(units.texts) == len(set(units.doc_of.tolist())) else 4 * depth
    unit_depth = min(unit_depth, max(1, len(units.texts)))
    keep = prep.keep(stage.stopwords)
    cache = stage.analyzer.term_cache()

    def analyze(query: str) -> list[str]:
        if keep is None:
            return stage.analyzer.analyze(query)
        return [t for tok in stage.analyzer.split(query) if keep(tok) and (t := cache[tok])]

    ranker: engines.Ranker
    if stage.engine in ("dense", "hybrid"):
        ranker = _neural_ranker(stage, prep, unit_depth, units.texts)
    elif stage.engine == "groundkit":
        index = prep.index_for(stage.units, stage.analyzer, stage.bm25, stage.stopwords)
        ranker = engines.groundkit_ranker(index, unit_depth,
                                          None if keep is None else analyze)
    else:
        terms = prep.unit_terms(stage.units, stage.analyzer, stage.stopwords)
        make = engines.bm25s_ranker if stage.engine == "bm25s" else engines.rank_bm25_ranker
        ranker = make(terms, analyze, stage.bm25, unit_depth)
    out = {}
    for q in query_ids:
        docs = engines.to_documents(ranker(prep.dataset.queries[q]), units.doc_of, depth)
        out[q] = _tie_order(docs, prep.doc_ids)
    return out


def _neural_ranker(stage: ExternalStage, prep: Prepared, depth: int,
                   texts: list[str]) -> engines.Ranker:
    cache = prep.materialised.directory / "vectors"
    dense = engines.dense_ranker(texts, str(stage.embedding), depth, cache)
    if stage.engine == "dense":
        return dense
    index = prep.index_for(stage.units, stage.analyzer, stage.bm25, stage.stopwords)
    return engines.hybrid_ranker(engines.groundkit_ranker(index, depth), dense, stage.rrf_k,
                                 depth)


def _tie_order(docs: list[tuple[int, float, int]], doc_ids: Sequence[str],
               ) -> list[tuple[int, float, int]]:
    """Exact score ties in trec_eval's order (doc id descending), as a run file reads back."""
    scores = [s for _, s, _ in docs]
    if len(set(scores)) == len(scores):
        return docs
    by_id = {doc_ids[d]: (d, s, u) for d, s, u in docs}
    return [by_id[doc_id] for doc_id, _ in runs.trec_order([(doc_ids[d], s) for d, s, _ in docs])]


def run_file_hits(path: str | Path, prep: Prepared, query_ids: Sequence[str],
                  depth: int = DEPTH) -> dict[str, list[tuple[str, float]]]:
    """A TREC run's ranking per judged query (trec_eval order), cut at ``depth``."""
    ranked = trec.ranking(trec.read_run(path))
    return {q: ranked.get(q, [])[:depth] for q in query_ids}


def hit_records(hits: DocHits, prep: Prepared, kind: str, shown: int,
                ) -> dict[str, list[rpt.HitRecord]]:
    units = prep.units(kind)
    out = {}
    for q, ranked in hits.items():
        out[q] = [rpt.HitRecord(
            rank=rank, chunk_id=prep.doc_ids[doc], doc_id=prep.paths[doc],
            start=units.spans[unit][0], end=units.spans[unit][1], score=score,
            text=units.texts[unit][:SNIPPET] if rank <= shown else "")
            for rank, (doc, score, unit) in enumerate(ranked, start=1)]
    return out


def run_file_records(ranked: Mapping[str, list[tuple[str, float]]], prep: Prepared,
                     shown: int) -> dict[str, list[rpt.HitRecord]]:
    index_of = prep.index_of
    out = {}
    for q, docs in ranked.items():
        records = []
        for rank, (doc_id, score) in enumerate(docs, start=1):
            i = index_of.get(doc_id)
            text = prep.texts[i] if i is not None else ""
            records.append(rpt.HitRecord(
                rank=rank, chunk_id=doc_id, doc_id=prep.paths[i] if i is not None else doc_id,
                start=0, end=len(text), score=score,
                text=text[:SNIPPET] if rank <= shown else ""))
        out[q] = records
    return out


def questions(prep: Prepared, qrels: Mapping[str, Mapping[str, int]]) -> list[rpt.Question]:
    index_of = prep.index_of
    out = []
    for q in sorted(qrels):
        gold = []
        for doc_id in sorted(qrels[q]):
            i = index_of.get(doc_id)
            if i is not None and (quote := prep.texts[i][:SNIPPET]):
                gold.append(rpt.GoldAnswer(doc_id=prep.paths[i], quote=quote, start=0,
                                           end=len(quote)))
            else:  # judged but absent or empty: named by its id so the question stays judged
                gold.append(rpt.GoldAnswer(doc_id=doc_id, quote=doc_id, start=0, end=len(doc_id)))
        out.append(rpt.Question(query_id=q, text=prep.dataset.queries[q], kind="judged",
                                gold=tuple(gold)))
    return out


def evaluate(spec: DatasetSpec, prep: Prepared, stages: Sequence[ExternalStage], *,
             settings: rpt.Settings, runs_dir: Path | None, log: Log,
             depth: int = DEPTH) -> dict[str, Any]:
    """Rank every stage, build the report, add the checks; returns the report dict."""
    qrels = positive_qrels(prep.dataset.qrels)
    query_ids = sorted(qrels)
    results, skipped = [], {}
    for stage in stages:
        t = time.perf_counter()
        reason = unavailable(stage, prep)
        if reason is not None:
            skipped[stage.name] = reason
            log(f"{spec.name}: skipped {stage.name}: {reason}")
            continue
        if stage.engine == "run-file":
            ranked = run_file_hits(str(stage.run_file), prep, query_ids, depth)
            records = run_file_records(ranked, prep, settings.hits_shown)
        else:
            hits = rank_stage(stage, prep, query_ids, depth)
            records = hit_records(hits, prep, stage.units, settings.hits_shown)
            ranked = {q: [(prep.doc_ids[d], s) for d, s, _ in h] for q, h in hits.items()}
        if runs_dir is not None:
            runs.write_run(runs_dir / f"{stage.name}.trec", ranked, tag=stage.name)
        log(f"{spec.name}: ran {stage.name} on {len(query_ids)} queries "
            f"({time.perf_counter() - t:.1f}s)")
        results.append(rpt.StageResult(name=stage.name, description=stage.description,
                                       config=stage.config(), hits=records))
    built = rpt.build_report(
        questions=questions(prep, qrels), qrels=qrels, stages=results, baseline=BASELINE,
        provenance=provenance(prep.dataset), config=config_block(spec, prep, depth),
        settings=settings)
    checks = run_checks(built, spec.references)
    built["config"]["checks"] = rpt.canonical([asdict(c) for c in checks])
    built["config"]["skipped_stages"] = skipped
    return built


def unavailable(stage: ExternalStage, prep: Prepared) -> str | None:
    """Why ``stage`` cannot run here (a resource it needs is not installed/staged), or None."""
    try:
        prep.keep(stage.stopwords)
    except GroundkitError as exc:
        return str(exc)
    return None


def provenance(dataset: Dataset) -> rpt.Provenance:
    python, libraries = rpt.environment((*rpt.LIBRARIES, "ir-datasets", "bm25s", "rank-bm25"))
    return rpt.Provenance(
        golden_version=f"external:{dataset.name}/{dataset.split}",
        golden_manifest_sha256=dataset.fingerprint(), groundkit_version=groundkit.__version__,
        git_commit=rpt.git_commit(Path(__file__).resolve().parents[2]), python=python,
        libraries=libraries)


def config_block(spec: DatasetSpec, prep: Prepared, depth: int) -> dict[str, Any]:
    docs_units = prep.units("documents")
    split_docs = len(docs_units.texts) - len(set(docs_units.doc_of.tolist()))
    return {
        "dataset": {"name": spec.name, "description": spec.description,
                    "split": prep.dataset.split, "counts": prep.dataset.counts(),
                    "fingerprint_sha256": prep.dataset.fingerprint(),
                    "source": dict(prep.dataset.source)},
        "import": {"join": prep.materialised.join, "files": len(prep.materialised.files),
                   "chunks": len(docs_units.texts), "documents_split": split_docs,
                   "documents_without_text": len(prep.doc_ids)
                   - len(set(docs_units.doc_of.tolist()))},
        "judged_unit": "document: hits carry the dataset doc id in chunk_id; a document "
                       "scores its best unit (max)",
        "judgments": "relevance > 0 kept; queries without a relevant document are not judged",
        "gold": f"first {SNIPPET} characters of each relevant document stand for it",
        "depth": depth,
        "references": [asdict(r) for r in spec.references],
    }


def run_checks(report: Mapping[str, Any], references: Sequence[Reference]) -> list[Check]:
    """Published references (for stages that ran) and the strict bm25s differential."""
    metrics = {s["name"]: s["metrics"] for s in report["stages"]}
    checks = []
    for ref in references:
        if ref.stage not in metrics:
            continue
        got = metrics[ref.stage].get(ref.measure)
        checks.append(Check(kind="published", stage=ref.stage, measure=ref.measure,
                            observed=got, expected=ref.value, tolerance=ref.tolerance,
                            passed=got is not None and abs(got - ref.value) <= ref.tolerance,
                            source=ref.source))
    ours, theirs, measure = DIFFERENTIAL
    if ours in metrics and theirs in metrics:
        got, want = metrics[ours][measure], metrics[theirs][measure]
        checks.append(Check(kind="differential", stage=ours, measure=measure, observed=got,
                            expected=want, tolerance=DIFFERENTIAL_TOLERANCE,
                            passed=abs(got - want) <= DIFFERENTIAL_TOLERANCE,
                            source=f"stage {theirs} (same units, same analyzer terms)"))
    return checks


def summary(report: Mapping[str, Any]) -> str:
    """A plain-text table of every stage's metrics, then the checks."""
    measures = list(report["measures"])
    head = f"{'stage':<18}" + "".join(f"{m:>10}" for m in measures)
    lines = [f"{report['config']['dataset']['name']} ({report['golden']['version']})", head,
             "-" * len(head)]
    for stage in report["stages"]:
        lines.append(f"{stage['name']:<18}" + "".join(f"{stage['metrics'][m]:>10.4f}"
                                                        for m in measures))
    for c in report["config"].get("checks", []):
        got = "n/a" if c["observed"] is None else f"{c['observed']:.4f}"
        lines.append(f"  [{'pass' if c['passed'] else 'FAIL'}] {c['kind']}: {c['stage']} "
                     f"{c['measure']} = {got} vs {c['expected']:.4f} ± {c['tolerance']:g}")
    return "\n".join(lines)
