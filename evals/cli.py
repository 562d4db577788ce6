"""The harness's subcommands; :mod:`evals.__main__` parses, ``grk eval`` is the face of ``run``.

Exit codes: 0 success; 2 bad arguments; 8 a gate, published reference or
differential check failed; otherwise the ``exit_code`` of the
:class:`~groundkit.errors.GroundkitError` raised (1 problems found by ``lint``,
3 unknown collection, 4 integrity or checksum failure, 5 missing optional
dependency).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from evals import forked
from evals import stages as registry
from evals.external.checksums import REPO as REPO
from evals.harness import Suite, evaluate
from evals.score import gates
from evals.summary import summary_table
from groundkit.errors import UsageError

DEFAULT_GOLDEN = REPO / "golden" / "v4"
DEFAULT_OUT = REPO / "evals" / "results"
DEFAULT_CACHE = REPO / ".cache"
"""``python -m evals`` (the developer's harness, run from the checkout by ``make eval``) keeps
its reports and caches in the checkout; ``grk eval`` (a user's face) never writes there."""
USER_DEFAULTS = {"out": "grk-eval", "cache": None}
"""``grk eval``'s defaults: the report under ``./grk-eval/`` where the user stands, the
cache (embeddings, collections) in ``cache/`` beside the report unless ``--cache`` says."""
EXPECTED_DIR = REPO / "evals" / "expected"
GOLDEN_MEASURES = ("Success@1", "Success@10", "nDCG@10", "R@100")


def log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- run -----------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    """Run one suite: a golden version, an external dataset, or a collection and questions."""
    t = time.perf_counter()
    if getattr(args, "rerank_model", None):
        os.environ[registry.RERANK_MODEL] = args.rerank_model
    extra = [s for spec in args.embed_model or () for s in registry.embed_model_stages(spec)]
    extra += [registry.run_file_stage(s) for s in args.run_file or ()]
    with ExitStack() as stack:
        suite, defaults, report_path, runs_dir, settings = _suite(args, stack)
        from evals.golden.runfile_stage import companions

        named = [registry.STAGES[n] for n in args.stages or [s.name for s in defaults]
                 if n in registry.STAGES]
        extra += companions(suite, [*extra, *named])  # bm25@file beside a file-level run
        known = {**registry.STAGES, **{s.name: s for s in (*defaults, *extra)}}
        if args.dense:
            dense = [s for s in extra if not s.lexical] or [
                s for s in defaults if not s.lexical and s.engine == "groundkit"]
            defaults, extra = [registry.STAGES[registry.BASELINE], *dense], []
        names = [*(args.stages or [s.name for s in defaults]), *(s.name for s in extra)]
        chosen = registry.resolve(names, known)
        built = evaluate(suite, chosen, settings=settings, runs_dir=runs_dir, log=log,
                         serial=getattr(args, "serial", False), spread=_spread(args, stack))
        if args.dataset is None and not (args.collection or args.questions):
            _add_twins(built, suite, chosen, settings, args)
    from evals import report as rpt

    if args.html:
        from evals.report.html import write_html

        html = forked.beside(lambda: write_html(built, args.html,
                                                views_home=_views_home(args, suite)),
                             "html report")
    rpt.write_canonical(built, report_path)  # while the HTML is rendered in a child
    measures = GOLDEN_MEASURES if args.dataset is None else None
    print(summary_table(built, measures))
    print(f"\nreport: {report_path}")
    if args.html:
        html()
        print(f"html:   {args.html}")
    print(f"wall time: {time.perf_counter() - t:.1f}s")
    failures = _checks(built)
    expected = args.expected or (_expected_for(args.dataset, Path(args.expected_dir))
                                 if args.dataset else None)
    if expected:
        failures += _gate(built, expected)
    return _finish(failures)


def _views_home(args: argparse.Namespace, suite: Any) -> Path | None:
    """Where the stages' collections stay after the run, named by the HTML report's
    ``grk open`` commands: a golden suite's kept home; ``None`` for a ``--fresh`` run (a
    temporary home) and for the other suites."""
    if args.fresh or args.dataset is not None or args.collection or args.questions:
        return None
    home: Path | None = getattr(suite, "home", None)
    return home


def _suite(args: argparse.Namespace, stack: ExitStack) -> tuple[Suite, list[registry.Stage],
                                                                Path, Path, Any]:
    """The suite ``args`` name, its default stages, where its report and runs go, settings."""
    from evals import report as rpt

    out = Path(args.out)
    cache = _cache(args)
    common = {"seed": args.seed, "resamples": args.resamples, "permutations": args.permutations}
    if args.dataset is not None:
        if args.collection or args.questions or args.golden:
            raise UsageError("--dataset runs an external collection; it takes no --golden, "
                             "--collection or --questions")
        from evals.external.registry import resolve
        from evals.external.suite import MEASURES

        spec = resolve(args.dataset)
        suite = stack.enter_context(_external(spec, args, cache))
        settings = rpt.Settings(measures=MEASURES, hits_shown=3, **common)
        return (suite, [registry.STAGES[n] for n in spec.stages], out / f"{spec.name}.json",
                out / "runs" / spec.name, settings)
    settings = rpt.Settings(hits_shown=args.hits_shown, **common)
    home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="groundkit-eval-")))
    embeddings = cache / "embeddings"
    if args.collection or args.questions:
        if not (args.collection and args.questions):
            raise UsageError("bring your own questions with both --collection NAME and "
                             "--questions FILE")
        if args.golden:
            raise UsageError("--golden and --collection/--questions are two different suites")
        from evals.golden.questions import questions_suite

        suite = questions_suite(args.collection, args.questions, home, home=args.home,
                                embedding_cache=embeddings, log=log)
        defaults = [registry.STAGES[registry.BASELINE], registry.STAGES[registry.COLLAPSE],
                    *_collection_dense(suite)]
    else:
        from evals.golden.suite import golden_suite

        # the stages' collections persist in the cache: a warm run re-indexes incrementally
        # (nothing changed: nothing rebuilt); --fresh indexes all of them anew
        kept = home if args.fresh else cache / "golden"
        suite = golden_suite(args.golden or DEFAULT_GOLDEN, kept, embedding_cache=embeddings)
        defaults = [registry.STAGES[n] for n in registry.golden_defaults()]
    stack.callback(suite.close)
    return suite, defaults, out / "latest.json", out / "runs", settings


def _cache(args: argparse.Namespace) -> Path:
    """``--cache``, else ``cache/`` beside the report (``grk eval``'s default)."""
    return Path(args.cache) if args.cache else Path(args.out) / "cache"


def _spread(args: argparse.Namespace, stack: ExitStack) -> Any:
    """Where ``--ray`` runs the stages (:mod:`evals.on_ray`), or ``None``: here and forked."""
    address = getattr(args, "ray", None)
    if address is None:
        return None
    if getattr(args, "serial", False):
        raise UsageError("--serial ranks every stage in this process; --ray spreads them: "
                         "choose one")
    from evals import on_ray

    return stack.enter_context(on_ray.connected(address or None))


def _add_twins(built: dict[str, Any], suite: Any, chosen: list[registry.Stage],
               settings: Any, args: argparse.Namespace) -> None:
    """A golden version with HTML twins (v3 on) gains the two-formats block."""
    from evals.golden import twins

    if not twins.pairs(suite.golden) or getattr(args, "no_twins", False):
        return
    home = _cache(args) / "golden" if not args.fresh else suite.home
    built["twins"] = twins.measure(suite.golden, chosen, home=home,
                                   provenance=suite.provenance(), settings=settings,
                                   embedding_cache=suite.embedding_cache, log=log)


def _collection_dense(suite: Any) -> list[registry.Stage]:
    """The dense and hybrid stages of the collection's own embedding model, if it has one."""
    recorded = suite.base.extra.get("embedding")
    return registry.dense_stages(recorded["spec"], golden=False) if recorded else []


@contextmanager
def _external(spec: Any, args: argparse.Namespace, cache: Path) -> Iterator[Suite]:
    from evals.external.prepare import prepare
    from evals.external.registry import Sources, load_checked
    from evals.external.suite import ExternalSuite

    dataset = load_checked(spec, Sources(data=args.data,
                                         irds_cache=args.irds_cache or cache / "ir_datasets",
                                         offline=not args.online))
    with prepare(dataset, join=args.join or spec.join, cache=cache / "external",
                 data=args.data, reuse=not args.fresh, log=log) as prep:
        yield ExternalSuite(spec, prep, cache / "external")


def _checks(report: dict[str, Any]) -> list[str]:
    name = report["config"].get("dataset", {}).get("name", "report")
    return [f"{name}: {c['kind']} {c['stage']} {c['measure']} = {c['observed']} vs "
            f"{c['expected']} ± {c['tolerance']}"
            for c in report["config"].get("checks", []) if not c["passed"]]


def _expected_for(dataset: str, directory: Path) -> str | None:
    """``<directory>/<dataset>.json`` when it exists (a dataset without one is not gated)."""
    from evals.external.registry import resolve

    path = directory / f"{resolve(dataset).name}.json"
    if not path.is_file():
        print(f"gates: none ({path} does not exist)")
        return None
    return str(path)


def _gate(report: dict[str, Any], expected_path: str) -> list[str]:
    expected = gates.load(expected_path)
    failures = gates.check(report, expected)
    if not failures:
        print(f"gates: passed ({expected_path}: {', '.join(gates.checked_stages(expected))})")
    return failures


def _finish(failures: list[str]) -> int:
    if failures:
        print("\nCHECKS FAILED:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return gates.GateFailure.exit_code
    return 0


# -- check, list ---------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> int:
    """Run every checked external dataset against its gates and published references."""
    from evals.external.registry import DATASETS

    names = args.datasets or [n for n, s in DATASETS.items() if s.gated]
    failures: list[str] = []
    t = time.perf_counter()
    for name in names:
        html = str(Path(args.html_dir) / f"external-{name}.html") if args.html_dir else None
        run = argparse.Namespace(**{**vars(args), "dataset": name, "html": html,
                                    "expected": None, "golden": None, "collection": None,
                                    "questions": None, "stages": None, "embed_model": None,
                                    "run_file": None, "hits_shown": 3, "dense": False})
        if cmd_run(run) != 0:
            failures.append(name)
        print()
    print(f"checked {', '.join(names)} in {time.perf_counter() - t:.1f}s: "
          f"{'all passed' if not failures else 'failed: ' + ', '.join(failures)}")
    return gates.GateFailure.exit_code if failures else 0


def cmd_list(args: argparse.Namespace) -> int:
    from evals.external.registry import DATASETS

    print("stages (golden runs the ones marked *):")
    for stage in registry.STAGES.values():
        mark = "*" if stage.golden else " "
        print(f"  {mark} {stage.name:<17} {stage.describe('the suite`s units')}")
    print("datasets:")
    for spec in DATASETS.values():
        gated = " [checked]" if spec.gated else ""
        print(f"  {spec.name:<10} {spec.description}{gated}")
        for ref in spec.references:
            print(f"  {'':<10}   published {ref.measure} {ref.value} for stage {ref.stage}")
    return 0


# -- import, export ------------------------------------------------------------------


def cmd_shift(args: argparse.Namespace) -> int:
    """Corpus shift: the BM25 gate calibrated on golden, deciding questions on SciFact
    (its own claims, and Cranfield's and CISI's off-topic queries), against a gate
    calibrated on SciFact's own off-topic queries. Writes the JSON to --out."""
    from evals.external import shift
    from evals.external.registry import Sources
    from evals.report.files import canonical

    t = time.perf_counter()
    sources = Sources(data=args.data, irds_cache=args.irds_cache, offline=not args.online)
    block = shift.measure(args.golden, sources, Path(args.cache), resplits=args.resplits,
                          log=log)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(canonical(block), indent=2, sort_keys=True) + "\n",
                   encoding="utf-8")
    print("\n".join(shift.summary(block)))
    print(f"\nwrote {out} ({time.perf_counter() - t:.1f}s)")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    """Import an external dataset as a groundkit collection (one file per document)."""
    from evals.external.materialise import import_collection, materialise
    from evals.external.registry import Sources, load_checked, resolve

    spec = resolve(args.dataset)
    dataset = load_checked(spec, Sources(data=args.data, irds_cache=args.irds_cache,
                                         offline=not args.online))
    m = materialise(dataset, args.dir, join=args.join or spec.join)
    report = import_collection(m, args.collection, home=args.home, reuse=False)
    print(f"materialised {len(m.files)} documents in {m.docs_dir}")
    if report is not None:
        print(f"indexed collection {args.collection!r}: {report.chunks} chunks")
    print(f"judgments: {m.directory / 'qrels' / (m.split + '.tsv')} (dataset doc ids; "
          f"file -> doc id map in {m.directory / 'groundkit-external.json'})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """Write a dataset, an imported folder or a golden version as BEIR; or a report as HTML."""
    if args.report:
        if not args.html:
            raise UsageError("export --report REPORT.json needs --html OUT.html")
        from evals.report import load_json
        from evals.report.html import write_html

        write_html(load_json(args.report), args.html)
        print(f"wrote {args.html}")
        return 0
    if not args.out:
        raise UsageError("export needs --out DIR (BEIR) or --report R.json --html OUT.html")
    from evals.external.beir import write_beir
    from evals.external.registry import Sources, load_checked, resolve

    if args.golden:
        from evals.external.export import golden_to_beir
        from groundkit.text.chunking import ChunkerConfig

        dataset = golden_to_beir(args.golden, args.out, chunker=ChunkerConfig(
            target=args.chunk_size, overlap=args.chunk_overlap))
    elif args.from_dir:
        from evals.external.materialise import read_back

        dataset = read_back(args.from_dir)
        write_beir(dataset, args.out)
    elif args.dataset:
        dataset = load_checked(resolve(args.dataset), Sources(
            data=args.data, irds_cache=args.irds_cache, offline=not args.online))
        write_beir(dataset, args.out)
    else:
        raise UsageError("export needs a DATASET, --from-dir DIR, --golden DIR or --report")
    counts = dataset.counts()
    print(f"wrote {args.out}: {counts['docs']} docs, {counts['queries']} queries, "
          f"{counts['qrels']} judgments ({dataset.split})")
    return 0


# -- expect, compare, lint -----------------------------------------------------------


def cmd_expect(args: argparse.Namespace) -> int:
    """Pin a report's values as the expected ones (a deliberate commit)."""
    from evals import report as rpt

    built = rpt.load_json(args.report)
    expected = gates.expected_from(built, tolerance=args.tolerance, source=args.source)
    gates.write(args.out, expected)
    print(f"wrote {args.out}: {len(expected['stages'])} stages; commit it deliberately")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Compare report B against report A, paired by question id."""
    from evals.report.compare import compare_runs, format_table

    outcome = compare_runs(args.a, args.b, pairs=args.pair, measures=args.measure,
                           resamples=args.resamples, permutations=args.permutations,
                           confidence=args.confidence, seed=args.seed, domains=args.domain)
    if args.json:
        sys.stdout.write(json.dumps(outcome, sort_keys=True, indent=2, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(format_table(outcome))
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    """Lint a golden version (or write its manifest first); one line per problem."""
    from evals.golden.corpus import MANIFEST_FILE, lint_golden, write_manifest

    if args.write_manifest:
        counts = write_manifest(args.path, force=args.force)["counts"]
        print(f"wrote {args.path / MANIFEST_FILE}: {json.dumps(counts)}", file=sys.stderr)
    elif args.force:
        raise UsageError("--force only applies with --write-manifest")
    problems = lint_golden(args.path, coverage=not args.no_coverage)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in {args.path}" if problems else f"ok: {args.path} is clean",
          file=sys.stderr)
    return 1 if problems else 0
