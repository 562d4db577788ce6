"""How ``grk index`` turns its options into an :class:`~groundkit.collection.IndexConfig`.

Settings stick: an option given on the command line wins, the collection's recorded
settings (those of its current generation) fill in the rest, and the defaults come last,
for a new collection. A plain ``grk index -c NAME`` therefore re-indexes with the folders,
chunking, analyzer, BM25 parameters, embedding and approximate index the collection was
built with (BM25 segments included: ``--segments on|off``); embeddings are dropped only
with ``--no-embed``. :func:`summary` is the one
line that says which settings were reused and which an option changed.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..collection import IndexConfig, recorded_config
from ..errors import CollectionNotFoundError, UsageError
from ..retrieval.bm25 import BM25Params
from ..sources import DEFAULT_EXCLUDE, DEFAULT_INCLUDE, DEFAULT_MAX_BYTES
from ..text.analysis import DEFAULT_PRESET, PRESETS, Analyzer
from ..text.chunking import ChunkerConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class Chosen:
    """The configuration to index with, the recorded one it started from, and what changed."""

    config: IndexConfig
    recorded: IndexConfig | None
    changed: tuple[str, ...]


def recorded_or_none(args: argparse.Namespace) -> IndexConfig | None:
    try:
        return recorded_config(args.collection, args.home)
    except CollectionNotFoundError:
        return None


def choose(args: argparse.Namespace) -> Chosen:
    """Options given, else the recorded settings, else the defaults (module docstring)."""
    recorded = recorded_or_none(args)
    if args.rebuild and not args.paths and recorded is None:
        raise CollectionNotFoundError(f"no collection named {args.collection!r} to rebuild")
    roots = tuple(args.paths) if args.paths else recorded.roots if recorded else ()
    if not roots:
        raise UsageError(f"collection {args.collection!r} is new: give the folders or files "
                         "to index, e.g. grk index ~/notes -c " + args.collection)
    old = recorded.extra if recorded else {}
    chunker = _chunker(args, recorded.chunker if recorded else ChunkerConfig())
    extra: dict[str, Any] = {k: v for k, v in old.items()
                             if k not in {"analyzer", "bm25", "embedding", "ann", "gc"}}
    if args.analyzer or "analyzer" in old or recorded is None:  # else: as recorded, absent
        extra["analyzer"] = (Analyzer.preset(args.analyzer).to_dict() if args.analyzer
                             else old.get("analyzer") or Analyzer.preset(DEFAULT_PRESET).to_dict())
    if args.k1 is not None or args.b is not None or "bm25" in old or recorded is None:
        bm25 = BM25Params.from_dict(old["bm25"]) if old.get("bm25") else BM25Params()
        extra["bm25"] = BM25Params(k1=bm25.k1 if args.k1 is None else args.k1,
                                   b=bm25.b if args.b is None else args.b).to_dict()
    if getattr(args, "segments", None) is not None:  # else as recorded (carried above)
        extra.pop("segments", None)
        extra.update({"segments": "on"} if args.segments == "on" else {})
    extra.update(_embedding(args, old))
    extra.update(_gc_settings(args))
    config = IndexConfig(
        roots=roots,
        include=(tuple(args.include) if args.include
                 else recorded.include if recorded else DEFAULT_INCLUDE),
        exclude=(DEFAULT_EXCLUDE + tuple(args.exclude) if args.exclude
                 else recorded.exclude if recorded else DEFAULT_EXCLUDE),
        max_bytes=(args.max_bytes if args.max_bytes is not None
                   else recorded.max_bytes if recorded else DEFAULT_MAX_BYTES),
        chunker=chunker, extra=extra)
    return Chosen(config=config, recorded=recorded,
                  changed=_changes(recorded, config, roots_given=bool(args.paths)))


def _chunker(args: argparse.Namespace, base: ChunkerConfig) -> ChunkerConfig:
    given = {"target": args.chunk_size, "overlap": args.chunk_overlap,
             "boundaries": args.chunk_boundaries}
    settings = {**base.to_dict(), **{k: v for k, v in given.items() if v is not None}}
    return ChunkerConfig(**settings)


def _embedding(args: argparse.Namespace, old: dict[str, Any]) -> dict[str, Any]:
    """The embedding (and ``ann``) settings: ``--embed``, ``--no-embed``, else as recorded."""
    if args.embed and args.no_embed:
        raise UsageError("--embed and --no-embed contradict each other: choose one")
    if args.no_embed:
        if args.ann is not None or args.ollama_host:
            raise UsageError("--ann and --ollama-host apply to an embedding; --no-embed drops it")
        return {}
    embedding = ({"spec": args.embed, "options": {}} if args.embed
                 else dict(old["embedding"]) if old.get("embedding") else None)
    if embedding is None:
        if args.ollama_host:
            raise UsageError("--ollama-host only applies with --embed ollama:MODEL")
        if args.ann is not None:
            raise UsageError("--ann only applies with --embed PROVIDER:MODEL")
        return {}
    if args.ollama_host:
        if not str(embedding["spec"]).startswith("ollama"):
            raise UsageError("--ollama-host only applies with --embed ollama:MODEL")
        embedding["options"] = {**embedding.get("options", {}), "host": args.ollama_host}
    if args.embed or args.ollama_host:
        from ..embeddings import make_provider

        make_provider(embedding["spec"], **embedding.get("options", {}))  # validate it now
    ann = args.ann if args.ann is not None else old.get("ann", "auto")
    return {"embedding": embedding, **({"ann": ann} if ann != "auto" else {})}


def _gc_settings(args: argparse.Namespace) -> dict[str, Any]:
    """Only the gc settings given: the indexer keeps the recorded ones for the rest."""
    given = {"keep": args.keep_generations, "auto": args.auto_gc}
    chosen = {k: v for k, v in given.items() if v is not None}
    return {"gc": chosen} if chosen else {}


def describe_embedding(extra: dict[str, Any]) -> str:
    embedding = extra.get("embedding")
    if not embedding:
        return "none (BM25 only)"
    ann = extra.get("ann")
    return str(embedding["spec"]) + (f", ann {ann}" if ann else "")


def describe_analyzer(data: dict[str, Any] | None) -> str:
    if not data:
        return DEFAULT_PRESET
    return next((name for name, (a, _) in sorted(PRESETS.items()) if a.to_dict() == data),
                "custom")


def _fields(config: IndexConfig) -> dict[str, str]:
    c = config.chunker.to_dict()
    bm25 = config.extra.get("bm25") or BM25Params().to_dict()
    return {
        "folders": ", ".join(config.roots),
        "include": " ".join(config.include), "exclude": " ".join(config.exclude),
        "max bytes": str(config.max_bytes),
        "chunks": f"{c['target']}/{c['overlap']} {c.get('boundaries', 'structure')}",
        "analyzer": describe_analyzer(config.extra.get("analyzer")),
        "bm25": f"k1 {bm25.get('k1')} b {bm25.get('b')}",
        "embedding": describe_embedding(config.extra),
        "bm25 segments": str(config.extra.get("segments", "off")),
    }


def _changes(recorded: IndexConfig | None, config: IndexConfig, *,
             roots_given: bool) -> tuple[str, ...]:
    if recorded is None:
        return ()
    before, after = _fields(recorded), _fields(config)
    if roots_given:  # compared once the indexer resolves them: said only when they differ
        same = [str(Path(r).resolve()) for r in config.roots] == list(recorded.roots)
        after["folders"] = before["folders"] if same else after["folders"]
    return tuple(f"{k} {before[k]} -> {after[k]}" for k in before if before[k] != after[k])


def summary(name: str, chosen: Chosen) -> str | None:
    """The one line about settings: reused as recorded, and what an option changed."""
    if chosen.recorded is None:
        return None
    fields = _fields(chosen.config)
    kept = (f"chunks {fields['chunks']}, analyzer {fields['analyzer']}, embedding "
            f"{fields['embedding']}")
    if not chosen.changed:
        return f"{name}: settings as recorded ({kept})"
    return f"{name}: settings as recorded except {'; '.join(chosen.changed)} ({kept})"
