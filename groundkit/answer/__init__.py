"""Grounded answers: ``grk ask``. Every sentence shown quotes a span re-verified now.

:func:`ask` searches a collection (any mode, the abstention gate if asked), re-reads
every hit it might cite, and answers from the verified ones only:

* **extractive** (the default, no model): the sentences that best answer the
  question, quoted exactly (:mod:`.extractive`);
* **with a language model** (``llm="ollama:MODEL"``): the model writes, and every
  quote in its reply is checked against the passage it cites before anything is
  shown; a reply none of whose quotes holds is withheld (:mod:`.llm`).

A passage whose document says it is archived or superseded (recorded at index time:
:mod:`groundkit.text.standing`) is marked with the evidence on every citation and
offered after the current passages; its sentences count half their score
(:attr:`.Choice.superseded`; ``1`` treats such documents as current), and a model sees
it labelled. Where a cited span and another document's passage give different values
for the same thing, the answer lists both sides (:mod:`.conflicts`).

Citations always point at file offsets, never at text a model produced. Document
text is untrusted: it reaches a model only as numbered, fenced data.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
from typing import Any

import numpy as np

from ..collection import Collection
from ..errors import UsageError
from ..retrieval.modes import DEFAULT_MODE, MODES
from .conflicts import detect
from .extractive import DEFAULT, Choice, Embed, extract
from .model import Answer, Citation, Passage, Sentence

__all__ = ["Answer", "Choice", "Citation", "Passage", "Sentence", "ask"]

TOP_K = 5
"""How many hits an answer may draw on."""
UNIT_VECTORS = 32_768
"""Sentence vectors kept in memory between answers (passages recur across questions)."""
_UNIT_VECTORS: OrderedDict[tuple[Any, str], Any] = OrderedDict()


def ask(coll: Collection, question: str, *, mode: str = DEFAULT_MODE, top_k: int = TOP_K,
        abstain: bool = False, alpha: float | None = None, llm: str | None = None,
        llm_host: str | None = None, llm_timeout: float | None = None,
        rewrite: bool = False, judge: bool = False, choice: Choice = DEFAULT,
        **options: Any) -> Answer:
    """Answer ``question`` from ``coll`` (see the module docstring).

    ``choice`` is how an extractive answer chooses its sentences (the measured default;
    the answer harness compares others). ``options`` are the mode's own, as for
    :meth:`Collection.search`.
    """
    if (rewrite or judge) and llm is None:
        raise UsageError("--rewrite and --judge need a language model: add --llm ollama:MODEL")
    chat = _chat(llm, llm_host, llm_timeout) if llm is not None else None
    try:
        return _answer(coll, question, mode, top_k, abstain, alpha, chat, rewrite, judge,
                       choice, options)
    finally:
        if chat is not None:
            chat.close()


def _answer(coll: Collection, question: str, mode: str, top_k: int, abstain: bool,
            alpha: float | None, chat: Any, rewrite: bool, judge: bool, choice: Choice,
            options: dict[str, Any]) -> Answer:
    extra: dict[str, Any] = {}
    query = question
    if rewrite and chat is not None:
        from . import llm as boundary

        query = boundary.rewrite(question, chat)
        original = coll.search(question, mode=mode, top_k=top_k, **options)
        extra["rewrite"] = {"query": query, "original_query": question,
                            "original_hits": [h.to_dict(coll.name) for h in original]}
    found = _search(coll, query, mode, top_k, abstain, alpha, options, extra)
    if isinstance(found, Answer):
        return _with(found, question, extra)
    passages = _ordered(coll, found, last=choice.superseded < 1)
    answer = (_extractive(coll, question, mode, passages, choice, options) if chat is None
              else _generated(question, passages, chat, coll.name, mode))
    if answer.citations:
        analyzer = coll.snapshot.bm25().analyzer
        answer = replace(answer, conflicts=detect(question, answer.citations, passages,
                                                  analyzer))
        extra.update(_superseded_only(answer))
    if judge and chat is not None and answer.sentences:
        from . import llm as boundary

        extra["judge"] = boundary.judge(question, answer.sentences, passages, chat)
    return _with(answer, question, extra)


def _ordered(coll: Collection, hits: list[Any], *, last: bool) -> tuple[Passage, ...]:
    """The hits as numbered passages, each marked when its document says it is superseded
    (recorded at index time: :mod:`groundkit.text.standing`); with ``last`` those come
    after the current ones, in their order; never dropped."""
    marked = [(h, h.superseded) for h in hits]
    if last:
        marked = [m for m in marked if m[1] is None] + [m for m in marked if m[1] is not None]
    return tuple(Passage(number=i, collection=coll.name, hit=h, superseded=why,
                         verdict=h.verdict.status)  # type: ignore[union-attr]
                 for i, (h, why) in enumerate(marked, start=1))


def _superseded_only(answer: Answer) -> dict[str, str]:
    """A note when every citation is of a superseded document although current passages
    were found (an extractive answer rarely, a model's reply more often, does this)."""
    current = [p.number for p in answer.passages if p.verified and not p.superseded]
    if not current or any(c.superseded is None for c in answer.citations):
        return {}
    listed = ", ".join(map(str, current))
    return {"superseded_only": "every citation is of a document that says it is superseded, "
            f"though current passages were found (passage(s) {listed}): check them first"}


def _search(coll: Collection, query: str, mode: str, top_k: int, abstain: bool,
            alpha: float | None, options: dict[str, Any],
            extra: dict[str, Any]) -> list[Any] | Answer:
    """The verified-now hits, or an abstention when the gate says so."""
    if not abstain:
        if alpha is not None:
            raise UsageError("alpha applies with abstain only (--alpha needs --abstain)")
        return coll.search(query, mode=mode, top_k=top_k, verify=True, **options)
    result = coll.search_or_abstain(query, mode=mode, top_k=top_k, alpha=alpha, verify=True,
                                    **options)
    extra["gate"] = result.decision.to_dict()
    if result.decision.abstained:
        d = result.decision
        return Answer(question=query, collection=coll.name, mode=mode, kind="abstained",
                      message=f"nothing in this collection answers that (p = {d.p_value:.3g}, "
                              f"alpha = {d.alpha:g}, {d.mode} calibrated on {d.n0} "
                              "unanswerable questions)")
    return result.hits


def _extractive(coll: Collection, question: str, mode: str, passages: tuple[Passage, ...],
                choice: Choice, options: dict[str, Any]) -> Answer:
    semantic = _semantic(coll, question, mode, options)
    sentences = extract(question, passages, coll.snapshot.bm25(), semantic=semantic,
                        choice=choice, lexical=mode != "dense")
    if sentences:
        return Answer(question=question, collection=coll.name, mode=mode, kind="extractive",
                      sentences=sentences, passages=passages)
    return Answer(question=question, collection=coll.name, mode=mode, kind="empty",
                  passages=passages, message=_empty_message(passages))


def _semantic(coll: Collection, question: str, mode: str,
              options: dict[str, Any]) -> tuple[Any, Embed] | None:
    """The question's vector and a unit embedder, for modes that embed."""
    if not MODES[mode].embedding:
        return None
    embedder = coll.snapshot.query_embedder()  # the search has checked it is the index's
    model = embedder.provider.identity

    def embed(texts: Any) -> Any:
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if (model, t) not in _UNIT_VECTORS))
        if missing:
            for text, vector in zip(missing, embedder.provider.embed(missing, kind="document"),
                                    strict=True):
                _UNIT_VECTORS[(model, text)] = vector
            while len(_UNIT_VECTORS) > UNIT_VECTORS:
                _UNIT_VECTORS.popitem(last=False)
        return np.stack([_UNIT_VECTORS[(model, t)] for t in texts])

    return embedder.vector(question), embed


def _generated(question: str, passages: tuple[Passage, ...], chat: Any, collection: str,
               mode: str) -> Answer:
    from . import llm as boundary

    if not any(p.verified for p in passages):
        return Answer(question=question, collection=collection, mode=mode, kind="empty",
                      passages=passages, message=_empty_message(passages))
    result = boundary.synthesize(question, passages, chat)  # it sends the verified ones only
    kind = {"not_in_passages": "empty"}.get(result.kind, result.kind)
    return Answer(question=question, collection=collection, mode=mode, kind=kind,
                  sentences=result.sentences if kind == "llm" else (), passages=passages,
                  message=result.message,
                  extra={"llm": {**chat.identity, "reply": result.reply,
                                 "withheld_sentences": [s.to_dict() for s in result.sentences]
                                 if kind != "llm" else []}})


def _empty_message(passages: tuple[Passage, ...]) -> str:
    if not passages:
        return "nothing in this collection matches the question"
    unverified = [p for p in passages if not p.verified]
    if unverified and len(unverified) == len(passages):
        return (f"none of the {len(passages)} passages found still holds in its file "
                "(re-index the collection: grk index)")
    return "no verified passage has a sentence that answers the question"


def _chat(spec: str, host: str | None, timeout: float | None) -> Any:
    from . import llm as boundary

    provider, model = boundary.parse_llm(spec)
    if provider == "llamacpp":
        from .llamacpp import chat_model

        return chat_model(model, host=host, timeout=timeout)
    settings: dict[str, Any] = {}
    if host is not None:
        settings["host"] = host
    if timeout is not None:
        settings["timeout"] = timeout
    return boundary.ChatModel(model, **settings)


def _with(answer: Answer, question: str, extra: dict[str, Any]) -> Answer:
    return replace(answer, question=question, extra={**answer.extra, **extra})
