"""The stage registry of external benchmarks: which engine ranks which units, how.

Every stage ranks *units* of the imported collection and is judged per
document (a document's score is its best unit's, see
:func:`evals.external.engines.to_documents`):

* ``documents``: the collection as imported, one chunk per document
  (``DOC_CHUNKER``; only documents over 80,000 characters are split);
* ``passages``: groundkit's default chunking (1000 characters, 150 overlap),
  so the document-level score is the best passage's (MaxP).

``bm25`` is the baseline every other stage is compared with. Help text and
error messages are generated from this registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groundkit.errors import UsageError
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import ChunkerConfig

from .materialise import DOC_CHUNKER
from .stopwords import SOURCES as STOPWORD_SOURCES

BASELINE = "bm25"

ENGINES: dict[str, str] = {
    "groundkit": "groundkit's BM25 (the collection's own index, or one built the same way "
                 "from the same chunks for a parameter variant)",
    "bm25s": "bm25s (Lù 2024) over groundkit's analyzer terms",
    "rank-bm25": "rank-bm25 BM25Okapi (Brown 2020) over groundkit's analyzer terms",
    "run-file": "an external TREC run file, scored as it is",
    "dense": "groundkit dense: exact cosine over the units embedded by a local model",
    "hybrid": "groundkit hybrid: RRF of the bm25 and dense unit rankings",
}
UNITS: dict[str, ChunkerConfig] = {
    "documents": DOC_CHUNKER,
    "passages": ChunkerConfig(),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExternalStage:
    name: str
    description: str
    engine: str = "groundkit"
    units: str = "documents"
    analyzer: Analyzer = field(default_factory=Analyzer)
    bm25: BM25Params = field(default_factory=BM25Params)
    stopwords: str | None = None
    """An extra stopword list (:data:`STOPWORD_SOURCES`) removed before stemming."""
    run_file: str | None = None
    embedding: str | None = None
    """``provider:model`` for the dense and hybrid engines."""
    rrf_k: int = 60

    def __post_init__(self) -> None:
        for kind, value, registry in (("engine", self.engine, ENGINES),
                                      ("units", self.units, UNITS)):
            if value not in registry:
                raise UsageError(f"unknown {kind} {value!r}; valid: {', '.join(registry)}")
        if self.stopwords is not None and self.stopwords not in STOPWORD_SOURCES:
            raise UsageError(f"unknown stopword list {self.stopwords!r}; valid: "
                             f"{', '.join(STOPWORD_SOURCES)}")

    def config(self) -> dict[str, Any]:
        if self.engine == "run-file":
            return {"engine": self.engine, "run_file": self.run_file}
        dense = ({"embedding": self.embedding, "rrf_k": self.rrf_k}
                 if self.engine in ("dense", "hybrid") else {})
        return {**dense, "engine": self.engine, "units": self.units,
                "chunker": UNITS[self.units].to_dict(), "analyzer": self.analyzer.to_dict(),
                "bm25": self.bm25.to_dict(), "extra_stopwords": self.stopwords,
                "aggregation": "max score over a document's units"}


STAGES: dict[str, ExternalStage] = {}

_EXACT = BM25Params(lucene_norms=False)
_TERRIER_BM25 = BM25Params(method="robertson", k1=1.2, b=0.75, lucene_norms=False)
_NO_STOP = Analyzer(possessive=False, stopwords="none")


def register(stage: ExternalStage) -> ExternalStage:
    if stage.name in STAGES:
        raise ValueError(f"external stage {stage.name!r} registered twice")
    STAGES[stage.name] = stage
    return stage


register(ExternalStage(
    name=BASELINE, description="groundkit BM25 as imported: one chunk per document, Lucene "
    "English analyzer, k1=0.9 b=0.4, Lucene byte-quantised length norms (Anserini bm25-flat)"))
register(ExternalStage(
    name="bm25-exact-norms", bm25=_EXACT,
    description="as bm25 with exact document lengths (no Lucene byte norms): bm25s' formula"))
register(ExternalStage(
    name="bm25s", engine="bm25s", bm25=_EXACT,
    description="reference: bm25s method=lucene k1=0.9 b=0.4 on groundkit's terms"))
register(ExternalStage(
    name="rank-bm25", engine="rank-bm25",
    bm25=BM25Params(method="robertson", lucene_norms=False),
    description="reference: rank-bm25 BM25Okapi k1=0.9 b=0.4 (Robertson idf, floored) on "
    "groundkit's terms"))
register(ExternalStage(
    name="bm25-passages", units="passages",
    description="groundkit BM25 over 1000-character passages, document score = best passage"))
register(ExternalStage(
    name="bm25-robertson", bm25=_TERRIER_BM25,
    description="Terrier's BM25 scoring (Robertson idf, k1=1.2 b=0.75, exact lengths) with "
    "Lucene's 33 stopwords"))
register(ExternalStage(
    name="bm25-glasgow", bm25=_TERRIER_BM25, analyzer=_NO_STOP, stopwords="glasgow",
    description="Terrier's BM25 scoring with the Glasgow IR group stopword list + Porter"))
register(ExternalStage(
    name="bm25-terrier", bm25=_TERRIER_BM25, analyzer=_NO_STOP, stopwords="terrier",
    description="Terrier's BM25 scoring with Terrier's own stopword list + Porter "
    "(PyTerrier's default pipeline)"))

register(ExternalStage(
    name="dense-minilm", engine="dense", embedding="local:all-MiniLM-L6-v2",
    description="dense: all-MiniLM-L6-v2 (local), exact cosine, one unit per document"))
register(ExternalStage(
    name="hybrid-rrf60", engine="hybrid", embedding="local:all-MiniLM-L6-v2",
    description="hybrid: RRF (k=60) of bm25 and dense-minilm unit rankings"))

COMMON = (BASELINE, "bm25-exact-norms", "bm25s", "rank-bm25", "bm25-passages")
"""The stages every dataset runs by default."""


def describe() -> str:
    return "; ".join(f"{s.name}: {s.description}" for s in STAGES.values())


def resolve(names: list[str]) -> list[ExternalStage]:
    """The named stages, baseline first; ``UsageError`` naming the valid ones."""
    chosen = list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in STAGES]
    if unknown:
        raise UsageError(f"unknown external stage(s) {', '.join(unknown)}; valid: {describe()}")
    rest = [STAGES[n] for n in chosen if n != BASELINE]
    return [STAGES[BASELINE], *rest]


def run_file_stage(spec: str) -> ExternalStage:
    """A stage from ``NAME=PATH`` (the ``--run-file`` option)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--run-file takes NAME=PATH, got {spec!r}")
    if name in STAGES:
        raise UsageError(f"run-file stage name {name!r} is taken by a built-in stage")
    return ExternalStage(name=name, engine="run-file", run_file=path,
                         description=f"external TREC run {path}")
