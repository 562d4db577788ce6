"""Stages on a Ray cluster: ``python -m evals run --ray [ADDRESS]`` (and ``grk eval --ray``).

What runs where (the forked path's split, :func:`evals.harness._run_forked`, with Ray tasks
for the forked workers):

* **This process** (the driver) opens the baseline's collection (indexed once, before any
  task), opens and runs the MCP stages (their servers are this machine's processes), and
  builds the report from what comes back.
* **A Ray task per stage** (lexical and embedded alike, one CPU each) receives the suite
  pickled once (:func:`shipped`: each opened collection travels as its name and home and is
  opened anew in the task, as a forked worker does in ``after_fork``; caches of retrievers
  built here are left behind), opens its stage and ranks every question with the harness's
  own :func:`evals.harness._run_group` — checked, scored and its TREC run written there —
  and returns :func:`evals.harness._portable`'s plain tuples, its run file's bytes and its
  log lines. The driver writes the runs and restores the results.
* **Blocks of questions**: a lexical stage (BM25 alone: groundkit, bm25s, rank-bm25, Lucene)
  with more than :data:`BLOCK_QUESTIONS` questions ranks in blocks (:func:`blocks`: the
  fewest contiguous blocks of at most that many, in question order). A task opens the stage
  once (indexing its collection when needed) and ships the suite as opened; one task per
  block opens it again and ranks its block; a merge task puts the blocks' hits, signals and
  config together in question order (the blocks must agree on everything else), writes the
  TREC run, checks and scores the stage with the harness's code, and returns what a stage
  task returns. A stage that embeds its queries ranks whole: its query embeddings are made in
  one batch, as the serial run makes them (a batch's padding may move a vector's last bits).
* **A Ray task** computes the suite's extra report blocks (:meth:`Suite.extras`).

So the report is the one a serial run builds: the same code ranks and scores each stage,
wherever it ran. Every node reads the suite's files (the golden corpus, the stages'
collections in the suite's home, the embedding cache) at the same paths: a shared
filesystem, as for ``grk index --ray``. A task whose worker process dies is retried by Ray
(:data:`MAX_RETRIES`).
"""

from __future__ import annotations

import copyreg
import dataclasses
import io
import pickle
import tempfile
from collections import ChainMap
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from evals import harness, trec
from evals import report as rpt
from evals.golden.evidence import EvidenceCache
from evals.stages import Stage
from groundkit.collection import Collection, ray_executor
from groundkit.collection.ray_executor import ClusterError
from groundkit.errors import GroundkitError

MAX_RETRIES = 2
"""Times Ray retries a stage's task whose worker process died."""

BLOCK_QUESTIONS = 2000
"""At most this many questions per block of a lexical stage (:func:`blocks`). Each block
opens the stage anew (its collection, its retriever; a Lucene peer's JVM), so a block must
rank long enough to pay for it: golden v2 (1,211 questions) and SciFact (300) rank whole."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`MissingDependencyError` naming the ``ray`` extra."""
    return ray_executor.import_ray("evaluation on Ray (--ray)")


def blocks(questions: int, size: int) -> list[tuple[int, int]]:
    """``(start, stop)`` of each block of ``questions``: the fewest contiguous blocks of at
    most ``size``, in order, their sizes differing by at most one (one block for none)."""
    count = max(1, -(-questions // max(1, size)))
    return [(questions * i // count, questions * (i + 1) // count) for i in range(count)]


@contextmanager
def connected(address: str | None, block: int | None = None) -> Iterator[harness.Spread]:
    """:func:`spread` on the cluster at ``address`` (``None``: the one ``RAY_ADDRESS`` names or
    one started on this machine, else a new local Ray); this process's own connection when
    it has one. Disconnects afterwards when it connected. ``block``: questions per block of
    a lexical stage (default :data:`BLOCK_QUESTIONS`)."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False,
                 logging_level="warning")
    try:
        yield partial(spread, ray, block=block or BLOCK_QUESTIONS)
    finally:
        if started and ray.is_initialized():
            ray.shutdown()


def _reopened(coll: Collection) -> tuple[Any, tuple[str, Path]]:
    return Collection.open, (coll.name, coll.snapshot.directory.parents[1])  # <home>/collections


def _left_behind(_: EvidenceCache) -> tuple[type[EvidenceCache], tuple[()]]:
    return EvidenceCache, ()


def shipped(suite: harness.Suite) -> bytes:
    """``suite`` pickled for the tasks: opened collections as their name and home (opened anew
    where unpickled), a golden suite's evidence cache empty (its retrievers map this
    process's files; a forked worker forgets them too)."""
    from ray import cloudpickle

    class Pickler(cloudpickle.CloudPickler):  # type: ignore[misc]
        # read when the pickler is made (the C pickler's rule), so a class attribute
        dispatch_table: ClassVar[Any] = ChainMap(  # type: ignore[misc]
            {Collection: _reopened, EvidenceCache: _left_behind},
            getattr(cloudpickle.CloudPickler, "dispatch_table", copyreg.dispatch_table))

    buffer = io.BytesIO()
    made: Any = Pickler
    made(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(suite)
    return buffer.getvalue()


Returned = tuple[harness.Portable, dict[str, bytes], list[str]]
"""A stage task's results (:func:`evals.harness._portable`), its runs' bytes, its log."""


def stage_task(payload: bytes, stage: Stage, settings: rpt.Settings, keep: int,
               runs: bool) -> Returned:
    """One stage, opened on the unpickled suite and ranked as :func:`evals.harness._run_group`
    ranks it: in a Ray task."""
    suite = pickle.loads(payload)
    lines: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="groundkit-eval-runs-") as folder:
            ran = harness._run_group(suite, [stage], settings, Path(folder) if runs else None,
                                     lines.append)
            files = {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir())}
    finally:
        getattr(suite, "close", lambda: None)()
    return harness._portable(ran, keep), files, lines


def open_task(payload: bytes, stage: Stage) -> tuple[bytes, list[str]]:
    """``stage`` opened once (its collection indexed when needed) and the suite shipped as
    opened, so its blocks reopen the collection and index nothing: in a Ray task."""
    suite = pickle.loads(payload)
    lines: list[str] = []
    try:
        _release(suite.open(stage, lines.append))
        return shipped(suite), lines
    finally:
        getattr(suite, "close", lambda: None)()


Block = tuple[rpt.StageResult, dict[str, list[tuple[Any, ...]]]]
"""A block's stage result (its signals and config; no hits) and its hits as plain tuples."""


def block_task(ready: tuple[bytes, list[str]], stage: Stage, settings: rpt.Settings,
               start: int, stop: int) -> Block:
    """Questions ``start:stop`` ranked as :func:`evals.harness._run_stage` ranks them (the
    stage primed with the block's queries): in a Ray task."""
    suite = pickle.loads(ready[0])
    try:
        questions = suite.questions[start:stop]
        run = suite.open(stage, lambda _: None)
        try:
            run.prime([q.text for q in questions])
            hits = {q.query_id: run.rank(q, suite.depth, settings.hits_shown) for q in questions}
        finally:
            _release(run)
        result = rpt.StageResult(
            name=stage.name, description=run.description, config=run.config, hits={},
            qrels=run.qrels, gate_mode=run.gate_mode,
            signals=dict(run.signals) if run.gate_mode else None,
            depth=harness.declared_depth(run, suite.depth))
    finally:
        getattr(suite, "close", lambda: None)()
    return result, {q: list(map(tuple, records)) for q, records in hits.items()}


def merge_task(payload: bytes, stage: Stage, settings: rpt.Settings, keep: int, runs: bool,
               ready: tuple[bytes, list[str]], *parts: Block) -> Returned:
    """A stage's blocks as one stage's results, as :func:`stage_task` returns them: hits,
    signals and config merged in question order, the TREC run written, the stage checked and
    scored with the harness's code: in a Ray task."""
    suite = pickle.loads(payload)
    try:
        result = merged(stage.name, [q.query_id for q in suite.questions], parts)
        files = {}
        if runs:
            with tempfile.TemporaryDirectory(prefix="groundkit-eval-runs-") as folder:
                path = trec.write_run(Path(folder) / f"{stage.name}.trec", {
                    q: [(h.chunk_id, h.score) for h in hs] for q, hs in result.hits.items()},
                    tag=stage.name)
                files[path.name] = path.read_bytes()
        scored = rpt.score_stage(result, suite.questions, suite.qrels, settings.measures)
    finally:
        getattr(suite, "close", lambda: None)()
    lines = [*ready[1], f"{suite.label}: ran {stage.name} on {len(result.hits)} questions "
             f"in {len(parts)} blocks"]
    return harness._portable({stage.name: (result, scored, None)}, keep), files, lines


def merged(name: str, order: Sequence[str], parts: Sequence[Block]) -> rpt.StageResult:
    """The blocks ``parts`` as one stage result, its hits and signals in ``order``; a
    :class:`ClusterError` when the blocks disagree on what a stage is (its description,
    judgments, gate, depth, or a config entry other than one filled question by question)."""
    first = parts[0][0]
    for other, _ in parts[1:]:
        for field in ("description", "qrels", "gate_mode", "depth"):
            if getattr(other, field) != getattr(first, field):
                raise ClusterError(f"the blocks of stage {name!r} disagree on its {field}: "
                                   "its ranking depends on the other questions")
    record = partial(tuple.__new__, rpt.HitRecord)
    rows = ChainMap(*(hits for _, hits in parts))
    signals = ChainMap(*(dict(r.signals) for r, _ in parts if r.signals is not None))
    return dataclasses.replace(
        first, config=_merged_config(name, [r.config for r, _ in parts]),
        hits={q: list(map(record, rows[q])) for q in order},
        signals=None if first.signals is None else {q: signals[q] for q in order if q in signals})


def _merged_config(name: str, configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The blocks' configs as one: equal entries as they are, a mapping filled as questions
    rank (Lucene's ``query_analysis``) as the union of the blocks' in block order."""
    out = dict(configs[0])
    for config in configs[1:]:
        if config.keys() != out.keys():
            raise ClusterError(f"the blocks of stage {name!r} disagree on its config's keys")
        for key, value in config.items():
            mine = out[key]
            if value == mine:
                continue
            if not (isinstance(mine, Mapping) and isinstance(value, Mapping)) or any(
                    mine[k] != value[k] for k in mine.keys() & value.keys()):
                raise ClusterError(f"the blocks of stage {name!r} disagree on its config "
                                   f"{key!r}: its ranking depends on the other questions")
            out[key] = {**mine, **value}
    return out


def _release(run: harness.StageRun) -> None:
    """What :func:`evals.harness._run_stage` releases once a stage has ranked."""
    release = getattr(run, "release", None)
    if release is not None:
        release()


def extras_task(payload: bytes) -> harness.Extras:
    """The suite's extra report blocks (:meth:`Suite.extras`): in a Ray task."""
    suite = pickle.loads(payload)
    try:
        extras: harness.Extras = suite.extras()
        return extras
    finally:
        getattr(suite, "close", lambda: None)()


def spread(ray: Any, suite: harness.Suite, baseline: Stage, lexical: Sequence[Stage],
           mcp: Sequence[Stage], embedded: Sequence[Stage], settings: rpt.Settings,
           runs_dir: Path | None, log: harness.Log, *, block: int = BLOCK_QUESTIONS,
           ) -> tuple[dict[str, harness.Ran], harness.Extras]:
    """:func:`evals.harness._run_all` with Ray tasks (see the module docstring)."""
    suite.open(baseline, log)  # the baseline's collection, indexed once before the tasks
    opened = [(s, suite.open(s, log)) for s in mcp]
    compared = any(s.agrees_with is not None for s in (*lexical, *embedded))
    keep = harness.kept(settings, compared)
    payload = ray.put(shipped(suite))
    options = {"num_cpus": 1, "max_retries": MAX_RETRIES}
    extras = ray.remote(**options)(extras_task).remote(payload)  # the longest, first
    task = ray.remote(**options)(stage_task)
    runs = runs_dir is not None
    ranges = blocks(len(suite.questions), block)
    refs = []
    for s in (*lexical, *embedded):
        if not s.lexical or len(ranges) == 1:
            refs.append((s.name, task.remote(payload, s, settings, keep, runs)))
            continue
        ready = ray.remote(**options)(open_task).remote(payload, s)
        parts = [ray.remote(**options)(block_task).remote(ready, s, settings, start, stop)
                 for start, stop in ranges]
        refs.append((s.name, ray.remote(**options)(merge_task).remote(
            payload, s, settings, keep, runs, ready, *parts)))
    done = harness._run_mcp(suite, opened, settings, runs_dir, log) if opened else {}
    for name, ref in refs:
        portable, files, lines = _get(ray, ref, name)
        for line in lines:
            log(line)
        for filename, data in files.items():
            assert runs_dir is not None
            runs_dir.mkdir(parents=True, exist_ok=True)
            (runs_dir / filename).write_bytes(data)
        done.update(harness._restored(portable))
    return done, _get(ray, extras, "the extra report blocks")


def _get(ray: Any, ref: Any, what: str) -> Any:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as exc:  # the stage's own error, raised there
        cause = exc.as_instanceof_cause()
        if isinstance(cause, GroundkitError):
            raise cause from None
        raise ClusterError(f"{what} failed on the Ray cluster: {exc}") from exc
    except ray.exceptions.RayError as exc:
        raise ClusterError(f"{what} failed on the Ray cluster: {exc}") from exc
