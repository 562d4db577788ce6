"""ReusingProvider: known texts cost a lookup, only the others reach the model."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from groundkit.embeddings import EmbeddingIdentity
from groundkit.embeddings.reuse import ReusingProvider


class Counting:
    """A stand-in model: each text's vector is its length, repeated; it records its calls."""

    identity = EmbeddingIdentity(provider="test", model="len", dimension=3)

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], *, kind: str) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[len(t)] * 3 for t in texts], dtype=np.float32)

    def close(self) -> None:
        self.calls.append(["closed"])


def test_known_document_texts_are_served_and_only_the_rest_are_embedded() -> None:
    model = Counting()
    known = {"old text": np.array([9.0, 9.0, 9.0], dtype=np.float32)}
    reusing = ReusingProvider(model, known)
    out = reusing.embed(["new", "old text", "newer"], kind="document")
    assert out.tolist() == [[3, 3, 3], [9, 9, 9], [5, 5, 5]]
    assert model.calls == [["new", "newer"]]
    assert (reusing.reused, reusing.embedded) == (1, 2)
    assert reusing.embed(["old text"], kind="document").tolist() == [[9, 9, 9]]
    assert model.calls == [["new", "newer"]]  # nothing new: the model was not called


def test_queries_always_reach_the_model_and_close_closes_it() -> None:
    model = Counting()
    reusing = ReusingProvider(model, {"old text": np.zeros(3, dtype=np.float32)})
    assert reusing.embed(["old text"], kind="query").tolist() == [[8, 8, 8]]
    reusing.close()
    assert model.calls == [["old text"], ["closed"]]
    assert reusing.identity == model.identity
