"""The four read-only tools' bodies: structured, size-bounded results, errors without paths.

Each method returns an output model from :mod:`.schema`; a domain failure
(unknown collection, damaged index, unavailable mode) raises :class:`ToolFailure`,
which :mod:`.server` turns into a tool result with ``isError``. Messages carry no
traceback and no path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..collection import rerankers, resolve_home
from ..collection.filters import Filters
from ..collection.status import collection_status
from ..errors import CollectionNotFoundError, GroundkitError, IndexMismatchError, IntegrityError
from ..model import Hit, split_chunk_id
from ..retrieval.modes import DEFAULT_MODE
from ..verify import unresolvable
from ..viewer.links import ViewServer
from .pool import CollectionPool
from .schema import (
    CONTENT_TRUST,
    MAX_LIST_ITEMS,
    Abstain,
    CheckChanges,
    ChunkId,
    Collapse,
    CollectionInfo,
    CollectionName,
    CollectionNames,
    FetchOutput,
    FormatFilter,
    GateDecision,
    ListCollectionsOutput,
    Mode,
    ModifiedSince,
    PathFilter,
    Query,
    RerankName,
    SearchOutput,
    StatusOutput,
    TopK,
    Verify,
    fetch_output,
    fit_fetch,
    fit_search,
    fit_status,
    hit_output,
    status_output,
)

log = logging.getLogger(__name__)


class ToolFailure(Exception):
    """A domain failure to report to the client as a tool error (message already safe)."""


class Tools:
    """The four tools over one pool of collections."""

    def __init__(self, pool: CollectionPool) -> None:
        self.pool = pool
        self.views: ViewServer | None = None
        """Where this server serves citation pages (HTTP only): hits then link to them."""
        home = str(resolve_home(pool.home))
        self._hide = sorted({home, os.path.realpath(home)}, key=len, reverse=True)

    def search(self, query: Query, collections: CollectionNames = None, top_k: TopK = 10,
               mode: Mode = DEFAULT_MODE, verify: Verify = False,
               abstain: Abstain = False, rerank: RerankName = None,
               collapse: Collapse = True, path: PathFilter = None,
               format: FormatFilter = None,
               modified_since: ModifiedSince = None) -> SearchOutput:
        with self._domain_errors():
            filters = Filters.parse(path=path, format=format, modified_since=modified_since)
            names = list(dict.fromkeys(collections or self.pool.served()))
            if not names:
                raise CollectionNotFoundError("this server has no collections to search yet")
            found: list[tuple[Hit, str]] = []
            decisions = []
            for name in names:
                with self.pool.lease(name, bm25=True) as coll:
                    options: dict[str, Any] = {"collapse": collapse, "filters": filters}
                    if rerank is not None:
                        options["rerank"] = rerankers.load(coll.snapshot, rerank,
                                                           allow_path=False)
                    if abstain:
                        result = coll.search_or_abstain(query, top_k=top_k, mode=mode,
                                                        verify=verify, **options)
                        hits = result.hits
                        decisions.append(GateDecision(collection=name,
                                                      **result.decision.to_dict()))
                    else:
                        hits = coll.search(query, top_k=top_k, mode=mode, verify=verify,
                                           **options)
                found.extend((hit, name) for hit in hits)
        found.sort(key=lambda pair: (-pair[0].score, pair[0].rank, pair[1]))
        out = SearchOutput(
            query=query, mode=mode, collections=names, content_trust=CONTENT_TRUST,
            truncated=False, abstained=all(d.abstained for d in decisions) if abstain else None,
            decisions=decisions if abstain else None,
            hits=[hit_output(hit, name, rank, self.views)
                  for rank, (hit, name) in enumerate(found[:top_k], 1)])
        return fit_search(out)

    def fetch_chunk(self, chunk_id: ChunkId) -> FetchOutput:
        name, _ = split_chunk_id(chunk_id)
        with self._domain_errors():
            if name not in self.pool.served():
                verdict = unresolvable(chunk_id, f"collection {name!r} is not served here")
                return fit_fetch(fetch_output(verdict, None))
            with self.pool.lease(name) as coll:
                verdict = coll.fetch(chunk_id)
                stored = coll.snapshot.lookup(chunk_id)
        return fit_fetch(fetch_output(verdict, stored, name, self.views))

    def list_collections(self) -> ListCollectionsOutput:
        infos, names = [], self.pool.served()
        with self._domain_errors():
            for name in names[:MAX_LIST_ITEMS]:
                with self.pool.lease(name) as coll:
                    s = coll.status(changes=False)
                infos.append(CollectionInfo(
                    name=name, roots=list(s.roots), documents=s.documents, chunks=s.chunks,
                    generation=s.generation, indexed_at=s.indexed_at))
        return ListCollectionsOutput(collections=infos, truncated=len(names) > MAX_LIST_ITEMS)

    def index_status(self, collection: CollectionName,
                     check_changes: CheckChanges = True) -> StatusOutput:
        with self._domain_errors(), self.pool.lease(collection) as coll:
            s = collection_status(coll.snapshot, changes=check_changes)
            out = status_output(s, coll.snapshot.config,
                                self.pool.stats(collection, coll.generation))
        return fit_status(out)

    @contextmanager
    def _domain_errors(self) -> Iterator[None]:
        """Turn a groundkit error into a tool failure whose message names no path."""
        try:
            yield
        except (IndexMismatchError, IntegrityError) as exc:
            log.warning("index problem: %s", exc)
            raise ToolFailure("the collection's index is damaged or out of date; run "
                              "`grk check NAME` and re-run `grk index`") from None
        except GroundkitError as exc:
            message = str(exc)
            for path in self._hide:
                message = message.replace(path, "<home>")
            raise ToolFailure(message) from None
