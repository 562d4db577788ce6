"""Vectors already computed, served again for identical text.

A chunk's id names a span of one version of one file, so an edited file gives all its
chunks new ids, and re-chunking gives new ids everywhere, although most chunk texts are
the same as before. :class:`ReusingProvider` stands in front of a provider with the
vectors of texts embedded before (e.g. the previous generation's, keyed by chunk text):
those texts cost a lookup, only the others reach the model. The vectors must come from the
same embedding identity; the caller checks it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from .base import EmbeddingIdentity, EmbeddingProvider, Kind


class ReusingProvider:
    """``provider``, answering document texts found in ``known`` without it."""

    def __init__(self, provider: EmbeddingProvider, known: Mapping[str, np.ndarray]) -> None:
        self.provider = provider
        self.known = known
        self.reused = 0
        self.embedded = 0

    @property
    def identity(self) -> EmbeddingIdentity:
        return self.provider.identity

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        if kind != "document" or not self.known:
            return self.provider.embed(texts, kind=kind)
        out = np.empty((len(texts), self.identity.dimension), dtype=np.float32)
        todo = []
        for i, text in enumerate(texts):
            vector = self.known.get(text)
            if vector is None:
                todo.append(i)
            else:
                out[i] = vector
        if todo:
            out[todo] = self.provider.embed([texts[i] for i in todo], kind=kind)
        self.reused += len(texts) - len(todo)
        self.embedded += len(todo)
        return out

    def close(self) -> None:
        self.provider.close()
