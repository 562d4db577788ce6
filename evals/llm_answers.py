"""The local reader writing: checked answers (``grk ask --llm llamacpp:...``) and query
rewrites, measured on small fixed samples of a golden version's test part.

* **answers** — the first :data:`ANSWERS` answerable and :data:`NO_ANSWERS` no-answer
  questions of the judge's sample (:func:`evals.llm_stage.sample`), each answered from
  its BM25 top :data:`TOP_K` verified passages as ``grk ask`` does
  (:func:`groundkit.answer.llm.synthesize`: the same prompt, every quote checked). A
  citation is *correct* when it overlaps a gold quote (the answer harness's rule):
  answer success, citation precision, the share of shown sentences with no verified
  quote (*unsupported*), withheld replies, and how often a no-answer question got an
  answer; and ALCE's citation recall and precision of the shown sentences, the reader
  judging entailment (:mod:`evals.llm_citations`).
* **rewrite** — :data:`REWRITES` paraphrase questions of the test part (seeded order,
  by domain): BM25's nDCG@10 for the model's rewritten query against the question's
  own, paired bootstrap interval (:mod:`evals.score.stats`).

Every call's CPU and wall seconds are recorded.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

from evals import llm_stage as st
from evals.llm_citations import alce
from evals.report import model as rpt
from evals.score import metrics, stats
from groundkit.answer.llm import rewrite, synthesize
from groundkit.answer.model import Passage
from groundkit.errors import GroundkitError
from groundkit.retrieval.relevance import probability, supports

ANSWERS = 12
NO_ANSWERS = 6
REWRITES = 16
TOP_K = 5
"""Passages an answer draws on (``grk ask``'s default)."""


class Timed:
    """A chat model that records the CPU and wall seconds of each call."""

    def __init__(self, chat: Any) -> None:
        self.chat_model = chat
        self.cpu: list[float] = []
        self.wall: list[float] = []

    @property
    def identity(self) -> dict[str, str]:
        return dict(self.chat_model.identity)

    def chat(self, messages: list[dict[str, str]]) -> str:
        cpu, wall = time.process_time(), time.perf_counter()
        try:
            return str(self.chat_model.chat(messages))
        finally:
            self.cpu.append(time.process_time() - cpu)
            self.wall.append(time.perf_counter() - wall)

    def cost(self) -> dict[str, Any]:
        n = len(self.cpu)
        return {"calls": n, "cpu_s_total": sum(self.cpu),
                "cpu_s_per_call": sum(self.cpu) / n if n else None,
                "wall_s_per_call": sum(self.wall) / n if n else None}


def _correct(doc_id: str, start: int, end: int, question: rpt.Question) -> bool:
    return any(g.doc_id == doc_id and start < g.end and g.start < end for g in question.gold)


class Entailment:
    """The reader as ALCE's entailment judge, each call's CPU seconds recorded."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.cpu: list[float] = []

    def __call__(self, claim: str, passages: Sequence[str]) -> bool:
        cpu = time.process_time()
        try:
            return probability(supports(claim, passages, self.reader)) >= st.THRESHOLD
        finally:
            self.cpu.append(time.process_time() - cpu)


def answers_block(coll: Any, chosen: st.Sample, chat: Any) -> dict[str, Any]:
    """Checked answers on the sample's first questions (see the module docstring); ``chat``
    is the reader, which also judges the citations' entailment."""
    timed = Timed(chat)
    questions = [*chosen.answerable[:ANSWERS], *chosen.no_answer[:NO_ANSWERS]]
    rows, cited_sentences = [], []
    for q in questions:
        hits = coll.search(q.text, top_k=TOP_K, verify=True)
        passages = [Passage(number=i, collection=coll.name, hit=h, verdict=h.verdict.status)
                    for i, h in enumerate(hits, start=1)]
        try:
            result = synthesize(q.text, passages, timed)
        except GroundkitError as exc:  # one question's failure is counted, not fatal
            rows.append({"query_id": q.query_id, "answerable": bool(q.gold), "kind": "error",
                         "sentences": 0, "unsupported": 0, "citations": 0, "correct": 0,
                         "gold_in_passages": False, "reply": str(exc)})
            continue
        shown = result.sentences if result.kind == "llm" else ()
        cited = [c for s in shown for c in s.citations]
        texts = {p.chunk.chunk_id: p.text for p in passages}
        cited_sentences += [(s.text, [texts[c] for c in dict.fromkeys(
            c.chunk_id for c in s.citations)]) for s in shown]
        rows.append({"query_id": q.query_id, "answerable": bool(q.gold), "kind": result.kind,
                     "sentences": len(shown), "unsupported": sum(not s.supported for s in shown),
                     "citations": len(cited),
                     "correct": sum(_correct(c.path, c.start, c.end, q) for c in cited),
                     "gold_in_passages": any(_correct(p.chunk.doc_id, p.chunk.start,
                                                      p.chunk.end, q) for p in passages),
                     "reply": result.reply})
    entailment = Entailment(chat)
    return {"questions": len(questions), "top_k": TOP_K, "mode": "bm25",
            **answer_scores(rows), "alce": {**alce(cited_sentences, entailment),
                                            "judge_calls": len(entailment.cpu),
                                            "judge_cpu_s": sum(entailment.cpu)},
            "cost": timed.cost(), "rows": rows}


def answer_scores(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Answer success, citation precision, unsupported sentences, no-answer behaviour."""
    judged = [r for r in rows if r["answerable"]]
    no_answer = [r for r in rows if not r["answerable"]]
    citations = sum(r["citations"] for r in judged)
    sentences = sum(r["sentences"] for r in rows)
    return {
        "answerable": len(judged), "no_answer": len(no_answer),
        "answer_success": (sum(r["correct"] > 0 for r in judged) / len(judged)
                           if judged else None),
        "citation_precision": (sum(r["correct"] for r in judged) / citations
                               if citations else None),
        "unsupported_sentence_rate": (sum(r["unsupported"] for r in rows) / sentences
                                      if sentences else None),
        "withheld": sum(r["kind"] == "withheld" for r in rows),
        "errors": sum(r["kind"] == "error" for r in rows),
        "said_not_in_passages": sum(r["kind"] == "not_in_passages" for r in rows),
        "no_answer_answered": (sum(r["kind"] == "llm" for r in no_answer) / len(no_answer)
                               if no_answer else None),
        "gold_in_passages": sum(r["gold_in_passages"] for r in judged),
    }


def rewrite_block(run: Any, questions: Sequence[rpt.Question], qrels: metrics.Qrels,
                  chat: Any, settings: rpt.Settings) -> dict[str, Any]:
    """BM25 on the model's rewrite of each paraphrase question against the question."""
    timed = Timed(chat)
    test = [q for q in questions if q.split == "test" and q.gold and "paraphrase" in q.traits]
    chosen = st.stratified(test, REWRITES, lambda q: q.domain)
    before: dict[str, dict[str, float]] = {}
    after: dict[str, dict[str, float]] = {}
    rewrites = {}
    for q in chosen:
        query = rewrite(q.text, timed)
        rewrites[q.query_id] = query
        for run_of, text in ((before, q.text), (after, query)):
            records = run.rank(dataclasses.replace(q, text=text), st.FIRST_STAGE, 1)
            run_of[q.query_id] = {r.chunk_id: float(st.FIRST_STAGE - i)
                                  for i, r in enumerate(records)}
    judged = {q.query_id: qrels[q.query_id] for q in chosen}
    base = metrics.per_query(judged, before, ["nDCG@10"])["nDCG@10"]
    new = metrics.per_query(judged, after, ["nDCG@10"])["nDCG@10"]
    c = stats.compare(base, new, resamples=settings.resamples,
                      permutations=settings.permutations, seed=settings.seed)
    return {"questions": len(chosen), "trait": "paraphrase", "first_stage": "bm25",
            "nDCG@10": {"question": c.baseline_mean, "rewrite": c.stage_mean,
                        "delta": c.delta, "ci": [c.ci_low, c.ci_high], "p_value": c.p_value,
                        "wins_ties_losses": [c.wins, c.ties, c.losses]},
            "cost": timed.cost(), "rewrites": rewrites}
