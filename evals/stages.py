"""The stage registry: every retrieval configuration the harness measures, for every suite.

A stage is an *engine* (groundkit, or an independent reference), a groundkit
search mode with its options, and the index settings it changes from the
suite's own: chunking, analyzer, BM25 parameters, an extra stopword list, an
embedding model. A setting left ``None`` is the suite's (golden: groundkit's
defaults over 1000-character chunks; an external collection: one unit per
document; a person's collection: its recorded settings), so the same stage runs
on any suite. ``bm25`` is the baseline every other stage is compared with (SPEC
§6); it always runs. Help text and error messages are generated from here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from groundkit.errors import UsageError
from groundkit.retrieval.bm25 import BM25Params
from groundkit.retrieval.modes import MODES
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import ChunkerConfig

BASELINE = "bm25"

ENGINES: dict[str, str] = {
    "groundkit": "groundkit's own retrievers (the mode names which: bm25, dense, hybrid)",
    "bm25s": "bm25s (Lù 2024) over groundkit's analyzer terms",
    "rank-bm25": "rank-bm25 BM25Okapi (Brown 2020) over groundkit's analyzer terms",
    "lucene": "Apache Lucene 8.8.1 itself (EnglishAnalyzer, BM25Similarity) in a JVM",
    "run-file": "an external TREC run file, scored as it is",
    "mcp-stdio": "groundkit through grk serve over stdio (the MCP SDK client)",
    "mcp-http": "groundkit through grk serve over streamable HTTP (the MCP SDK client)",
    "qmd": "qmd 2.8.3 (npm @tobilu/qmd) through its own CLI, its files judged at file level",
}
MCP = ("mcp-stdio", "mcp-http")
DENSE_NEEDS = ("sentence_transformers", "lancedb")
ONNX_NEEDS = ("onnxruntime", "tokenizers", "lancedb")


@dataclass(frozen=True, slots=True, kw_only=True)
class Stage:
    name: str
    description: str
    engine: str = "groundkit"
    mode: str = "bm25"
    options: Mapping[str, Any] = field(default_factory=dict)
    """The mode's options as given (the report records them so)."""
    chunking: ChunkerConfig | None = None
    analyzer: Analyzer | None = None
    bm25: BM25Params | None = None
    stopwords: str | None = None
    """An extra stopword list (``evals.external.stopwords``) applied before stemming."""
    embedding: str | None = None
    """``provider:model`` for modes that need vectors."""
    run_file: str | None = None
    golden: bool = False
    """One of the stages a golden run measures by default."""
    needs: tuple[str, ...] = ()
    """Optional modules the stage imports; checked before any retrieval runs."""
    twin: str | None = None
    """An MCP stage's direct counterpart: the two must rank every question identically."""
    agrees_with: str | None = None
    """A reference engine's groundkit counterpart: the report's agreement block compares
    their top 10s question by question (:mod:`evals.agreement`)."""
    rerank: str | None = None
    """A cross-encoder re-scores the first stage's shortlist: ``replace`` or ``rrf``."""
    rerank_depth: int = 30
    collapse: bool = False
    """Duplicate passages (the same text, whitespace and case aside) folded into their
    best-ranked place, the list filled from deeper: ``grk search``'s default
    (:mod:`groundkit.retrieval.collapse`)."""

    def describe(self, units: str) -> str:
        """The description, ``{units}`` filled with the suite's unit (``1000-character chunks``)."""
        return self.description.replace("{units}", units)

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise UsageError(f"unknown engine {self.engine!r}; valid: {', '.join(ENGINES)}")
        if self.mode not in MODES:
            raise UsageError(f"unknown mode {self.mode!r}; valid: {', '.join(MODES)}")
        if MODES[self.mode].embedding and self.embedding is None:
            raise UsageError(f"stage {self.name!r}: mode {self.mode} needs an embedding model")
        if (self.engine in MCP) != (self.twin is not None):
            raise UsageError(f"stage {self.name!r}: an MCP stage, and only one, has a twin")

    @property
    def groundkit(self) -> bool:
        """Ranked by groundkit's own retrievers (directly, or through its MCP server)."""
        return self.engine == "groundkit" or self.engine in MCP

    @property
    def lexical(self) -> bool:
        """Ranks by BM25 alone (no vectors, no run file)."""
        return (self.engine in ("groundkit", "bm25s", "rank-bm25", "lucene")
                and self.mode == "bm25")


STAGES: dict[str, Stage] = {}


def register(stage: Stage) -> Stage:
    if stage.name in STAGES:
        raise ValueError(f"stage {stage.name!r} registered twice")
    STAGES[stage.name] = stage
    return stage


MINILM = "local:all-MiniLM-L6-v2"
_EXACT = BM25Params(lucene_norms=False)
_TERRIER_BM25 = BM25Params(method="robertson", k1=1.2, b=0.75, lucene_norms=False)
_NO_STOP = Analyzer(possessive=False, stopwords="none")

register(Stage(name=BASELINE, golden=True, description="BM25 baseline: Lucene English "
               "analyzer, k1=0.9, b=0.4, {units}"))
register(Stage(name="bm25-nostem", golden=True, analyzer=Analyzer(stemmer="none"),
               description="BM25 without stemming (stopwords kept out)"))
register(Stage(name="bm25-k1.2-b0.75", golden=True, bm25=BM25Params(k1=1.2, b=0.75),
               description="BM25 with the textbook k1=1.2, b=0.75"))
register(Stage(name="bm25-chunk500", golden=True, chunking=ChunkerConfig(target=500, overlap=75),
               description="BM25 over 500-character chunks"))
register(Stage(name="bm25-chunk2000", golden=True,
               chunking=ChunkerConfig(target=2000, overlap=300),
               description="BM25 over 2000-character chunks"))
for _choice, _what in (("sentences", "sentence ends, line ends and spaces: the document's "
                       "headings and blank lines ignored"),
                       ("words", "spaces only: fixed-size windows")):
    register(Stage(name=f"bm25-{_choice[:-1]}-chunks", golden=True,
                   chunking=ChunkerConfig(boundaries=_choice),
                   description=f"BM25 over 1000-character chunks cut at {_what} (the baseline "
                   "prefers headings, then blank lines)"))
COLLAPSE = "bm25-collapse"
"""Measured by default on golden versions and on a person's own collection."""
register(Stage(name=COLLAPSE, golden=True, collapse=True,
               description="BM25 with duplicate passages collapsed (grk search's default): a "
               "passage found again elsewhere folds into its best-ranked place, the list filled "
               "from deeper"))
register(Stage(name="bm25-passages", chunking=ChunkerConfig(),
               description="BM25 over 1000-character passages (external: a document scores "
               "its best passage)"))
register(Stage(name="bm25-exact-norms", bm25=_EXACT,
               description="as bm25 with exact document lengths (no Lucene byte norms): "
               "bm25s' formula"))
register(Stage(name="bm25s", engine="bm25s", bm25=_EXACT,
               description="reference: bm25s method=lucene k1=0.9 b=0.4 on groundkit's terms"))
register(Stage(name="bm25s-furniture-out", engine="bm25s", bm25=_EXACT,
               options={"furniture": "left out"},
               description="ablation: bm25s as the bm25s stage, over unit texts whose page "
               "furniture (running heads, page numbers, contents, navigation) is blanked: "
               "whether furniture belongs in BM25's statistics (ADR-0021)"))
register(Stage(name="rank-bm25", engine="rank-bm25",
               bm25=BM25Params(method="robertson", lucene_norms=False),
               description="reference: rank-bm25 BM25Okapi k1=0.9 b=0.4 (Robertson idf, "
               "floored) on groundkit's terms"))
LUCENE = "lucene"
register(Stage(name=LUCENE, engine="lucene", golden=True, agrees_with=BASELINE,
               description="reference: Lucene 8.8.1 itself, EnglishAnalyzer and "
               "BM25Similarity(0.9, 0.4), over {units}"))
register(Stage(name="lucene-terms", engine="lucene", agrees_with=BASELINE,
               options={"terms": "groundkit"},
               description="reference: Lucene 8.8.1's BM25Similarity(0.9, 0.4) scoring "
               "groundkit's analyzer terms (WhitespaceAnalyzer over them): scoring alone"))
register(Stage(name="bm25-robertson", bm25=_TERRIER_BM25,
               description="Terrier's BM25 scoring (Robertson idf, k1=1.2 b=0.75, exact "
               "lengths) with Lucene's 33 stopwords"))
register(Stage(name="bm25-glasgow", bm25=_TERRIER_BM25, analyzer=_NO_STOP, stopwords="glasgow",
               description="Terrier's BM25 scoring with the Glasgow IR group stopword list + "
               "Porter"))
register(Stage(name="bm25-terrier", bm25=_TERRIER_BM25, analyzer=_NO_STOP, stopwords="terrier",
               description="Terrier's BM25 scoring with Terrier's own stopword list + Porter "
               "(PyTerrier's default pipeline)"))


def dense_stages(spec: str, *, golden: bool, suffix: str = "") -> list[Stage]:
    """The dense stage and the RRF k=60 hybrid for an embedding model ``spec``."""
    needs = DENSE_NEEDS if spec.startswith("local") else ("lancedb", "ollama")
    return [
        Stage(name=f"dense{suffix}", mode="dense", embedding=spec, needs=needs, golden=golden,
              description=f"dense: {spec}, cosine, no threshold"),
        Stage(name=f"hybrid-rrf60{suffix}", mode="hybrid", embedding=spec, options={"rrf_k": 60},
              needs=needs, golden=golden,
              description=f"BM25 + dense ({spec}) fused by RRF, k=60"),
    ]


register(Stage(name="dense-minilm", golden=True, mode="dense", embedding=MINILM,
               needs=DENSE_NEEDS,
               description="dense: all-MiniLM-L6-v2 (local, offline), cosine, no threshold"))
register(Stage(name="dense-minilm-int8", mode="dense",
               embedding="onnx:all-MiniLM-L6-v2-int8", needs=ONNX_NEEDS,
               description="dense: all-MiniLM-L6-v2 as an int8 ONNX graph (onnx, offline), "
               "cosine, no threshold"))
register(Stage(name="hybrid-rrf60", golden=True, mode="hybrid", embedding=MINILM,
               options={"rrf_k": 60}, needs=DENSE_NEEDS,
               description="BM25 + dense (MiniLM) fused by RRF, k=60"))
for _k in (10, 30, 100):
    register(Stage(name=f"hybrid-rrf{_k}", golden=True, mode="hybrid", embedding=MINILM,
                   options={"rrf_k": _k}, needs=DENSE_NEEDS,
                   description=f"fusion ablation: RRF with k={_k}"))
register(Stage(name="hybrid-convex", golden=True, mode="hybrid", embedding=MINILM,
               options={"fusion": "convex"}, needs=DENSE_NEEDS,
               description="fusion ablation: 0.5/0.5 convex combination of min-max "
               "normalised BM25 and cosine scores"))

for _transport in ("stdio", "http"):
    register(Stage(name=f"mcp-{_transport}-bm25", golden=True, engine=f"mcp-{_transport}",
                   twin=BASELINE, needs=("mcp",),
                   description=f"bm25 through grk serve over {_transport} (top 10): must equal "
                   "bm25 question for question"))
    register(Stage(name=f"mcp-{_transport}-hybrid", engine=f"mcp-{_transport}", mode="hybrid",
                   embedding=MINILM, twin="hybrid-rrf60", needs=(*DENSE_NEEDS, "mcp"),
                   description=f"hybrid (RRF k=60) through grk serve over {_transport} (top "
                   "10): must equal hybrid-rrf60 question for question"))

QMD = "qmd"
"""A product peer: qmd's keyword search over whole files (evals/peers/qmd.py)."""
register(Stage(name=QMD, engine="qmd", golden=True, options={"command": "search"},
               description="peer: qmd 2.8.3 `qmd search` (SQLite FTS5 BM25 over whole {units}, "
               "every query word required), judged at file level"))
for _command, _what in (("query", "query expansion, vectors and a reranker"),
                        ("vsearch", "vectors alone")):
    register(Stage(name=f"qmd-{_command}", engine="qmd", golden=True,
                   options={"command": _command},
                   description=f"peer: qmd 2.8.3 `qmd {_command}` ({_what}: its models are "
                   "downloaded at run time)"))

RERANK_MODEL = "GROUNDKIT_RERANK_MODEL"
"""The cross-encoder the rerank stages use (a model folder); unset, they are not measured."""
for _first, _method in (("bm25", "replace"), ("bm25", "rrf"), ("hybrid", "replace")):
    register(Stage(
        name=f"{_first}-rerank" + ("-rrf" if _method == "rrf" else ""), golden=True,
        mode=_first, rerank=_method, options={"rrf_k": 60} if _first == "hybrid" else {},
        embedding=MINILM if _first == "hybrid" else None,
        needs=DENSE_NEEDS if _first == "hybrid" else ("sentence_transformers",),
        description=f"{_first} then a cross-encoder over its top 30 "
        + ("(its order replaces the first stage's)" if _method == "replace"
           else "(fused with the first stage's order by RRF, k=60)")))

EXTERNAL_COMMON = (BASELINE, "bm25-exact-norms", "bm25s", "rank-bm25", LUCENE, "lucene-terms",
                   "bm25-passages")
"""The stages every external dataset runs by default."""


def golden_defaults() -> list[str]:
    return [name for name, stage in STAGES.items() if stage.golden]


def describe() -> str:
    return "; ".join(f"{s.name}: {s.describe('its units')}" for s in STAGES.values())


def resolve(names: list[str], known: Mapping[str, Stage] | None = None) -> list[Stage]:
    """The named stages, baseline first; ``UsageError`` naming the valid ones.

    ``known`` adds stages made for this run (``--embed-model``, ``--run-file``).
    """
    known = STAGES if known is None else known
    chosen = list(dict.fromkeys(names))
    unknown = [n for n in chosen if n not in known]
    if unknown:
        valid = "; ".join(f"{s.name}: {s.describe('its units')}" for s in known.values())
        raise UsageError(f"unknown stage(s) {', '.join(unknown)}; valid stages: {valid}")
    return [known[BASELINE], *(known[n] for n in chosen if n != BASELINE)]


def embed_model_stages(spec: str) -> list[Stage]:
    """``--embed-model [PROVIDER:]MODEL``: its dense and hybrid stages, named after the model.

    A bare model name is an Ollama model (the seeds' ``--embed-model nomic-embed-text``).
    """
    if not spec.strip() or spec.endswith(":"):
        raise UsageError(f"--embed-model takes [PROVIDER:]MODEL (e.g. ollama:nomic-embed-text), "
                         f"got {spec!r}")
    if ":" not in spec:
        spec = f"ollama:{spec}"
    slug = re.sub(r"[^A-Za-z0-9.]+", "-", spec.partition(":")[2]).strip("-").lower()
    return dense_stages(spec, golden=True, suffix=f"-{slug}")


def run_file_stage(spec: str) -> Stage:
    """A stage from ``NAME=PATH`` (the ``--run-file`` option)."""
    name, sep, path = spec.partition("=")
    if not sep or not name or not path:
        raise UsageError(f"--run-file takes NAME=PATH, got {spec!r}")
    if name in STAGES or "@" in name:  # bm25@file: a run file's like-for-like baseline
        raise UsageError(f"run-file stage name {name!r} is taken by a built-in stage"
                         + (" (names with @ are kept for derived stages)" if "@" in name else ""))
    return Stage(name=name, engine="run-file", run_file=path, description=f"run file {path}")
