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
stores the same rows in the same order whichever runs.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..sources import Candidate, Skipped
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
    ) -> Generator[ingest.Prepared, None, None]:
        """Each readable candidate prepared, in order; unreadable ones appended to ``skipped``."""
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
    ) -> Generator[ingest.Prepared, None, None]:
        jobs = ingest.read_jobs(list(candidates), max_bytes, reusable, skipped)
        with ingest.worker_pool(self.workers) as pool:
            yield from ingest.prepared_in_order(pool, jobs, name, chunker)

    def embedder(self, embedding: Mapping[str, Any], make: ProviderFactory) -> EmbeddingProvider:
        return make(embedding)

    def small(self) -> InProcess:
        return InProcess(1)

    def close(self) -> None:
        """Nothing outlives a run: the worker processes stop with it."""

