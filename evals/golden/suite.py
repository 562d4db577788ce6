"""Quote-judged suites over real collections: the golden corpus, or a person's own questions.

Every stage goes through the real index and search path (``grk index``, the
collection's snapshot, groundkit's retrievers), never a side path. A stage's
index settings are the suite's *base* settings with the stage's changes; one
collection is built per distinct setting and shared by the stages that use it.
Judgments come from the quotes (:mod:`.judgments`), derived for each chunking.

* :func:`golden_suite` — a ``golden/vN`` folder: its ``docs/`` indexed with
  groundkit's defaults over 1000-character chunks.
* :func:`questions_suite` — an existing collection and a questions file in the
  golden format (``doc_id`` relative to the collection's root): a stage with the
  collection's own settings searches the collection itself; any other setting
  is indexed from the same roots.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import groundkit
from evals import engines, rerank_stage
from evals import report as rpt
from evals.engines import Ranked, collapsed, scored, stage_retriever
from evals.golden.corpus import MANIFEST_FILE, load_golden
from evals.golden.evidence import EvidenceCache, Verdicts
from evals.golden.judgments import judge
from evals.golden.model import Golden
from evals.golden.runfile_stage import FileBaselineRun, RunFileRun, RunFiles, like_for_like
from evals.golden.settings import IndexSettings
from evals.harness import Log
from evals.mcp_stage import McpRun
from evals.score import metrics
from evals.stages import BASELINE, STAGES, Stage
from groundkit.collection import Collection, IndexConfig, IndexReport, index
from groundkit.collection.derived import analyzer_of, bm25_params_of, document_provider
from groundkit.collection.home import Home
from groundkit.errors import IndexMismatchError, IntegrityError
from groundkit.model import Hit
from groundkit.progress import ProgressBar
from groundkit.retrieval.base import Scored
from groundkit.retrieval.bm25 import BM25Params
from groundkit.retrieval.fusion import FusionRetriever
from groundkit.retrieval.modes import MODES
from groundkit.retrieval.signals import TOP
from groundkit.text.analysis import Analyzer

DEPTH = 100
"""Hits retrieved per question: enough for R@100."""
DENSE = "dense-minilm"
"""The stage whose collection (with vectors) answers in the modes that embed."""
JUDGMENTS = "quote overlap (evals/golden/judgments.py)"


class CollectionSuite:
    """Questions judged by quotes, answered by collections built (or opened) per stage."""

    depth = DEPTH

    def __init__(self, *, label: str, golden: Golden, base: IndexConfig,
                 provenance: rpt.Provenance, home: Path,
                 existing: tuple[str, Home] | None = None,
                 embedding_cache: Path | None = None) -> None:
        self.label = label
        self.golden = golden
        self.base = base
        self._provenance = provenance
        self.home = home
        self.existing = existing
        self.embedding_cache = embedding_cache
        self.questions = questions_of(golden)
        self.qrels: metrics.Qrels = {}
        self._opened: dict[tuple[Any, ...], tuple[Collection, metrics.Qrels]] = {}
        self._verdicts = Verdicts()
        self._evidence = EvidenceCache()
        self._inherited: list[object] = []  # in a forked worker: the parent's (after_fork)
        self.run_files = RunFiles(self)
        self.answers = True
        """Whether finishing adds the answer stages (evals.golden.answers)."""

    # -- the Suite protocol ------------------------------------------------------------

    def unavailable(self, stage: Stage) -> str | None:
        if stage.engine == "run-file":  # a run that does not fit the suite is an error
            return self.run_files.unavailable(stage)
        if stage.stopwords is not None:
            return "extra stopword lists apply to external suites only"
        return rerank_stage.unavailable(stage)

    def open(self, stage: Stage,
             log: Log) -> _CollectionRun | McpRun | RunFileRun | FileBaselineRun:
        if stage.engine in ("run-file", "qmd"):  # evals/golden/runfile_stage.py
            return self.run_files.open(stage, log)
        settings = self.settings_of(stage)
        coll, qrels = self._opened_for(settings, stage.name, log)
        config: dict[str, Any] = {
            "chunk_size": settings.chunker.target, "chunk_overlap": settings.chunker.overlap,
            "chunk_boundaries": settings.chunker.boundaries,
            "analyzer": settings.analyzer.to_dict(), "bm25": settings.bm25.to_dict(),
            "embedding": stage.embedding, "mode": stage.mode, "options": dict(stage.options)}
        if stage.engine != "groundkit":
            config["engine"] = stage.engine
        if stage.collapse:
            config["collapse"] = "duplicate passages folded into the best-ranked (grk search)"
        units = f"{settings.chunker.target}-character chunks"
        if stage.twin is not None:
            return McpRun(stage, coll, qrels, config, stage.describe(units), self._verdicts)
        return _CollectionRun(stage, coll, settings, qrels, config, stage.describe(units),
                              self._verdicts, self._evidence)

    def provenance(self) -> rpt.Provenance:
        return self._provenance

    def config(self, stages: Sequence[Stage]) -> dict[str, Any]:
        return {"depth": self.depth, "judgments": JUDGMENTS, "stages": [s.name for s in stages]}

    forks = True  # each stage opens its collection where it ranks, so stages may fork

    def after_fork(self) -> None:
        """Open each collection the parent opened anew, and forget the retrievers built on
        the parent's; the parent's objects stay referenced so they are never closed here."""
        self._inherited.append((dict(self._opened), dict(self._evidence.retrievers)))
        self._opened = {key: (Collection.open(c.name, c.snapshot.directory.parents[1]), qrels)
                        for key, (c, qrels) in self._opened.items()}  # <home>/collections/..
        self._evidence.retrievers.clear()

    def extras(self) -> dict[str, Any]:
        """The answers block (:mod:`evals.golden.answers`) over the baseline's collection."""
        if not self.answers:
            return {}
        from .answers import answer_block
        from .furniture import detector_block

        coll, _ = self._opened_for(self.settings_of(STAGES[BASELINE]), BASELINE, lambda _: None)
        block = answer_block(self.questions, coll,
                             lambda text: self._evidence.signals(coll.snapshot, "bm25", text))
        if self.golden.version == 4:  # the labelled sample is of golden v4's pages
            block["extractive"]["furniture"] = detector_block(self.golden.root)
        return {"answers": block}

    def _opened_for(self, settings: IndexSettings, stage: str,
                    log: Log) -> tuple[Collection, metrics.Qrels]:
        """The collection for ``settings`` (indexed and opened on first use) and its qrels."""
        key = settings.key()
        if key not in self._opened:
            coll = self._collection(settings, key, stage, log)
            self._opened[key] = (coll, judge(self.golden, coll.chunks()))
        return self._opened[key]

    def finish(self, report: dict[str, Any], skipped: Mapping[str, str],
               extras: Mapping[str, Any]) -> dict[str, Any]:
        like_for_like(report)  # a file-level run file is compared with bm25@file
        if skipped:
            report["config"]["skipped_stages"] = dict(skipped)
        report.update(extras)
        if "answers" in extras:  # here, in this process: the model is never forked
            from .answers import add_modes

            key = self.settings_of(STAGES[DENSE]).key()  # its collection, if the run opened it
            add_modes(report["answers"], self.questions,
                      self._opened[key][0] if key in self._opened else None, DENSE)
            report["answers"] = rpt.canonical(report["answers"])
        return report

    def close(self) -> None:
        self._inherited.clear()
        for coll, _ in self._opened.values():
            coll.close()
        self._opened.clear()

    # -- building ------------------------------------------------------------------------

    def _index(self, name: str, config: IndexConfig, stage: str,
               publish_unchanged: bool = True) -> IndexReport:
        """Index ``config`` as ``name``; a stage that embeds says so on stderr as it goes
        (``embedding 5,183 chunks``, then count, rate and time left every 10 s)."""
        if not config.extra.get("embedding"):
            return index(name, config, home=self.home, publish_unchanged=publish_unchanged)
        with ProgressBar(f"{self.label}: indexing for {stage}") as bar:
            return index(name, config, home=self.home, publish_unchanged=publish_unchanged,
                         progress=bar.update)

    def settings_of(self, stage: Stage | None) -> IndexSettings:
        """The base settings with the stage's changes (``None``: the base itself).

        A stage that needs no vectors is indexed without them; one that needs them
        and names no model takes the base's.
        """
        extra = self.base.extra
        recorded = extra.get("embedding")
        embedding = recorded["spec"] if recorded else None
        if stage is not None:
            needs = MODES[stage.mode].embedding and stage.groundkit
            embedding = (stage.embedding or embedding) if needs else None
        return IndexSettings(
            chunker=(stage.chunking if stage and stage.chunking else self.base.chunker),
            analyzer=(stage.analyzer if stage and stage.analyzer else analyzer_of(extra)),
            bm25=(stage.bm25 if stage and stage.bm25 else bm25_params_of(extra)),
            embedding=embedding)

    def _reuses_existing(self, settings: IndexSettings) -> bool:
        """The existing collection serves these settings (vectors only matter when needed)."""
        if self.existing is None:
            return False
        own = self.settings_of(None)
        same = (own.chunker, own.analyzer, own.bm25) == (settings.chunker, settings.analyzer,
                                                          settings.bm25)
        return same and settings.embedding in (None, own.embedding)

    def _collection(self, settings: IndexSettings, key: tuple[Any, ...], stage: str,
                    log: Log) -> Collection:
        if self.existing is not None and self._reuses_existing(settings):
            name, home = self.existing
            log(f"{self.label}: {stage} searches collection {name!r} as it is")
            return Collection.open(name, home)
        extra: dict[str, Any] = {**self.base.extra, "analyzer": settings.analyzer.to_dict(),
                                 "bm25": settings.bm25.to_dict()}
        extra.pop("embedding", None)
        if settings.embedding:
            extra["embedding"] = {"spec": settings.embedding}
            if self.embedding_cache is not None:
                extra["embedding"]["cache"] = str(self.embedding_cache)
        config = dataclasses.replace(self.base, chunker=settings.chunker, extra=extra)
        name = self.collection_name(key)
        report = self._index(name, config, stage, publish_unchanged=False)
        if self.existing is None:  # a person's folders may hold files rightly skipped
            _all_indexed(self.label, report)
        coll = Collection.open(name, self.home)
        if not report.published and settings.embedding and not _vectors_current(
                coll, extra["embedding"]):
            # Same files and settings, but the provider's identity moved (another model
            # file, another runtime): the cached vectors would fail closed, so re-embed.
            coll.close()
            log(f"{self.label}: {stage}'s vectors came from another embedding identity")
            report = self._index(name, config, stage)
            if self.existing is None:
                _all_indexed(self.label, report)
            coll = Collection.open(name, self.home)
        log(f"{self.label}: indexed {report.chunks} chunks for {stage}"
            + (f" ({report.unchanged} files unchanged)" if report.unchanged else "")
            if report.published else f"{self.label}: {stage}'s collection is up to date")
        return coll

    def collection_name(self, key: tuple[Any, ...]) -> str:
        """One collection per distinct settings (``golden-<12 hex>``): in a home kept between
        runs, each is re-indexed incrementally, never under another stage's settings."""
        digest = hashlib.sha256(repr((self.label, self.base.roots, key)).encode()).hexdigest()
        return f"golden-{digest[:12]}"


def _all_indexed(label: str, report: IndexReport) -> None:
    """A suite's documents are all judged: one the index skipped (an extractor missing,
    timed out, refused the file) would silently judge its quotes unfindable, so it fails."""
    if report.skipped:
        listed = "; ".join(f"{s.path}: {s.reason}" for s in report.skipped[:5])
        raise IntegrityError(f"{label}: {len(report.skipped)} document(s) were not indexed "
                             f"({listed}{'; …' if len(report.skipped) > 5 else ''}): the "
                             "measurement would judge their quotes unfindable")


def _vectors_current(coll: Collection, embedding: Mapping[str, Any]) -> bool:
    """Whether ``coll``'s vectors were made under ``embedding``'s identity now (loading
    them into its snapshot, where the stage then finds them)."""
    provider = document_provider(embedding)
    try:
        coll.snapshot.vectors(provider.identity)
    except IndexMismatchError:
        return False
    finally:
        provider.close()
    return True


class _CollectionRun:
    def __init__(self, stage: Stage, coll: Collection, settings: IndexSettings,
                 qrels: metrics.Qrels, config: dict[str, Any], description: str,
                 verdicts: Verdicts, evidence: EvidenceCache) -> None:
        snap = coll.snapshot
        self.verdicts = verdicts
        self.evidence = evidence
        self.gate_mode = stage.mode if stage.engine == "groundkit" else None
        self.signals: dict[str, dict[str, float]] = {}
        self.snapshot = snap
        self.description = description
        self.config = config
        self.qrels: metrics.Qrels | None = qrels
        self.embedded = MODES[stage.mode].embedding and stage.engine == "groundkit"
        self.bm25_ranked = (stage.mode == "bm25" and stage.engine == "groundkit"
                            and not stage.rerank and not stage.collapse)
        """Whether the stage ranks with the collection's own BM25 (its top is the evidence's)."""
        def texts() -> list[str]:
            if stage.options.get("furniture") == "left out":
                return [without_furniture(c.text, c.furniture) for c in snap.chunks()]
            return [c.text for c in snap.chunks()]

        first = stage_retriever(stage, snap, settings.analyzer, settings.bm25, lambda: [
            settings.analyzer.analyze(t) for t in texts()], evidence.retrievers.setdefault(
            snap.name, {}), unit_texts=texts)
        config.update(engines.analysis_of(first))  # Lucene's query terms, as it ranks
        self.retriever = collapsed(stage, rerank_stage.wrap(first, snap, stage), texts)
        self.release = lambda: engines.release(first)  # the harness's, once it has ranked
        self._pairs = getattr(self.retriever, "pairs", None)  # BM25, dense: see _ranked
        if isinstance(self.retriever, rerank_stage.RerankedRetriever):
            config["rerank"] = {"method": stage.rerank, "depth": stage.rerank_depth,
                                "identity": self.retriever.identity,
                                "gate": f"decided on the first stage ({stage.mode}), "
                                        "before reranking"}

    def prime(self, queries: Sequence[str]) -> None:
        if self.embedded:
            self.snapshot.query_embedder().prime(queries)

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        """Full records (passage, verdict) for the top ``shown``; ids and scores for the rest.

        Also records the question's confidence signals in the stage's mode (for the gate).
        """
        if isinstance(self.retriever, FusionRetriever):
            self.retriever.explained = shown  # the rest are recorded by id and score only
        ranked, top = self._ranked(question.text, depth, shown)
        if self.gate_mode is not None:
            own = ranked[:TOP] if self.bm25_ranked else None
            self.signals[question.query_id] = self.evidence.signals(
                self.snapshot, self.gate_mode, question.text, own)
        # the shown hits' chunks, and those down to the distinct documents' depth
        stored = self.evidence.stored(self.snapshot, [
            position for position, _ in ranked[:max(len(top), rpt.DOCUMENTS_DEPTH)]])
        records = []
        for rank, (s, item) in enumerate(zip(top, stored[:len(top)], strict=True), start=1):
            hit = Hit(chunk=item.chunk, score=s.score, rank=rank, explanation=s.explanation)
            records.append(rpt.HitRecord.from_hit(hit.to_dict(self.snapshot.name),
                                                  self.verdicts.of(self.snapshot, item)))
        ids = self.snapshot.chunk_ids()
        records += rpt.HitRecord.unshown_from(
            len(top) + 1, [(ids[position], score) for position, score in ranked[len(top):]],
            [item.chunk.doc_id for item in stored[len(top):]])
        return records

    def _ranked(self, query: str, depth: int, shown: int) -> tuple[Ranked, list[Scored]]:
        """Every ``(position, score)``, best first, and the top ``shown`` as explained hits.

        A BM25 or dense stage ranks through its retriever's ``pairs`` and explains only
        what it shows, as its ``search`` explains every hit (same scores, order, hits).
        """
        if self._pairs is not None:
            ranked = self._pairs(query, depth)
            return ranked, scored(self.retriever.name, ranked[:shown])
        hits = self.retriever.search(query, depth)
        return [(s.position, s.score) for s in hits], hits[:shown]


def without_furniture(text: str, furniture: Sequence[tuple[int, int, str]]) -> str:
    """``text`` with its furniture runs blanked (spaces: terms and lengths lose them)."""
    for start, end, _ in furniture:
        text = text[:start] + " " * (end - start) + text[end:]
    return text


def questions_of(golden: Golden) -> list[rpt.Question]:
    def gold(answers: Sequence[Any]) -> tuple[rpt.GoldAnswer, ...]:
        return tuple(rpt.GoldAnswer(doc_id=a.doc_id, quote=a.quote, start=a.start, end=a.end)
                     for a in answers)

    return [rpt.Question(query_id=q.id, text=q.question, kind=q.kind, traits=tuple(q.traits),
                         gold=gold(q.answers), domain=q.domain, split=q.split,
                         near_miss=q.near_miss is not None, conflicting=gold(q.conflicting))
            for q in golden.questions]


def golden_suite(path: str | Path, home: Path, *,
                 embedding_cache: Path | None = None) -> CollectionSuite:
    """The golden version at ``path``, its integrity checked first (``IntegrityError``).

    Quotes, ids and checksums must hold; the corpus-level minimums and the authoring
    rules are the lint's (``python -m evals lint``), so a draft version can be measured
    before it meets them.
    """
    golden = load_golden(path, coverage=False, rules=False)
    manifest = hashlib.sha256((Path(path) / MANIFEST_FILE).read_bytes()).hexdigest()
    python, libraries = rpt.environment()
    provenance = rpt.Provenance(
        golden_version=f"v{golden.version}", golden_manifest_sha256=manifest,
        groundkit_version=groundkit.__version__,
        git_commit=rpt.git_commit(Path(__file__).resolve().parents[2]), python=python,
        libraries=libraries)
    base = IndexConfig(roots=(str(golden.root / "docs"),), include=("*",),
                       extra={"analyzer": Analyzer().to_dict(), "bm25": BM25Params().to_dict()})
    return CollectionSuite(label=f"golden v{golden.version}", golden=golden, base=base,
                           provenance=provenance, home=home, embedding_cache=embedding_cache)


def evaluate_golden(path: str | Path, out_dir: str | Path, *,
                    stage_names: Sequence[str] | None = None,
                    settings: rpt.Settings | None = None, embedding_cache: Path | None = None,
                    log: Log = lambda _: None, serial: bool = False) -> dict[str, Any]:
    """Run ``stage_names`` (default: the golden stages) on a golden version; writes
    ``out_dir/latest.json`` and ``out_dir/runs/`` and returns the report (the Python face
    of ``python -m evals run --golden PATH``; ``serial`` as its ``--serial``)."""
    import tempfile

    from evals.harness import evaluate
    from evals.stages import golden_defaults, resolve

    out = Path(out_dir)
    stages = resolve(list(stage_names or golden_defaults()))
    with tempfile.TemporaryDirectory(prefix="groundkit-eval-") as home:
        suite = golden_suite(path, Path(home), embedding_cache=embedding_cache)
        stages += suite.run_files.companions(stages)  # bm25@file beside a file-level peer
        try:
            built = evaluate(suite, stages, settings=settings or rpt.Settings(),
                             runs_dir=out / "runs", log=log, serial=serial)
        finally:
            suite.close()
    rpt.write_canonical(built, out / "latest.json")
    return built
