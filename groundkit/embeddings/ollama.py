"""The ``ollama`` provider: a local Ollama server over HTTP, through the official client.

The host is explicit configuration: groundkit always passes it to the client, so
``OLLAMA_HOST`` is never read, and proxy environment variables are ignored
(``trust_env=False``). The ``ollama`` package is imported on first use (extra ``ollama``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError, UsageError
from .base import (
    EmbeddingIdentity,
    Kind,
    batched,
    l2_normalize,
    positive,
    prefixes_for,
    with_prefix,
)

OLLAMA_DEFAULT_HOST = "http://127.0.0.1:11434"


class OllamaProvider:
    """Embeddings from an Ollama server, through the official ``ollama`` client.

    ``host`` is passed to the client explicitly (``OLLAMA_HOST`` is never
    read). Texts go out in batches of ``batch_size`` per ``/api/embed`` call;
    the dimension is taken from the first response (or one probe request when
    ``identity`` is asked for before anything was embedded).
    """

    def __init__(
        self,
        model: str = "nomic-embed-text",
        *,
        host: str = OLLAMA_DEFAULT_HOST,
        timeout: float = 120.0,
        batch_size: int = 32,
        keep_alive: str | float | None = None,
    ) -> None:
        positive("timeout", timeout)
        positive("batch_size", batch_size)
        if not model:
            raise UsageError("the ollama provider needs a model name")
        self.model = model
        self.host = host
        self.timeout = float(timeout)
        self.batch_size = int(batch_size)
        self.keep_alive = keep_alive
        self._prefixes = prefixes_for(model)
        self._dimension: int | None = None
        self._client: Any = None

    @property
    def identity(self) -> EmbeddingIdentity:
        if self._dimension is None:
            self.embed(["dimension probe"], kind="document")
        if self._dimension is None:  # pragma: no cover - embed() always sets it
            raise ProviderError("could not learn the embedding dimension from Ollama")
        return EmbeddingIdentity(
            provider="ollama",
            model=_canonical_ollama_model(self.model),
            dimension=self._dimension,
            document_prefix=self._prefixes[0],
            query_prefix=self._prefixes[1],
        )

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        prepared = with_prefix(texts, kind, self._prefixes)
        if not prepared:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        parts = [self._embed_batch(batch) for batch in batched(prepared, self.batch_size)]
        return l2_normalize(np.concatenate(parts, axis=0))

    def _embed_batch(self, batch: Sequence[str]) -> np.ndarray:
        client = self._ensure_client()
        import httpx
        import ollama

        try:
            response = client.embed(
                model=self.model, input=list(batch), truncate=True, keep_alive=self.keep_alive
            )
        except (ConnectionError, httpx.ConnectTimeout) as exc:
            raise ProviderError(self._unreachable()) from exc
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"the Ollama server at {self.host} did not answer within {self.timeout:g}s "
                f"(batch of {len(batch)} texts); raise timeout= or lower batch_size="
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderError(
                f"talking to the Ollama server at {self.host} failed: {exc}"
            ) from exc
        except ollama.ResponseError as exc:
            raise ProviderError(self._response_error(exc)) from exc
        return self._check_batch(response.embeddings, len(batch))

    def _check_batch(self, embeddings: Sequence[Sequence[float]], expected: int) -> np.ndarray:
        matrix = np.asarray(embeddings, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != expected:
            raise ProviderError(
                f"Ollama returned {len(embeddings)} embeddings for {expected} texts "
                f"(model {self.model!r} at {self.host})"
            )
        if self._dimension is None:
            self._dimension = int(matrix.shape[1])
        elif matrix.shape[1] != self._dimension:
            raise ProviderError(
                f"Ollama model {self.model!r} changed dimension from {self._dimension} "
                f"to {matrix.shape[1]} between requests"
            )
        return matrix

    def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OllamaProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_client(self) -> Any:
        if self._client is None:
            try:
                import ollama
            except ImportError as exc:
                raise MissingDependencyError("ollama", "ollama", "The ollama provider") from exc
            self._client = ollama.Client(host=self.host, timeout=self.timeout, trust_env=False)
        return self._client

    def _unreachable(self) -> str:
        return (
            f"cannot reach an Ollama server at {self.host}: start it with `ollama serve` "
            f"(or pass host= for a server elsewhere; groundkit does not read OLLAMA_HOST)"
        )

    def _response_error(self, exc: Any) -> str:
        status = getattr(exc, "status_code", -1)
        if status == 404:
            return (
                f"the Ollama server at {self.host} has no model {self.model!r}: "
                f"run `ollama pull {self.model}` ({exc.error})"
            )
        return f"the Ollama server at {self.host} refused to embed (HTTP {status}): {exc.error}"


def _canonical_ollama_model(model: str) -> str:
    """``name:latest`` and ``name`` are the same Ollama model; record the short form."""
    return model[: -len(":latest")] if model.endswith(":latest") else model
