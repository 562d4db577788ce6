"""The harness end to end on a small fixture corpus: a pinned "flash" tier."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from golden_fixture import tiny_golden

from evals import report
from evals.golden import write_manifest
from evals.golden.suite import evaluate_golden
from evals.score import gates
from evals.summary import summary_table
from groundkit.errors import IntegrityError, UsageError


@pytest.fixture
def golden(tmp_path: Path) -> Path:
    return tiny_golden(tmp_path / "golden" / "v1")


def run(golden: Path, out: Path, stages: list[str] | None = None) -> dict[str, object]:
    return evaluate_golden(golden, out, stage_names=stages or ["bm25", "bm25-nostem"],
                           settings=report.Settings(resamples=500, permutations=500))


def test_the_flash_tier_reproduces_its_pinned_metrics(golden: Path, tmp_path: Path) -> None:
    built = run(golden, tmp_path / "out")
    bm25 = next(s for s in built["stages"] if s["name"] == "bm25")  # type: ignore[attr-defined]
    # Every judged question's answer chunk ranks first: each document is one chunk here.
    assert bm25["metrics"]["Success@1"] == 1.0
    assert bm25["metrics"]["RR@10"] == 1.0
    # q5 shares "policy"-less words with nothing... except "the"/"is" (stopwords): it abstains;
    # q6 matches nothing at all.
    assert bm25["abstention"] == {"answerable_abstained": 0, "answerable_total": 4,
                                  "no_answer_abstained": 2, "no_answer_total": 2}


def test_the_harness_returns_its_report_canonical_as_it_is_written(
    golden: Path, tmp_path: Path,
) -> None:
    built = run(golden, tmp_path / "out")
    assert "answers" in built and "gate" in built
    assert report.canonical(built) == built  # rounded floats, lists not tuples, str keys
    assert json.loads((tmp_path / "out" / "latest.json").read_text()) == built


def test_two_runs_write_byte_identical_reports_apart_from_the_run_block(
    golden: Path, tmp_path: Path,
) -> None:
    texts = []
    for name in ("a", "b"):
        run(golden, tmp_path / name)
        data = json.loads((tmp_path / name / "latest.json").read_text())
        data.pop("run")
        texts.append(json.dumps(data, sort_keys=True))
        assert (tmp_path / name / "runs" / "bm25.trec").read_text().startswith("q0001 Q0 golden-")
    assert texts[0] == texts[1]


def test_every_stage_is_compared_with_the_baseline_on_the_same_questions(
    golden: Path, tmp_path: Path,
) -> None:
    built = run(golden, tmp_path / "out")
    comparisons = built["comparisons"]
    assert {c["stage"] for c in comparisons} == {"bm25-nostem"}  # type: ignore[union-attr]
    assert all(c["n"] == 4 and c["p_holm"] is not None for c in comparisons)  # type: ignore


def test_an_unknown_stage_fails_before_any_retrieval(golden: Path, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="valid stages: bm25"):
        run(golden, tmp_path / "out", ["bm25", "nope"])
    assert not (tmp_path / "out").exists()


def test_a_corpus_checksum_mismatch_fails_before_any_retrieval(
    golden: Path, tmp_path: Path,
) -> None:
    (golden / "docs" / "oncall.md").write_text("tampered\n")
    with pytest.raises(IntegrityError, match="checksum mismatch"):
        run(golden, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_gates_pass_on_their_own_values_and_fail_loudly_outside_the_band(
    golden: Path, tmp_path: Path,
) -> None:
    built = run(golden, tmp_path / "out")
    expected = gates.expected_from(built, tolerance=0.01)
    assert gates.check(built, expected) == []
    expected["stages"]["bm25"]["nDCG@10"]["value"] -= 0.02
    [failure] = gates.check(built, expected)
    assert failure.startswith("bm25: nDCG@10 = ") and "± 0.01" in failure
    expected["manifest_sha256"] = "0" * 64
    assert any("manifest" in f for f in gates.check(built, expected))


def test_the_summary_table_shows_deltas_with_intervals(golden: Path, tmp_path: Path) -> None:
    table = summary_table(run(golden, tmp_path / "out"), ["nDCG@10"])
    lines = table.splitlines()
    assert lines[0].split() == ["stage", "nDCG@10", "docs@10", "abstained"]
    assert lines[3].startswith("bm25-nostem") and "[" in lines[3]
    # q1 to q4 each match the words of one document only
    assert lines[2].split()[2] == f"{(1 + 1 + 1 + 1) / 4:.2f}"


def test_the_gil_switch_interval_is_restored_even_when_an_mcp_stage_fails() -> None:
    import sys
    from types import SimpleNamespace

    from evals import harness
    from evals.stages import STAGES

    class Broken:
        def prime(self, queries: object) -> None:
            assert sys.getswitchinterval() == harness.SWITCH_S
            raise RuntimeError("a stage failed")

    before = sys.getswitchinterval()
    suite = SimpleNamespace(questions=[], depth=10, label="x")
    with pytest.raises(RuntimeError, match="a stage failed"):
        harness._run_mcp(suite, [(STAGES["mcp-stdio-bm25"], Broken())],  # type: ignore[list-item]
                         report.Settings(), None, lambda _: None)
    assert sys.getswitchinterval() == before


def test_when_one_mcp_stage_fails_the_others_are_closed_and_end_at_once() -> None:
    import threading
    import time
    from types import SimpleNamespace

    from evals import harness
    from evals.stages import STAGES

    class Failing:
        def prime(self, queries: object) -> None:
            raise RuntimeError("a stage failed")

    class Waiting:  # ranks until it is closed, as a stage whose server is stopped
        def __init__(self) -> None:
            self.closed = threading.Event()

        def prime(self, queries: object) -> None:
            pass

        def rank(self, question: object, depth: int, shown: int) -> list[object]:
            if self.closed.wait(30):
                raise RuntimeError("server gone")
            return []

        def close(self) -> None:
            self.closed.set()

    waiting = Waiting()
    suite = SimpleNamespace(questions=[SimpleNamespace(text="q", query_id="q1")], depth=10,
                            label="x")
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="a stage failed"):
        harness._run_mcp(suite, [(STAGES["mcp-stdio-bm25"], Failing()),  # type: ignore[list-item]
                                 (STAGES["mcp-http-bm25"], waiting)],
                         report.Settings(), None, lambda _: None)
    assert waiting.closed.is_set() and time.monotonic() - started < 10


def test_forked_workers_write_the_report_a_serial_run_writes(
    golden: Path, tmp_path: Path,
) -> None:
    stages = ["bm25", "bm25-nostem", "bm25-k1.2-b0.75", "bm25-chunk500"]
    texts, runs = [], []
    for name, serial in (("forked", False), ("serial", True)):
        evaluate_golden(golden, tmp_path / name, stage_names=stages, serial=serial,
                        settings=report.Settings(resamples=500, permutations=500))
        data = json.loads((tmp_path / name / "latest.json").read_text())
        data.pop("run")
        texts.append(json.dumps(data, sort_keys=True))
        runs.append({p.name: p.read_bytes() for p in (tmp_path / name / "runs").iterdir()})
    assert texts[0] == texts[1]
    assert runs[0] == runs[1] and sorted(runs[0]) == sorted(f"{s}.trec" for s in stages)
    assert "answers" in json.loads(texts[0])  # the extras came back from wherever they ran


def only_workers_take_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent takes no task from the shared queue, so the forked worker ranks every
    lexical stage. Otherwise whichever process asks first takes each, and the parent may
    take them all (seen in CI: a worker that handed nothing back)."""
    from evals import forked

    # Fork even where an earlier test loaded lancedb in this process: these workers rank
    # lexical stages and never touch it (tests/security/test_fork_safety.py tests the
    # refusal to fork a real run once it is loaded).
    monkeypatch.setattr(forked, "THREADED_RUNTIMES", ())
    parent, take = os.getpid(), forked.Tasks.take
    monkeypatch.setattr(forked.Tasks, "take",
                        lambda tasks: None if os.getpid() == parent else take(tasks))


def test_a_worker_hands_back_only_the_hits_the_report_reads(
    golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals import harness, mcp_stage
    from evals.report import build

    # one hit shown, the gate one deep: a forked worker keeps one hit a question, the
    # serial run all of them, and the reports must not tell them apart
    monkeypatch.setattr(build, "GATE_DEPTH", 1)
    monkeypatch.setattr(mcp_stage, "MAX_TOP_K", 1)
    with (golden / "questions.jsonl").open("a") as questions:  # one matching every document
        questions.write(json.dumps({"id": "q0007", "kind": "no_answer", "traits": [],
                                    "question": "logs pages upload", "answers": []}) + "\n")
    write_manifest(golden, force=True)  # a draft of the fixture, still unreleased
    handed: list[int] = []  # what the parent received from its workers
    real = harness._restored

    def restored(portable: dict) -> object:
        handed.extend(len(h) for _, hits, _, _ in portable.values() for h in hits.values())
        return real(portable)

    monkeypatch.setattr(harness, "_restored", restored)
    only_workers_take_tasks(monkeypatch)
    texts = []
    for name, serial in (("forked", False), ("serial", True)):
        built = evaluate_golden(golden, tmp_path / name, stage_names=["bm25", "bm25-nostem"],
                                serial=serial, settings=report.Settings(
                                    resamples=200, permutations=200, hits_shown=1))
        built.pop("run")
        texts.append(json.dumps(built, sort_keys=True))
    assert texts[0] == texts[1]
    retrieved = [s["retrieved"] for q in json.loads(texts[0])["questions"]
                 for s in q["stages"].values()]
    assert max(retrieved) > 1 and handed and max(handed) == 1  # trimmed, yet counted


def test_a_stage_failing_in_a_worker_fails_the_run_with_its_own_error(
    golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals import harness

    real = harness._run_stage

    def broken(run: object, stage: object, *args: object) -> object:
        if getattr(stage, "name", None) == "bm25-nostem":
            raise RuntimeError("a stage failed")
        return real(run, stage, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(harness, "_run_stage", broken)
    only_workers_take_tasks(monkeypatch)
    with pytest.raises(RuntimeError, match="a stage failed"):
        run(golden, tmp_path / "broken")


def test_the_statistics_computed_in_a_forked_child_are_the_ones_computed_here(
    golden: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals.report import build

    reports = []
    for name, threshold in (("forked", 0), ("here", 10**9)):
        monkeypatch.setattr(build, "FORK_QUESTIONS", threshold)
        built = run(golden, tmp_path / name)
        built.pop("run")
        reports.append(json.dumps(built, sort_keys=True))
    assert reports[0] == reports[1]
    assert json.loads(reports[0])["comparisons"] and "gate" in json.loads(reports[0])



def test_a_command_runs_with_a_rarer_cyclic_collector_and_restores_it(monkeypatch, capsys):
    import gc

    from evals import __main__ as entry
    from evals import cli

    seen = []
    monkeypatch.setattr(cli, "cmd_list", lambda args: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert entry.main(["list"]) == 0
    assert seen == [entry.GC_THRESHOLDS] != [before]
    assert gc.get_threshold() == before
