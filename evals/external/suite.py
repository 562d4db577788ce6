"""External test collections as a harness suite: document qrels, a document scores its best unit.

One report per dataset, in the harness's schema, so the same statistics, gates
and HTML apply. The judged unit is the *document*: the report's ``chunk_id``
field carries the dataset's doc id (what the judgments name), ``doc_id`` the
collection path of its file, ``start``/``end`` the best unit's span in that
file. Gold "quotes" are the first :data:`SNIPPET` characters of each relevant
document, standing for the whole document.

A stage ranks *units* through groundkit's retrievers (or a reference engine):
the imported collection's own chunks, one per document, when the stage keeps
the collection's settings, else units held in memory
(:class:`~evals.external.units.MemoryUnits`) cut and indexed the way the
collection would be. Checks, recorded in ``config.checks``: every published
:class:`~evals.external.registry.Reference` whose stage ran, and the strict
differential (``bm25-exact-norms`` vs ``bm25s``, nDCG@10 within
:data:`DIFFERENTIAL_TOLERANCE`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import groundkit
from evals import engines, trec
from evals import report as rpt
from evals.engines import BM25sRetriever, collapsed, ranker, stage_retriever
from evals.external import stopwords
from evals.external.dataset import positive_qrels
from evals.external.materialise import DOC_CHUNKER
from evals.external.prepare import Prepared
from evals.external.registry import DatasetSpec, Reference
from evals.external.units import MemoryUnits, document_hits
from evals.harness import Log
from evals.stages import Stage
from groundkit.collection import Collection
from groundkit.errors import GroundkitError
from groundkit.retrieval.base import Resources
from groundkit.retrieval.bm25 import BM25Params
from groundkit.retrieval.modes import MODES
from groundkit.text.analysis import Analyzer

MEASURES = ("nDCG@10", "R@100", "R@1000", "AP", "nDCG")
DEPTH = 1000
SNIPPET = 300
DIFFERENTIAL = ("bm25-exact-norms", "bm25s", "nDCG@10")
DIFFERENTIAL_TOLERANCE = 0.005
UNITS = "one chunk per document (Anserini bm25-flat)"


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


class ExternalSuite:
    """A prepared dataset; ``cache`` holds vectors and embeddings between runs."""

    depth = DEPTH

    def __init__(self, spec: DatasetSpec, prep: Prepared, cache: Path) -> None:
        self.spec = spec
        self.prep = prep
        self.cache = cache
        self.label = spec.name
        self.qrels = positive_qrels(prep.dataset.qrels)
        self.questions = questions(prep, self.qrels)
        self._inherited: Collection | None = None  # in a forked worker: the parent's

    def unavailable(self, stage: Stage) -> str | None:
        if stage.twin is not None:
            return "MCP stages search real collections: golden and your own collection only"
        if stage.rerank is not None:
            return "rerank stages run on golden and your own collection only"
        if stage.engine == "qmd":
            return "qmd indexes files: it runs on golden and your own collection only"
        if stage.stopwords is not None:
            try:
                stopwords.register(stage.stopwords, self.prep.data)
            except GroundkitError as exc:
                return str(exc)
        return None

    def open(self, stage: Stage, log: Log) -> _UnitRun | _RunFileRun:
        description = stage.describe(UNITS)
        if stage.engine == "run-file":
            return _RunFileRun(self.prep, str(stage.run_file), description)
        analyzer = stage.analyzer or self.prep.index_analyzer
        if stage.stopwords is not None:
            analyzer = dataclasses.replace(analyzer, stopwords=stage.stopwords)
        params = stage.bm25 or self.prep.index_bm25
        resources = self._resources(stage, analyzer, params)
        def texts() -> Sequence[str]:
            return self.prep.units(stage.chunking).texts

        first = stage_retriever(stage, resources, analyzer, params,
                                lambda: self.prep.unit_terms(stage.chunking, analyzer),
                                unit_texts=texts)
        retriever = collapsed(stage, first, texts)
        config = {"engine": stage.engine, "mode": stage.mode, "options": dict(stage.options),
                  "units": "documents" if stage.chunking is None else "passages",
                  "chunker": (stage.chunking or DOC_CHUNKER).to_dict(),
                  "analyzer": analyzer.to_dict(), "bm25": params.to_dict(),
                  "embedding": stage.embedding,
                  "aggregation": "max score over a document's units"}
        if stage.collapse:
            config["collapse"] = "duplicate units folded into the best-ranked (grk search)"
        config.update(engines.analysis_of(first))  # Lucene's query terms, as it ranks
        return _UnitRun(self.prep, stage, retriever, resources, config, description)

    def _resources(self, stage: Stage, analyzer: Analyzer, params: BM25Params) -> Resources:
        own = (stage.chunking is None and analyzer == self.prep.index_analyzer
               and params == self.prep.index_bm25 and not MODES[stage.mode].embedding)
        if own:
            return self.prep.collection.snapshot
        units = self.prep.units(stage.chunking)
        return MemoryUnits(self.spec.name, units.texts,
                           lambda: self.prep.index_for(stage.chunking, analyzer, params),
                           embedding=stage.embedding, cache=self.cache)

    def provenance(self) -> rpt.Provenance:
        dataset = self.prep.dataset
        python, libraries = rpt.environment((*rpt.LIBRARIES, "ir-datasets", "bm25s", "rank-bm25"))
        return rpt.Provenance(
            golden_version=f"external:{dataset.name}/{dataset.split}",
            golden_manifest_sha256=dataset.fingerprint(), groundkit_version=groundkit.__version__,
            git_commit=rpt.git_commit(Path(__file__).resolve().parents[2]), python=python,
            libraries=libraries)

    def config(self, stages: Sequence[Stage]) -> dict[str, Any]:
        prep = self.prep
        docs_units = prep.units(None)
        covered = len(set(docs_units.doc_of.tolist()))
        return {
            "dataset": {"name": self.spec.name, "description": self.spec.description,
                        "split": prep.dataset.split, "counts": prep.dataset.counts(),
                        "fingerprint_sha256": prep.dataset.fingerprint(),
                        "source": dict(prep.dataset.source)},
            "import": {"join": prep.materialised.join, "files": len(prep.materialised.files),
                       "chunks": len(docs_units.texts),
                       "documents_split": len(docs_units.texts) - covered,
                       "documents_without_text": len(prep.doc_ids) - covered},
            "judged_unit": "document: hits carry the dataset doc id in chunk_id; a document "
                           "scores its best unit (max)",
            "judgments": "relevance > 0 kept; queries without a relevant document are not judged",
            "gold": f"first {SNIPPET} characters of each relevant document stand for it",
            "depth": self.depth,
            "references": [asdict(r) for r in self.spec.references],
        }

    forks = True
    """Stages may rank in forked workers: each opens the imported collection anew."""

    def after_fork(self) -> None:
        """Open the imported collection anew; the parent's stays referenced, never closed here
        (each SQLite connection stays in the process that opened it)."""
        inherited = self.prep.collection
        self._inherited = inherited
        self.prep.collection = Collection.open(inherited.name,
                                               inherited.snapshot.directory.parents[1])

    def extras(self) -> dict[str, Any]:
        return {}

    def finish(self, report: dict[str, Any], skipped: Mapping[str, str],
               extras: Mapping[str, Any]) -> dict[str, Any]:
        report.update(extras)
        checks = run_checks(report, self.spec.references)
        report["config"]["checks"] = rpt.canonical([asdict(c) for c in checks])
        report["config"]["skipped_stages"] = dict(skipped)
        return report


class _UnitRun:
    """A stage ranking units; each question's units become documents (best unit each).

    Its retriever is asked for (unit, score) pairs only (:func:`evals.engines.ranker`):
    the explained hits ``search`` builds are never read here.
    """

    def __init__(self, prep: Prepared, stage: Stage, retriever: Any, resources: Resources,
                 config: dict[str, Any], description: str) -> None:
        self.prep = prep
        self.units = prep.units(stage.chunking)
        self.retriever = retriever
        self.release = lambda: engines.release(retriever)
        """Called by the harness once the stage has ranked every question."""
        self.resources = resources
        self.embedded = MODES[stage.mode].embedding and stage.engine == "groundkit"
        self.config = config
        self.description = description
        self.qrels = None
        self.gate_mode: str | None = None
        self.signals: dict[str, dict[str, float]] = {}
        self._one_per_doc = len(self.units.texts) == len(set(self.units.doc_of.tolist()))
        self.unit_depth = max(1, len(self.units.texts))
        self._per_doc = 1 if self._one_per_doc else 4
        self._ranked = ranker(retriever)
        self._starts = [start for start, _ in self.units.spans]
        self._ends = [end for _, end in self.units.spans]

    def prime(self, queries: Sequence[str]) -> None:
        if self.embedded:
            self.resources.query_embedder().prime(queries)
        if isinstance(self.retriever, BM25sRetriever):  # one batched call, the same answers
            self.retriever.prime(queries, min(DEPTH * self._per_doc, self.unit_depth))

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        wanted = min(depth * self._per_doc, self.unit_depth)
        ranked = self._ranked(question.text, wanted)
        docs, scores, units = document_hits(ranked, self.units.doc_of, depth, self.prep.id_rank,
                                            injective=self._one_per_doc)
        ids, paths, texts = self.prep.doc_ids, self.prep.paths, self.units.texts
        starts, ends, record = self._starts, self._ends, rpt.HitRecord
        return [record(rank, ids[doc], paths[doc], starts[unit], ends[unit], score,
                       texts[unit][:SNIPPET] if rank <= shown else "")
                for rank, doc, score, unit in zip(range(1, len(docs) + 1), docs, scores, units,
                                                  strict=True)]


class _RunFileRun:
    """An external TREC run, scored as it is (trec_eval's order, cut at the depth)."""

    def __init__(self, prep: Prepared, path: str, description: str) -> None:
        self.prep = prep
        self.ranked = trec.ranking(trec.read_run(path))
        deepest = max(map(len, self.ranked.values()), default=0)
        self.depth = deepest if deepest < len(prep.texts) else None
        """Its deepest list: it ranks no deeper (:class:`evals.harness.StageRun`); ``None``
        when a list holds every document (no stage ranks deeper than the collection)."""
        self.config = {"engine": "run-file", "run_file": path}
        self.description = description
        self.qrels = None
        self.gate_mode: str | None = None
        self.signals: dict[str, dict[str, float]] = {}

    def prime(self, queries: Sequence[str]) -> None:
        return None

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        prep, index_of = self.prep, self.prep.index_of
        records = []
        for rank, (doc_id, score) in enumerate(self.ranked.get(question.query_id, [])[:depth], 1):
            i = index_of.get(doc_id)
            text = prep.texts[i] if i is not None else ""
            records.append(rpt.HitRecord(
                rank=rank, chunk_id=doc_id, doc_id=prep.paths[i] if i is not None else doc_id,
                start=0, end=len(text), score=score,
                text=text[:SNIPPET] if rank <= shown else ""))
        return records


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
