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
* **A Ray task** computes the suite's extra report blocks (:meth:`Suite.extras`).

So the report is the one a serial run builds: the same code ranks and scores each stage,
wherever it ran. Every node reads the suite's files (the golden corpus, the stages'
collections in the suite's home, the embedding cache) at the same paths: a shared
filesystem, as for ``grk index --ray``. Questions are not split into blocks: a stage is the
unit of work. A task whose worker process dies is retried by Ray (:data:`MAX_RETRIES`).
"""

from __future__ import annotations

import copyreg
import io
import pickle
import tempfile
from collections import ChainMap
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from evals import harness
from evals import report as rpt
from evals.golden.evidence import EvidenceCache
from evals.stages import Stage
from groundkit.collection import Collection, ray_executor
from groundkit.collection.ray_executor import ClusterError
from groundkit.errors import GroundkitError

MAX_RETRIES = 2
"""Times Ray retries a stage's task whose worker process died."""


def import_ray() -> Any:
    """The ``ray`` module, or :class:`MissingDependencyError` naming the ``ray`` extra."""
    return ray_executor.import_ray("evaluation on Ray (--ray)")


@contextmanager
def connected(address: str | None) -> Iterator[harness.Spread]:
    """:func:`spread` on the cluster at ``address`` (``None``: the one ``RAY_ADDRESS`` names or
    one started on this machine, else a new local Ray); this process's own connection when
    it has one. Disconnects afterwards when it connected."""
    ray = import_ray()
    started = not ray.is_initialized()
    if started:
        ray.init(address=address or None, include_dashboard=False, log_to_driver=False,
                 logging_level="warning")
    try:
        yield partial(spread, ray)
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
           runs_dir: Path | None, log: harness.Log) -> tuple[dict[str, harness.Ran],
                                                             harness.Extras]:
    """:func:`evals.harness._run_all` with Ray tasks (see the module docstring)."""
    suite.open(baseline, log)  # the baseline's collection, indexed once before the tasks
    opened = [(s, suite.open(s, log)) for s in mcp]
    compared = any(s.agrees_with is not None for s in (*lexical, *embedded))
    keep = harness.kept(settings, compared)
    payload = ray.put(shipped(suite))
    options = {"num_cpus": 1, "max_retries": MAX_RETRIES}
    extras = ray.remote(**options)(extras_task).remote(payload)  # the longest, first
    task = ray.remote(**options)(stage_task)
    refs = [(s.name, task.remote(payload, s, settings, keep, runs_dir is not None))
            for s in (*lexical, *embedded)]
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
