"""The reader's stages without a model: the sample, kappa, agreement, the rerank and gate
blocks over a stand-in reader, and the report that says not measured."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from evals import llm_stage as st
from evals.__main__ import main
from evals.report import model as rpt
from evals.score import abstention


def question(qid: str, *, split: str = "test", gold: bool = True, traits: tuple[str, ...] = (),
             domain: str = "d", near_miss: bool = False) -> rpt.Question:
    answers = (rpt.GoldAnswer(doc_id="a.md", quote="x", start=0, end=1),) if gold else ()
    return rpt.Question(query_id=qid, text=f"question {qid}", kind="answerable" if gold
                        else "no_answer", traits=traits, gold=answers, domain=domain,
                        split=split, near_miss=near_miss)


def test_the_sample_is_fixed_stratified_and_keeps_to_its_parts() -> None:
    qs = [question(f"p{i}", traits=("paraphrase",)) for i in range(10)]
    qs += [question(f"e{i}", traits=("exact_identifier",)) for i in range(2)]
    qs += [question(f"n{i}", gold=False, near_miss=True) for i in range(5)]
    qs += [question(f"c{i}", gold=False, split="calibration") for i in range(5)]
    qs += [question(f"t{i}", split="train") for i in range(5)]
    qs += [question(f"u{i}", split="train", gold=False) for i in range(2)]
    sizes = {"answerable": 4, "no_answer": 3, "calibration": 2, "train_answerable": 3,
             "train_no_answer": 1}
    chosen = st.sample(qs, **sizes)
    assert chosen == st.sample(list(reversed(qs)), **sizes)
    traits = [q.traits[0] for q in chosen.answerable]
    assert traits.count("exact_identifier") == 2  # round-robin: the small stratum is not lost
    assert all(q.split == "test" and not q.gold for q in chosen.no_answer)
    assert all(q.split == "calibration" for q in chosen.calibration)
    assert all(q.split == "train" for q in chosen.train)
    assert chosen.sizes() == {"test_answerable": 4, "test_no_answer": 3,
                              "calibration_no_answer": 2, "train_answerable": 3,
                              "train_no_answer": 1}
    assert len(chosen.questions()) == 4 + 3 + 2 + 3 + 1


def test_the_threshold_is_the_one_with_the_best_kappa_on_the_rows_given() -> None:
    rows = [{"label": label, "p_yes": p, "score": math.log(p / (1 - p))}
            for label, p in ((True, 0.4), (True, 0.35), (False, 0.3), (False, 0.1))]
    assert st.train_threshold(rows) == 0.35  # splits them perfectly; 0.5 would say no to all
    assert st.agreement(rows, 0.35)["kappa"] == 1.0 and st.agreement(rows)["kappa"] == 0.0
    assert st.train_threshold([{"label": True, "p_yes": 0.9}]) is None


def test_the_judge_block_keeps_train_pairs_out_of_the_held_out_figures() -> None:
    def row(part: str, label: bool, p: float) -> dict[str, object]:
        return {"part": part, "kind": "answerable", "traits": ["none"], "label": label,
                "p_yes": p, "score": math.log(p / (1 - p)), "near_miss_passage": False}

    rows = [row("train", True, 0.4), row("train", False, 0.2),
            row("test", True, 0.45), row("test", False, 0.3), row("test", False, 0.6)]
    block = st.judge_block(rows)
    assert block["all"]["n"] == 3 and block["train"]["n"] == 2
    assert block["train_threshold"] == 0.4
    at = block["test_at_train_threshold"]
    assert (at["judge_yes_label_yes"], at["judge_yes_label_no"]) == (1, 1)


def test_kappa_is_cohens() -> None:
    pairs = [(True, True)] * 20 + [(True, False)] * 5 + [(False, True)] * 10 + \
        [(False, False)] * 15
    observed, expected = 35 / 50, (25 / 50) * (30 / 50) + (25 / 50) * (20 / 50)
    assert st.kappa(pairs) == pytest.approx((observed - expected) / (1 - expected))
    assert st.kappa([(True, True)] * 3) is None and st.kappa([]) is None


def test_agreement_counts_the_confusion_at_the_fixed_threshold() -> None:
    rows = [{"label": True, "p_yes": 0.9, "score": 2.0}, {"label": True, "p_yes": 0.4,
                                                           "score": -0.4},
            {"label": False, "p_yes": 0.5, "score": 0.0}, {"label": False, "p_yes": 0.1,
                                                            "score": -2.0}]
    got = st.agreement(rows)
    assert (got["judge_yes_label_yes"], got["judge_no_label_yes"], got["judge_yes_label_no"],
            got["judge_no_label_no"]) == (1, 1, 1, 1)
    assert got["agreement"] == 0.5 and got["auroc"] == pytest.approx(0.75)


class Reader:
    """Says yes to passages holding "42" (P(yes) 0.88), no otherwise (0.12)."""

    name, sha256, n_ctx = "stand-in", "0" * 64, 4096
    identity = {"options": "{}"}  # noqa: RUF012

    def next_token_probabilities(self, messages: list[dict[str, str]],
                                 words: Sequence[str]) -> dict[str, float]:
        yes = "42" in messages[1]["content"].split("Passage:", 1)[1]
        p = 0.88 if yes else 0.12
        return {w: (p if w == "yes" else 1 - p if w == "no" else 0.0) for w in words}

    def close(self) -> None:
        """Nothing held."""


def test_rerank_moves_the_judged_answer_up_and_reports_an_interval() -> None:
    ranked, qrels = [], {}
    for i in range(6):
        q = question(f"q{i}")
        ids = [f"c{i}-{k}" for k in range(12)]
        texts = ["noise"] * st.DEPTH
        texts[3] = "it is 42"
        ranked.append(st.Ranked(question=q, ids=ids, texts=texts, signals={}))
        qrels[q.query_id] = {ids[3]: 1}
    judgements = st.Judgements(Reader())
    block = st.rerank_block(ranked, judgements, None, qrels,
                            rpt.Settings(resamples=200, permutations=200))
    ndcg = block["measures"]["nDCG@10"]
    assert ndcg["bm25"] == pytest.approx(1 / math.log2(4 + 1))  # the answer at rank 4
    assert ndcg["reranked"] == pytest.approx(1.0) and ndcg["wins_ties_losses"] == [6, 0, 0]
    assert judgements.cost()["calls"] == 6 * 2  # "noise" once per question, "it is 42" once


def item(qid: str, split: str, answerable: bool, judge: float,
         bm25: float = 0.1) -> abstention.Item:
    return abstention.Item(query_id=qid, answerable=answerable, near_miss=not answerable,
                           retrieved=answerable, split=split,
                           signals={st.JUDGE_SIGNAL: judge, st.BM25_SIGNAL: bm25})


def gate_sample(test_judge: float = 3.0) -> list[abstention.Item]:
    items = [item(f"c{i}", "calibration", False, -3.0 + i / 10) for i in range(19)]
    items += [item(f"a{i}", "test", True, test_judge) for i in range(5)]
    items += [item(f"n{i}", "test", False, -3.0) for i in range(5)]
    items += [item(f"t{i}", "train", True, 1.0 + i, bm25=0.2) for i in range(4)]
    items += [item(f"u{i}", "train", False, -1.0 - i, bm25=0.2 - i / 100) for i in range(4)]
    return items


def test_gate_block_calibrates_on_the_calibration_items_only() -> None:
    block = st.gate_block(gate_sample())
    judge = block["scorers"]["judge"]
    at = next(a for a in judge["at_alpha"] if a["alpha"] == 0.1)
    assert block["n_calibration"] == 19 and judge["n0"] == 19 and judge["auroc"] == 1.0
    assert at["coverage_answerable"] == 1.0 and at["false_answer_rate"] == 0.0
    assert block["scorers"]["bm25"]["auroc"] == 0.5  # a constant signal separates nothing
    assert set(block["scorers"]) == {"bm25", "judge", "judge+bm25 (both)",
                                     "judge+bm25 (logistic)"}


def test_the_logistic_combination_is_fitted_on_the_train_items_only() -> None:
    block = st.gate_block(gate_sample())
    assert block["n_train"] == 8
    weights = dict(zip(block["logistic"]["signals"], block["logistic"]["weights"], strict=True))
    assert weights[st.JUDGE_SIGNAL] > 0  # the judge separates the train items
    other = st.gate_block(gate_sample(test_judge=-5.0))  # the test items change ...
    assert other["logistic"] == block["logistic"]  # ... the fitted weights do not
    combined = block["scorers"]["judge+bm25 (logistic)"]
    assert combined["auroc"] == 1.0 and other["scorers"]["judge+bm25 (logistic)"]["auroc"] <= 0.5


def test_without_train_questions_of_both_kinds_the_combination_is_not_measured() -> None:
    block = st.gate_block([i for i in gate_sample() if i.split != "train" or i.answerable])
    assert block["logistic"]["measured"] is False
    assert "judge+bm25 (logistic)" not in block["scorers"] and "judge" in block["scorers"]


def test_the_hybrid_gate_combines_the_judge_with_both_retrievers() -> None:
    items = [abstention.Item(query_id=i.query_id, answerable=i.answerable,
                             near_miss=i.near_miss, retrieved=i.retrieved, split=i.split,
                             signals={**i.signals, "dense.margin": 0.0})
             for i in gate_sample()]
    block = st.gate_block(items, "hybrid")
    assert set(block["scorers"]) == {"hybrid", "judge", "judge+hybrid (both)",
                                     "judge+hybrid (logistic)"}
    assert block["logistic"]["signals"] == sorted([st.JUDGE_SIGNAL, "bm25.idf_coverage",
                                                   "dense.margin"])


def test_without_the_model_the_report_says_not_measured(tmp_path: Path) -> None:
    out, page = tmp_path / "llm.json", tmp_path / "llm.html"
    code = main(["llm", "--model", str(tmp_path / "absent.gguf"), "--out", str(out),
                 "--html", str(page)])
    data = json.loads(out.read_text())
    assert code == 0 and data["measured"] is False
    assert data["reason"].startswith("not measured: ")
    assert "not measured" in page.read_text() and "<table" not in page.read_text()


class Chat:
    """Quotes the retention sentence when it is among the passages, else NOT_IN_PASSAGES;
    as an entailment judge, says yes when a passage holds the statement's quote."""

    name, sha256, n_ctx = "stand-in", "0" * 64, 4096

    def __init__(self) -> None:
        self.judged: list[str] = []

    def chat(self, messages: list[dict[str, str]]) -> str:
        if "kept for 30 days" in messages[-1]["content"]:
            return 'Logs are "kept for 30 days" [1]. They are also archived forever.'
        return "NOT_IN_PASSAGES"

    def next_token_probabilities(self, messages: list[dict[str, str]],
                                 words: Sequence[str]) -> dict[str, float]:
        passages, claim = messages[1]["content"].split("\n\nStatement: ", 1)
        self.judged.append(claim)
        p = 0.9 if "kept for 30 days" in passages and "kept for 30 days" in claim else 0.1
        return {w: (p if w == "yes" else 1 - p if w == "no" else 0.0) for w in words}


def test_answers_are_checked_and_scored_against_the_gold_spans(
        tmp_path: Path, home: Path) -> None:
    from evals.llm_answers import answers_block
    from groundkit.collection import Collection, IndexConfig, index

    text = "# Logs\n\nDeployment logs are kept for 30 days.\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "logs.md").write_text(text)
    index("k", IndexConfig(roots=(str(tmp_path / "docs"),)), home=home)
    start = text.index("kept for 30 days")
    answerable = rpt.Question(query_id="a", text="how long are deployment logs kept",
                              kind="answerable", traits=(), split="test", domain="d",
                              gold=(rpt.GoldAnswer(doc_id="logs.md", quote="kept for 30 days",
                                                   start=start, end=start + 16),))
    unanswerable = question("n", gold=False, near_miss=True)
    chosen = st.Sample(answerable=(answerable,), no_answer=(unanswerable,), calibration=())
    chat = Chat()
    with Collection.open("k", home) as coll:
        block = answers_block(coll, chosen, chat)
    assert block["answer_success"] == 1.0 and block["citation_precision"] == 1.0
    assert block["unsupported_sentence_rate"] == 1 / 2  # the second sentence quotes nothing
    assert block["no_answer_answered"] == 0.0
    assert [r["kind"] for r in block["rows"]] == ["llm", "empty"]  # nothing found: not asked
    assert block["cost"]["calls"] == 1
    # ALCE: the quoting sentence is entailed by its one passage; the other cites nothing
    assert block["alce"]["citation_recall"] == 1 / 2
    assert block["alce"]["citation_precision"] == 1 / 1
    assert block["alce"]["judge_calls"] == 1
    assert chat.judged[0].startswith('Logs are "kept for 30 days".')  # markers stripped


def test_a_rewrite_is_scored_by_the_ranking_it_gets() -> None:
    from evals.llm_answers import rewrite_block

    class Rewriter:
        def chat(self, messages: list[dict[str, str]]) -> str:
            return "Query: retention period\n"

    class Run:  # the question ranks its gold 2nd; the rewrite ranks it 1st
        def rank(self, q: rpt.Question, depth: int, shown: int) -> list[rpt.HitRecord]:
            order = ["gold", "other"] if q.text == "retention period" else ["other", "gold"]
            return [rpt.HitRecord(i + 1, f"{q.query_id}-{c}", "d.md", 0, 1, 1.0, "")
                    for i, c in enumerate(order)]

    qs = [question(f"p{i}", traits=("paraphrase",)) for i in range(4)]
    qs.append(question("x", traits=("exact_identifier",)))  # not a paraphrase: left out
    qrels = {q.query_id: {f"{q.query_id}-gold": 1} for q in qs}
    block = rewrite_block(Run(), qs, qrels, Rewriter(),
                          rpt.Settings(resamples=100, permutations=100))
    assert block["questions"] == 4 and block["rewrites"]["p0"] == "retention period"
    assert block["nDCG@10"]["question"] == pytest.approx(1 / math.log2(3))
    assert block["nDCG@10"]["rewrite"] == 1.0


def test_judgements_are_stored_and_reused_for_the_same_model_only(tmp_path: Path) -> None:
    store = tmp_path / "judgements.jsonl"
    first = st.Judgements(Reader(), store)
    first("q", "it is 42")
    first("q", "noise")

    class Refuses(Reader):
        def next_token_probabilities(self, messages: list[dict[str, str]],
                                     words: Sequence[str]) -> dict[str, float]:
            raise AssertionError("a stored judgement was asked again")

    again = st.Judgements(Refuses(), store)
    assert again("q", "it is 42") == first("q", "it is 42")
    assert again.cost()["reused_from_store"] == 1 and again.cost()["calls"] == 1

    class Other(Reader):
        sha256 = "1" * 64

    other = st.Judgements(Other(), store)
    other("q", "noise")
    assert other.reused == 0 and len(store.read_text().splitlines()) == 3


def test_the_page_shows_each_modes_gate_and_says_why_one_was_not_measured() -> None:
    from evals.llm_run import render

    rows = [{"part": part, "kind": "answerable", "traits": ["none"], "label": label,
             "p_yes": p, "score": math.log(p / (1 - p)), "near_miss_passage": False}
            for part, label, p in (("train", True, 0.4), ("train", False, 0.2),
                                   ("test", True, 0.45), ("test", False, 0.3))]
    measure = {"bm25": 0.5, "reranked": 0.6, "delta": 0.1, "ci": [0.0, 0.2], "p_value": 0.5}
    block = {"measured": True, "sample": {}, "judge": st.judge_block(rows),
             "model": {"model": "m", "sha256": "0" * 64, "runtime": "r", "options": "{}"},
             "cost": {"calls": 4, "cpu_s_per_call": 1.0, "wall_s_per_call": 1.0},
             "rerank": {"depth": 5, "questions": 1, "measures": {"nDCG@10": measure}},
             "gate": {"bm25": st.gate_block(gate_sample()),
                      "hybrid": {"measured": False, "reason": "not measured: no lancedb"}}}
    page = render(block)
    assert "(chosen on train)" in page and "train part" in page
    assert "judge+bm25 (logistic)" in page
    assert "hybrid gate: not measured: no lancedb" in page
