"""Search filters: which documents a search may return (``--path``, ``--format``,
``--modified-since``).

A filter narrows the documents, never the scoring: every mode ranks as it would without
it, and :class:`Filtered` keeps the hits of allowed documents, searching deeper in the
ranking until it has ``top_k`` of them or the ranking ends. So a filtered search returns
the same chunks, scores and order as an unfiltered one with the others struck out.

* ``path``: shell globs on the document's path in the collection (``notes/*.md``; ``*``
  also crosses folders; a path ending in ``/`` is that folder); any one may match.
* ``format``: a format as ``grk status`` counts them (``text``, ``pdf``, ``html``,
  ``docx``, ``odt``, ``epub``) or a file extension (``md``, ``txt``); any one may match.
* ``modified_since``: the file's modification time when it was indexed is at or after
  this date (``2026-01-31``, local midnight) or time (ISO 8601).
"""

from __future__ import annotations

import datetime as dt
import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import UsageError
from ..retrieval.base import Retriever, Scored
from .snapshot import Snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class Filters:
    """Which documents a search may return (see the module docstring)."""

    path: tuple[str, ...] = ()
    format: tuple[str, ...] = ()
    modified_since: dt.datetime | None = None

    def __post_init__(self) -> None:
        if any(not p.strip() for p in self.path) or any(not f.strip() for f in self.format):
            raise UsageError("an empty --path or --format filter matches nothing: drop it")
        if self.modified_since is not None and self.modified_since.tzinfo is None:
            raise UsageError("modified_since must carry a time zone (use Filters.parse)")

    @classmethod
    def parse(cls, *, path: str | Sequence[str] | None = None,
              format: str | Sequence[str] | None = None,
              modified_since: str | dt.date | None = None) -> Filters | None:
        """Filters from option values (a string or several); ``None`` when none is given."""
        paths, formats = _tuple(path), tuple(f.lower().lstrip(".") for f in _tuple(format))
        since = _moment(modified_since) if modified_since not in (None, "") else None
        if not paths and not formats and since is None:
            return None
        return cls(path=paths, format=formats, modified_since=since)

    def to_dict(self) -> dict[str, object]:
        return {"path": list(self.path), "format": list(self.format),
                "modified_since": (self.modified_since.isoformat()
                                   if self.modified_since else None)}

    def allows(self, doc_id: str, extractor: str, mtime_ns: int) -> bool:
        if self.path and not any(_path_matches(doc_id, p) for p in self.path):
            return False
        if self.format and not any(_format_matches(doc_id, extractor, f) for f in self.format):
            return False
        since = self.modified_since
        return since is None or mtime_ns >= since.timestamp() * 1e9

    def mask(self, snap: Snapshot) -> npt.NDArray[np.bool_]:
        """Which canonical positions of ``snap``'s generation these filters allow."""
        allowed = [doc for doc, extractor, mtime in snap.conn.execute(
            "SELECT doc_id, extractor, mtime_ns FROM documents WHERE generation = ?",
            (snap.generation,)) if self.allows(doc, extractor, mtime)]
        rowids: list[int] = []
        for start in range(0, len(allowed), 500):
            batch = allowed[start:start + 500]
            rowids += [r for (r,) in snap.conn.execute(
                "SELECT chunk_rowid FROM generation_chunks WHERE generation = ? AND doc_id IN "
                f"({','.join('?' * len(batch))})", (snap.generation, *batch))]
        return np.isin(snap.rowids(), np.asarray(rowids, dtype=np.int64))


class Filtered:
    """``retriever`` returning only the positions ``mask`` allows (module docstring)."""

    def __init__(self, retriever: Retriever, mask: npt.NDArray[np.bool_]) -> None:
        self.retriever, self.mask = retriever, mask
        self.name = retriever.name

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        if not self.mask.any():
            return []
        depth = max(top_k, 4 * top_k * len(self.mask) // int(self.mask.sum()))
        while True:
            depth = min(depth, len(self.mask))
            scored = self.retriever.search(query, depth, score_threshold=score_threshold,
                                           explain=explain)
            kept = [s for s in scored if self.mask[s.position]]
            if len(kept) >= top_k or len(scored) < depth or depth == len(self.mask):
                return kept[:top_k]
            depth *= 4


def _tuple(value: str | Sequence[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    return (value,) if isinstance(value, str) else tuple(value)


def _path_matches(doc_id: str, pattern: str) -> bool:
    if pattern.endswith("/"):
        return doc_id.startswith(pattern)
    return fnmatch.fnmatchcase(doc_id, pattern)


def _format_matches(doc_id: str, extractor: str, wanted: str) -> bool:
    kind = extractor.split("/", 1)[0] if extractor else "text"
    return wanted == kind or doc_id.lower().endswith("." + wanted)


def _moment(value: str | dt.date) -> dt.datetime:
    """A date (local midnight) or an ISO 8601 time (local when it names no zone)."""
    if isinstance(value, dt.datetime):
        moment = value
    elif isinstance(value, dt.date):
        moment = dt.datetime.combine(value, dt.time())
    else:
        try:
            moment = dt.datetime.fromisoformat(value.strip())
        except ValueError:
            raise UsageError(f"--modified-since wants a date such as 2026-01-31 or an ISO "
                             f"8601 time, got {value!r}") from None
    return moment if moment.tzinfo is not None else moment.astimezone()
