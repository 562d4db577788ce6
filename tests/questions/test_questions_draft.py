"""grk questions draft: exact, once-only quotes spread over documents; no-answer drafts;
proposals from a chat model (the loopback Ollama stand-in), kept as drafts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker
from questions_corpus import DOCS, LICENSE

from groundkit.cli import main
from groundkit.questions.parse import find_all
from groundkit.questions.rules import probe_hits
from groundkit.testing.ollama_standin import OllamaStandin

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ops(make_tree: TreeMaker, home: Path) -> str:
    assert main(["index", str(make_tree(DOCS)), "-c", "ops"]) == 0
    return "ops"


def drafted(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict]:
    capsys.readouterr()
    assert main(["questions", "draft", *argv]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_every_draft_quotes_a_whole_unit_found_once_in_the_collection(
        ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = drafted(capsys, "-c", "ops", "--n", "20", "--no-answer", "0")
    assert rows and all(r["status"] == "draft" and r["question"] == "" for r in rows)
    for r in rows:
        (answer,) = r["answers"]
        quote = answer["quote"]
        assert sum(len(find_all(t, quote)) for t in DOCS.values()) == 1
        assert len(find_all(DOCS[answer["doc_id"]], quote)) == 1
        assert LICENSE not in quote and "on-call" not in quote  # boilerplate, duplicated file
    # fewer candidates than asked: all of them, from the three documents that have any
    assert {r["answers"][0]["doc_id"] for r in rows} == {"ops/logging.md", "eng/release.md",
                                                         "eng/backups.md"}
    assert len(rows) == len({r["answers"][0]["quote"] for r in rows}) == 7


def test_the_sample_spreads_over_documents_first_and_follows_its_seed(
        ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    first = drafted(capsys, "-c", "ops", "--n", "3", "--no-answer", "0", "--seed", "1")
    assert len({r["answers"][0]["doc_id"] for r in first}) == 3  # one per document
    again = drafted(capsys, "-c", "ops", "--n", "3", "--no-answer", "0", "--seed", "1")
    assert again == first
    other = [drafted(capsys, "-c", "ops", "--n", "3", "--no-answer", "0", "--seed", str(s))
             for s in range(2, 6)]
    assert any(o != first for o in other)


def test_no_answer_drafts_have_absent_probes_and_an_exact_near_miss(
        ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in drafted(capsys, "-c", "ops", "--n", "2", "--no-answer", "3")
            if r["kind"] == "no_answer"]
    assert rows
    for r in rows:
        assert r["answers"] == [] and len(r["probes"]) == 2
        assert all(probe_hits(p, DOCS) == [] for p in r["probes"])
        near = r["near_miss"]
        assert len(find_all(DOCS[near["doc_id"]], near["quote"])) == 1


def test_drafts_go_to_a_file_that_is_never_replaced_silently(
        ops: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "drafts.jsonl"
    assert main(["questions", "draft", "-c", "ops", "--n", "2", "--out", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["entries"] == len(out.read_text().splitlines())
    assert main(["questions", "draft", "-c", "ops", "--out", str(out)]) == 2
    assert "exists" in capsys.readouterr().err


def test_a_chat_model_proposes_questions_that_stay_drafts(
        ops: str, capsys: pytest.CaptureFixture[str]) -> None:
    proposal = json.dumps({"question": "How long are deployment logs kept?",
                           "paraphrase": "For what span do we retain release output?",
                           "near_miss": "Who may delete deployment logs early?"})
    replies = [f"Sure! {proposal}", "I cannot help with that."]
    with OllamaStandin(models=["llama3.2"], chat=replies) as server:
        rows = drafted(capsys, "-c", "ops", "--n", "2", "--no-answer", "0",
                       "--llm", "ollama:llama3.2", "--ollama-host", server.url)
        asked = server.chat_requests
    assert len(asked) == 2 and asked[0]["model"] == "llama3.2"
    assert rows[0]["answers"][0]["quote"] in asked[0]["messages"][-1]["content"]
    assert all(r["status"] == "draft" for r in rows)
    by_note = {r["id"]: r for r in rows}
    assert rows[0]["question"] == "How long are deployment logs kept?"
    assert rows[1]["question"] == "" and "gave no usable proposal" in rows[1]["notes"]
    paraphrase = next(r for r in rows if "paraphrase" in r["traits"])
    assert paraphrase["answers"] == rows[0]["answers"]
    near = next(r for r in rows if r["kind"] == "no_answer")
    assert near["near_miss"] == rows[0]["answers"][0] and near["answers"] == []
    assert len(by_note) == 4


def test_on_golden_v2_100_drafts_quote_exactly_over_at_least_40_documents(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(REPO / "golden" / "v2" / "docs"), "-c", "v2"]) == 0
    rows = drafted(capsys, "-c", "v2", "--n", "100", "--seed", "1")
    passages = [r["answers"][0] for r in rows if r["kind"] == "answerable"]
    docs = {p: (REPO / "golden" / "v2" / "docs" / p).read_bytes().decode("utf-8")
            for p in {a["doc_id"] for a in passages}}
    assert len(passages) == 100
    assert all(len(find_all(docs[a["doc_id"]], a["quote"])) == 1 for a in passages)
    assert len(docs) >= 40
