"""ALCE's citation recall and precision of checked answers, with the reader as the entailment
judge (Gao et al. 2023, "Enabling Large Language Models to Generate Text with Citations").

Every quote of a shown sentence is verified verbatim already; ALCE asks the other
question: do the passages a sentence cites *support what the sentence says*?

* **citation recall** of a sentence: 1 when it cites at least one passage and the cited
  passages together entail it, else 0; averaged over the sentences shown.
* **citation precision** of a citation: with the cited passages entailing the sentence,
  a citation is *irrelevant* when it alone does not entail the sentence and the others
  without it still do; every citation of a sentence its passages do not entail counts as
  imprecise. Precise citations over all citations.

As in ALCE, the statement is the sentence without its citation markers. The entailment
judge here is the reader's yes/no read from its logits
(:func:`groundkit.retrieval.relevance.supports`, P(yes) at least
:data:`evals.llm_stage.THRESHOLD`), a judge whose agreement with human labels is itself
measured (the relevance judge's kappa) and is low: the figures grade the answers through a
fallible judge, they are not ground truth.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

Entails = Callable[[str, Sequence[str]], bool]
"""``entails(statement, passages)``: do the passages together support the statement."""

_MARKER = re.compile(r"\s*\[\s*[0-9]+(?:\s*,\s*[0-9]+)*\s*\]")


def statement(sentence: str) -> str:
    """The sentence without its citation markers (``[1]``, ``[1, 2]``)."""
    return " ".join(_MARKER.sub("", sentence).split())


def sentence_scores(text: str, cited: Sequence[str], entails: Entails) -> dict[str, Any]:
    """One sentence's recall (0 or 1), its citations and how many are precise."""
    claim = statement(text)
    if not cited:
        return {"recall": 0, "citations": 0, "precise": 0}
    if not entails(claim, cited):
        return {"recall": 0, "citations": len(cited), "precise": 0}
    if len(cited) == 1:
        return {"recall": 1, "citations": 1, "precise": 1}
    precise = 0
    for i, passage in enumerate(cited):
        rest = [p for j, p in enumerate(cited) if j != i]
        irrelevant = not entails(claim, [passage]) and entails(claim, rest)
        precise += not irrelevant
    return {"recall": 1, "citations": len(cited), "precise": precise}


def alce(sentences: Sequence[tuple[str, Sequence[str]]], entails: Entails) -> dict[str, Any]:
    """Citation recall and precision of ``(sentence, cited passage texts)`` pairs."""
    scored = [sentence_scores(text, cited, entails) for text, cited in sentences]
    citations = sum(s["citations"] for s in scored)
    return {"sentences": len(scored), "citations": citations,
            "citation_recall": (sum(s["recall"] for s in scored) / len(scored)
                                if scored else None),
            "citation_precision": (sum(s["precise"] for s in scored) / citations
                                   if citations else None)}
