"""A persistent embedding cache in front of any provider.

:class:`CachedProvider` keeps every vector it is asked for in one SQLite file,
keyed by the sha256 of the provider's full identity (provider, model,
dimension, normalisation, prefixes), the kind (document or query) and the text.
The same texts embedded again cost a lookup; a changed model or prefix is a
different key, never a stale vector. The harness puts one in front of its
models so a second ``make eval`` embeds nothing (``settings["embedding"]["cache"]``).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .base import EmbeddingIdentity, EmbeddingProvider, Kind

CACHE_FILE = "embeddings.sqlite3"
_LOOKUP_BATCH = 500


class CachedProvider:
    """``provider`` with its vectors cached under ``directory`` (see the module docstring)."""

    def __init__(self, provider: EmbeddingProvider, directory: str | Path) -> None:
        self.provider = provider
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.directory / CACHE_FILE, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS vectors "
                           "(key BLOB PRIMARY KEY, vector BLOB NOT NULL) WITHOUT ROWID")
        self._salt: bytes | None = None
        self.hits = 0
        self.misses = 0

    @property
    def identity(self) -> EmbeddingIdentity:
        return self.provider.identity

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        keys = [self._key(kind, text) for text in texts]
        found = self._lookup(keys)
        todo = [i for i, key in enumerate(keys) if key not in found]
        dimension = self.identity.dimension
        out = np.empty((len(texts), dimension), dtype=np.float32)
        for i, key in enumerate(keys):
            if key in found:
                out[i] = np.frombuffer(found[key], dtype=np.float32)
        if todo:
            fresh = self.provider.embed([texts[i] for i in todo], kind=kind)
            out[todo] = fresh
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                   [(keys[i], fresh[n].astype(np.float32).tobytes())
                                    for n, i in enumerate(todo)])
            self._conn.execute("COMMIT")
        self.hits += len(texts) - len(todo)
        self.misses += len(todo)
        return out

    def close(self) -> None:
        self._conn.close()
        self.provider.close()

    def _key(self, kind: Kind, text: str) -> bytes:
        if self._salt is None:
            self._salt = json.dumps(self.identity.to_dict(), sort_keys=True).encode()
        digest = hashlib.sha256(self._salt)
        digest.update(b"\0" + kind.encode() + b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
        return digest.digest()

    def _lookup(self, keys: list[bytes]) -> dict[bytes, bytes]:
        found: dict[bytes, bytes] = {}
        unique = list(dict.fromkeys(keys))
        for start in range(0, len(unique), _LOOKUP_BATCH):
            batch = unique[start:start + _LOOKUP_BATCH]
            marks = ",".join("?" * len(batch))
            found.update(self._conn.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({marks})", batch))
        return found
