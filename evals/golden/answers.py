"""Answer stages: ``grk ask`` on the golden questions, scored by their quotes.

For every question the extractive answerer (:func:`groundkit.answer.ask`, BM25, its
default five passages) answers from the suite's baseline collection. A citation is
*correct* when it overlaps a gold quote's span in the same document (the same rule
as the chunk judgments, at the level of the quoted span):

* **answer success** — the share of judged questions with at least one correct
  citation (unanswered ones count as failures);
* **citation precision** — the share of all citations given to judged questions
  that are correct;
* **no-answer answered** — the share of no-answer questions that got an answer;
* **citations per answer**, **duplicate citations** (a file span cited twice in one
  answer: should be none), **retrieved in the top 5** (the share of judged questions
  with a gold quote in a passage the answerer was given) and **kept** (the share of
  those the answer then cites correctly: what sentence choice loses of what retrieval
  found); **superseded first** counts the answers whose first citation is of a
  document that says it is superseded (golden: the archived Birchline policy);
  **furniture quotes** counts citations that quote page furniture (a running head, a page
  number, a contents line, navigation: must be 0), and the **formats slice**
  (``formats_*``) repeats answer success and citation precision on the judged questions
  whose gold quotes lie in PDF, HTML, DOCX, ODT or EPUB files.

Beside them, ``furniture`` scores the furniture detector against a labelled sample of
golden v4's PDF and HTML pages (:mod:`evals.golden.furniture`).

Per mode (``by_mode``: bm25, dense, hybrid, on the test part; dense and hybrid from
the suite's MiniLM collection when the run has it), the same scores; hybrid's also
with its sentences scored by the embedding alone (``embedding_only``: no lexical share).

**Choices** (``choices``): each way of choosing sentences (:class:`groundkit.answer.Choice`:
the keep threshold, near-duplicate removal, table headers as context, question words,
the passage lift, one sentence only) measured side by side in BM25 mode, on the train
and calibration parts together (where a default may be chosen) and on the test part
(where it is reported).

**Conflicts** (``conflicts``, golden v4 on): on the questions with the ``conflict``
trait (a current passage and a superseded one that answer differently), the share
whose answer shows the disagreement (a conflict with one side on a current gold quote
and the other on a superseded one) and the share whose first citation is the current
source; on the other judged questions, the share whose answer reports any conflict
(false alarms, as far as the golden set knows).

With the gate on (the BM25 gate calibrated on the calibration part's no-answer
questions, alpha :data:`ALPHA`, as ``grk ask --abstain`` would), the same on the
test part; the gate never changes an answer, it only withholds it. Answers written
by a language model are measured only with a real model (``EVAL_GATED=1``); without
one the block says "not measured", never a number.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evals.report import model as rpt
from groundkit.answer import Answer, Choice, Citation, ask
from groundkit.collection import Collection
from groundkit.embeddings.ollama import OLLAMA_DEFAULT_HOST
from groundkit.errors import GroundkitError, MissingDependencyError, ProviderError
from groundkit.progress import ProgressBar
from groundkit.retrieval import gate

ALPHA = 0.1
MODE = "bm25"
ANSWERED = ("extractive", "llm")
LLM_QUESTIONS = 100
"""Test questions a gated run asks the model (a local model answers a few a second)."""

Signals = Callable[[str], Mapping[str, float]]
"""Question text -> the mode's confidence signals (the suite's evidence cache)."""


BY_MODE = ("bm25", "dense", "hybrid")
CHOICES: dict[str, Choice] = {
    "default": Choice(),
    "three-sentences": Choice(max_sentences=3),
    "three-sentences-keep-0.7": Choice(max_sentences=3, keep=0.7),
    "three-sentences-keep-0.9": Choice(max_sentences=3, keep=0.9),
    "three-sentences-near-duplicates-0.8": Choice(max_sentences=3, redundancy=0.8),
    "two-sentences": Choice(max_sentences=2),
    "no-header-context": Choice(header_context=False),
    "question-words-scored": Choice(question_words=True),
    "no-passage-lift": Choice(passage_weight=0.0),
    "no-term-coverage": Choice(coverage=0.0),
    "no-answer-type": Choice(answer_type=0.0),
    "passage-rank-0.5": Choice(passage_rank=0.5),
    "lexical-only": Choice(coverage=0.0, answer_type=0.0),
    "superseded-as-current": Choice(superseded=1.0),
}
"""The sentence choices the harness compares (``default`` is what ``grk ask`` does)."""
_SHOWN = ("answer_success", "citation_precision", "kept", "citations_per_answer",
          "superseded_first")


def answer_block(questions: Sequence[rpt.Question], coll: Collection,
                 signals: Signals) -> dict[str, Any]:
    """The report's ``answers`` block (see the module docstring), ``by_mode`` holding
    bm25's: :func:`add_modes` adds the modes that embed, where the model may run."""
    by_choice = _answered(questions, coll)
    answers = by_choice["default"]
    scorer = gate.SCORERS[MODE]
    name = scorer.signals["bm25"]
    calibration = sorted(signals(q.text)[name] for q in questions
                         if q.split == "calibration" and not q.gold)
    test = [q for q in questions if q.split == "test"]
    gated = {q.query_id: bool(calibration) and
             gate.p_value(calibration, signals(q.text)[name]) <= ALPHA for q in test}
    return {
        "extractive": {
            "mode": MODE, "top_k": 5, "all": _scores(questions, answers),
            "gate": {"alpha": ALPHA, "n0": len(calibration), "signal": name, "part": "test",
                     **_scores(test, answers, gated)} if calibration else None,
            "by_mode": {MODE: {"measured": True, "part": "test", "stage": MODE,
                               **_scores(test, answers)}},
            "choices": _choices(questions, by_choice),
            "conflicts": _conflicts(questions, answers),
        },
        "llm": _llm_block(questions, coll),
    }


def add_modes(block: dict[str, Any], questions: Sequence[rpt.Question],
              embedded: Collection | None, stage: str) -> None:
    """The dense and hybrid extractive answers on the test part, from ``embedded`` (the
    collection, with vectors, of the run's ``stage``), into ``block["extractive"]
    ["by_mode"]``; each records the stage whose collection answered (its pins go there)."""
    test = [q for q in questions if q.split == "test"]
    by_mode = block["extractive"]["by_mode"]
    for mode in BY_MODE:
        if mode in by_mode:
            continue
        if embedded is None:
            by_mode[mode] = {"measured": False, "reason": "not measured: the run has no "
                             "embedding stage (dense-minilm) whose collection it can use"}
            continue
        answers = _each(f"answers ({mode}, top 5, test part)", test, embedded, mode=mode)
        by_mode[mode] = {"measured": True, "part": "test", "stage": stage,
                         **_scores(test, answers)}
        if mode == "hybrid":  # the lexical share of a unit's score, against none
            alone = Choice(lexical_share=0.0)
            scored = _scores(test, _each("answers (hybrid, embedding only, test part)", test,
                                         embedded, mode=mode, choice=alone))
            by_mode[mode]["embedding_only"] = {"choice": alone.to_dict(),
                                               **{k: scored[k] for k in _SHOWN}}


def _answered(questions: Sequence[rpt.Question],
              coll: Collection) -> dict[str, dict[str, Answer]]:
    """Every question's answer by the default choice, and, where the questions have the
    parts :func:`_choices` compares, every split question's answer by each other choice
    of :data:`CHOICES`. Question by question: the passages one question's answers read
    recur across the choices (and their units are cached, :mod:`groundkit.answer`).
    Progress goes to stderr, as ``grk index``'s does."""
    parts = {q.split for q in questions}
    split = [] if not ({"train", "calibration"} & parts and "test" in parts) else [
        name for name in CHOICES if name != "default"]
    by_choice: dict[str, dict[str, Answer]] = {name: {} for name in ("default", *split)}
    ways = f"{1 + len(split)} ways of choosing sentences" if split else "the default choice"
    title = f"answers ({MODE}, top 5, {ways})"
    with ProgressBar(title, unit="questions") as bar:
        for done, q in enumerate(questions):
            bar.update(done, len(questions))
            for name in by_choice:
                if name == "default" or q.split in ("train", "calibration", "test"):
                    by_choice[name][q.query_id] = ask(coll, q.text, mode=MODE,
                                                      choice=CHOICES[name])
        bar.update(len(questions), len(questions))
    return by_choice


def _each(title: str, questions: Sequence[rpt.Question], coll: Collection,
          **options: Any) -> dict[str, Answer]:
    """``ask(coll, question, **options)`` for every question, with progress on stderr."""
    answers: dict[str, Answer] = {}
    with ProgressBar(title, unit="questions") as bar:
        for done, q in enumerate(questions):
            bar.update(done, len(questions))
            answers[q.query_id] = ask(coll, q.text, **options)
        bar.update(len(questions), len(questions))
    return answers


def _choices(questions: Sequence[rpt.Question],
             by_choice: Mapping[str, Mapping[str, Answer]]) -> dict[str, Any]:
    """Every choice of :data:`CHOICES` on the tuning parts and on the test part (bm25)."""
    tune = [q for q in questions if q.split in ("train", "calibration")]
    test = [q for q in questions if q.split == "test"]
    if not tune or not test:
        return {"measured": False, "reason": "not measured: the question set has no split"}
    out: dict[str, Any] = {"measured": True, "mode": MODE, "tune": "train+calibration",
                           "report": "test", "variants": {}}
    for name, choice in CHOICES.items():
        answers = by_choice[name]
        scored = {part: _scores(qs, answers) for part, qs in (("tune", tune), ("test", test))}
        out["variants"][name] = {"choice": choice.to_dict(), **{
            part: {k: s[k] for k in _SHOWN} for part, s in scored.items()},
            "conflicts": _conflicts([*tune, *test], answers)}
    return out


def _conflicts(questions: Sequence[rpt.Question],
               answers: Mapping[str, Answer]) -> dict[str, Any] | None:
    """The conflict questions' scores (see the module docstring); ``None`` without any."""
    asked = [q for q in questions if "conflict" in q.traits]
    if not asked:
        return None
    others = [q for q in questions if q.gold and "conflict" not in q.traits]
    shown = sum(1 for q in asked if _shows(answers[q.query_id], q))
    first = sum(1 for q in asked if answers[q.query_id].citations
                and _correct(answers[q.query_id].citations[0], q))
    alarms = sum(1 for q in others if answers[q.query_id].conflicts)
    return {"questions": len(asked), "shown": shown / len(asked),
            "current_first": first / len(asked), "other_questions": len(others),
            "false_alarms": alarms / len(others) if others else None,
            "by_part": {part: sum(1 for q in asked if q.split == part)
                        for part in ("train", "calibration", "test")}}


def _shows(answer: Answer, question: rpt.Question) -> bool:
    """Whether the answer reports a conflict between a current gold quote and a
    superseded one of the question."""
    def on(c: Citation, gold: Sequence[rpt.GoldAnswer]) -> bool:
        return any(g.doc_id == c.path and c.start < g.end and g.start < c.end for g in gold)

    return any(any(on(s.citation, question.gold) for s in conflict.sides)
               and any(on(s.citation, question.conflicting) for s in conflict.sides)
               for conflict in answer.conflicts)


def _scores(questions: Sequence[rpt.Question], answers: Mapping[str, Answer],
            allowed: Mapping[str, bool] | None = None) -> dict[str, Any]:
    def shown(qid: str) -> list[Citation]:
        if allowed is not None and not allowed[qid]:
            return []
        return answers[qid].citations if answers[qid].kind in ANSWERED else []

    judged = [q for q in questions if q.gold]
    no_answer = [q for q in questions if not q.gold]
    extracted = [q for q in judged if _extracted(q)]
    cited = [(q, c) for q in judged for c in shown(q.query_id)]
    right = {q.query_id for q in judged if any(_correct(c, q) for c in shown(q.query_id))}
    good = sum(1 for q, c in cited if _correct(c, q))
    found = [q for q in judged if any(_retrieved(p, q) for p in answers[q.query_id].passages)]
    answered_judged = sum(1 for q in judged if shown(q.query_id))
    return {
        "citations_per_answer": len(cited) / answered_judged if answered_judged else None,
        "duplicate_citations": sum(_duplicates(shown(q.query_id)) for q in questions),
        "superseded_first": sum(1 for q in questions if shown(q.query_id)
                                and shown(q.query_id)[0].superseded is not None),
        "retrieved_top5": len(found) / len(judged) if judged else None,
        "kept": (sum(1 for q in found if q.query_id in right) / len(found)
                 if found else None),
        "questions": len(questions), "judged": len(judged), "no_answer": len(no_answer),
        "answered": sum(1 for q in questions if shown(q.query_id)),
        "answer_success": len(right) / len(judged) if judged else None,
        "citation_precision": good / len(cited) if cited else None,
        "citations": len(cited),
        "no_answer_answered": (sum(1 for q in no_answer if shown(q.query_id)) / len(no_answer)
                               if no_answer else None),
        "furniture_quotes": sum(_furniture(answers[q.query_id], c)
                                for q in questions for c in shown(q.query_id)),
        "formats_judged": len(extracted),
        "formats_answer_success": (sum(1 for q in extracted if q.query_id in right)
                                   / len(extracted) if extracted else None),
        "formats_citation_precision": _precision(
            [(q, c) for q in extracted for c in shown(q.query_id)]),
    }


EXTRACTED = (".pdf", ".html", ".htm", ".xhtml", ".docx", ".odt", ".epub")
"""The formats slice: questions whose gold quotes lie in files read through an extractor."""


def _extracted(question: rpt.Question) -> bool:
    return any(g.doc_id.lower().endswith(EXTRACTED) for g in question.gold)


def _precision(cited: Sequence[tuple[rpt.Question, Citation]]) -> float | None:
    return sum(1 for q, c in cited if _correct(c, q)) / len(cited) if cited else None


def _furniture(answer: Answer, citation: Citation) -> bool:
    """Whether a citation quotes any of its passage's furniture (should never happen)."""
    passage = next((p for p in answer.passages if p.number == citation.passage), None)
    if passage is None:
        return False
    chunk = passage.chunk
    return any(chunk.start + a < citation.end and citation.start < chunk.start + b
               for a, b, _ in chunk.furniture)


def _duplicates(citations: Sequence[Citation]) -> int:
    """Citations of a file span already cited in the same answer."""
    spans = [(c.path, c.start, c.end) for c in citations]
    return len(spans) - len(set(spans))


def _retrieved(passage: Any, question: rpt.Question) -> bool:
    """Whether a passage the answerer was given holds part of a gold quote."""
    chunk = passage.chunk
    return _overlaps(chunk.doc_id, chunk.start, chunk.end, question)


def _correct(citation: Citation, question: rpt.Question) -> bool:
    return _overlaps(citation.path, citation.start, citation.end, question)


def _overlaps(doc_id: str, start: int, end: int, question: rpt.Question) -> bool:
    """Whether ``[start, end)`` of ``doc_id`` overlaps one of the question's gold quotes."""
    return any(g.doc_id == doc_id and start < g.end and g.start < end for g in question.gold)


def _llm_block(questions: Sequence[rpt.Question], coll: Collection) -> dict[str, Any]:
    """LLM answers on the first :data:`LLM_QUESTIONS` test questions, with a real model only.

    ``EVAL_GATED=1`` turns it on; ``GROUNDKIT_LLM_MODEL`` (default ``llama3.2``) and
    ``GROUNDKIT_LLM_HOST`` (default Ollama's local address) choose the model. A model
    that cannot be reached is "not measured" with the reason, never a number.
    """
    if os.environ.get("EVAL_GATED") != "1":
        return {"measured": False, "reason": "not measured: no language model here (answers "
                "written by a model are measured only with a real Ollama, EVAL_GATED=1)"}
    model = os.environ.get("GROUNDKIT_LLM_MODEL", "llama3.2")
    host = os.environ.get("GROUNDKIT_LLM_HOST", OLLAMA_DEFAULT_HOST)
    test = [q for q in questions if q.split == "test"][:LLM_QUESTIONS]
    try:
        digest = _digest(model, host)
        answers = {q.query_id: ask(coll, q.text, mode=MODE, llm=f"ollama:{model}",
                                   llm_host=host) for q in test}
    except GroundkitError as exc:
        return {"measured": False, "reason": f"not measured: {exc}"}
    withheld = sum(1 for a in answers.values() if a.kind == "withheld")
    return {"measured": True, "model": model, "digest": digest, "host": host, "part": "test",
            "limit": LLM_QUESTIONS, "withheld": withheld, **_scores(test, answers)}


def _digest(model: str, host: str) -> str | None:
    """The model's digest as the server lists it (``None`` when it does not list it)."""
    try:
        import httpx
        import ollama
    except ImportError as exc:
        raise MissingDependencyError("ollama", "ollama", "LLM answer stages") from exc
    client = ollama.Client(host=host, timeout=30, trust_env=False)
    try:
        listed = client.list().models
    except (httpx.HTTPError, ollama.ResponseError, ConnectionError) as exc:
        raise ProviderError(f"cannot list the models of the Ollama server at {host}: {exc}; "
                            "start it with `ollama serve`") from None
    finally:
        client.close()  # type: ignore[no-untyped-call]
    wanted = {model, model if ":" in model else f"{model}:latest"}
    return next((m.digest for m in listed if m.model in wanted), None)
