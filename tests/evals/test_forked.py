"""Forked workers: results and errors come back; tasks go to exactly one taker."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from evals import forked

pytestmark = pytest.mark.skipif(not forked.available(), reason="needs os.fork")


@pytest.fixture(autouse=True)
def forks(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests fork even where an earlier test loaded lancedb in this process (the
    children never touch it); tests/security/test_fork_safety.py tests the refusal."""
    monkeypatch.setattr(forked, "THREADED_RUNTIMES", ())


class Odd(Exception):
    def __init__(self, a: int, b: int) -> None:  # pickles, but does not unpickle
        super().__init__(f"{a}+{b}")


def test_a_worker_hands_back_its_result_from_another_process() -> None:
    pid, value = forked.Forked(lambda: (os.getpid(), [1, 2.5, "three"]), "w").result()
    assert pid != os.getpid() and value == [1, 2.5, "three"]


def test_a_workers_exception_is_raised_in_the_parent_with_its_traceback() -> None:
    def fails() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing") as caught:
        forked.Forked(fails, "w").result()
    cause = caught.value.__cause__
    assert isinstance(cause, forked.ChildTraceback) and "in fails" in str(cause)


def test_an_exception_that_cannot_travel_arrives_as_a_worker_error_with_its_text() -> None:
    def fails() -> None:
        raise Odd(1, 2)

    with pytest.raises(forked.WorkerError, match=r"Odd: 1\+2"):
        forked.Forked(fails, "w").result()


def test_a_worker_that_dies_without_a_word_is_a_worker_error() -> None:
    with pytest.raises(forked.WorkerError, match="killed by signal 9"):
        forked.Forked(lambda: os.kill(os.getpid(), signal.SIGKILL), "w").result()
    with pytest.raises(forked.WorkerError, match="exit status 3"):
        forked.Forked(lambda: os._exit(3), "w").result()


def test_stop_ends_a_running_worker_and_its_finally_blocks_run(tmp_path: Path) -> None:
    marker = tmp_path / "cleaned"

    def slow() -> None:
        try:
            time.sleep(60)
        finally:
            marker.write_text("yes")

    worker = forked.Forked(slow, "w")
    time.sleep(0.3)
    started = time.monotonic()
    worker.stop()
    assert time.monotonic() - started < 5
    assert marker.read_text() == "yes"
    worker.stop()  # a second stop is a no-op


def test_every_task_goes_to_exactly_one_taker() -> None:
    tasks = forked.Tasks(200)

    def take() -> list[int]:
        mine = []
        while (task := tasks.take()) is not None:
            mine.append(task)
            time.sleep(0.001)
        return mine

    workers = [forked.Forked(take, f"w{i}") for i in range(2)]
    own = take()
    taken = [own, *(w.result() for w in workers)]
    tasks.close()
    assert sorted(t for part in taken for t in part) == list(range(200))
    assert sum(1 for part in taken if part) >= 2  # shared, not one taker draining all


def test_more_tasks_than_bytes_is_refused() -> None:
    with pytest.raises(ValueError, match="at most 255"):
        forked.Tasks(256)


def test_beside_runs_in_a_child_or_here_when_told_not_to_fork() -> None:
    assert forked.beside(os.getpid, "w")() != os.getpid()
    assert forked.beside(os.getpid, "w", fork=False)() == os.getpid()


def test_a_worker_that_ignores_sigterm_is_killed_after_the_grace_time() -> None:
    def stubborn() -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        time.sleep(60)

    worker = forked.Forked(stubborn, "w")
    time.sleep(0.3)
    started = time.monotonic()
    worker.stop(grace_s=0.5)
    assert 0.4 < time.monotonic() - started < 5
    with pytest.raises(ProcessLookupError):
        os.kill(worker.pid, 0)  # gone and reaped


def test_while_sharing_cores_blas_runs_one_thread_here_and_in_forked_children() -> None:
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numpy  # noqa: F401  (loads the BLAS library threadpoolctl controls)

    def blas_threads() -> list[int]:
        return [i["num_threads"] for i in threadpoolctl.threadpool_info()
                if i["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy's BLAS is not visible to threadpoolctl"
    with forked.sharing_cores(False):
        assert blas_threads() == before
    with forked.sharing_cores():
        assert blas_threads() == [1] * len(before)
        assert forked.Forked(blas_threads, "blas").result() == [1] * len(before)
    assert blas_threads() == before
