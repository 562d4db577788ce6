"""Reranking a first stage's shortlist with a cross-encoder.

A :class:`Reranker` scores ``(query, text)`` pairs; higher is more relevant, and
a fixed model gives the same scores for the same pairs. It is a local scoring
model on the deterministic side of the LLM boundary: it orders retrieved spans,
it never writes text. :class:`CrossEncoderReranker` is the one provider: a
sentence-transformers ``CrossEncoder`` directory the user names, on CPU, offline.

:func:`rerank` reorders the top ``depth`` hits of any first stage (BM25, dense
or hybrid) by one of :data:`METHODS`; hits below the shortlist keep their
first-stage order, score and explanation. :class:`RerankerIdentity` (model
name, weights hash, maximum length) is what a report records, and
:func:`identity_check` refuses a reranker that differs from a recorded one.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from ..errors import IndexMismatchError, MissingDependencyError, ProviderError, UsageError
from ..model import Contribution
from .base import Scored
from .fusion import DEFAULT_K

DEPTH = 30
"""How many first-stage hits are reranked unless told otherwise."""

METHOD_HELP: Mapping[str, str] = {
    "replace": "the shortlist ordered by the reranker's scores (default)",
    "rrf": "the reranker's ranks fused with the first stage's by RRF, rank-only (ADR-0005)",
}
"""How reranker scores are used, by name, with a description; errors are generated from it."""

METHODS: tuple[str, ...] = tuple(METHOD_HELP)
"""The method names, the default first."""

WEIGHT_FILES = (("model.safetensors", "model-*-of-*.safetensors"),
                ("pytorch_model.bin", "pytorch_model-*-of-*.bin"))
"""Weights files in order of preference: (single file, shard pattern)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RerankerIdentity:
    """Who reranked: recorded in every report that uses a reranker, checked on reuse.

    ``weights_sha256`` is the sha256 of the weights file (``sha256sum`` of it), or,
    for a sharded model, of the shards' bytes concatenated in sorted name order.
    ``max_length`` is the token limit pairs are truncated to.
    """

    name: str
    weights_sha256: str
    max_length: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RerankerIdentity:
        """The identity a report recorded; ``IndexMismatchError`` if it is malformed."""
        try:
            identity = cls(name=data["name"], weights_sha256=data["weights_sha256"],
                           max_length=data["max_length"])
        except (KeyError, TypeError) as exc:
            raise IndexMismatchError(f"malformed recorded reranker identity: {data!r}") from exc
        if not (isinstance(identity.name, str) and isinstance(identity.weights_sha256, str)
                and isinstance(identity.max_length, int)
                and not isinstance(identity.max_length, bool)):
            raise IndexMismatchError(f"malformed recorded reranker identity: {data!r}")
        return identity


class Reranker(Protocol):
    """Scores ``(query, text)`` pairs; higher is more relevant; deterministic."""

    @property
    def identity(self) -> RerankerIdentity: ...

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        """One finite score per text, in the order given."""
        ...

    def close(self) -> None: ...


def identity_check(recorded: Mapping[str, Any], reranker: Reranker) -> None:
    """Fail closed: ``IndexMismatchError`` unless ``reranker`` is the one ``recorded``."""
    expected = RerankerIdentity.from_dict(recorded)
    actual = reranker.identity
    if expected != actual:
        fields = [f"{key} {value!r} (now {getattr(actual, key)!r})"
                  for key, value in expected.to_dict().items() if getattr(actual, key) != value]
        raise IndexMismatchError("the reranker differs from the one recorded: "
                                 + "; ".join(fields))


# ---------------------------------------------------------------------- provider


class CrossEncoderReranker:
    """A local sentence-transformers ``CrossEncoder`` directory, on CPU, offline.

    The directory must hold ``config.json`` naming a ``*ForSequenceClassification``
    architecture with one label, and its weights (``model.safetensors``, else
    ``pytorch_model.bin``, or their shards). Pairs are truncated to
    ``max_length`` tokens (longest first, so a long passage loses its end), where
    ``max_length`` is the smallest of the argument, the tokenizer's
    ``model_max_length`` and the model's ``max_position_embeddings``. Pairs are
    scored ``batch_size`` at a time, in the order given; scores are the raw logits
    (no activation: sentence-transformers' default sigmoid saturates and would
    turn distinct scores into ties). ``threads`` torch threads are used while
    scoring, and the previous count is restored after; ``None`` leaves it alone.
    ``name`` names the model in the identity (default: the directory's name).
    """

    def __init__(self, path: str | Path, *, batch_size: int = 16, max_length: int | None = None,
                 threads: int | None = 1, name: str | None = None) -> None:
        _positive_int("batch_size", batch_size)
        if max_length is not None:
            _positive_int("max_length", max_length)
        if threads is not None:
            _positive_int("threads", threads)
        self.path = Path(path)
        self.batch_size = batch_size
        self.threads = threads
        config = _check_directory(self.path)
        self.weights = weight_files(self.path)
        self.max_length = _max_length(self.path, config, max_length)
        self.name = name or self.path.resolve().name
        self._sha256: str | None = None
        self._model: Any = None
        self._ensure_model()

    @property
    def identity(self) -> RerankerIdentity:
        if self._sha256 is None:
            self._sha256 = weights_sha256(self.weights)
        return RerankerIdentity(name=self.name, weights_sha256=self._sha256,
                                max_length=self.max_length)

    def score(self, query: str, texts: Sequence[str]) -> list[float]:
        if isinstance(texts, str):
            raise UsageError("texts must be a sequence of strings, not one string")
        if not texts:
            return []
        model = self._ensure_model()
        import torch

        pairs = [(query, text) for text in texts]
        previous = torch.get_num_threads()
        if self.threads is not None:
            torch.set_num_threads(self.threads)
        try:
            scores: list[float] = []
            for start in range(0, len(pairs), self.batch_size):
                scores.extend(self._predict(model, pairs[start:start + self.batch_size]))
        finally:
            torch.set_num_threads(previous)
        if not all(math.isfinite(s) for s in scores):
            raise ProviderError(f"the reranker {self.name!r} gave a non-finite score")
        return scores

    def close(self) -> None:
        """Drop the model (it is reloaded if used again)."""
        self._model = None

    def _predict(self, model: Any, batch: Sequence[tuple[str, str]]) -> list[float]:
        """One model call for one batch (tests count these)."""
        import torch

        with torch.inference_mode():
            out = model.predict(list(batch), batch_size=len(batch), show_progress_bar=False,
                                activation_fn=torch.nn.Identity(), convert_to_numpy=True)
        return [float(x) for x in out.reshape(-1)]

    def _ensure_model(self) -> Any:
        if self._model is not None:
            return self._model
        try:
            import torch
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise MissingDependencyError("sentence-transformers", "dense",
                                         "The cross-encoder reranker") from exc
        _quiet_transformers()
        try:
            model = CrossEncoder(str(self.path), device="cpu", local_files_only=True,
                                 max_length=self.max_length, activation_fn=torch.nn.Identity())
        except (OSError, ValueError, KeyError) as exc:
            raise ProviderError(f"cannot load the cross-encoder {self.name!r} from "
                                f"{self.path}: {exc}") from exc
        model.eval()
        if getattr(model, "num_labels", 1) != 1:
            raise ProviderError(f"{self.path} scores {model.num_labels} labels; a reranker "
                                "needs a cross-encoder with one")
        self._model = model
        return model


def weight_files(path: Path) -> list[Path]:
    """The weights files of a model directory, sorted; ``ProviderError`` if there are none."""
    for single, shards in WEIGHT_FILES:
        if (path / single).is_file():
            return [path / single]
        found = sorted(p for p in path.glob(shards) if p.is_file())
        if found:
            return found
    raise ProviderError(f"{path} holds no model weights (model.safetensors or "
                        "pytorch_model.bin): not a cross-encoder directory")


def weights_sha256(files: Sequence[Path]) -> str:
    """The sha256 of the files' bytes, concatenated in the order given."""
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def _check_directory(path: Path) -> dict[str, Any]:
    """``config.json`` of a cross-encoder directory, or a clear error saying what it is not."""
    if not path.exists():
        raise UsageError(f"reranker model directory {path} does not exist")
    if not path.is_dir():
        raise UsageError(f"reranker model path {path} is not a directory")
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ProviderError(f"{path} has no config.json: not a cross-encoder directory") from exc
    except (OSError, ValueError) as exc:
        raise ProviderError(f"cannot read {path / 'config.json'}: {exc}") from exc
    if not isinstance(config, dict):
        raise ProviderError(f"{path / 'config.json'} is not a JSON object")
    architectures = config.get("architectures") or []
    if not any(str(a).endswith("ForSequenceClassification") for a in architectures):
        kind = ("a sentence-transformers embedding model"
                if (path / "modules.json").is_file() else "a model")
        raise ProviderError(
            f"{path} is {kind} with architecture {architectures or 'unknown'}, not a "
            "cross-encoder (a *ForSequenceClassification model with one label)")
    labels = config.get("id2label")
    count = len(labels) if isinstance(labels, dict) else config.get("num_labels", 1)
    if count != 1:
        raise ProviderError(f"{path} is a classifier with {count} labels; a reranker needs "
                            "a cross-encoder with one")
    return config


def _max_length(path: Path, config: Mapping[str, Any], given: int | None) -> int:
    """The smallest of ``given``, the tokenizer's and the model's stated limits."""
    limits = [given] if given is not None else []
    try:
        tokenizer = json.loads((path / "tokenizer_config.json").read_text(encoding="utf-8"))
        stated = tokenizer.get("model_max_length") if isinstance(tokenizer, dict) else None
    except (OSError, ValueError):
        stated = None
    for value in (stated, config.get("max_position_embeddings")):
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1_000_000:
            limits.append(value)
    if not limits:
        raise ProviderError(f"{path} states no maximum length; pass max_length=")
    return min(limits)


def _quiet_transformers() -> None:
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - sentence-transformers depends on transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


def _positive_int(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a positive integer, got {value!r}")


# ---------------------------------------------------------------------- reranking


def rerank(first: Sequence[Scored], texts: Sequence[str], query: str, reranker: Reranker, *,
           depth: int = DEPTH, method: str = "replace", rrf_k: int = DEFAULT_K,
           explain: bool = False) -> list[Scored]:
    """``first`` with its top ``depth`` hits reordered by ``reranker``.

    ``texts[i]`` is the text of ``first[i]`` (only the shortlist's are read).
    ``"replace"``: the shortlist by reranker score, each hit's score that
    score. ``"rrf"``: by ``1/(k + first-stage rank) + 1/(k + reranker rank)``,
    ranks only, that sum the score. Ties go to the better first-stage rank.
    Each shortlisted hit's explanation gains a ``"rerank"`` contribution: its
    rank and score in the reranker's own order, and in ``detail`` its
    ``rank_before``/``rank_after`` (1-based) and the method (with ``explain``,
    also the model's name). Hits below the shortlist are returned unchanged,
    after it, in first-stage order: their scores are the first stage's and are
    not comparable with the shortlist's.
    """
    _check_options(depth, method, rrf_k)
    shortlist = list(first[:depth])
    if not shortlist:
        return []
    if len(texts) < len(shortlist):
        raise UsageError(f"rerank needs a text for each of the {len(shortlist)} shortlisted "
                         f"hits, got {len(texts)}")
    if len({s.position for s in shortlist}) != len(shortlist):
        raise UsageError("the first-stage list names a position twice")
    scores = reranker.score(query, list(texts[:len(shortlist)]))
    if len(scores) != len(shortlist):
        raise ProviderError(f"the reranker returned {len(scores)} scores for "
                            f"{len(shortlist)} texts")
    model_rank, final = _ranks(scores, method, rrf_k)
    out = []
    for after, i in enumerate(sorted(final, key=lambda i: (-final[i], i)), start=1):
        detail: dict[str, Any] = {"rank_before": i + 1, "rank_after": after, "method": method}
        if method == "rrf":
            detail.update(k=rrf_k, contribution=1.0 / (rrf_k + model_rank[i]))
        if explain:
            detail["model"] = reranker.identity.name
        hit = shortlist[i]
        extra = Contribution(retriever="rerank", rank=model_rank[i], score=scores[i],
                             detail=detail)
        out.append(Scored(hit.position, final[i], (*hit.explanation, extra)))
    return out + list(first[depth:])


def _ranks(scores: Sequence[float], method: str,
           rrf_k: int) -> tuple[dict[int, int], dict[int, float]]:
    """Per shortlist index: its 1-based rank by the reranker, and its final score."""
    by_model = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    model_rank = {i: rank for rank, i in enumerate(by_model, start=1)}
    if method == "replace":
        return model_rank, {i: scores[i] for i in by_model}
    return model_rank, {i: math.fsum((1.0 / (rrf_k + i + 1), 1.0 / (rrf_k + model_rank[i])))
                        for i in by_model}


def _check_options(depth: int, method: str, rrf_k: int) -> None:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise UsageError(f"rerank depth must be a positive integer, got {depth!r}")
    if method not in METHODS:
        raise UsageError(f"unknown rerank method {method!r}; valid: "
                         + "; ".join(f"{name} ({text})" for name, text in METHOD_HELP.items()))
    if isinstance(rrf_k, bool) or not isinstance(rrf_k, int) or rrf_k < 1:
        raise UsageError(f"rerank rrf_k must be an integer >= 1, got {rrf_k!r}")


__all__ = ["DEPTH", "METHODS", "METHOD_HELP", "CrossEncoderReranker", "Reranker",
           "RerankerIdentity", "identity_check", "rerank", "weight_files", "weights_sha256"]
