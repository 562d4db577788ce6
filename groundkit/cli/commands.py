"""The ``grk`` subcommands. Each is a ``configure(parser) -> handler`` pair."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ..collection import (
    MAX_TOP_K,
    Collection,
    fetch_chunk,
    index,
    list_collections,
    resolve_home,
)
from ..collection.filters import Filters
from ..collection.multi import merged
from ..errors import CollectionNotFoundError, InvalidSpanError, UsageError
from ..model import Hit, Status, split_chunk_id
from ..progress import ProgressBar
from ..retrieval.ann import MODES as ANN_MODES
from ..retrieval.ann import THRESHOLD as ANN_THRESHOLD
from ..retrieval.bm25 import BM25Params
from ..retrieval.gate import ALPHA, Decision
from ..retrieval.modes import MODES
from ..sources import DEFAULT_MAX_BYTES
from ..text import terminal
from ..text.analysis import DEFAULT_PRESET, PRESETS, Analyzer
from ..text.chunking import BOUNDARIES, DEFAULT_OVERLAP, DEFAULT_TARGET
from . import cluster, index_settings, watch
from .numbers import finite
from .options import abstain_arguments, mode_arguments, mode_options
from .registry import EXIT_DRIFTED, EXIT_UNRESOLVABLE, Handler, command, emit
from .rerank import rerank_arguments, rerank_options

_BM25 = BM25Params()


@command("index", "Index folders into a collection (incremental, atomic).")
def _index(p: argparse.ArgumentParser) -> Handler:
    _index_options(p)

    def run(args: argparse.Namespace) -> int:
        chosen = index_settings.choose(args)
        if line := index_settings.summary(args.collection, chosen):
            print(line, file=sys.stderr)
        config = chosen.config
        if args.watch and not all(Path(r).is_dir() for r in config.roots):
            raise UsageError("--watch follows folders: index the folder that holds the files")
        with cluster.executor(args) as executor, ProgressBar("indexing") as bar:
            report = index(args.collection, config, home=args.home, progress=bar.update,
                           rebuild=args.rebuild, executor=executor)
        if args.watch:
            watch.announce(args, report)
            return watch.watch(args, args.collection)
        data = report.to_dict()

        def human() -> None:
            print(f"collection {report.collection}: generation {report.generation}, "
                  f"{report.chunks} chunks")
            print(f"  added {report.added}, changed {report.changed}, removed {report.removed}, "
                  f"unchanged {report.unchanged}, skipped {len(report.skipped)}")
            for s in report.skipped:
                print(terminal.line(f"  skipped {s.path}: {s.reason}"))
            for kind, n in data["skipped_by_reason"].items():
                print(f"  skipped {n} × {kind}")

        emit(args, data, human)
        return 0

    return run


def _index_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH",
                   help="folders or files to index (none: the collection's recorded ones). Every "
                   "option left out keeps the collection's recorded setting (a new "
                   "collection: the default)")
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    p.add_argument("--include", action="append", metavar="GLOB",
                   help="file globs to index (repeatable; default: text, docs and source code)")
    p.add_argument("--exclude", action="append", metavar="GLOB",
                   help="globs to skip; 'dir/' skips a folder (added to the defaults: VCS, "
                   "dependency and cache folders)")
    p.add_argument("--max-bytes", type=int,
                   help=f"skip files larger than this (default {DEFAULT_MAX_BYTES})")
    p.add_argument("--chunk-size", type=int,
                   help=f"target chunk size in characters (default {DEFAULT_TARGET})")
    p.add_argument("--chunk-overlap", type=int,
                   help=f"overlap between chunks in characters (default {DEFAULT_OVERLAP})")
    p.add_argument("--chunk-boundaries", choices=list(BOUNDARIES),
                   help="where a chunk may end: structure (default: a heading, then a blank "
                        "line, a sentence end, a line end, a space), sentences (the same "
                        "without headings and blank lines) or words (spaces only); measured "
                        "on golden v3 by the bm25-sentence-chunks and bm25-word-chunks stages")
    p.add_argument("--analyzer", choices=sorted(PRESETS),
                   help=f"text analysis preset (default {DEFAULT_PRESET}): " + "; ".join(
                       f"{k}: {v[1]}" for k, v in sorted(PRESETS.items())))
    p.add_argument("--k1", type=finite, help=f"BM25 k1 (default {_BM25.k1})")
    p.add_argument("--b", type=finite, help=f"BM25 b (default {_BM25.b})")
    p.add_argument("--segments", choices=("on", "off"), default=None,
                   help="BM25 as immutable segments plus tombstones (opt-in, ADR-0025): an "
                   "update writes a small segment for the changed files instead of "
                   "re-splicing the whole index; hits equal a full build's (default: as "
                   "recorded, else off)")
    _embedding_options(p)
    p.add_argument("--watch", action="store_true",
                   help="after indexing, keep re-indexing as files change (as grk watch; "
                   "with --json, event lines)")
    watch.watch_arguments(p)
    cluster.ray_arguments(p)
    p.add_argument("--keep-generations", type=int, metavar="N",
                   help="generations garbage collection keeps, the current one included "
                   "(default: as recorded, else 2)")
    p.add_argument("--auto-gc", action=argparse.BooleanOptionalAction, default=None,
                   help="collect old generations and their chunk rows after each publish "
                   "(default: as recorded, else on)")
    p.add_argument("--rebuild", action="store_true",
                   help="rebuild every derived index (BM25, vectors) from the store, reusing "
                   "none of the previous generation's files: the fix for damage grk check "
                   "reports; without PATH, with the collection's recorded settings")


def _embedding_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--embed", metavar="PROVIDER:MODEL",
                   help="also embed chunks for dense/hybrid search: recommended "
                   "onnx:all-MiniLM-L6-v2-int8 (int8 on ONNX Runtime, offline, extras 'onnx' "
                   "and 'dense' for its one-time build; ~3.5x local's throughput, dense "
                   "queries in under a second), local:all-MiniLM-L6-v2 (the same model fp32 "
                   "on torch, extra 'dense') or ollama:nomic-embed-text (extra 'ollama'); "
                   "kept on re-index, where only new chunk texts are embedded")
    p.add_argument("--no-embed", action="store_true",
                   help="drop the collection's embedding (dense and hybrid search stop working)")
    p.add_argument("--ann", choices=ANN_MODES, default=None,
                   help="with --embed: an approximate dense index in the generation; auto "
                   f"(default) above {ANN_THRESHOLD:,} vectors, on (any size), off (exact only)")
    p.add_argument("--ollama-host", metavar="URL",
                   help="Ollama server for --embed ollama:MODEL (default http://127.0.0.1:11434)")


@command("fetch", "Re-read a cited chunk now: verified, drifted or unresolvable.")
def _fetch(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("chunk_id", metavar="CHUNK_ID", help="an id such as notes:3f2a… (exit 2 "
                   "when malformed, 3 when its collection is unknown, 10 drifted, 11 "
                   "unresolvable)")

    def run(args: argparse.Namespace) -> int:
        from .render import source_place

        try:
            name, _ = split_chunk_id(args.chunk_id)
        except InvalidSpanError as exc:
            raise UsageError(str(exc)) from None
        if name not in list_collections(args.home):
            raise CollectionNotFoundError(f"no collection named {name!r} in "
                                          f"{resolve_home(args.home)}")
        verdict = fetch_chunk(args.chunk_id, args.home)

        def human() -> None:
            print(terminal.line(f"{verdict.status.value}: {verdict.reason}"))
            if verdict.doc_id is not None:
                doc = terminal.line(verdict.doc_id)
                print(f"  {doc} [{verdict.start}, {verdict.end}) code points"
                      + (f" ({source_place(verdict.locator)})" if verdict.locator else ""))
            if verdict.headings:
                print("  " + terminal.line(" › ".join(verdict.headings)))
            if verdict.relocated:
                print(f"  relocated to [{verdict.relocated[0]}, {verdict.relocated[1]})")
            if verdict.status is Status.DRIFTED and verdict.stored_text is not None \
                    and verdict.current_text is not None:
                print("indexed text (-) against the text now at those offsets (+):")
                print(terminal.block(drift_diff(verdict.stored_text, verdict.current_text)))
            elif verdict.current_text is not None:
                print(terminal.block(verdict.current_text))

        emit(args, verdict.to_dict(), human)
        return {Status.VERIFIED: 0, Status.DRIFTED: EXIT_DRIFTED}.get(
            verdict.status, EXIT_UNRESOLVABLE
        )

    return run


def drift_diff(stored: str, current: str) -> str:
    """A unified diff of a chunk's indexed text against the text now at its offsets."""
    import difflib

    lines = difflib.unified_diff(stored.splitlines(), current.splitlines(), "indexed", "now",
                                 lineterm="", n=2)
    return "\n".join(lines) or "(the same text: only offsets or the file around it changed)"


@command("status", "Show a collection's counts, settings, skipped and changed files.")
def _status(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("name", nargs="?", metavar="NAME", help="collection (default: all)")
    p.add_argument("--no-changes", action="store_true",
                   help="skip re-hashing files to find changes since indexing")

    def run(args: argparse.Namespace) -> int:
        names = [args.name] if args.name else list_collections(args.home)
        results = []
        for name in names:
            with Collection.open(name, args.home) as coll:
                results.append(coll.status(changes=not args.no_changes).to_dict())
        emit(args, results if not args.name else results[0], lambda: _print_status(results))
        return 0

    return run


def _print_status(results: list[dict[str, Any]]) -> None:
    if not results:
        print("no collections yet; create one with: grk index PATH --collection NAME")
    for s in results:
        print(f"{s['collection']}: generation {s['generation']} ({s['indexed_at']}), "
              f"{s['documents']} documents, {s['chunks']} chunks")
        print(f"  roots: {', '.join(s['roots'])}")
        c = s["chunker"]
        print(f"  chunks: {c['target']} characters, overlap {c['overlap']}, boundaries "
              f"{c.get('boundaries', 'structure')}")
        print(f"  analyzer: {index_settings.describe_analyzer(s.get('analyzer'))}")
        if s.get("bm25"):
            print(f"  bm25: k1 {s['bm25']['k1']}, b {s['bm25']['b']}")
        print("  embedding: " + (f"{s['embedding']['spec']} (dense and hybrid search)"
                                 if s.get("embedding") else "none (BM25 only; add one with "
                                 f"grk index -c {s['collection']} --embed PROVIDER:MODEL)"))
        if s.get("gc"):
            print(f"  gc: keep {s['gc']['keep']} generations, after each index run "
                  + ("on" if s["gc"]["auto"] else "off"))
        if s.get("reclaimable"):
            r = s["reclaimable"]
            print(f"  reclaimable by grk gc: about {r['total_bytes'] / 1_048_576:.1f} MiB "
                  f"({len(r['generations'])} old generations, about {r['chunk_rows']} chunk "
                  f"rows, {r['free_bytes'] / 1_048_576:.1f} MiB free pages)")
        for c in s["calibrations"]:
            state = f"STALE: {c['stale']}" if c["stale"] else "current"
            print(f"  calibrated {c['mode']}: n0 = {c['n0']}, alpha = {c['alpha']:g}, "
                  f"{c['created_at']} ({state})")
        if s.get("formats"):
            print("  formats: " + ", ".join(f"{n} {fmt}" for fmt, n in s["formats"].items()))
        for item in s["skipped"]:
            print(terminal.line(f"  skipped {item['path']}: {item['reason']}"))
        for kind, n in s.get("skipped_by_reason", {}).items():
            print(f"  skipped {n} × {kind}")
        for kind, paths in s.get("changed_since_indexing", {}).items():
            for path in paths:
                print(terminal.line(f"  {kind} since indexing: {path}"))


@command("collections", "List collections with their roots and counts.")
def _collections(p: argparse.ArgumentParser) -> Handler:
    def run(args: argparse.Namespace) -> int:
        rows = []
        for name in list_collections(args.home):
            with Collection.open(name, args.home) as coll:
                rows.append(coll.status(changes=False).to_dict())

        def human() -> None:
            if not rows:
                print("no collections yet; create one with: grk index PATH --collection NAME")
            for r in rows:
                dense = r["embedding"]["spec"] if r.get("embedding") else "bm25 only"
                print(f"{r['collection']}\t{r['documents']} docs\t{r['chunks']} chunks\t"
                      f"{dense}\t{', '.join(r['roots'])}")

        emit(args, rows, human)
        return 0

    return run


@command("check", "Check a collection's store and derived indexes for integrity.")
def _check(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("name", metavar="NAME")

    def run(args: argparse.Namespace) -> int:
        with Collection.open(args.name, args.home) as coll:
            problems = coll.check()
        emit(args, {"collection": args.name, "ok": not problems, "problems": problems},
             lambda: print("\n".join(problems) if problems else f"{args.name}: ok"))
        if problems and not args.json:
            print(f"grk check: {len(problems)} problem(s)", file=sys.stderr)
        return 4 if problems else 0

    return run


def _search_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("query", metavar="QUERY")
    p.add_argument("--collection", "-c", required=True, metavar="NAME", action="append",
                   help="the collection; repeat it to search several as one ranking")
    p.add_argument("--top-k", type=int, default=10, metavar="N",
                   help=f"number of hits, 1..{MAX_TOP_K} (default 10)")
    mode_arguments(p)
    p.add_argument("--score-threshold", type=finite, metavar="X", help="drop hits scoring "
                   "below X (" + ", ".join(m.name for m in MODES.values() if m.threshold)
                   + " only)")
    p.add_argument("--explain", action="store_true",
                   help="show how each hit was scored (per-term idf/tf/length for bm25)")
    p.add_argument("--verify", action="store_true", help="re-read each hit's span and show "
                   "its verdict")
    p.add_argument("--no-collapse", dest="collapse", action="store_false",
                   help="show every copy of a passage found at several places (by default "
                   "they fold into the best hit's also_in)")
    p.add_argument("--path", action="append", metavar="GLOB", help="only documents whose "
                   "path in the collection matches (notes/*.md; * crosses folders; 'dir/' is a "
                   "folder); repeatable, any may match")
    p.add_argument("--format", action="append", metavar="FORMAT", help="only documents of "
                   "this format (text, pdf, html, docx, odt, epub) or file extension (md, "
                   "txt); repeatable, any may match")
    p.add_argument("--modified-since", metavar="DATE", help="only files modified (as "
                   "indexed) at or after DATE (2026-01-31, local midnight) or an ISO 8601 time")
    abstain_arguments(p)
    rerank_arguments(p)


def _searched(args: argparse.Namespace, names: list[str], options: dict[str, Any]
              ) -> tuple[list[tuple[str, Hit]], list[tuple[str, Decision]], Analyzer]:
    """Each collection searched (or its gate asked), the hits as one ranking with the
    collection of each, the gate decisions, and the first collection's analyzer."""
    found: list[tuple[str, Hit]] = []
    decisions: list[tuple[str, Decision]] = []
    for name in names:
        with Collection.open(name, args.home) as coll:
            per = {**options, **rerank_options(args, coll)}
            if args.abstain:
                result = coll.search_or_abstain(args.query, alpha=args.alpha, **per)
                found += [(name, h) for h in result.hits]
                decisions.append((name, result.decision))
            else:
                found += [(name, h) for h in coll.search(args.query, **per)]
            if name == names[0]:
                analyzer = coll.snapshot.bm25().analyzer
    if len(names) > 1:  # one ranking, copies folded across collections
        found = merged(found, args.top_k, collapse=args.collapse)
    return found, decisions, analyzer


@command("search", "Search a collection (BM25 by default; modes are always explicit).")
def _search(p: argparse.ArgumentParser) -> Handler:
    _search_arguments(p)

    def run(args: argparse.Namespace) -> int:
        from .render import abstention_line, print_hits, views_of

        if args.alpha is not None and not args.abstain:
            raise UsageError("--alpha applies with --abstain only")
        if not args.query.strip():
            raise UsageError("empty query: give the words to search for")
        options = {"top_k": args.top_k, "mode": args.mode, "score_threshold": args.score_threshold,
                   "explain": args.explain, "verify": args.verify, "collapse": args.collapse,
                   "filters": Filters.parse(path=args.path, format=args.format,
                                            modified_since=args.modified_since),
                   **mode_options(args)}
        names = list(dict.fromkeys(args.collection))
        views = views_of(args)
        pairs, decisions, analyzer = _searched(args, names, options)
        terms = set(analyzer.analyze(args.query))
        data: dict[str, Any] = {"query": args.query, "mode": args.mode, "hits": [
            {**h.to_dict(name), **views.of(h.chunk.chunk_id)} for name, h in pairs]}
        data.update({"collection": names[0]} if len(names) == 1 else {"collections": names})
        if len(decisions) == 1:
            data.update(decisions[0][1].to_dict())
        elif decisions:
            data["abstained"] = all(d.abstained for _, d in decisions)
            data["decisions"] = [{"collection": n, **d.to_dict()} for n, d in decisions]

        def human() -> None:
            for name, decision in decisions:
                if decision.abstained:
                    print((f"{name}: " if len(names) > 1 else "")
                          + abstention_line(decision))
            if not decisions or not all(d.abstained for _, d in decisions):
                print_hits([h for _, h in pairs], terms, analyzer, explain=args.explain,
                           views=views)

        emit(args, data, human)
        return 0

    return run


@command("calibrate", "Calibrate the abstention gate with your questions (some no_answer).")
def _calibrate(p: argparse.ArgumentParser) -> Handler:
    p.add_argument("--collection", "-c", required=True, metavar="NAME")
    p.add_argument("--questions", required=True, metavar="FILE", help="questions in the golden "
                   "format (one JSON object a line with 'question' and 'kind'); the no_answer "
                   "ones are what the gate learns 'not in your documents' from")
    p.add_argument("--alpha", type=finite, default=ALPHA, metavar="A", help="the highest "
                   f"acceptable rate of answering an unanswerable question (default {ALPHA})")
    p.add_argument("--mode", action="append", choices=tuple(MODES), help="modes to calibrate "
                   "(repeatable; default bm25, plus dense and hybrid when the collection has "
                   "an embedding index)")

    def run(args: argparse.Namespace) -> int:
        from ..collection import calibration

        with Collection.open(args.collection, args.home) as coll:
            calibrations = coll.calibrate(args.questions, modes=args.mode, alpha=args.alpha)
        data = {"collection": args.collection,
                "calibrations": [{**c.to_dict(), "scores": None} for c in calibrations],
                "warnings": sorted({w for c in calibrations for w in calibration.warnings(c)})}

        def human() -> None:
            for c in calibrations:
                stats = c.stats
                coverage = stats["coverage_in_sample"]
                print(f"{c.mode}: n0 = {c.n0} no-answer questions, alpha = {c.alpha:g}; on these "
                      f"questions it answers {stats['false_answer_rate_in_sample']:.1%} of the "
                      "no-answer ones and "
                      + ("no answerable ones (none given)" if coverage is None else
                         f"{coverage:.1%} of the {stats['answerable']} answerable ones"))
            for warning in data["warnings"]:
                print(f"warning: {warning}", file=sys.stderr)

        emit(args, data, human)
        return 0

    return run


@command("eval", "Evaluate retrieval: the golden corpus, an external benchmark, or your own "
         "collection with your own questions (python -m evals run; needs the evals extra).")
def _eval(p: argparse.ArgumentParser) -> Handler:
    """``grk eval ARGS`` is ``python -m evals run ARGS`` (see :func:`run_eval`)."""

    def run(args: argparse.Namespace) -> int:
        return run_eval([])

    return run


def run_eval(argv: list[str]) -> int:
    """Hand ``argv`` to the harness's ``run`` (imported only now: ``grk search`` never loads it)."""
    try:
        from evals.__main__ import main as evals_main
    except ImportError as exc:
        from ..errors import MissingDependencyError

        raise MissingDependencyError(exc.name or "evals", "evals", "grk eval") from None
    return evals_main(argv, face="grk eval")
