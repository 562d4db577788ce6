"""Extractive answers: exact quotes of verified passages, no model, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundkit.answer import Choice, ask
from groundkit.answer.sentences import units
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index

DOCS = {
    "ops/logs.md": "# Logs\n\nDeployment logs are kept for 30 days, then deleted by the "
                   "nightly job.\nAudit logs are kept for seven years, e.g. for SOX.\n\n"
                   "| log | retention |\n|---|---|\n| access | 90 days |\n",
    "ops/oncall.md": "# On-call\r\n\r\nThe on-call engineer restarts the ingest worker. "
                     "Pages go to the primary first.\r\n",
    "jp.md": "東京の天気は晴れです。明日は雨が降ります！\n",
    "steps.md": "To rotate keys:\n\n1. Open the vault console.\n2. Press rotate.\n"
                "   Confirm with your token.\n",
}


@pytest.fixture
def coll(make_tree: TreeMaker, home: Path) -> Collection:
    index("k", IndexConfig(roots=(str(make_tree(DOCS)),)), home=home)
    return Collection.open("k", home)


def file_text(root: Path, path: str) -> str:
    return (root / path).read_bytes().decode("utf-8")


def test_the_answer_quotes_the_best_sentence_exactly_with_its_file_offsets(
        coll: Collection) -> None:
    answer = ask(coll, "how long do we keep deployment logs")
    assert answer.kind == "extractive"
    [first, *_] = answer.sentences
    assert first.text == ("Deployment logs are kept for 30 days, then deleted by the nightly "
                          "job.")
    [c] = first.citations
    text = DOCS["ops/logs.md"]
    assert (c.path, text[c.start:c.end], c.start_line, c.end_line) == (
        "ops/logs.md", first.text, 3, 3)
    assert c.verdict == "verified" and c.chunk_id.startswith("k:")
    assert text.encode()[c.byte_start:c.byte_end].decode() == first.text


def test_crlf_list_items_and_cjk_are_quoted_without_breaks_markers_or_extra_text(
        coll: Collection) -> None:
    oncall = ask(coll, "who restarts the ingest worker").sentences[0]
    assert oncall.text == "The on-call engineer restarts the ingest worker."
    step = ask(coll, "how do I confirm the rotate").sentences[0]
    assert step.text == "Press rotate.\n   Confirm with your token."  # the item, no "2. "
    rain = ask(coll, "明日").sentences[0]
    assert rain.text == "明日は雨が降ります！"


def test_further_sentences_must_add_a_query_term(coll: Collection) -> None:
    answer = ask(coll, "how long are audit logs and deployment logs kept",
                 choice=Choice(max_sentences=3))
    texts = [s.text for s in answer.sentences]
    assert set(texts[:2]) == {
        "Audit logs are kept for seven years, e.g. for SOX.",
        "Deployment logs are kept for 30 days, then deleted by the nightly job."}
    assert len(texts) <= 3
    assert len(ask(coll, "how long are audit logs and deployment logs kept").sentences) == 1


def test_the_same_question_gives_the_same_answer(coll: Collection) -> None:
    first = ask(coll, "what is kept for seven years").to_dict()
    assert ask(coll, "what is kept for seven years").to_dict() == first


def test_a_drifted_passage_is_never_quoted(coll: Collection) -> None:
    root = Path(coll.snapshot.config["roots"][0])
    (root / "ops/oncall.md").write_text("# On-call\n\nNobody restarts anything any more.\n")
    answer = ask(coll, "who restarts the ingest worker")
    assert answer.kind == "empty" and not answer.citations
    assert "still holds" in answer.message and "grk index" in answer.message
    assert answer.passages[0].verdict.value == "drifted"


def test_nothing_matching_is_an_empty_answer_with_exit_12(
        coll: Collection, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert ask(coll, "zebra xylophone").kind == "empty"
    assert main(["ask", "zebra xylophone", "-c", "k", "--home", str(home)]) == 12
    assert "nothing in this collection matches" in capsys.readouterr().out


def test_the_cli_prints_each_quote_with_where_it_comes_from_and_json_maps_to_citations(
        coll: Collection, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "who restarts the ingest worker", "-c", "k", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "The on-call engineer restarts the ingest worker."
    assert "[1] k:ops/oncall.md line 3, chars 13-61 (verified)" in out
    assert main(["ask", "who restarts the ingest worker", "-c", "k", "--home", str(home),
                 "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    [loc] = data["anthropic"]["char_locations"]
    assert loc == {"type": "char_location", "cited_text": data["answer"], "document_index": 0,
                   "document_title": "ops/oncall.md", "start_char_index": 13,
                   "end_char_index": 61}
    assert data["anthropic"]["cited_documents"] == ["ops/oncall.md"]
    assert data["anthropic"]["search_results"][0]["type"] == "search_result"


def test_rewrite_and_judge_need_a_model(coll: Collection, home: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", "logs", "-c", "k", "--home", str(home), "--judge"]) == 2
    assert "--llm ollama:MODEL" in capsys.readouterr().err


prose = st.text(alphabet=st.sampled_from(list("ab .!?。\n\r|-#*1)  ")), max_size=120)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(prose)
def test_every_unit_is_an_exact_trimmed_slice_in_order(text: str) -> None:
    previous = 0
    for u in units(text):
        quoted = text[u.start:u.end]
        assert quoted and quoted == quoted.strip() and u.start >= previous
        assert "\r" not in (quoted[0], quoted[-1]) and "\n" not in (quoted[0], quoted[-1])
        previous = u.end


words = st.lists(st.sampled_from(["logs", "kept", "days", "audit", "worker", "the", "ingest",
                                  "rotate", "vault", "東京", "晴れ"]), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(words)
def test_every_citation_slices_its_file_exactly(coll: Collection, question: list[str]) -> None:
    root = Path(coll.snapshot.config["roots"][0])
    for c in ask(coll, " ".join(question)).citations:
        text = file_text(root, c.path)
        assert text[c.start:c.end] == c.text
        assert text.count("\n", 0, c.start) + 1 == c.start_line
        assert text.encode()[c.byte_start:c.byte_end].decode() == c.text


def test_a_sentence_is_never_cited_twice(make_tree: TreeMaker, home: Path) -> None:
    """Scored semantically, a unit of a further passage is welcome; the same sentence in
    another file, or the same span through an overlapping chunk, is not a further one."""
    import numpy as np

    from groundkit.answer import Passage
    from groundkit.answer.extractive import extract

    same = "Deployment logs are kept for 30 days."
    root = make_tree({"a.md": f"{same}\n\nAlpha beta gamma.\n",
                      "b.md": f"{same}\n\nDelta epsilon zeta.\n"})
    index("d", IndexConfig(roots=(str(root),)), home=home)
    coll = Collection.open("d", home)
    hits = coll.search("deployment logs kept", top_k=5, verify=True, collapse=False)
    passages = [Passage(number=i, collection="d", hit=h, verdict=h.verdict.status)
                for i, h in enumerate(hits, start=1)]
    assert len(passages) == 2
    vector = np.ones(4) / 2.0  # every unit scores the same: only the rules choose

    def embed(texts: object) -> np.ndarray:
        return np.tile(vector, (len(list(texts)), 1))  # type: ignore[call-overload]

    sentences = extract("deployment logs kept", passages, coll.snapshot.bm25(),
                        semantic=(vector, embed))
    texts = [s.text for s in sentences]
    assert texts.count(same) == 1
    spans = [(c.path, c.start, c.end) for s in sentences for c in s.citations]
    assert len(spans) == len(set(spans))


def test_of_two_equally_good_sentences_the_better_retrieved_passage_is_quoted_first(
        make_tree: TreeMaker, home: Path) -> None:
    import dataclasses

    import numpy as np

    from groundkit.answer import Passage
    from groundkit.answer.extractive import extract

    root = make_tree({"a.md": "Backups run nightly at two.\n",
                      "b.md": "Snapshots are taken every hour.\n"})
    index("w", IndexConfig(roots=(str(root),)), home=home)
    coll = Collection.open("w", home)
    a, b = sorted(coll.search("backups snapshots", top_k=5, verify=True),
                  key=lambda h: h.chunk.doc_id)
    vector = np.ones(4) / 2.0  # both sentences score the same

    def embed(texts: object) -> np.ndarray:
        return np.tile(vector, (len(list(texts)), 1))  # type: ignore[call-overload]

    def first(score_a: float, score_b: float) -> str:
        passages = [Passage(number=1, collection="w", verdict=a.verdict.status,  # type: ignore[union-attr]
                            hit=dataclasses.replace(a, score=score_a)),
                    Passage(number=2, collection="w", verdict=b.verdict.status,  # type: ignore[union-attr]
                            hit=dataclasses.replace(b, score=score_b))]
        return extract("q", passages, coll.snapshot.bm25(), semantic=(vector, embed))[0].text

    assert first(1.0, 5.0) == "Snapshots are taken every hour."
    assert first(5.0, 1.0) == "Backups run nightly at two."
