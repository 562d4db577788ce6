"""A dataset made ready to rank: materialised, indexed, and cut into units.

:func:`prepare` materialises the dataset (a cached folder keyed by its content
fingerprint and join), imports it as a groundkit collection with one chunk per
document, opens it, and exposes the *units* every stage ranks: the
collection's own chunks (``documents``) or groundkit's default passages of the
same texts cut by a stage's chunking (with :func:`groundkit.text.chunking.spans`,
the function the indexer uses).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from evals.engines import analyzed
from groundkit.collection import Collection
from groundkit.errors import IntegrityError
from groundkit.retrieval.bm25 import BM25Index, BM25Params
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import ChunkerConfig, spans

from .dataset import Dataset, join_text
from .materialise import Materialised, import_collection, materialise

Log = Callable[[str], None]


@dataclass(slots=True)
class Units:
    """What a stage ranks: texts with their document and span in that document."""

    texts: list[str]
    doc_of: npt.NDArray[np.int64]
    spans: list[tuple[int, int]]


@dataclass(slots=True)
class Prepared:
    """An imported, opened dataset with per-document lookups (dataset order)."""

    dataset: Dataset
    materialised: Materialised
    collection: Collection
    doc_ids: list[str]
    paths: list[str]
    texts: list[str]
    index_analyzer: Analyzer
    index_bm25: BM25Params
    data: Any = None
    _units: dict[ChunkerConfig | None, Units] = field(default_factory=dict)
    _terms: dict[tuple[ChunkerConfig | None, str], list[list[str]]] = field(default_factory=dict)
    _id_rank: npt.NDArray[np.int64] | None = None

    @property
    def index_of(self) -> dict[str, int]:
        return {d: i for i, d in enumerate(self.doc_ids)}

    @property
    def id_rank(self) -> npt.NDArray[np.int64]:
        """Each document's place among the sorted doc ids (trec_eval's tie order)."""
        if self._id_rank is None:
            ids = self.doc_ids
            rank = np.empty(len(ids), dtype=np.int64)
            rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))
            self._id_rank = rank
        return self._id_rank

    def units(self, chunking: ChunkerConfig | None) -> Units:
        """The collection's own chunks (``None``: one per document), or ``chunking``'s."""
        if chunking not in self._units:
            self._units[chunking] = (self._collection_units() if chunking is None
                                     else self._chunked_units(chunking))
        return self._units[chunking]

    def _collection_units(self) -> Units:
        by_path = {p: i for i, p in enumerate(self.paths)}
        chunks = self.collection.chunks()
        if len(chunks) != self.collection.snapshot.bm25().n_docs:
            raise IntegrityError(f"collection {self.collection.name!r}: chunk list and BM25 "
                                 "index disagree; re-import it")
        return Units(texts=[c.text for c in chunks],
                     doc_of=np.fromiter((by_path[c.doc_id] for c in chunks), np.int64,
                                        len(chunks)),
                     spans=[(c.start, c.end) for c in chunks])

    def _chunked_units(self, config: ChunkerConfig) -> Units:
        texts, owners, cuts = [], [], []
        for i, text in enumerate(self.texts):
            for start, end in spans(text, config):
                texts.append(text[start:end])
                owners.append(i)
                cuts.append((start, end))
        return Units(texts=texts, doc_of=np.asarray(owners, dtype=np.int64), spans=cuts)

    def unit_terms(self, chunking: ChunkerConfig | None, analyzer: Analyzer) -> list[list[str]]:
        """Every unit's index terms (cached per units and analyzer)."""
        key = (chunking, analyzer.identity)
        if key not in self._terms:
            self._terms[key] = analyzed(analyzer, self.units(chunking).texts)
        return self._terms[key]

    def index_for(self, chunking: ChunkerConfig | None, analyzer: Analyzer,
                  params: BM25Params) -> BM25Index:
        """The collection's own BM25 index when it fits, else one built like it in memory."""
        if chunking is None and analyzer == self.index_analyzer:
            own = self.collection.snapshot.bm25()
            if params == self.index_bm25:
                return own
            return BM25Index.from_postings(  # the same postings, scored with other parameters
                terms=[own.term(i) for i in range(own.n_terms)], indptr=own.indptr,
                docs=own.docs, tfs=own.tfs, doc_lengths=own.doc_lengths.astype(np.int64),
                analyzer=analyzer,
                params=params)
        return BM25Index.build_from_texts(self.units(chunking).texts, analyzer, params)


def cache_dir(base: Path, dataset: Dataset, join: str) -> Path:
    return base / f"{dataset.name}-{dataset.split}-{join}-{dataset.fingerprint()[:16]}"


@contextlib.contextmanager
def prepare(dataset: Dataset, *, join: str, cache: Path, data: Any = None,
            reuse: bool = True, log: Log = lambda _: None) -> Iterator[Prepared]:
    """Materialise, import and open ``dataset`` under ``cache``; yields it ready to rank."""
    folder = cache_dir(cache, dataset, join)
    t = time.perf_counter()
    m = materialise(dataset, folder, join=join, reuse=reuse)
    log(f"{dataset.name}: materialised {len(m.files)} documents in {folder} "
        f"({time.perf_counter() - t:.1f}s)")
    t = time.perf_counter()
    analyzer, bm25 = Analyzer(), BM25Params()
    report = import_collection(m, "external", home=folder / "home", analyzer=analyzer,
                               bm25=bm25, reuse=reuse)
    log(f"{dataset.name}: " + ("reused the imported collection" if report is None else
                               f"indexed {report.chunks} chunks") +
        f" ({time.perf_counter() - t:.1f}s)")
    path_of = m.path_of()
    coll = Collection.open("external", folder / "home")
    try:
        yield Prepared(dataset=dataset, materialised=m, collection=coll,
                       doc_ids=[d.doc_id for d in dataset.docs],
                       paths=[path_of[d.doc_id] for d in dataset.docs],
                       texts=[join_text(d, join) for d in dataset.docs],
                       index_analyzer=analyzer, index_bm25=bm25, data=data)
    finally:
        coll.close()
