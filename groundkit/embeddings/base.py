"""The embedding interface: identity, the provider protocol, prefixes, normalisation."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from ..errors import ProviderError, UsageError

Kind = Literal["document", "query"]
KINDS: tuple[Kind, ...] = ("document", "query")

MODEL_PREFIXES: Mapping[str, tuple[str, str]] = {
    # model (without ":tag") -> (document prefix, query prefix), from each model card.
    "nomic-embed-text": ("search_document: ", "search_query: "),
    "nomic-embed-text-v1.5": ("search_document: ", "search_query: "),
    "mxbai-embed-large": ("", "Represent this sentence for searching relevant passages: "),
    "snowflake-arctic-embed": ("", "Represent this sentence for searching relevant passages: "),
}
"""Task prefixes per model. Models not listed get none (all-MiniLM-L6-v2 needs none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddingIdentity:
    """What made a set of vectors: provider, model, dimension, normalisation, prefixes.

    Two vector sets are comparable only if their identities are equal.
    groundkit always stores L2-normalised float32 vectors, so ``normalized``
    is ``True`` for everything it builds; the field records it explicitly.
    """

    provider: str
    model: str
    dimension: int
    normalized: bool = True
    document_prefix: str = ""
    query_prefix: str = ""

    def __post_init__(self) -> None:
        if not self.provider or not self.model:
            raise UsageError("an embedding identity needs a provider and a model name")
        if isinstance(self.dimension, bool) or not isinstance(self.dimension, int):
            raise UsageError(f"embedding dimension must be an integer, got {self.dimension!r}")
        if self.dimension < 1:
            raise UsageError(f"embedding dimension must be >= 1, got {self.dimension}")

    @property
    def spec(self) -> str:
        """``provider:model``, the form :func:`make_provider` accepts."""
        return f"{self.provider}:{self.model}"

    def describe(self) -> str:
        norm = "L2-normalised" if self.normalized else "unnormalised"
        return f"{self.spec} ({self.dimension}-d, {norm})"

    def to_dict(self) -> dict[str, Any]:
        return {
            "provider": self.provider,
            "model": self.model,
            "dimension": self.dimension,
            "normalized": self.normalized,
            "document_prefix": self.document_prefix,
            "query_prefix": self.query_prefix,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EmbeddingIdentity:
        try:
            return cls(
                provider=str(data["provider"]),
                model=str(data["model"]),
                dimension=data["dimension"],
                normalized=bool(data.get("normalized", True)),
                document_prefix=str(data.get("document_prefix", "")),
                query_prefix=str(data.get("query_prefix", "")),
            )
        except (KeyError, TypeError) as exc:
            raise UsageError(f"malformed embedding identity {dict(data)!r}: {exc}") from exc


@runtime_checkable
class EmbeddingProvider(Protocol):
    """Turns texts into an ``n x d`` float32 array of L2-normalised rows."""

    @property
    def identity(self) -> EmbeddingIdentity: ...

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray: ...

    def close(self) -> None:
        """Release connections or models; the provider may not be used afterwards."""


def prefixes_for(model: str) -> tuple[str, str]:
    """``(document_prefix, query_prefix)`` for ``model`` (an Ollama ``:tag`` is ignored)."""
    return MODEL_PREFIXES.get(model.split(":", 1)[0], ("", ""))


def with_prefix(texts: Sequence[str], kind: Kind, prefixes: tuple[str, str]) -> list[str]:
    """``texts`` with the document or query prefix prepended."""
    if kind not in KINDS:
        raise UsageError(f"embedding kind must be one of {', '.join(KINDS)}; got {kind!r}")
    prefix = prefixes[0] if kind == "document" else prefixes[1]
    return [prefix + text for text in texts]


def l2_normalize(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as contiguous float32; a zero or non-finite row is an error."""
    out = np.ascontiguousarray(matrix, dtype=np.float32)
    if out.ndim != 2:
        raise ProviderError(f"expected a 2-d array of embeddings, got shape {out.shape}")
    if not np.isfinite(out).all():
        raise ProviderError("the embedding provider returned NaN or infinite values")
    norms = np.linalg.norm(out.astype(np.float64), axis=1, keepdims=True)
    if out.shape[0] and float(norms.min()) == 0.0:
        raise ProviderError("the embedding provider returned an all-zero vector")
    return np.ascontiguousarray(out / norms.astype(np.float32), dtype=np.float32)


def batched(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    """Consecutive slices of at most ``size`` items."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise UsageError(f"{name} must be a positive number, got {value!r}")
