"""The indexer's parallel work on a Ray cluster (``grk index --ray [ADDRESS]``, ADR-0014).

What runs where:

* **Ray tasks** (one CPU each): partitions of :data:`PARTITION_FILES` files in the
  indexer's order. A task reads and hashes each file, picks its extractor, decodes or
  extracts and chunks it — :func:`.ingest.read_jobs` and :func:`.ingest.prepare`, the code
  the in-process path runs — analyses its chunks' BM25 terms (tokenising, stopwords,
  stemming: :class:`~groundkit.retrieval.bm25_tokens.BagMaker`, the build's own code,
  one per worker process so a token is stemmed once per worker) and
  returns the results with the files it could not read, in order, and the chunks' term bags
  (the partition's distinct terms and one array of term numbers). The files are read where
  the task runs: every node needs the documents at the same path (a shared filesystem).
* **Ray actors** (one CPU each, one per CPU of the cluster): embedding. Each loads the model
  once and embeds whole batches, the batches the in-process path sends its provider.
* **The indexing process** (the driver): discovery, the store's writes in order, chunk ids,
  BM25's build from the bags (term ids, document frequencies, average length, scores:
  computed once, over everything; carried files' chunks analysed here), the vectors' files,
  publishing. So the generation is the one a single process builds, byte for byte.

A worker process that dies is retried by Ray (tasks ``max_retries``, actors
``max_restarts``); a task that fails for good fails the run, and a failed run publishes
nothing (:mod:`.indexer`). Ray is imported only when a :class:`RayExecutor` is made.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Generator, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import GroundkitError, MissingDependencyError
from ..retrieval.bm25_tokens import BagMaker, TermBags
from ..sources import Candidate, Skipped
from ..text.analysis import Analyzer
from ..text.chunking import ChunkerConfig
from . import ingest
from .derived import analyzer_of
from .executor import Analysed, Candidates, ProviderFactory

if TYPE_CHECKING:
    from ..embeddings import EmbeddingIdentity, Kind

PARTITION_FILES = 64
"""Files per Ray task: enough to amortise a task's overhead, small enough to spread."""

IN_FLIGHT = 2
"""Tasks (or embedding batches) in flight per CPU of the cluster."""

MAX_RETRIES = 3
"""Times Ray retries a task (or restarts an actor) whose worker process died."""

TEXT = 11
"""A chunk row's text (:func:`groundkit.store.chunk_row`)."""

DIE_VARIABLE = "GROUNDKIT_RAY_DIE"
"""Test hook: ``PATH`` makes the first attempt of the first partition exit its worker process
(``PATH`` is created to mark it), ``always`` makes every attempt exit."""


class ClusterError(GroundkitError, RuntimeError):
    """A Ray run failed (a task failed for good, or the cluster went away)."""

    exit_code = 1


def import_ray(what: str = "indexing on Ray (--ray)") -> Any:
    """The ``ray`` module, or :class:`MissingDependencyError` naming the ``ray`` extra."""
    try:
        import ray
    except ImportError:
        raise MissingDependencyError("ray", "ray", what) from None
    return ray


class RayExecutor:
    """Chunking in Ray tasks, embedding in Ray actors (see the module docstring).

    ``address`` is a cluster's (``HOST:PORT`` or ``ray://...``); ``None`` attaches to the
    cluster ``RAY_ADDRESS`` names or one started on this machine, else starts a local Ray.
    When this process is already connected to Ray, that connection is used. With
    ``analyse=False`` the tasks only chunk and the driver analyses every chunk's BM25 terms
    (the layout before the analysis moved to the tasks; ``bench/bench_ray_index.py``).
    """

    def __init__(self, address: str | None = None, *, max_retries: int = MAX_RETRIES,
                 partition_files: int = PARTITION_FILES, workers: int | None = None,
                 analyse: bool = True) -> None:
        self._ray = import_ray()
        self._started = not self._ray.is_initialized()
        if self._started:
            self._ray.init(address=address or None, include_dashboard=False,
                           log_to_driver=False, logging_level="warning")
        self.max_retries = max_retries
        self.partition_files = max(1, partition_files)
        cpus = int(self._ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, workers if workers is not None else cpus)
        self._die = os.environ.get(DIE_VARIABLE) or None
        self.analyse = analyse
        self._analysed: Analysed | None = None

    def prepared(
        self, candidates: Candidates, max_bytes: int, reusable: dict[str, tuple[str, int, str]],
        skipped: list[Skipped], name: str, chunker: ChunkerConfig,
        settings: Mapping[str, Any] | None = None,
    ) -> Generator[ingest.Prepared, None, None]:
        analyzer = None if settings is None or not self.analyse else analyzer_of(settings)
        self._analysed = None if analyzer is None else Analysed(analyzer)
        task = self._ray.remote(num_cpus=1, max_retries=self.max_retries)(prepare_partition)
        window: deque[Any] = deque()
        for n, start in enumerate(range(0, len(candidates), self.partition_files)):
            part = list(candidates[start:start + self.partition_files])
            own = {doc: reusable[doc] for doc in (label + c.relpath for label, c in part)
                   if doc in reusable}
            window.append(task.remote(part, max_bytes, own, name, chunker, analyzer,
                                      self._die if n == 0 else None))
            if len(window) >= IN_FLIGHT * self.workers:
                yield from self._outcomes(window.popleft(), skipped)
        while window:
            yield from self._outcomes(window.popleft(), skipped)

    def _outcomes(self, ref: Any, skipped: list[Skipped]) -> Iterator[ingest.Prepared]:
        outcomes, bags = self._get(ref)
        first = 0
        for outcome in outcomes:
            if isinstance(outcome, Skipped):
                skipped.append(outcome)
                continue
            if bags is not None and self._analysed is not None and outcome.rows:
                self._analysed.add(outcome.job.doc_id, bags, first,
                                   tuple(row[0] for row in outcome.rows))
                first += len(outcome.rows)
            yield outcome

    def analysed(self) -> Analysed | None:
        return self._analysed

    def _get(self, ref: Any) -> Any:
        try:
            return self._ray.get(ref)
        except self._ray.exceptions.RayError as exc:
            raise ClusterError(
                f"the Ray run failed: {exc}; nothing was published, the previous generation "
                "is current") from exc

    def embedder(self, embedding: Mapping[str, Any], make: ProviderFactory) -> RayEmbedder:
        actor = self._ray.remote(num_cpus=1, max_restarts=self.max_retries,
                                 max_task_retries=self.max_retries)(EmbedWorker)
        return RayEmbedder(self, [actor.remote(dict(embedding), make)
                                  for _ in range(self.workers)])

    def small(self) -> RayExecutor:
        return self

    def close(self) -> None:
        """Disconnect from Ray when this executor connected (a local Ray it started stops)."""
        if self._started and self._ray.is_initialized():
            self._ray.shutdown()


def prepare_partition(
    part: Sequence[tuple[str, Candidate]], max_bytes: int,
    reusable: dict[str, tuple[str, int, str]], name: str, chunker: ChunkerConfig,
    analyzer: Analyzer | None, die: str | None,
) -> tuple[list[ingest.Prepared | Skipped], TermBags | None]:
    """One partition, as :class:`.executor.InProcess` prepares it, and (with ``analyzer``)
    the term bags of its chunks, file after file: in a Ray task."""
    if die is not None:
        _die(die)
    outcomes: list[ingest.Prepared | Skipped] = []
    for job in ingest.read_jobs(list(part), max_bytes, reusable, _Into(outcomes)):
        outcomes.append(ingest.prepare(job, name, chunker))
    if analyzer is None:
        return outcomes, None
    texts = [str(row[TEXT]) for done in outcomes if isinstance(done, ingest.Prepared)
             for row in done.rows]
    maker = _MAKERS.get(analyzer)
    if maker is None:
        _MAKERS.clear()
        maker = _MAKERS[analyzer] = BagMaker(analyzer)
    return outcomes, maker.make(texts)


_MAKERS: dict[Analyzer, BagMaker] = {}
"""This worker process's bag maker: its chunk table outlives a task (stems once per worker)."""


class _Into(list[Skipped]):
    """A ``skipped`` list that records each file in line with the prepared ones."""

    def __init__(self, outcomes: list[ingest.Prepared | Skipped]) -> None:
        super().__init__()
        self._outcomes = outcomes

    def append(self, item: Skipped) -> None:
        self._outcomes.append(item)


def _die(marker: str) -> None:
    if marker != "always":
        if Path(marker).exists():
            return
        Path(marker).touch()
    os._exit(1)


class EmbedWorker:
    """A Ray actor's state: one provider, its model loaded once for the actor's life."""

    def __init__(self, embedding: dict[str, Any], make: ProviderFactory) -> None:
        self.provider = make(embedding)

    def identity(self) -> EmbeddingIdentity:
        return self.provider.identity

    def embed(self, texts: list[str], kind: Kind) -> np.ndarray:
        return self.provider.embed(texts, kind=kind)


class RayEmbedder:
    """An :class:`~groundkit.embeddings.EmbeddingProvider` whose batches run in Ray actors.

    :meth:`embed_batches` keeps every actor busy and returns the matrices in order; each
    batch is embedded whole by one actor, as the in-process provider would embed it.
    """

    def __init__(self, executor: RayExecutor, actors: list[Any]) -> None:
        self._executor = executor
        self._actors = actors
        self._identity: EmbeddingIdentity | None = None

    @property
    def identity(self) -> EmbeddingIdentity:
        if self._identity is None:
            self._identity = self._executor._get(self._actors[0].identity.remote())
        return self._identity

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        return next(self.embed_batches([texts], kind=kind))

    def embed_batches(self, batches: Iterator[Sequence[str]] | Sequence[Sequence[str]], *,
                      kind: Kind) -> Iterator[np.ndarray]:
        window: deque[Any] = deque()
        for n, batch in enumerate(batches):
            actor = self._actors[n % len(self._actors)]
            window.append(actor.embed.remote(list(batch), kind))
            if len(window) >= IN_FLIGHT * len(self._actors):
                yield np.asarray(self._executor._get(window.popleft()))
        while window:
            yield np.asarray(self._executor._get(window.popleft()))

    def close(self) -> None:
        for actor in self._actors:
            self._executor._ray.kill(actor)
        self._actors = []
