"""``python -m evals``: the evaluation harness's one command line (``grk eval`` runs ``run``).

  run      one suite: a golden version (default), an external dataset
           (--dataset), or your own collection and questions (--collection, --questions)
  check    every checked external dataset against its gates and published numbers
  list     stages and datasets
  import   an external dataset as a groundkit collection
  export   a dataset, imported folder or golden version as BEIR; a report as HTML
  expect   pin a report's values as expected (a deliberate commit)
  compare  two saved reports, paired by question
  meta     every stage against the baseline across suites: pooled, prediction interval
  llm      the local reader as judge, reranker and gate signal (a fixed golden sample)
  lint     a golden version (or write its manifest)
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Sequence
from pathlib import Path

from evals import cli
from evals import stages as registry
from evals.llm_run import add_parser as add_llm
from evals.meta.command import add_parser as add_meta
from evals.score import gates
from groundkit.errors import GroundkitError


def _sources(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", help="local mirror of the test collections (default "
                   "$GROUNDKIT_DATA, else <repo>/../shared/data)")
    p.add_argument("--irds-cache", help="IR_DATASETS_HOME for ir_datasets ids "
                   "(default <repo>/.cache/ir_datasets)")
    p.add_argument("--online", action="store_true",
                   help="let ir_datasets download what the mirror lacks (default: offline)")


def _running(p: argparse.ArgumentParser) -> None:
    _sources(p)
    p.add_argument("--out", default=str(cli.DEFAULT_OUT), help="folder for the report (golden "
                   "and your own questions: latest.json; a dataset: <dataset>.json) and runs/")
    p.add_argument("--cache", default=str(cli.DEFAULT_CACHE), help="folder for embeddings, "
                   "the golden stages' collections and materialised external collections, "
                   "kept between runs")
    p.add_argument("--fresh", action="store_true",
                   help="index everything anew in a temporary home (golden) or rewrite and "
                   "re-index (external) instead of reusing the cache")
    p.add_argument("--join", help="external: title/text join, flat or text (default: the "
                   "dataset's)")
    p.add_argument("--expected-dir", default=str(cli.EXPECTED_DIR), help="external: gate each "
                   "dataset on <dir>/<dataset>.json when it exists")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--permutations", type=int, default=10_000, help="randomisation draws")


def run_options(run: argparse.ArgumentParser) -> None:
    """The options of ``run`` (and of ``grk eval``, its face)."""
    suite = run.add_argument_group("the suite (one of)")
    suite.add_argument("--golden", metavar="DIR", help=f"a golden version (default "
                       f"{cli.DEFAULT_GOLDEN.relative_to(cli.REPO)})")
    suite.add_argument("--dataset", metavar="NAME", help="an external dataset: beir:DIR[@split]"
                       ", irds:ID or a registered name (see list)")
    suite.add_argument("--collection", "-c", metavar="NAME", help="your own collection ...")
    suite.add_argument("--questions", metavar="FILE", help="... scored with your questions "
                       "(golden format, doc_id relative to the collection's root)")
    suite.add_argument("--home", metavar="DIR", help="where --collection lives (default "
                       "$GROUNDKIT_HOME, ...)")
    run.add_argument("--stages", nargs="+", metavar="STAGE", help="stages to run (default: the "
                     "suite's; the baseline bm25 always runs). " + registry.describe())
    run.add_argument("--embed-model", action="append", metavar="[PROVIDER:]MODEL",
                     help="also run dense and hybrid stages with this embedding model, e.g. "
                     "ollama:nomic-embed-text or local:all-MiniLM-L6-v2; a bare MODEL is an "
                     "Ollama model (repeatable)")
    run.add_argument("--dense", action="store_true", help="run only the baseline and the "
                     "dense and hybrid stages (of --embed-model when given, else MiniLM's)")
    run.add_argument("--rerank-model", metavar="PATH", help="the cross-encoder model folder the "
                     "rerank stages use (default $GROUNDKIT_RERANK_MODEL; without one they are "
                     "listed as not measured)")
    run.add_argument("--run-file", action="append", metavar="NAME=PATH",
                     help="also score this run as stage NAME (repeatable): external, a TREC "
                     "run of the dataset's doc ids; golden and your own questions, JSON Lines "
                     "of chunk ids, paths or spans (or a TREC run of chunk ids or paths), "
                     "judged at that granularity with the quote rule")
    run.add_argument("--html", metavar="FILE", help="also write the HTML report here")
    run.add_argument("--expected", metavar="FILE", help="gate on this expected-values file "
                     "(external: default evals/expected/<dataset>.json when it exists)")
    run.add_argument("--hits-shown", type=int, default=5,
                     help="hits per question kept in the drill-down (default 5)")
    run.add_argument("--serial", action="store_true",
                     help="rank every stage in this process, one group after the other, "
                     "instead of in two forked workers beside it (same report; for debugging "
                     "and profiling)")
    run.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="rank the stages in Ray tasks on a cluster (extra 'ray'), one task per "
                     "stage, the MCP stages here (same report). ADDRESS is the head's HOST:PORT "
                     "(or ray://HOST:PORT); omitted, the cluster RAY_ADDRESS names or one "
                     "started on this machine, else a new local Ray. Every node reads the "
                     "suite's files and --cache at the same paths (docs/scale.md)")
    run.add_argument("--no-twins", action="store_true",
                     help="golden v3 on: skip the two-formats measurement (the v2 documents "
                     "indexed from their original HTML against their Markdown conversions)")
    _running(run)
    run.set_defaults(handler=cli.cmd_run, command="run")


def build_parser(prog: str = "python -m evals") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    run_options(sub.add_parser("run", help="run one suite and write its report",
                               description=cli.cmd_run.__doc__))
    _add_external(sub)
    expect = sub.add_parser("expect", help="pin a report's values as expected (deliberate)",
                            description=cli.cmd_expect.__doc__)
    expect.add_argument("--report", default=str(cli.DEFAULT_OUT / "latest.json"))
    expect.add_argument("--out", required=True, help="e.g. evals/expected/golden-v1.json")
    expect.add_argument("--tolerance", type=float, default=gates.DEFAULT_TOLERANCE)
    expect.add_argument("--source", default="", help="how the values were produced")
    expect.set_defaults(handler=cli.cmd_expect)
    _add_compare(sub)
    add_meta(sub)
    add_llm(sub)
    lint = sub.add_parser("lint", help="lint a golden version; one line per problem",
                          description=cli.cmd_lint.__doc__)
    lint.add_argument("path", type=Path)
    lint.add_argument("--no-coverage", action="store_true", help="skip corpus-level minimums")
    lint.add_argument("--write-manifest", action="store_true",
                      help="write MANIFEST.json from the files first")
    lint.add_argument("--force", action="store_true",
                      help="with --write-manifest: rewrite a draft version's checksums")
    lint.set_defaults(handler=cli.cmd_lint)
    return parser


def _add_external(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """check, list, import and export: the external collections' commands."""
    check = sub.add_parser("check", help="run every checked external dataset; exit 8 on any "
                           "failure", description=cli.cmd_check.__doc__)
    check.add_argument("--datasets", nargs="+", metavar="DATASET",
                       help="datasets to check (default: every one marked checked)")
    check.add_argument("--html-dir", help="also write external-<dataset>.html here")
    _running(check)
    check.set_defaults(handler=cli.cmd_check, out=str(cli.DEFAULT_OUT / "external"))
    shift = sub.add_parser("shift", help="corpus shift: a gate calibrated on golden, applied "
                           "to SciFact", description=cli.cmd_shift.__doc__)
    shift.add_argument("--golden", default=str(cli.DEFAULT_GOLDEN), help="the golden version "
                       "whose calibration part calibrates the gate")
    shift.add_argument("--out", default=str(cli.DEFAULT_OUT / "corpus-shift.json"))
    shift.add_argument("--cache", default=str(cli.DEFAULT_CACHE))
    shift.add_argument("--resplits", type=int, default=500, help="own-calibration re-splits")
    _sources(shift)
    shift.set_defaults(handler=cli.cmd_shift)
    lister = sub.add_parser("list", help="list stages, datasets and published references")
    lister.set_defaults(handler=cli.cmd_list)
    imp = sub.add_parser("import", help="import a dataset as a groundkit collection",
                         description=cli.cmd_import.__doc__)
    imp.add_argument("dataset", help="beir:DIR[@split], irds:ID or a dataset name")
    imp.add_argument("--collection", "-c", required=True, help="collection name")
    imp.add_argument("--dir", required=True, help="folder to write the documents into")
    imp.add_argument("--home", help="groundkit home (default $GROUNDKIT_HOME, ...)")
    imp.add_argument("--join", help="title/text join: flat or text (default: the dataset's)")
    _sources(imp)
    imp.set_defaults(handler=cli.cmd_import)
    exp = sub.add_parser("export", help="write BEIR (dataset, imported folder, golden) or a "
                         "report's HTML", description=cli.cmd_export.__doc__)
    exp.add_argument("dataset", nargs="?", help="a dataset name, beir:DIR or irds:ID")
    exp.add_argument("--out", help="the BEIR directory to write")
    exp.add_argument("--from-dir", help="a folder written by import (reads the files back)")
    exp.add_argument("--golden", help="a golden version: chunks become BEIR documents")
    exp.add_argument("--chunk-size", type=int, default=1000, help="golden chunk target")
    exp.add_argument("--chunk-overlap", type=int, default=150, help="golden chunk overlap")
    exp.add_argument("--report", help="a saved report (JSON) to render with --html")
    exp.add_argument("--html", help="where the rendered report goes")
    _sources(exp)
    exp.set_defaults(handler=cli.cmd_export)


def _add_compare(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    compare = sub.add_parser("compare", help="compare two saved reports",
                             description=cli.cmd_compare.__doc__)
    compare.add_argument("a", help="the reference report (JSON)")
    compare.add_argument("b", help="the report compared with it (JSON)")
    compare.add_argument("--pair", action="append", type=_pair, metavar="A_STAGE:B_STAGE",
                         help="stages to compare (repeatable); default: same-named stages")
    compare.add_argument("--measure", action="append", metavar="MEASURE",
                         help="measure to compare (repeatable); default: all in both")
    compare.add_argument("--domain", action="append", metavar="DOMAIN",
                         help="only the questions of this golden domain (repeatable), e.g. "
                         "the formats slice: --domain r-manuals --domain gnuplot --domain "
                         "debian-handbook")
    compare.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    compare.add_argument("--permutations", type=int, default=10_000, help="randomisation draws")
    compare.add_argument("--confidence", type=float, default=0.95, help="interval confidence")
    compare.add_argument("--seed", type=int, default=0, help="random seed")
    compare.add_argument("--json", action="store_true", help="print JSON instead of a table")
    compare.set_defaults(handler=cli.cmd_compare)


def _pair(text: str) -> tuple[str, str]:
    stage_a, sep, stage_b = text.partition(":")
    if not sep or not stage_a or not stage_b:
        raise argparse.ArgumentTypeError(f"expected A_STAGE:B_STAGE, got {text!r}")
    return stage_a, stage_b


GC_THRESHOLDS = (50_000, 20, 20)
"""The cyclic collector's thresholds while a command runs (Python's default: 700, 10, 10).

A run allocates millions of short-lived tuples and records beside a few million
long-lived objects (questions, judgments, reports), and the default young-generation
threshold made the collector traverse them often: 7% of the parent's CPU on golden v2
(perf). With these, two alternating pairs of warm runs took 32.4 and 29.8 s against 35.0
and 31.8 s (5 s less CPU), with an identical report; garbage in cycles waits at most
50,000 allocations longer."""


def main(argv: Sequence[str] | None = None, *, face: str | None = None) -> int:
    """Parse ``argv`` and run its subcommand; a ``GroundkitError`` is one line and its code.

    ``face`` (``"grk eval"``) parses ``argv`` as the options of ``run`` alone. The cyclic
    collector runs less often meanwhile (:data:`GC_THRESHOLDS`), forked workers included.
    """
    thresholds = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        return _main(argv, face=face)
    finally:
        gc.set_threshold(*thresholds)


def _main(argv: Sequence[str] | None, *, face: str | None) -> int:
    if face is None:
        parser = build_parser()
        label = parser.prog
    else:
        parser = argparse.ArgumentParser(prog=face, description=cli.cmd_run.__doc__)
        run_options(parser)
        parser.set_defaults(**cli.USER_DEFAULTS)  # never into the checkout or the package
        label = face
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except GroundkitError as exc:
        where = label if face else f"{label} {args.command}"
        print(f"{where}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
