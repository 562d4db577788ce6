from __future__ import annotations

import re
from pathlib import Path

import pytest

from evals.trec import (
    TrecFormatError,
    ranking,
    read_qrels,
    read_run,
    trec_order,
    write_qrels,
    write_run,
)


def test_a_run_round_trips_through_a_trec_file(tmp_path: Path) -> None:
    ranked = {"q2": [("d9", 3.5), ("d1", 1.25)], "q1": [("d3", 0.5)]}
    path = write_run(tmp_path / "run.trec", ranked, tag="gk")
    assert path.read_text().splitlines()[0] == "q1 Q0 d3 1 0.5 gk"
    assert read_run(path) == {"q1": {"d3": 0.5}, "q2": {"d9": 3.5, "d1": 1.25}}


def test_scores_are_written_exactly_so_close_scores_stay_apart(tmp_path: Path) -> None:
    close = {"q": [("a", 1.2345678912), ("b", 1.2345678911)]}
    run = read_run(write_run(tmp_path / "run.trec", close, tag="gk"))
    assert run["q"] == {"a": 1.2345678912, "b": 1.2345678911}
    assert [d for d, _ in ranking(run)["q"]] == ["a", "b"]


def test_trec_order_is_score_descending_then_doc_id_descending() -> None:
    assert trec_order([("a", 1.0), ("c", 2.0), ("b", 1.0)]) == [("c", 2.0), ("b", 1.0),
                                                                ("a", 1.0)]


def test_qrels_round_trip(tmp_path: Path) -> None:
    qrels = {"q1": {"a": 2, "b": 1}, "q2": {"c": 0}}
    assert read_qrels(write_qrels(tmp_path / "q.txt", qrels)) == qrels


def test_ties_are_ordered_as_trec_eval_does_by_doc_id_descending() -> None:
    run = {"q": {"a": 1.0, "c": 1.0, "b": 2.0, "ab": 1.0}}
    assert [d for d, _ in ranking(run)["q"]] == ["b", "c", "ab", "a"]


@pytest.mark.parametrize(("line", "message"), [
    ("q1 Q0 d1 1 0.5", "6 fields"), ("q1 Q0 d1 1 high tag", "not a number"),
    ("q1 Q0 d1 1 nan tag", "not finite"),
])
def test_malformed_run_lines_are_errors_naming_the_line(
    tmp_path: Path, line: str, message: str,
) -> None:
    path = tmp_path / "bad.trec"
    path.write_text("q0 Q0 d0 1 1.0 tag\n" + line + "\n")
    with pytest.raises(TrecFormatError, match=f"bad.trec:2: .*{message}"):
        read_run(path)


def test_ids_with_whitespace_cannot_be_written(tmp_path: Path) -> None:
    with pytest.raises(TrecFormatError, match="whitespace"):
        write_run(tmp_path / "r", {"q 1": [("d", 1.0)]}, tag="t")
    with pytest.raises(TrecFormatError, match=r"run tag 'a b'"):
        write_run(tmp_path / "r", {"q1": [("d", 1.0)]}, tag="a b")
    for bad in ("d\t2", "d\n2", ""):  # the first bad doc id is the one named
        with pytest.raises(TrecFormatError, match=re.escape(f"doc id {bad!r}")):
            write_run(tmp_path / "r", {"q1": [("d1", 2.0), (bad, 1.0), ("e f", 0.5)]}, tag="t")
    assert not (tmp_path / "r").exists()


def test_a_run_is_written_line_for_line_in_the_documented_form(tmp_path: Path) -> None:
    path = write_run(tmp_path / "r", {"q2": [("b", 0.1 + 0.2)], "q1": [("a", 3), ("c", 2.5)],
                                      "q3": []}, tag="bm25")
    assert path.read_text() == ("q1 Q0 a 1 3.0 bm25\nq1 Q0 c 2 2.5 bm25\n"
                                "q2 Q0 b 1 0.30000000000000004 bm25\n")
    assert write_run(tmp_path / "empty", {}, tag="t").read_text() == ""
