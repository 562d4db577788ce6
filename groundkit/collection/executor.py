"""Where the indexer's heavy, parallel work runs: one seam, in-process by default.

An indexing run has two parallel parts: turning files into chunks (read, hash, decode or
extract, chunk; :mod:`.ingest`) and embedding the chunks. Both go through an
:class:`Executor`; everything else — the store's writes, chunk ids and order, BM25's global
statistics and arrays, publishing — stays in the indexing process and is computed once over
everything. An executor therefore changes where work runs, never what is built:

* :class:`InProcess` — this process, with forked worker processes for chunking when there
  are cores to spare (the default, and what ``grk index`` does without ``--ray``);
* :class:`~groundkit.collection.ray_executor.RayExecutor` — partitions of files in Ray tasks,
  embedding batches in Ray actors (``grk index --ray [ADDRESS]``, ADR-0014).

Both yield :class:`~groundkit.collection.ingest.Prepared` results in the candidates' order
and append the files they could not read to ``skipped`` as they reach them, so the indexer
stores the same rows in the same order whichever runs. The Ray one also analyses each
prepared chunk's BM25 terms where it chunked it (:class:`Analysed`); the BM25 build takes
those bags instead of analysing the texts again, and computes the global statistics over
everything as before, so the index is the same bytes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..retrieval.bm25_build import Bag, Item
from ..retrieval.bm25_tokens import TermBags
from ..sources import Candidate, Skipped
from ..text.analysis import Analyzer
from ..text.chunking import ChunkerConfig
from . import ingest

if TYPE_CHECKING:
    from ..embeddings import EmbeddingProvider

Candidates = Sequence[tuple[str, Candidate]]
"""``(root label, candidate)`` pairs in the order the indexer stores them."""

ProviderFactory = Callable[[Mapping[str, Any]], "EmbeddingProvider"]
"""A recorded embedding's settings in, its document-side provider out (a module-level
function: Ray ships it to the actors by name)."""


class Executor(Protocol):
    """Runs the chunking and embedding of one indexing run (see the module docstring)."""

    def prepared(
        self, candidates: Candidates, max_bytes: int, reusable: dict[str, tuple[str, int, str]],
        skipped: list[Skipped], name: str, chunker: ChunkerConfig,
        settings: Mapping[str, Any] | None = None,
    ) -> Generator[ingest.Prepared, None, None]:
        """Each readable candidate prepared, in order; unreadable ones appended to ``skipped``.

        ``settings`` are the generation's: an executor may analyse the chunks it prepares
        under their BM25 analyzer (:meth:`analysed`)."""
        ...

    def analysed(self) -> Analysed | None:
        """The BM25 term bags of the chunks the last :meth:`prepared` made, if it made any."""
        ...

    def embedder(self, embedding: Mapping[str, Any], make: ProviderFactory) -> EmbeddingProvider:
        """``make(embedding)``, running where this executor runs work; the caller closes it."""
        ...

    def small(self) -> Executor:
        """The executor for a run of a few files (no worker start-up where that pays)."""
        ...

    def close(self) -> None:
        """Release what the executor started."""
        ...


class InProcess:
    """This process, plus ``workers`` forked processes for chunking when ``workers > 1``."""

    def __init__(self, workers: int = 1) -> None:
        self.workers = max(1, workers)

    def prepared(
        self, candidates: Candidates, max_bytes: int, reusable: dict[str, tuple[str, int, str]],
        skipped: list[Skipped], name: str, chunker: ChunkerConfig,
        settings: Mapping[str, Any] | None = None,
    ) -> Generator[ingest.Prepared, None, None]:
        jobs = ingest.read_jobs(list(candidates), max_bytes, reusable, skipped)
        with ingest.worker_pool(self.workers) as pool:
            yield from ingest.prepared_in_order(pool, jobs, name, chunker)

    def analysed(self) -> None:
        """None: the BM25 build analyses the texts here, as it always did."""

    def embedder(self, embedding: Mapping[str, Any], make: ProviderFactory) -> EmbeddingProvider:
        return make(embedding)

    def small(self) -> InProcess:
        return InProcess(1)

    def close(self) -> None:
        """Nothing outlives a run: the worker processes stop with it."""



class Analysed:
    """BM25 term bags (:class:`~groundkit.retrieval.bm25_tokens.TermBags`) of the chunks an
    executor prepared, by document, under one analyzer: what a Ray task analysed.

    :meth:`corpus` hands them to the BM25 build in the generation's canonical order, a
    chunk's bag where its document and chunk id match what was analysed, its text otherwise
    (files carried over from the previous generation): the build counts the same terms.
    """

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._docs: dict[str, tuple[TermBags, int, tuple[str, ...]]] = {}
        self.bags = 0
        """Chunks the last :meth:`corpus` gave as bags (the rest as texts)."""

    def add(self, doc_id: str, bags: TermBags, first: int, chunk_ids: tuple[str, ...]) -> None:
        """Document ``doc_id``'s chunks ``chunk_ids`` are texts ``first, first + 1, ...`` of
        ``bags``."""
        self._docs[doc_id] = (bags, first, chunk_ids)

    def __len__(self) -> int:
        return sum(len(ids) for _, _, ids in self._docs.values())

    def corpus(self, conn: sqlite3.Connection, generation: int,
               analyzer: Analyzer) -> Iterator[Item] | None:
        """``generation``'s chunks in canonical order (:func:`~groundkit.store.
        iter_generation_chunks`' order), each as its bag or its text; ``None`` when the
        build's analyzer is not the one the bags were made with. Used once: each document's
        bags are released as they are given."""
        if analyzer != self.analyzer:
            return None
        rows = conn.execute(
            "SELECT g.doc_id, c.chunk_id, c.text FROM generation_chunks g "
            "JOIN chunks c ON c.rowid = g.chunk_rowid WHERE g.generation = ? "
            "ORDER BY g.doc_id, g.start, g.chunk_rowid", (generation,))
        return self._items(rows)

    def _items(self, rows: Iterator[tuple[str, str, str]]) -> Iterator[Item]:
        self.bags = 0
        doc: str | None = None
        entry: tuple[TermBags, int, tuple[str, ...]] | None = None
        k = 0
        for doc_id, chunk_id, text in rows:
            if doc_id != doc:
                doc, entry, k = doc_id, self._docs.pop(doc_id, None), 0
            if entry is not None and k < len(entry[2]) and entry[2][k] == chunk_id:
                self.bags += 1
                yield Bag(entry[0], entry[1] + k)
            else:
                yield text
            k += 1
