"""Test doubles that exercise real code paths without models or network.

- :class:`HashingProvider`: a deterministic bag-of-words embedding provider
  (feature hashing, no model), for tests of vector stores and fusion.
- :mod:`groundkit.testing.ollama_standin`: a loopback HTTP server speaking
  Ollama's embedding API, so the real ``ollama`` client can be tested.

Nothing here is registered as a user-facing provider.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from ..embeddings import EmbeddingIdentity, Kind, l2_normalize, prefixes_for, with_prefix

_TOKEN = re.compile(r"\w+", re.UNICODE)


def hashed_vectors(texts: Sequence[str], dimension: int) -> np.ndarray:
    """Unnormalised feature-hashed term counts, one row per text (deterministic).

    A text with no word characters gets a fixed nonzero vector, so every row
    can be normalised.
    """
    out = np.zeros((len(texts), dimension), dtype=np.float32)
    for row, text in enumerate(texts):
        tokens = _TOKEN.findall(text.lower()) or ["\0empty"]
        for token in tokens:
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            out[row, (value >> 1) % dimension] += sign
        if not out[row].any():
            out[row, 0] = 1.0
    return out


class HashingProvider:
    """An :class:`~groundkit.embeddings.EmbeddingProvider` without a model.

    Texts sharing words get similar vectors; identical texts get identical
    vectors. ``texts_embedded`` counts the texts embedded, so tests can check reuse.
    """

    def __init__(self, model: str = "hashing", *, dimension: int = 64) -> None:
        self.model = model
        self.dimension = dimension
        self.texts_embedded = 0
        self._prefixes = prefixes_for(model)

    @property
    def identity(self) -> EmbeddingIdentity:
        return EmbeddingIdentity(
            provider="hashing",
            model=self.model,
            dimension=self.dimension,
            document_prefix=self._prefixes[0],
            query_prefix=self._prefixes[1],
        )

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        prepared = with_prefix(texts, kind, self._prefixes)
        self.texts_embedded += len(prepared)
        if not prepared:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return l2_normalize(hashed_vectors(prepared, self.dimension))

    def close(self) -> None:
        """Nothing to release."""


__all__ = ["HashingProvider", "hashed_vectors"]
