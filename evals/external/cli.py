"""``python -m evals.external``: external benchmarks from the command line.

Commands: ``run`` one dataset (optionally beside external TREC runs), ``check``
every gated dataset against its expected scores and published references,
``list`` datasets and stages, ``import`` a dataset as a groundkit collection,
``export`` a dataset, an imported folder or a golden version to BEIR.

Exit codes: 0 success; 2 bad arguments; 8 a gate, published reference or
differential check failed; otherwise the ``exit_code`` of the
:class:`~groundkit.errors.GroundkitError` raised (3 unknown collection,
4 integrity / checksum failure, 5 missing optional dependency).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evals import gates
from evals.external import registry, stages
from evals.external.checksums import REPO
from groundkit.errors import UsageError

DEFAULT_OUT = REPO / "evals" / "results" / "external"
DEFAULT_CACHE = REPO / ".cache" / "external"
EXPECTED_DIR = REPO / "evals" / "expected"


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _sources(args: argparse.Namespace) -> registry.Sources:
    return registry.Sources(data=args.data, irds_cache=args.irds_cache, offline=not args.online)


def run_one(spec: registry.DatasetSpec, args: argparse.Namespace,
            extra: Sequence[stages.ExternalStage] = (), html: str | None = None,
            ) -> tuple[dict[str, Any], list[str]]:
    """Run one dataset, write its report (and HTML); returns it and its failed checks."""
    from evals import report as rpt
    from evals.external.prepare import prepare
    from evals.external.runner import evaluate, summary

    t = time.perf_counter()
    dataset = registry.load_checked(spec, _sources(args))
    chosen = stages.resolve(args.stages or list(spec.stages)) + list(extra)
    settings = rpt.Settings(measures=_measures(), seed=args.seed, resamples=args.resamples,
                            permutations=args.permutations, hits_shown=3)
    out = Path(args.out)
    with prepare(dataset, join=args.join or spec.join, cache=Path(args.cache), data=args.data,
                 reuse=not args.fresh, log=_log) as prep:
        built = evaluate(spec, prep, chosen, settings=settings,
                         runs_dir=out / "runs" / spec.name, log=_log)
    rpt.write_json(built, out / f"{spec.name}.json")
    print(summary(built))
    print(f"report: {out / f'{spec.name}.json'}")
    if html:
        from evals.html import write_html

        write_html(built, html)
        print(f"html:   {html}")
    failures = [f"{spec.name}: {c['kind']} {c['stage']} {c['measure']} = {c['observed']} "
                f"vs {c['expected']} ± {c['tolerance']}"
                for c in built["config"]["checks"] if not c["passed"]]
    expected = Path(args.expected_dir) / f"{spec.name}.json" if args.expected_dir else None
    if getattr(args, "expected", None):
        expected = Path(args.expected)
    if expected is not None and expected.is_file():
        failures += [f"{spec.name}: {line}" for line in gates.check(built, gates.load(expected))]
        print(f"gates:  {expected}")
    elif expected is not None:
        print(f"gates:  none ({expected} does not exist)")
    print(f"wall time: {time.perf_counter() - t:.1f}s\n")
    return built, failures


def _measures() -> tuple[str, ...]:
    from evals.external.runner import MEASURES

    return MEASURES


def _finish(failures: list[str]) -> int:
    if failures:
        print("CHECKS FAILED:", file=sys.stderr)
        for line in failures:
            print(f"  {line}", file=sys.stderr)
        return gates.GateFailure.exit_code
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    spec = registry.resolve(args.dataset)
    extra = [stages.run_file_stage(s) for s in args.run_file or []]
    _, failures = run_one(spec, args, extra, html=args.html)
    return _finish(failures)


def cmd_check(args: argparse.Namespace) -> int:
    names = args.datasets or [n for n, s in registry.DATASETS.items() if s.gated]
    failures: list[str] = []
    t = time.perf_counter()
    for name in names:
        html = str(Path(args.html_dir) / f"external-{name}.html") if args.html_dir else None
        _, failed = run_one(registry.resolve(name), args, html=html)
        failures += failed
    print(f"checked {', '.join(names)} in {time.perf_counter() - t:.1f}s: "
          f"{'all passed' if not failures else f'{len(failures)} failure(s)'}")
    return _finish(failures)


def cmd_list(args: argparse.Namespace) -> int:
    print("datasets:")
    for spec in registry.DATASETS.values():
        gated = " [checked]" if spec.gated else ""
        print(f"  {spec.name:<10} {spec.description}{gated}")
        for ref in spec.references:
            print(f"  {'':<10}   published {ref.measure} {ref.value} for stage {ref.stage}")
    print("stages:")
    for stage in stages.STAGES.values():
        print(f"  {stage.name:<17} {stage.description}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from evals.external.materialise import import_collection, materialise

    spec = registry.resolve(args.dataset)
    dataset = registry.load_checked(spec, _sources(args))
    m = materialise(dataset, args.dir, join=args.join or spec.join)
    report = import_collection(m, args.collection, home=args.home, reuse=False)
    print(f"materialised {len(m.files)} documents in {m.docs_dir}")
    if report is not None:
        print(f"indexed collection {args.collection!r}: {report.chunks} chunks")
    print(f"judgments: {m.directory / 'qrels' / (m.split + '.tsv')} (dataset doc ids; "
          f"file -> doc id map in {m.directory / 'groundkit-external.json'})")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from evals.external.beir import write_beir

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
        dataset = registry.load_checked(registry.resolve(args.dataset), _sources(args))
        write_beir(dataset, args.out)
    else:
        raise UsageError("export needs a DATASET, --from-dir DIR or --golden DIR")
    counts = dataset.counts()
    print(f"wrote {args.out}: {counts['docs']} docs, {counts['queries']} queries, "
          f"{counts['qrels']} judgments ({dataset.split})")
    return 0
