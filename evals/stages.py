"""The stage registry: every retrieval configuration the harness can measure.

A stage is an index configuration (chunking, analyzer, BM25 parameters,
embedding model) plus a search configuration (mode and its options). Stages
with the same index configuration share one index. ``bm25`` is the baseline
every other stage is compared with (SPEC §6); it is always run.

Help text and error messages are generated from this registry.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from groundkit.errors import UsageError
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import DEFAULT_OVERLAP, DEFAULT_TARGET

BASELINE = "bm25"


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    name: str
    description: str
    chunk_size: int = DEFAULT_TARGET
    chunk_overlap: int = DEFAULT_OVERLAP
    analyzer: Analyzer = field(default_factory=Analyzer)
    bm25: BM25Params = field(default_factory=BM25Params)
    embedding: str | None = None
    mode: str = "bm25"
    options: dict[str, Any] = field(default_factory=dict)
    default: bool = True
    needs: tuple[str, ...] = ()
    """Optional modules the stage imports; checked before any retrieval runs."""

    def index_key(self) -> tuple[Any, ...]:
        """Stages with equal keys share one index."""
        return (self.chunk_size, self.chunk_overlap, self.analyzer.identity,
                tuple(sorted(self.bm25.to_dict().items())), self.embedding)

    def config(self) -> dict[str, Any]:
        return {
            "chunk_size": self.chunk_size, "chunk_overlap": self.chunk_overlap,
            "analyzer": self.analyzer.to_dict(), "bm25": self.bm25.to_dict(),
            "embedding": self.embedding, "mode": self.mode, "options": dict(self.options),
        }


STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    if stage.name in STAGES:
        raise ValueError(f"stage {stage.name!r} registered twice")
    STAGES[stage.name] = stage
    return stage


register(Stage(name=BASELINE, description="BM25 baseline: Lucene English analyzer, k1=0.9, "
               "b=0.4, 1000-character chunks"))
register(Stage(name="bm25-nostem", description="BM25 without stemming (stopwords kept out)",
               analyzer=Analyzer(stemmer="none")))
register(Stage(name="bm25-k1.2-b0.75", description="BM25 with the textbook k1=1.2, b=0.75",
               bm25=BM25Params(k1=1.2, b=0.75)))
register(Stage(name="bm25-chunk500", description="BM25 over 500-character chunks",
               chunk_size=500, chunk_overlap=75))
register(Stage(name="bm25-chunk2000", description="BM25 over 2000-character chunks",
               chunk_size=2000, chunk_overlap=300))


DENSE_NEEDS = ("sentence_transformers", "lancedb")
MINILM = "local:all-MiniLM-L6-v2"
register(Stage(name="dense-minilm", description="dense: all-MiniLM-L6-v2 (local, offline), "
               "cosine, no threshold", embedding=MINILM, mode="dense", needs=DENSE_NEEDS))
register(Stage(name="hybrid-rrf60", description="BM25 + dense (MiniLM) fused by RRF, k=60",
               embedding=MINILM, mode="hybrid", options={"rrf_k": 60}, needs=DENSE_NEEDS))
for _k in (10, 30, 100):
    register(Stage(name=f"hybrid-rrf{_k}", description=f"fusion ablation: RRF with k={_k}",
                   embedding=MINILM, mode="hybrid", options={"rrf_k": _k}, needs=DENSE_NEEDS))
register(Stage(name="hybrid-convex", description="fusion ablation: 0.5/0.5 convex combination "
               "of min-max normalised BM25 and cosine scores", embedding=MINILM, mode="hybrid",
               options={"fusion": "convex"}, needs=DENSE_NEEDS))


def default_stages() -> list[str]:
    return [name for name, stage in STAGES.items() if stage.default]


def describe() -> str:
    return "; ".join(f"{s.name}: {s.description}" for s in STAGES.values())


def resolve(names: list[str] | None) -> list[Stage]:
    """The stages to run, baseline first; ``UsageError`` naming the valid ones."""
    chosen = list(dict.fromkeys(names or default_stages()))
    unknown = [n for n in chosen if n not in STAGES]
    if unknown:
        raise UsageError(f"unknown stage(s) {', '.join(unknown)}; valid stages: {describe()}")
    if BASELINE in chosen:
        chosen.remove(BASELINE)
    return [STAGES[BASELINE]] + [STAGES[n] for n in chosen]
