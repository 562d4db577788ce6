"""groundkit: grounded, citation-verifiable retrieval over your own documents.

The Python API in five names (``docs/python-api.md`` has a worked example)::

    import groundkit

    groundkit.index("notes", groundkit.IndexConfig(roots=("~/notes",)))
    with groundkit.open_collection("notes") as notes:
        hits = notes.search("how long do we keep logs", top_k=5)
    verdict = groundkit.fetch_chunk(hits[0].chunk.chunk_id)   # verified / drifted / unresolvable

Every hit is an exact span of a source file (:class:`Chunk`: ``doc_id``,
code-point ``start``/``end``); :func:`fetch_chunk` re-reads it and returns a
:class:`Verdict`. Errors derive from :class:`GroundkitError`.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .collection import (
    Collection,
    CollectionStatus,
    IndexConfig,
    IndexReport,
    fetch_chunk,
    index,
    list_collections,
    resolve_home,
)
from .collection.home import Home
from .errors import GroundkitError
from .model import Chunk, Hit, Status, Verdict
from .retrieval.modes import MODES


def open_collection(name: str, home: Home = None) -> Collection:
    """Open collection ``name`` read-only, pinned to its current generation (a context manager)."""
    return Collection.open(name, home)


def search(collection: str, query: str, *, home: Home = None, **options: object) -> list[Hit]:
    """Open ``collection``, search it, close it; ``options`` as for :meth:`Collection.search`."""
    with Collection.open(collection, home) as coll:
        return coll.search(query, **options)


__all__ = [
    "MODES", "Chunk", "Collection", "CollectionStatus", "GroundkitError", "Hit", "IndexConfig",
    "IndexReport", "Status", "Verdict", "__version__", "fetch_chunk", "index", "list_collections",
    "open_collection", "resolve_home", "search",
]
