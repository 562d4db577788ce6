"""Quote-anchored judgments: the overlap rule on hand-made spans, then golden v1 re-chunked."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import ir_measures
import pytest

from evals.golden import Answer, Golden, Question, load_golden
from evals.golden.judgments import judge, overlap, qrels_rows, span_relevance
from groundkit.errors import UsageError

V1 = Path(__file__).resolve().parents[2] / "golden" / "v1"


@dataclass(frozen=True)
class Span:
    chunk_id: str
    doc_id: str
    start: int
    end: int


def answer(doc_id: str, start: int, end: int) -> Answer:
    return Answer(doc_id=doc_id, quote="x" * (end - start), occurrence=None, start=start, end=end)


def question(qid: str, kind: str, *answers: Answer) -> Question:
    return Question(id=qid, kind=kind, question="?", traits=(), answers=answers)


def tiny_golden() -> Golden:
    return Golden(
        version=0,
        root=Path("."),
        documents={"a.md": "x" * 1000, "b.md": "y" * 1000},
        questions=(
            question("q1", "answerable", answer("a.md", 100, 200)),
            question("q2", "ambiguous", answer("a.md", 100, 200), answer("b.md", 500, 540)),
            question("q3", "no_answer"),
        ),
    )


def windows(text: str, doc_id: str, size: int, step: int) -> list[Span]:
    """Fixed windows of ``size`` every ``step`` code points; the last one ends at the text's end."""
    starts = list(range(0, max(len(text) - size, 0) + 1, step))
    if starts[-1] + size < len(text):
        starts.append(len(text) - size)
    return [Span(f"{doc_id}@{s}", doc_id, s, min(s + size, len(text))) for s in starts]


# --- the rule -------------------------------------------------------------------------------


def test_overlap_is_the_length_of_the_shared_half_open_span() -> None:
    assert overlap(10, 20, 15, 100) == 20 - 15
    assert overlap(10, 20, 0, 15) == 15 - 10
    assert overlap(10, 20, 12, 18) == 18 - 12
    assert overlap(10, 20, 20, 30) == 0  # touching spans share nothing
    assert overlap(10, 20, 40, 50) == 0


def test_a_chunk_holding_the_whole_quote_is_relevance_two() -> None:
    assert span_relevance(100, 200, 0, 800) == 2
    assert span_relevance(100, 200, 100, 200) == 2  # exactly the quote
    assert span_relevance(100, 200, 100, 201) == 2


def test_a_chunk_holding_at_least_half_of_a_shorter_quote_is_relevance_one() -> None:
    # quote 100 long, chunk 300 long: the threshold is 0.5 * min(100, 300) = 50
    assert span_relevance(100, 200, 150, 450) == 1  # overlap 200 - 150 = 50
    assert span_relevance(100, 200, 151, 451) == 0  # overlap 200 - 151 = 49


def test_a_chunk_that_is_mostly_quote_is_relevance_one() -> None:
    # quote 1000 long, chunk 300 long: the threshold is 0.5 * min(1000, 300) = 150
    assert span_relevance(0, 1000, 400, 700) == 1  # the chunk lies inside the quote
    assert span_relevance(0, 1000, 850, 1150) == 1  # overlap 1000 - 850 = 150
    assert span_relevance(0, 1000, 851, 1151) == 0  # overlap 1000 - 851 = 149


def test_disjoint_and_touching_spans_are_not_relevant() -> None:
    assert span_relevance(100, 200, 200, 300) == 0
    assert span_relevance(100, 200, 0, 100) == 0
    assert span_relevance(100, 200, 500, 600) == 0


def test_judge_takes_the_best_grade_over_answers_and_ignores_other_documents() -> None:
    chunks = [
        Span("c-inside", "a.md", 50, 250),  # holds q1/q2's a.md quote whole
        Span("c-half", "a.md", 150, 400),  # 50 of 100 quote code points
        Span("c-b", "b.md", 520, 1000),  # 20 of q2's 40-long b.md quote
        Span("c-miss", "b.md", 0, 400),
    ]
    assert judge(tiny_golden(), chunks) == {
        "q1": {"c-inside": 2, "c-half": 1},
        "q2": {"c-inside": 2, "c-half": 1, "c-b": 1},
        "q3": {},
    }


def test_every_question_is_judged_even_with_no_chunks() -> None:
    assert judge(tiny_golden(), []) == {"q1": {}, "q2": {}, "q3": {}}


def test_a_chunk_given_twice_counts_once_but_one_id_with_two_spans_is_refused() -> None:
    twice = [Span("c", "a.md", 100, 200), Span("c", "a.md", 100, 200)]
    assert judge(tiny_golden(), twice)["q1"] == {"c": 2}
    with pytest.raises(UsageError, match="chunk id 'c' is given for two spans"):
        judge(tiny_golden(), [Span("c", "a.md", 100, 200), Span("c", "a.md", 0, 50)])


def test_qrels_rows_are_sorted_and_build_ir_measures_qrels() -> None:
    rows = list(qrels_rows({"q2": {"z": 1, "a": 2}, "q1": {"m": 2}, "q3": {}}))
    assert rows == [("q1", "m", 2), ("q2", "a", 2), ("q2", "z", 1)]
    qrels = [ir_measures.Qrel(*row) for row in rows]
    run = [ir_measures.ScoredDoc("q2", "z", 2.0), ir_measures.ScoredDoc("q2", "a", 1.0)]
    rr = ir_measures.parse_measure("RR@10")
    assert {m.query_id: m.value for m in ir_measures.iter_calc([rr], qrels, run)}["q2"] == 1.0


# --- golden v1 under fixed windows ------------------------------------------------------------


@pytest.fixture(scope="module")
def golden() -> Golden:
    return load_golden(V1)


@pytest.mark.parametrize(("size", "overlap_chars"), [(300, 75), (800, 200), (2000, 500)])
def test_every_answerable_question_has_a_relevant_window(
    golden: Golden, size: int, overlap_chars: int
) -> None:
    chunks = [
        chunk
        for doc_id, text in golden.documents.items()
        for chunk in windows(text, doc_id, size, size - overlap_chars)
    ]
    judgments = judge(golden, chunks)
    assert list(judgments) == [q.id for q in golden.questions]
    for q in golden.questions:
        if q.kind == "no_answer":
            assert judgments[q.id] == {}, q.id
        else:
            assert max(judgments[q.id].values(), default=0) >= 1, q.id


@pytest.mark.parametrize(("size", "overlap_chars"), [(300, 75), (800, 200), (2000, 500)])
def test_a_quote_that_fits_in_a_window_gets_a_relevance_two_window(
    golden: Golden, size: int, overlap_chars: int
) -> None:
    by_doc = {d: windows(t, d, size, size - overlap_chars) for d, t in golden.documents.items()}
    judgments = judge(golden, [c for chunks in by_doc.values() for c in chunks])
    for q in golden.questions:
        for a in q.answers:
            holders = {c.chunk_id for c in by_doc[a.doc_id] if c.start <= a.start < a.end <= c.end}
            assert holders <= {c for c, grade in judgments[q.id].items() if grade == 2}, q.id
            if a.end - a.start <= overlap_chars + 1:  # windows overlapping by k hold any k+1 span
                assert holders, (q.id, a.doc_id)


def test_windows_cover_each_document_without_gaps(golden: Golden) -> None:
    for doc_id, text in golden.documents.items():
        spans = windows(text, doc_id, 300, 225)
        assert spans[0].start == 0 and spans[-1].end == len(text)
        assert all(b.start <= a.end for a, b in itertools.pairwise(spans))
