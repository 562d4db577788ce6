"""Named external datasets: where their files are, how they are read, what is published.

Formats live in :mod:`~evals.external.beir`, :mod:`~evals.external.classic`
and :mod:`~evals.external.irds`; this module says which files (checked
against :data:`~evals.external.checksums.MANIFEST`) make up each named
dataset, how its title and text are joined, which stages run on it, the
published numbers it must reproduce, and the exact counts it must have.
Besides the names here, ``beir:DIR[@split]`` loads any BEIR directory and
``irds:ID`` any ir_datasets id.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evals.stages import EXTERNAL_COMMON
from groundkit.errors import IntegrityError, UsageError

from . import irds
from .beir import read_beir
from .checksums import MANIFEST, data_dir, verified
from .classic import read_classic
from .dataset import Dataset


@dataclass(frozen=True, slots=True)
class Sources:
    """Where a loader reads from: the data mirror, the ir_datasets cache, network policy."""

    data: str | os.PathLike[str] | None = None
    irds_cache: str | os.PathLike[str] | None = None
    offline: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Reference:
    """A published score a stage must reproduce within ``tolerance``."""

    stage: str
    measure: str
    value: float
    source: str
    tolerance: float = 0.01


@dataclass(frozen=True, slots=True, kw_only=True)
class DatasetSpec:
    name: str
    description: str
    load: Callable[[Sources], Dataset]
    join: str = "flat"
    stages: tuple[str, ...] = EXTERNAL_COMMON
    references: tuple[Reference, ...] = ()
    counts: dict[str, int] = field(default_factory=dict)
    gated: bool = False
    """Run by ``check`` (and gated by ``evals/expected/<name>.json``)."""


def _beir(folder: str, split: str, name: str) -> Callable[[Sources], Dataset]:
    def load(src: Sources) -> Dataset:
        root = data_dir(src.data) / folder
        for rel in MANIFEST:
            if rel.startswith(f"{folder}/") and rel.endswith((".gz", ".jsonl", f"/{split}.tsv")):
                verified(rel, src.data)
        return read_beir(root, split=split, name=name)
    return load


def _irds(dataset_id: str, name: str, grades: dict[int, int] | None = None,
          ) -> Callable[[Sources], Dataset]:
    def load(src: Sources) -> Dataset:
        return irds.load(dataset_id, cache=src.irds_cache, data=src.data, offline=src.offline,
                         grades=grades, name=name)
    return load


def _classic(name: str, relpath: str) -> Callable[[Sources], Dataset]:
    def load(src: Sources) -> Dataset:
        return read_classic(name, verified(relpath, src.data))
    return load


ANSERINI = ("Anserini BEIR regression beir-v1.0.0-{}.flat (castorini/anserini, Lucene BM25 "
            "k1=0.9 b=0.4, EnglishAnalyzer)")
PYTERRIER = ("PyTerrier BM25 on Vaswani, terrier-org/pyterrier examples/notebooks/"
             "experiment.ipynb (Terrier defaults: k1=1.2 b=0.75, stopwords, Porter)")
CRANFIELD_GRADES = {1: 4, 2: 3, 3: 2, 4: 1, -1: 0}
"""Cleverdon's codes (cranqrel.readme: 1 = complete answer ... 4 = minimum interest,
-1 = not relevant) as gains 4..1, 0. ir_datasets' QREL_DEFS label the codes the other
way round; the README in the tarball is the primary source."""


def _vaswani_refs() -> tuple[Reference, ...]:
    return tuple(Reference(stage=stage, measure=m, value=v, source=PYTERRIER)
                 for stage in ("bm25-glasgow", "bm25-terrier")
                 for m, v in (("AP", 0.2965), ("nDCG", 0.6212)))


MTEB_MINILM = ("MTEB leaderboard, sentence-transformers/all-MiniLM-L6-v2 on SciFact "
               "(nDCG@10 about 0.645, as cited in the dense-retrieval issue)")

DATASETS: dict[str, DatasetSpec] = {spec.name: spec for spec in (
    DatasetSpec(
        name="scifact", description="BEIR SciFact, test split (5,183 abstracts, 300 claims)",
        load=_beir("beir-scifact", "test", "scifact"), gated=True,
        references=(*(Reference(stage="bm25", measure=m, value=v,
                                 source=ANSERINI.format("scifact"))
                       for m, v in (("nDCG@10", 0.6789), ("R@100", 0.9253),
                                    ("R@1000", 0.9767))),
                    # Checked only when the (slow, on-demand) dense stage runs.
                    Reference(stage="dense-minilm", measure="nDCG@10", value=0.645,
                              source=MTEB_MINILM)),
        counts={"docs": 5183, "queries": 300, "judged_queries": 300, "qrels": 339}),
    DatasetSpec(
        name="nfcorpus", description="BEIR NFCorpus, test split (3,633 documents, 323 queries)",
        load=_beir("beir-nfcorpus", "test", "nfcorpus"), gated=True,
        references=tuple(Reference(stage="bm25", measure=m, value=v,
                                   source=ANSERINI.format("nfcorpus"))
                         for m, v in (("nDCG@10", 0.3218), ("R@100", 0.2457),
                                      ("R@1000", 0.3704))),
        counts={"docs": 3633, "queries": 323, "judged_queries": 323, "qrels": 12334}),
    DatasetSpec(
        name="vaswani", description="Vaswani (NPL) through ir_datasets 'vaswani' (11,429 docs)",
        load=_irds("vaswani", "vaswani"), join="text", gated=True,
        stages=(*EXTERNAL_COMMON, "bm25-robertson", "bm25-glasgow", "bm25-terrier"),
        references=_vaswani_refs(),
        counts={"docs": 11429, "queries": 93, "judged_queries": 93, "qrels": 2083}),
    DatasetSpec(
        name="cranfield", description="Cranfield 1400 through ir_datasets 'cranfield'; the "
        "text field already starts with the title, so it is indexed alone",
        load=_irds("cranfield", "cranfield", CRANFIELD_GRADES), join="text", gated=True,
        counts={"docs": 1400, "queries": 225, "judged_queries": 225, "qrels": 1837}),
    DatasetSpec(
        name="cisi", description="CISI (Glasgow SMART files): 1,460 docs, 76 judged queries",
        load=_classic("cisi", "cisi/cisi.tar.gz"),
        counts={"docs": 1460, "queries": 112, "judged_queries": 76, "qrels": 3114}),
    DatasetSpec(
        name="medline", description="MEDLINE (Glasgow SMART files): 1,033 docs, 30 queries",
        load=_classic("medline", "medline/med.tar.gz"),
        counts={"docs": 1033, "queries": 30, "judged_queries": 30, "qrels": 696}),
    DatasetSpec(
        name="adi", description="ADI (Glasgow SMART files): 82 docs, 35 queries",
        load=_classic("adi", "adi/adi.tar.gz"),
        counts={"docs": 82, "queries": 35, "judged_queries": 35, "qrels": 170}),
)}


def describe() -> str:
    return "; ".join(f"{s.name}: {s.description}" for s in DATASETS.values())


def resolve(name: str) -> DatasetSpec:
    """A registered dataset, or one made for ``beir:DIR[@split]`` / ``irds:ID``."""
    if name in DATASETS:
        return DATASETS[name]
    kind, sep, rest = name.partition(":")
    if sep and kind == "beir" and rest:
        folder, _, split = rest.partition("@")
        label = Path(folder).name or "beir"
        return DatasetSpec(name=label, description=f"BEIR directory {folder}",
                           load=lambda src: read_beir(folder, split=split or "test", name=label))
    if sep and kind == "irds" and rest:
        label = rest.replace("/", "-")
        return DatasetSpec(name=label, description=f"ir_datasets {rest}",
                           load=_irds(rest, label), join="flat")
    raise UsageError(f"unknown dataset {name!r}; use beir:DIR[@split], irds:ID or one of: "
                     f"{describe()}")


def load_checked(spec: DatasetSpec, sources: Sources) -> Dataset:
    """Load a dataset and check its exact counts (``IntegrityError`` on any difference)."""
    dataset = spec.load(sources)
    got = dataset.counts()
    wrong = {k: (got[k], v) for k, v in spec.counts.items() if got.get(k) != v}
    if wrong:
        detail = ", ".join(f"{k} {have} (expected {want})" for k, (have, want) in wrong.items())
        raise IntegrityError(f"dataset {spec.name!r} has the wrong counts: {detail}")
    return dataset
