"""What a golden run knows per span and per question, computed once and shared.

:class:`Verdicts` re-reads each shown span once per run, whichever stage or
collection shows it; :class:`EvidenceCache` keeps each collection's evidence for
each question (and its shared first-stage retrievers), so stages over one
collection compute it once.
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.engines import Remembered
from groundkit.collection.snapshot import Snapshot
from groundkit.retrieval import modes
from groundkit.retrieval.modes import MODES
from groundkit.retrieval.signals import DenseEvidence, Evidence, LexicalEvidence, lexical_evidence
from groundkit.retrieval.signals import compute as compute_signals
from groundkit.store import StoredChunk


class Verdicts:
    """Each shown span's verdict, re-read once per run whatever stage or collection shows it.

    Keyed by the chunk id's key, which names the span of the file's content (document
    id, content hash, offsets): every collection of a suite indexes the same roots, so
    the same key is the same bytes on disk.
    """

    def __init__(self) -> None:
        self._by_key: dict[str, str] = {}

    def of(self, snap: Snapshot, stored: StoredChunk) -> str:
        key = stored.chunk.chunk_id.partition(":")[2]
        if key not in self._by_key:
            self._by_key[key] = snap.verify(stored).status.value
        return self._by_key[key]


class EvidenceCache:
    """What each collection's retrievers know about each question, computed once.

    Stages that share a collection (the five hybrids, say) share its evidence; a
    mode takes the lexical part, the dense part or both.
    """

    def __init__(self) -> None:
        self._lexical: dict[tuple[str, str], LexicalEvidence] = {}
        self._dense: dict[tuple[str, str], DenseEvidence | None] = {}
        self._signals: dict[tuple[str, str, str], dict[str, float]] = {}
        self.retrievers: dict[str, dict[str, Remembered]] = {}
        """collection -> its shared first-stage retrievers (:func:`stage_retriever`)."""
        self._stored: dict[str, dict[int, StoredChunk]] = {}

    def signals(self, snap: Snapshot, mode: str, query: str,
                ranked: Sequence[tuple[int, float]] | None = None) -> dict[str, float]:
        """The query's confidence signals in ``mode``; ``ranked``: the collection's own BM25
        ranking of it, at least :data:`~groundkit.retrieval.signals.TOP` deep, if known."""
        if (snap.name, mode, query) not in self._signals:
            self._signals[snap.name, mode, query] = self._compute(snap, mode, query, ranked)
        return self._signals[snap.name, mode, query]

    def stored(self, snap: Snapshot, positions: Sequence[int]) -> list[StoredChunk]:
        """The stored chunks at ``positions``, each read once per run and collection."""
        known = self._stored.setdefault(snap.name, {})
        missing = [p for p in dict.fromkeys(positions) if p not in known]
        known.update(zip(missing, snap.stored_chunks(missing), strict=True))
        return [known[p] for p in positions]

    def _compute(self, snap: Snapshot, mode: str, query: str,
                 ranked: Sequence[tuple[int, float]] | None) -> dict[str, float]:
        key = (snap.name, query)
        lexical = dense = None
        if mode in ("bm25", "hybrid"):
            if key not in self._lexical:
                self._lexical[key] = lexical_evidence(snap.bm25(), query, ranked)
            lexical = self._lexical[key]
        if MODES[mode].embedding:
            if key not in self._dense:
                self._dense[key] = modes.evidence(snap, "dense", query).dense
            dense = self._dense[key]
        return compute_signals(Evidence(lexical=lexical, dense=dense))
