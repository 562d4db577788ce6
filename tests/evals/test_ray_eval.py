"""``python -m evals run --ray`` on a real two-node Ray cluster: the serial run's report.

The cluster is the ``cluster`` fixture (tests/ray_cluster.py): skipped without ``ray`` unless
``GROUNDKIT_REQUIRE_RAY=1`` (CI), which fails instead.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from beir_fixture import synthetic_beir
from golden_fixture import tiny_golden

from evals.__main__ import main
from groundkit.errors import MissingDependencyError, UsageError

STAGES = ("bm25", "bm25-nostem", "bm25-k1.2-b0.75", "bm25-chunk500")
FEW = ("--resamples", "200", "--permutations", "200")


def _outside_run(report: Path) -> str:
    data = json.loads(report.read_text())
    data.pop("run")
    return json.dumps(data, sort_keys=True)


def _runs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def _golden(tmp: Path, golden: Path, *extra: str) -> int:
    return main(["run", "--golden", str(golden), "--stages", *STAGES, "--out", str(tmp / "out"),
                 "--cache", str(tmp / "cache"), *FEW, *extra])


def test_a_golden_run_on_ray_writes_the_serial_report_outside_the_run_block(
    cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    golden = tiny_golden(tmp_path / "golden" / "v1")
    assert _golden(tmp_path / "serial", golden, "--serial") == 0
    assert _golden(tmp_path / "ray", golden, "--ray", cluster) == 0
    serial, spread = (_outside_run(tmp_path / n / "out" / "latest.json") for n in ("serial", "ray"))
    assert spread == serial
    assert "answers" in json.loads(spread)  # the extras came back from their task
    runs = _runs(tmp_path / "ray" / "out" / "runs")
    assert runs == _runs(tmp_path / "serial" / "out" / "runs")
    assert sorted(runs) == sorted(f"{s}.trec" for s in STAGES)
    assert "ran bm25-chunk500 on 6 questions" in capsys.readouterr().err  # the task's log


def test_stages_rank_in_ray_worker_processes(cluster: str, tmp_path: Path) -> None:
    import ray

    from evals import harness, on_ray

    seen: list[int] = []
    real = harness._run_group

    def spy(*args: object, **kwargs: object) -> object:
        seen.append(os.getpid())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    golden = tiny_golden(tmp_path / "golden" / "v1")
    # the parent ranks nothing itself: only the tasks run _run_group (a spy here sees none)
    harness._run_group = spy  # type: ignore[assignment]
    try:
        assert _golden(tmp_path, golden, "--ray", cluster) == 0
    finally:
        harness._run_group = real
    assert seen == []
    assert ray.is_initialized()  # the fixture's connection was used, and left open
    assert on_ray.MAX_RETRIES >= 1


@pytest.fixture(scope="module")
def beir_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return synthetic_beir(tmp_path_factory.mktemp("beir"))


def test_an_external_dataset_on_ray_scores_as_a_serial_run(
    cluster: str, tmp_path: Path, beir_dir: Path,
) -> None:
    _beir_serial_and_on_ray(cluster, tmp_path, tmp_path, beir_dir)


def test_blocks_are_the_fewest_of_at_most_the_size_in_question_order() -> None:
    from evals.on_ray import blocks

    assert blocks(0, 2000) == [(0, 0)]
    assert blocks(2000, 2000) == [(0, 2000)]
    assert blocks(2001, 2000) == [(0, 1000), (1000, 2001)]
    assert blocks(6, 2) == [(0, 2), (2, 4), (4, 6)]
    assert blocks(7, 3) == [(0, 2), (2, 4), (4, 7)]
    for n, size in ((1211, 100), (10, 1), (5, 7)):
        got = blocks(n, size)
        assert [a for a, _ in got[1:]] == [b for _, b in got[:-1]]  # contiguous, in order
        assert got[0][0] == 0 and got[-1][1] == n
        assert max(b - a for a, b in got) <= size and len(got) == -(-n // size)


def _block(description: str = "d", config: dict[str, object] | None = None,
           questions: tuple[str, ...] = ("q1",)) -> Any:
    from evals import report as rpt

    result = rpt.StageResult(name="s", description=description,
                             config=config if config is not None else {"k": 1}, hits={},
                             gate_mode="bm25", signals={q: {"top": 1.0} for q in questions})
    return result, {q: [(1, f"{q}-c", "doc", 0, 4, 2.5, "text")] for q in questions}


def test_merged_blocks_keep_question_order_and_refuse_a_disagreement() -> None:
    from evals.on_ray import merged
    from groundkit.collection.ray_executor import ClusterError

    parts = [_block(config={"k": 1, "query_analysis": {"a": ["x"]}}, questions=("q2", "q0")),
             _block(config={"k": 1, "query_analysis": {"b": ["y"]}}, questions=("q1",))]
    result = merged("s", ["q0", "q1", "q2"], parts)
    assert list(result.hits) == ["q0", "q1", "q2"] and list(result.signals or {}) == list(
        result.hits)
    assert result.hits["q1"][0].chunk_id == "q1-c"
    assert result.config == {"k": 1, "query_analysis": {"a": ["x"], "b": ["y"]}}
    with pytest.raises(ClusterError, match="description"):
        merged("s", ["q1"], [_block(), _block(description="other")])
    with pytest.raises(ClusterError, match="config 'k'"):
        merged("s", ["q1"], [_block(), _block(config={"k": 2})])
    with pytest.raises(ClusterError, match="config 'k'"):  # one query analysed two ways
        merged("s", ["q1"], [_block(config={"k": {"a": 1}}), _block(config={"k": {"a": 2}})])


def test_stages_in_blocks_of_questions_give_the_serial_report_and_runs(
    cluster: str, tmp_path: Path, beir_dir: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from evals import on_ray

    golden = tiny_golden(tmp_path / "golden" / "v1")
    assert _golden(tmp_path / "serial", golden, "--serial") == 0
    monkeypatch.setattr(on_ray, "BLOCK_QUESTIONS", 2)  # 6 questions: 3 blocks per stage
    assert _golden(tmp_path / "ray", golden, "--ray", cluster) == 0
    serial, spread = (_outside_run(tmp_path / n / "out" / "latest.json") for n in ("serial", "ray"))
    assert spread == serial
    assert _runs(tmp_path / "ray" / "out" / "runs") == _runs(tmp_path / "serial" / "out" / "runs")
    err = capsys.readouterr().err
    assert all(f"ran {s} on 6 questions in 3 blocks" in err for s in STAGES)
    _beir_serial_and_on_ray(cluster, tmp_path / "beir", tmp_path, beir_dir)
    assert " in 5 blocks" in capsys.readouterr().err  # its 10 queries, 2 a block


def test_serial_and_ray_together_are_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    golden = tiny_golden(tmp_path / "golden" / "v1")
    assert _golden(tmp_path, golden, "--serial", "--ray") == 2
    assert "choose one" in capsys.readouterr().err


def test_without_ray_the_option_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    from evals import on_ray

    monkeypatch.setitem(sys.modules, "ray", None)  # import ray fails, as when not installed
    with pytest.raises(MissingDependencyError, match=r"pip install 'groundkit\[ray\]'"):
        on_ray.import_ray()
    golden = tiny_golden(tmp_path / "golden" / "v1")
    assert _golden(tmp_path, golden, "--ray") == MissingDependencyError.exit_code
    assert "groundkit[ray]" in capsys.readouterr().err
    from groundkit.cli import main as grk

    assert grk(["eval", "--golden", str(golden), "--ray", "--out", str(tmp_path / "g")]) \
        == MissingDependencyError.exit_code


class _FailsOnTheCluster:
    """A golden suite whose ``bm25-nostem`` fails to open anywhere but in this process."""

    def __init__(self, inner: object, parent: int) -> None:
        self._inner, self._parent = inner, parent

    def __getattr__(self, name: str) -> object:
        if name.startswith("_"):  # unpickling looks for methods before _inner is set
            raise AttributeError(name)
        return getattr(self._inner, name)

    def open(self, stage: object, log: object) -> object:
        if getattr(stage, "name", None) == "bm25-nostem" and os.getpid() != self._parent:
            raise UsageError("bm25-nostem cannot open here")
        return self._inner.open(stage, log)  # type: ignore[attr-defined]


@pytest.mark.parametrize("block", [None, 1], ids=["whole", "in-blocks"])
def test_a_stage_failing_in_its_task_fails_the_run_with_its_own_error(
    cluster: str, tmp_path: Path, block: int | None,
) -> None:
    from ray import cloudpickle

    from evals import on_ray
    from evals import report as rpt
    from evals.golden.suite import golden_suite
    from evals.harness import evaluate
    from evals.stages import resolve

    cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers lack this module
    try:
        inner = golden_suite(tiny_golden(tmp_path / "golden" / "v1"), tmp_path / "home")
        suite = _FailsOnTheCluster(inner, os.getpid())
        with (on_ray.connected(cluster, block) as spread,
              pytest.raises(UsageError, match="open here")):
            evaluate(suite, resolve(["bm25", "bm25-nostem"]),  # type: ignore[arg-type]
                     settings=rpt.Settings(resamples=50, permutations=50), runs_dir=None,
                     log=lambda _: None, spread=spread)
        inner.close()
    finally:
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _beir_serial_and_on_ray(cluster: str, where: Path, expected: Path, beir_dir: Path) -> None:
    """The synthetic BEIR dataset run serially and on the cluster, under ``where``: the
    reports equal outside ``run`` and the TREC runs byte for byte."""
    reports, runs = [], []
    for name, extra in (("serial", ("--serial",)), ("ray", ("--ray", cluster))):
        out = where / name
        code = main(["run", "--dataset", f"beir:{beir_dir}", "--cache", str(out / "cache"),
                     "--out", str(out / "out"), "--expected-dir", str(expected), *FEW, *extra])
        assert code == 0
        reports.append(_outside_run(out / "out" / "syn.json"))
        runs.append(_runs(out / "out" / "runs" / "syn"))
    assert reports[0] == reports[1]
    assert runs[0] == runs[1] and len(runs[0]) >= 5
