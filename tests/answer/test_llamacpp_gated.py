"""Every role of the local reader with the real model (EVAL_GATED=1 only).

Needs ``make llm`` (llama-cpp-python 0.3.36 and the pinned models in ``.cache/llm`` or
``$GROUNDKIT_LLM_DIR``). ``GROUNDKIT_LLM_TEST_MODEL`` picks the model (default: the 1.5B
reader; the 0.5B fixture is faster and a poorer reader). Without EVAL_GATED=1 every test
is skipped with the reason; with it, a missing runtime or model skips too, saying which.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer.llm import rewrite, synthesize
from groundkit.answer.model import Passage
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index
from groundkit.embeddings import gguf
from groundkit.embeddings.llamacpp import LlamaCppModel
from groundkit.errors import GroundkitError
from groundkit.retrieval.relevance import (
    NO,
    YES,
    ReaderReranker,
    judge,
    probability,
    supports,
)

MODEL = os.environ.get("GROUNDKIT_LLM_TEST_MODEL", gguf.READER)

pytestmark = [
    pytest.mark.gated,
    pytest.mark.skipif(os.environ.get("EVAL_GATED") != "1",
                       reason=f"needs llama-cpp-python and {MODEL} (make llm); set EVAL_GATED=1"),
]

RETENTION = ("# Retention\n\nAudit logs are kept for 30 days.\n"
             "After that they are deleted by the nightly job.\n")
TOPICAL = ("# Retention\n\nWe take retention seriously. Every log type has an owner, and the "
           "owners meet every quarter to review the retention schedule.\n")


@pytest.fixture(scope="module")
def reader() -> Iterator[LlamaCppModel]:
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        pytest.skip("llama-cpp-python is not installed: run `make llm`")
    try:
        model = LlamaCppModel(MODEL)
    except GroundkitError as exc:  # a missing model file: say which, do not fail
        pytest.skip(f"{MODEL}: {exc}")
    model.load()
    yield model
    model.close()


def test_yes_and_no_spellings_are_single_distinct_tokens(reader: LlamaCppModel) -> None:
    llm = reader._ensure()
    firsts = [tuple(llm.tokenize(w.encode(), add_bos=False, special=False)) for w in (*YES, *NO)]
    assert all(len(t) == 1 for t in firsts) and len(set(firsts)) == len(firsts)


def test_the_judge_prefers_the_passage_that_states_the_answer(reader: LlamaCppModel) -> None:
    question = "How long are audit logs kept?"
    answering, topical = judge(question, RETENTION, reader), judge(question, TOPICAL, reader)
    assert answering > topical and probability(answering) > 0.5


def test_the_entailment_judge_prefers_the_passage_that_states_the_claim(
        reader: LlamaCppModel) -> None:
    claim = 'Audit logs are "kept for 30 days".'  # as ALCE grades a quoted sentence
    stated, topical = supports(claim, [RETENTION], reader), supports(claim, [TOPICAL], reader)
    assert stated > topical and probability(stated) > 0.5


def test_judgements_are_reproducible_and_rerank_through_the_seam(reader: LlamaCppModel) -> None:
    reranker = ReaderReranker(reader)
    question = "How long are audit logs kept?"
    first = reranker.score(question, [TOPICAL, RETENTION])
    assert reranker.score(question, [TOPICAL, RETENTION]) == first
    assert first[1] > first[0]
    assert reranker.identity.weights_sha256 == gguf.MODELS[MODEL].sha256


def test_synthesis_quotes_the_passage_and_every_citation_is_an_exact_span(
        reader: LlamaCppModel, make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"retention.md": RETENTION,
                      "backup.md": "# Backups\n\nBackups run every night at 02:00.\n"})
    index("k", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("k", home) as coll:
        hits = coll.search("how long are audit logs kept", verify=True, top_k=2)
    passages = [Passage(number=i, collection="k", hit=h, verdict=h.verdict.status)  # type: ignore[union-attr]
                for i, h in enumerate(hits, start=1)]
    result = synthesize("How long are audit logs kept?", passages, reader)
    # The 1.5B reader has answered `30 days [1]` here, without the quote marks the rules
    # ask for: nothing it says is then shown as supported (withheld), which is the check
    # doing its job; a quoted reply must cite exact spans.
    assert result.kind in ("llm", "withheld"), result.reply
    if result.kind == "withheld":
        assert not any(s.supported for s in result.sentences)
    for sentence in result.sentences:
        for c in sentence.citations:
            assert (root / c.doc_id).read_text()[c.start:c.end] == c.text


def test_synthesis_says_not_in_passages_when_they_do_not_answer(
        reader: LlamaCppModel, make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"backup.md": "# Backups\n\nBackups run every night at 02:00.\n"})
    index("k", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("k", home) as coll:
        hits = coll.search("backups", verify=True, top_k=1)
    passages = [Passage(number=1, collection="k", hit=hits[0], verdict=hits[0].verdict.status)]  # type: ignore[union-attr]
    result = synthesize("Which Slack channel announces outages?", passages, reader)
    assert result.kind in ("not_in_passages", "withheld"), result.reply
    assert not any(s.supported for s in result.sentences)


def test_rewrite_gives_one_search_line(reader: LlamaCppModel) -> None:
    query = rewrite("hey, quick one - do you remember for how long we are keeping the audit "
                    "logs around these days?", reader)
    assert "\n" not in query and "audit" in query.lower() and len(query) < 120


def test_grk_ask_answers_offline_with_the_llamacpp_provider(
        reader: LlamaCppModel, make_tree: TreeMaker, home: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    index("notes", IndexConfig(roots=(str(make_tree({"retention.md": RETENTION})),)),
          home=home)
    code = main(["ask", "How long are audit logs kept?", "-c", "notes", "--home", str(home),
                 "--llm", f"llamacpp:{MODEL}", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert data["llm"]["provider"] == "llamacpp"
    assert data["llm"]["sha256"] == gguf.MODELS[MODEL].sha256
    assert (code, data["kind"]) in ((0, "llm"), (12, "withheld")), data["llm"]["reply"]
