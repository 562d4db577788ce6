"""The harness: one loop that runs stages over a suite and builds one report.

A *suite* is a set of questions with their judgments and provenance: the golden
corpus (:mod:`evals.golden.suite`, quote-overlap judgments over chunks), a
person's own collection and questions (the same, over an existing collection),
or an external test collection (:mod:`evals.external.suite`, document qrels, a
document scoring its best unit). For each stage the suite opens a
:class:`StageRun` (its units indexed, its retriever built); the loop asks it
every question, writes the TREC run, and hands all stages to
:func:`evals.report.build_report`. Everything that can be checked before
retrieval is checked first (:func:`preflight`), so a bad experiment fails in
one clear error before any compute is spent.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib.util
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from evals import agreement, engines, forked, mcp_stage, trec
from evals import report as rpt
from evals.mcp_stage import McpRun
from evals.score import metrics
from evals.stages import BASELINE, Stage
from groundkit.errors import MissingDependencyError, UsageError

Log = Callable[[str], None]
MCP_WORKERS = 2
"""MCP stages running at once in their worker (each mostly waits for its server)."""
SWITCH_S = 0.0005
"""The GIL switch interval while MCP stages run (default 0.005)."""
Ran = tuple[rpt.StageResult, rpt.Scored, list[float] | None]
"""A stage's result, it checked and scored (:func:`evals.report.score_stage`, in the process
that ranked it), and an MCP stage's call latencies (``None`` for a direct stage)."""
Extras = dict[str, Any]
"""Report blocks a suite adds that need no stage's result (:meth:`Suite.extras`)."""
Portable = dict[str, tuple[rpt.StageResult, dict[str, list[tuple[Any, ...]]], rpt.Scored,
                           list[float] | None]]
"""Stages' results on their way out of a worker: each without its hits, then the hits the
parent still reads as plain tuples, its scores and its latencies (:func:`_portable`)."""
Spread = Callable[..., tuple[dict[str, Ran], Extras]]
"""Where stages run instead of here and in forked workers (``evaluate(spread=)``), called as
``spread(suite, baseline, lexical, mcp, embedded, settings, runs_dir, log)`` like
:func:`_run_forked` (:func:`evals.on_ray.spread`: Ray tasks)."""


class StageRun(Protocol):
    """One stage opened on a suite: ranks questions into the report's hit records.

    A stage that ranks less deep than the suite asks, whatever the question, declares it
    as ``depth`` (an int: an MCP stage's ``top_k``, a run file's deepest list; a stage
    without the attribute, or with ``None``, ranks the suite's depth). A measure that reads
    deeper is n/a for it, not a loss (:mod:`evals.report.reach`; :func:`declared_depth`).
    """

    @property
    def description(self) -> str: ...

    @property
    def config(self) -> Mapping[str, Any]: ...

    @property
    def qrels(self) -> metrics.Qrels | None:
        """This stage's judgments when its units differ from the suite's (else ``None``)."""
        ...

    @property
    def gate_mode(self) -> str | None:
        """The groundkit mode whose gate measures this stage (``None``: not measured)."""
        ...

    @property
    def signals(self) -> Mapping[str, Mapping[str, float]]:
        """Each ranked question's confidence signals in :attr:`gate_mode`."""
        ...

    def prime(self, queries: Sequence[str]) -> None:
        """Prepare for these queries (embed them in one batch, say)."""
        ...

    def rank(self, question: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
        """The question's hits, best first, at most ``depth``; the top ``shown`` verified."""
        ...


class Suite(Protocol):
    @property
    def label(self) -> str: ...

    @property
    def depth(self) -> int: ...

    @property
    def questions(self) -> Sequence[rpt.Question]: ...

    @property
    def qrels(self) -> metrics.Qrels: ...

    def unavailable(self, stage: Stage) -> str | None:
        """Why ``stage`` cannot run on this suite (a resource it needs is missing), or None."""
        ...

    def open(self, stage: Stage, log: Log) -> StageRun: ...

    def provenance(self) -> rpt.Provenance: ...

    def config(self, stages: Sequence[Stage]) -> dict[str, Any]: ...

    @property
    def forks(self) -> bool:
        """Whether stages may rank in forked workers (each opens its own collections there)."""
        ...

    def after_fork(self) -> None:
        """In a forked worker, before it ranks: stop using what the parent opened (each
        SQLite connection stays in the process that opened it)."""
        ...

    def extras(self) -> Extras:
        """Report blocks that need no stage's result (golden: the answers), computed in a
        worker beside the stages; opens what it reads itself."""
        ...

    def finish(self, report: dict[str, Any], skipped: Mapping[str, str],
               extras: Extras) -> dict[str, Any]:
        """Add what this kind of suite adds to a built report (checks, skipped stages)."""
        ...


def preflight(stages: Sequence[Stage]) -> None:
    """Fail before any retrieval when a stage needs a module that is not installed, or an
    MCP stage's twin is not among the stages."""
    if not stages or stages[0].name != BASELINE:
        raise ValueError(f"the baseline stage {BASELINE!r} must run first")
    names = {s.name for s in stages}
    for stage in stages:
        if stage.twin is not None and stage.twin not in names:
            raise UsageError(f"stage {stage.name!r} is compared with {stage.twin!r}: "
                             f"add {stage.twin} to the stages")
    for stage in stages:
        for module in stage.needs:
            if importlib.util.find_spec(module) is None:
                extra = "ollama" if module == "ollama" else "dense"
                raise MissingDependencyError(module, extra, f"stage {stage.name!r}")


def evaluate(suite: Suite, stages: Sequence[Stage], *, settings: rpt.Settings,
             runs_dir: Path | None, log: Log,
             run_block: Mapping[str, Any] | None = None, serial: bool = False,
             spread: Spread | None = None) -> dict[str, Any]:
    """Run every stage over every question of ``suite``; the report dict, canonical
    already (write it with :func:`evals.report.write_canonical`).

    Stage groups run side by side in forked workers unless ``serial`` (:func:`_run_all`),
    or where ``spread`` runs them (on Ray: :mod:`evals.on_ray`).
    """
    preflight(stages)
    skipped: dict[str, str] = {}
    runnable = []
    for stage in stages:
        reason = engines.unavailable(stage) or suite.unavailable(stage)
        if reason is not None:
            skipped[stage.name] = reason
            log(f"{suite.label}: skipped {stage.name}: {reason}")
        else:
            runnable.append(stage)
    with forked.sharing_cores(not serial and suite.forks and forked.available()):
        done, extras = _run_all(suite, runnable, settings, runs_dir, log, serial=serial,
                                spread=spread)
        results = [done[s.name][0] for s in runnable]
        built = rpt.build_report(questions=suite.questions, qrels=suite.qrels, stages=results,
                                 baseline=BASELINE, provenance=suite.provenance(),
                                 config=suite.config(stages), settings=settings,
                                 run=run_block,
                                 scored={s.name: done[s.name][1] for s in runnable})
    latencies = {s.name: mcp_stage.latency(done[s.name][2] or []) for s in runnable
                 if done[s.name][2] is not None}
    twins = {s.name: s.twin for s in stages if s.twin is not None and s.name not in skipped}
    if twins:  # what is added to the built report is made canonical as it is added
        built["mcp"] = rpt.canonical(mcp_stage.compare(results, twins))
        built["config"].setdefault("checks", []).extend(
            rpt.canonical(mcp_stage.checks(built["mcp"])))
        # timings vary: the run block holds them
        built["run"]["mcp_latency_ms"] = rpt.canonical(latencies)
    peers = {s.name: s.agrees_with for s in stages
             if s.agrees_with is not None and s.name not in skipped}
    if peers:
        deltas = {c["stage"]: c["delta"] for c in built["comparisons"]
                  if c["measure"] == "nDCG@10"}
        built["agreement"] = rpt.canonical(agreement.with_targets(
            agreement.compare(results, peers, suite.questions), deltas))
    return suite.finish(built, skipped, rpt.canonical(extras))


def _run_all(suite: Suite, stages: Sequence[Stage], settings: rpt.Settings,
             runs_dir: Path | None, log: Log, *, serial: bool,
             spread: Spread | None = None) -> tuple[dict[str, Ran], Extras]:
    """Every stage's result, and the suite's extra report blocks (:meth:`Suite.extras`).

    Three processes share the cores. This one ranks the stages that embed (the model
    and its thread pools are never forked); a forked worker runs the MCP stages, two at
    a time in threads, their collections indexed here first; the lexical stages and the
    extras are tasks that this process and both workers take from one queue
    (:class:`forked.Tasks`) as each becomes free. ``serial`` (or a suite that does not
    fork, or a platform without ``fork``) runs everything here, one after the other.
    Results do not depend on where a stage ran.
    """
    mcp = [s for s in stages if s.twin is not None]
    lexical = [s for s in stages if s.twin is None and s.lexical]
    embedded = [s for s in stages if s.twin is None and not s.lexical]
    if spread is not None:
        return spread(suite, stages[0], lexical, mcp, embedded, settings, runs_dir, log)
    if serial or not suite.forks or not forked.available():
        done = _run_group(suite, [*lexical, *embedded], settings, runs_dir, log)
        done.update(_run_mcp(suite, [(s, suite.open(s, log)) for s in mcp], settings,
                             runs_dir, log))
        return done, suite.extras()
    return _run_forked(suite, stages[0], lexical, mcp, embedded, settings, runs_dir, log)


def _run_forked(suite: Suite, baseline: Stage, lexical: Sequence[Stage], mcp: Sequence[Stage],
                embedded: Sequence[Stage], settings: rpt.Settings, runs_dir: Path | None,
                log: Log) -> tuple[dict[str, Ran], Extras]:
    """:func:`_run_all` with the two workers."""
    suite.open(baseline, log)  # the baseline's collection, indexed once before the workers
    opened = [(s, suite.open(s, log)) for s in mcp]
    tasks = forked.Tasks(1 + len(lexical))  # the extras first (the longest), then the stages
    compared = any(s.agrees_with is not None for s in (*lexical, *embedded))

    def take() -> tuple[dict[str, Ran], Extras]:
        ran: dict[str, Ran] = {}
        extras: Extras = {}
        while (task := tasks.take()) is not None:
            if task == 0:
                extras = suite.extras()
            else:
                ran.update(_run_group(suite, [lexical[task - 1]], settings, runs_dir, log))
        return ran, extras

    def in_worker(first: Callable[[], dict[str, Ran]]) -> tuple[Portable, Extras]:
        suite.after_fork()
        ran = first()
        more, extras = take()
        return _portable({**ran, **more}, kept(settings, compared)), extras

    workers = [forked.Forked(lambda: in_worker(dict), "lexical stages")]
    try:
        if opened:
            workers.append(forked.Forked(lambda: in_worker(
                lambda: _run_mcp(suite, opened, settings, runs_dir, log)), "mcp stages"))
        done = _run_group(suite, embedded, settings, runs_dir, log)
        ran, extras = take()
        done.update(ran)
        for worker in workers:
            portable, more = worker.result()
            done.update(_restored(portable))
            extras.update(more)
    finally:
        for worker in workers:
            worker.stop()
        tasks.close()
    return done, extras


def kept(settings: rpt.Settings, compared: bool = False) -> int:
    """How many of each question's hits the parent still reads once a worker has scored the
    stage and written its run: the report's (:func:`evals.report.kept_hits`), the MCP
    stages' comparison with their twins and, when a reference engine is ``compared`` with its
    counterpart, the agreement block's (:mod:`evals.agreement`)."""
    return max(rpt.kept_hits(settings), mcp_stage.MAX_TOP_K,
               agreement.DEPTH if compared else 0)


def _portable(ran: dict[str, Ran], keep: int) -> Portable:
    """Each stage's first ``keep`` hit records a question as plain tuples, which pickle in
    C (a named tuple pickles through a Python call per record; golden v2's run holds over
    a million of them, and the rest were scored and written where they were ranked)."""
    return {name: (dataclasses.replace(result, hits={}),
                   {q: list(map(tuple, hits[:keep])) for q, hits in result.hits.items()},
                   scored, latencies)
            for name, (result, scored, latencies) in ran.items()}


def _restored(portable: Portable) -> dict[str, Ran]:
    """:func:`_portable`'s tuples as hit records again (``tuple.__new__``, as
    ``HitRecord._make`` does, without a Python call per record)."""
    record = functools.partial(tuple.__new__, rpt.HitRecord)
    return {name: (dataclasses.replace(result, hits={q: list(map(record, rows))
                                                     for q, rows in hits.items()}), scored,
                   latencies)
            for name, (result, hits, scored, latencies) in portable.items()}


def _run_group(suite: Suite, stages: Sequence[Stage], settings: rpt.Settings,
               runs_dir: Path | None, log: Log) -> dict[str, Ran]:
    return {s.name: _run_stage(suite.open(s, log), s, suite, settings, runs_dir, log)
            for s in stages}


def _run_mcp(suite: Suite, opened: Sequence[tuple[Stage, StageRun]], settings: rpt.Settings,
             runs_dir: Path | None, log: Log) -> dict[str, Ran]:
    """The MCP stages, :data:`MCP_WORKERS` at a time in threads (each mostly waits for its
    server); the GIL switch interval is shortened meanwhile, and restored however they end."""
    switch = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_S)  # a client thread whose reply came waits less for the GIL
    try:
        with ThreadPoolExecutor(MCP_WORKERS, thread_name_prefix="mcp-stages") as pool:
            futures = {stage.name: pool.submit(_run_stage, run, stage, suite, settings,
                                               runs_dir, log) for stage, run in opened}
            try:
                return {name: future.result() for name, future in futures.items()}
            except BaseException:  # a stage failed, or this worker is being stopped
                for future in futures.values():
                    future.cancel()
                for _, run in opened:  # each server stops: calls in flight fail, stages end
                    with contextlib.suppress(Exception):
                        getattr(run, "close", lambda: None)()
                raise
    finally:
        sys.setswitchinterval(switch)


def _run_stage(run: StageRun, stage: Stage, suite: Suite, settings: rpt.Settings,
               runs_dir: Path | None, log: Log) -> Ran:
    """One opened stage over every question: its result, it checked and scored here (not in
    the report's serial build), and an MCP stage's latencies."""
    t = time.perf_counter()
    try:
        run.prime([q.text for q in suite.questions])
        hits = {q.query_id: run.rank(q, suite.depth, settings.hits_shown)
                for q in suite.questions}
    finally:
        if isinstance(run, McpRun):
            run.close()
        release = getattr(run, "release", None)
        if release is not None:  # what the stage alone holds (a peer's JVM): not collections
            release()
    if runs_dir is not None:
        trec.write_run(runs_dir / f"{stage.name}.trec",
                       {q: [(h.chunk_id, h.score) for h in hs] for q, hs in hits.items()},
                       tag=stage.name)
    log(f"{suite.label}: ran {stage.name} on {len(hits)} questions "
        f"({time.perf_counter() - t:.1f}s)")
    result = rpt.StageResult(name=stage.name, description=run.description, config=run.config,
                             hits=hits, qrels=run.qrels, gate_mode=run.gate_mode,
                             signals=dict(run.signals) if run.gate_mode else None,
                             depth=declared_depth(run, suite.depth))
    scored = rpt.score_stage(result, suite.questions, suite.qrels, settings.measures)
    return result, scored, (run.latencies_ms if isinstance(run, McpRun) else None)


def declared_depth(run: StageRun, suite_depth: int) -> int | None:
    """How deep ``run`` declares it ranks (:class:`StageRun`), when that is less than the
    suite's depth (:attr:`evals.report.StageResult.depth`); else ``None``."""
    depth = getattr(run, "depth", None)
    return int(depth) if depth is not None and depth < suite_depth else None
