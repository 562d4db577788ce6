"""The search modes: each builds a :class:`~groundkit.retrieval.base.Retriever` for a generation.

The registry :data:`MODES` is the one list of modes: the CLI's ``--mode``
choices, the MCP schema's enum, help text and error messages are generated
from it, and so are each mode's options and their defaults. Modes are always
explicit (SPEC §5): nothing in the environment picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import IndexMismatchError, UsageError
from .base import Resources, Retriever
from .dense import DenseRetriever
from .fusion import DEFAULT_K, FUSIONS, FusionRetriever, fusion_method
from .lexical import BM25Retriever
from .signals import Evidence, dense_evidence, lexical_evidence

DEFAULT_MODE = "bm25"


@dataclass(frozen=True, slots=True, kw_only=True)
class Option:
    """A mode option: its name, default and one line of help."""

    name: str
    default: Any
    help: str
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Mode:
    name: str
    description: str
    embedding: bool
    """Needs the collection to have been indexed with an embedding model."""
    threshold: bool
    """Accepts ``score_threshold``."""
    build: Callable[[Resources, Mapping[str, Any]], Retriever]
    options: tuple[Option, ...] = ()

    def defaults(self) -> dict[str, Any]:
        return {o.name: o.default for o in self.options}


EMBED_MODEL = Option(name="embed_model", default=None,
                     help="embedding model PROVIDER:MODEL; must match the index")
EXACT = Option(name="exact", default=False,
               help="exact cosine over every vector even where the generation has an "
               "approximate index (ADR-0015)")


def _bm25(resources: Resources, options: Mapping[str, Any]) -> Retriever:
    return BM25Retriever(resources.bm25())


def _dense(resources: Resources, options: Mapping[str, Any]) -> DenseRetriever:
    check_embedding(resources, options.get("embed_model"))
    embedder = resources.query_embedder()
    return DenseRetriever(resources.vectors(embedder.identity), embedder, resources.positions(),
                          exact=bool(options.get("exact", False)))


def _hybrid(resources: Resources, options: Mapping[str, Any]) -> Retriever:
    method = fusion_method(options["fusion"])
    params = {key: options[key] for key in method.defaults if key in options}
    lists = {"bm25": _bm25(resources, options), "dense": _dense(resources, options)}
    return FusionRetriever(lists, resources.chunk_ids(), resources.positions(), method, params)


MODES: Mapping[str, Mode] = {
    "bm25": Mode(name="bm25", embedding=False, threshold=True, build=_bm25,
                 description="lexical BM25 (default; zero setup; abstains when nothing matches)"),
    "dense": Mode(name="dense", embedding=True, threshold=True, build=_dense,
                  options=(EMBED_MODEL, EXACT),
                  description="embedding cosine similarity (needs an embedding index; abstains "
                  "only with a score threshold)"),
    "hybrid": Mode(name="hybrid", embedding=True, threshold=False, build=_hybrid,
                   options=(EMBED_MODEL, EXACT,
                            Option(name="fusion", default="rrf", choices=tuple(FUSIONS),
                                   help="how the bm25 and dense lists are fused"),
                            Option(name="rrf_k", default=DEFAULT_K,
                                   help="Reciprocal Rank Fusion constant"),
                            Option(name="weights", default=None,
                                   help="convex fusion weights per retriever")),
                   description="BM25 and dense fused by Reciprocal Rank Fusion (rank-only; "
                   "never abstains)"),
}
"""Every search mode, by name."""


def describe_modes() -> str:
    return "; ".join(f"{m.name}: {m.description}" for m in MODES.values())


def mode(name: str) -> Mode:
    if name not in MODES:
        raise UsageError(f"unknown search mode {name!r}; valid modes: "
                         + ", ".join(f"{m.name} ({m.description})" for m in MODES.values()))
    return MODES[name]


def make_retriever(resources: Resources, name: str, options: Mapping[str, Any]) -> Retriever:
    """The retriever of mode ``name`` over ``resources``; unknown options are a UsageError."""
    chosen = mode(name)
    unknown = sorted(set(options) - {o.name for o in chosen.options})
    if unknown:
        valid = ", ".join(o.name for o in chosen.options) or "none"
        raise UsageError(f"search mode {name!r} has no option {', '.join(unknown)}; "
                         f"its options: {valid}")
    return chosen.build(resources, {**chosen.defaults(), **options})


def check_embedding(resources: Resources, embed_model: str | None) -> None:
    """Fail unless the collection has vectors, from ``embed_model`` when one is named."""
    recorded = resources.embedding_spec()
    if recorded is None:
        raise UsageError(
            f"collection {resources.name!r} has no embedding index; re-index it with grk index "
            "PATH --collection NAME --embed local:all-MiniLM-L6-v2 (or ollama:MODEL)")
    if embed_model is not None and embed_model != recorded:
        raise IndexMismatchError(
            f"collection {resources.name!r} was embedded with {recorded}, not {embed_model}; "
            f"search it with "
            f"--embed-model {recorded} or re-index with --embed {embed_model}")


def evidence(resources: Resources, name: str, query: str,
             options: Mapping[str, Any] | None = None) -> Evidence:
    """What mode ``name``'s retrievers know about ``query``, for the abstention gate."""
    chosen = mode(name)
    options = {**chosen.defaults(), **(options or {})}
    lexical = lexical_evidence(resources.bm25(), query) if name in ("bm25", "hybrid") else None
    dense = None
    if chosen.embedding:
        retriever = _dense(resources, options)
        cosines = (retriever.store.cosines(retriever.embedder.vector(query)) if query.strip()
                   else np.zeros(0))
        dense = dense_evidence(cosines, retriever.store.chunk_ids, resources.positions())
    return Evidence(lexical=lexical, dense=dense)
