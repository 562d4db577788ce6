"""``python -m evals.external``: run, check, list, import and export external benchmarks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from evals.cli_main import dispatch
from evals.external import cli, registry, stages


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", help="local mirror of the test collections (default "
                   "$GROUNDKIT_DATA, else <repo>/../shared/data)")
    p.add_argument("--irds-cache", help="IR_DATASETS_HOME for ir_datasets ids "
                   "(default <repo>/.cache/ir_datasets)")
    p.add_argument("--online", action="store_true",
                   help="let ir_datasets download what the mirror lacks (default: offline)")


def _running(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--out", default=str(cli.DEFAULT_OUT),
                   help="folder for <dataset>.json and runs/<dataset>/<stage>.trec")
    p.add_argument("--cache", default=str(cli.DEFAULT_CACHE),
                   help="folder for materialised documents and imported collections")
    p.add_argument("--fresh", action="store_true",
                   help="rewrite and re-index instead of reusing the cache")
    p.add_argument("--stages", nargs="+", metavar="STAGE",
                   help=f"stages to run (default: the dataset's). {stages.describe()}")
    p.add_argument("--join", help="title/text join: flat or text (default: the dataset's)")
    p.add_argument("--expected-dir", default=str(cli.EXPECTED_DIR),
                   help="gate each dataset on <dir>/<dataset>.json when it exists")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--resamples", type=int, default=10_000)
    p.add_argument("--permutations", type=int, default=10_000)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m evals.external", description=cli.__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one dataset and write its report")
    run.add_argument("dataset", help=f"beir:DIR[@split], irds:ID or one of: "
                     f"{', '.join(registry.DATASETS)}")
    _running(run)
    run.add_argument("--run-file", action="append", metavar="NAME=PATH",
                     help="also score this TREC run as stage NAME (repeatable)")
    run.add_argument("--html", help="also write the HTML report here")
    run.add_argument("--expected", help="gate on this expected-scores file instead")
    run.set_defaults(handler=cli.cmd_run)
    check = sub.add_parser("check", help="run every checked dataset; exit 8 on any failure")
    _running(check)
    check.add_argument("--datasets", nargs="+", metavar="DATASET",
                       help="datasets to check (default: every one marked checked)")
    check.add_argument("--html-dir", help="also write external-<dataset>.html here")
    check.set_defaults(handler=cli.cmd_check)
    lister = sub.add_parser("list", help="list datasets, published references and stages")
    lister.set_defaults(handler=cli.cmd_list)
    imp = sub.add_parser("import", help="import a dataset as a groundkit collection")
    imp.add_argument("dataset", help="beir:DIR[@split], irds:ID or a dataset name")
    imp.add_argument("--collection", "-c", required=True, help="collection name")
    imp.add_argument("--dir", required=True, help="folder to write the documents into")
    imp.add_argument("--home", help="groundkit home (default $GROUNDKIT_HOME, ...)")
    imp.add_argument("--join", help="title/text join: flat or text (default: the dataset's)")
    _common(imp)
    imp.set_defaults(handler=cli.cmd_import)
    exp = sub.add_parser("export", help="write a dataset, imported folder or golden as BEIR")
    exp.add_argument("dataset", nargs="?", help="a dataset name, beir:DIR or irds:ID")
    exp.add_argument("--out", required=True, help="the BEIR directory to write")
    exp.add_argument("--from-dir", help="a folder written by import (reads the files back)")
    exp.add_argument("--golden", help="a golden version: chunks become BEIR documents")
    exp.add_argument("--chunk-size", type=int, default=1000, help="golden chunk target")
    exp.add_argument("--chunk-overlap", type=int, default=150, help="golden chunk overlap")
    _common(exp)
    exp.set_defaults(handler=cli.cmd_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
