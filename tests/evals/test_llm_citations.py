"""ALCE's citation recall and precision over a stand-in entailment judge."""

from __future__ import annotations

from collections.abc import Sequence

from evals.llm_citations import alce, sentence_scores, statement


def entails(claim: str, passages: Sequence[str]) -> bool:
    """Every word of the claim occurs in some passage."""
    words = set(" ".join(passages).split())
    return all(w in words for w in claim.replace(".", "").split())


def test_the_statement_is_the_sentence_without_its_markers() -> None:
    assert statement('Logs are "kept" [1] for 30 days [2, 3].') == 'Logs are "kept" for 30 days.'


def test_a_sentence_its_citations_entail_is_recalled() -> None:
    assert sentence_scores("logs kept [1]", ["logs kept 30 days"], entails) == \
        {"recall": 1, "citations": 1, "precise": 1}
    assert sentence_scores("logs deleted [1]", ["logs kept"], entails) == \
        {"recall": 0, "citations": 1, "precise": 0}
    assert sentence_scores("logs kept", [], entails) == {"recall": 0, "citations": 0,
                                                          "precise": 0}


def test_a_citation_the_others_make_redundant_and_that_says_nothing_alone_is_imprecise() -> None:
    # "noise" neither entails alone nor is needed: irrelevant. Each of the two halves is
    # needed (without it the rest no longer entails): precise though neither entails alone.
    got = sentence_scores("logs kept [1][2][3]", ["logs", "kept", "noise"], entails)
    assert got == {"recall": 1, "citations": 3, "precise": 2}
    redundant = sentence_scores("logs kept [1][2]", ["logs kept", "logs kept too"], entails)
    assert redundant == {"recall": 1, "citations": 2, "precise": 2}  # each entails alone


def test_alce_averages_recall_over_sentences_and_precision_over_citations() -> None:
    got = alce([("logs kept [1]", ["logs kept"]), ("logs deleted [1]", ["logs kept"]),
                ("no citation", [])], entails)
    assert got == {"sentences": 3, "citations": 2, "citation_recall": 1 / 3,
                   "citation_precision": 1 / 2}
    assert alce([], entails)["citation_recall"] is None
