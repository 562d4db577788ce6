"""Duplicate collapse over positions: the pure part collection search and the harness share."""

from __future__ import annotations

from functools import partial

from hypothesis import given, settings
from hypothesis import strategies as st

from groundkit.model import Contribution
from groundkit.retrieval.base import Scored
from groundkit.retrieval.collapse import (
    HEAD_WORDS,
    CollapsedRetriever,
    deepened,
    distinct,
    passage_key,
    passage_keys,
)

TEXTS = ["The lamp", "the  LAMP", "A wick", "the lamp\n", "Oil", "A Wick", "Dusk", "Dawn"]
"""Positions 0, 1 and 3 are one passage; 2 and 5 another."""


class Ranked:
    """A retriever ranking every position in order (score 8, 7, ...), recording each depth."""

    name = "fake"

    def __init__(self) -> None:
        self.depths: list[int] = []

    def pairs(self, query: str, top_k: int) -> list[tuple[int, float]]:
        self.depths.append(top_k)
        return [(p, float(len(TEXTS) - p)) for p in range(min(top_k, len(TEXTS)))]

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        return [Scored(p, s, (Contribution(retriever="fake", rank=p + 1, score=s),))
                for p, s in self.pairs(query, top_k)]


def test_passages_are_the_same_whitespace_and_case_aside() -> None:
    assert passage_key(" The\tlamp\n\nkeeper ") == passage_key("the lamp KEEPER")
    assert passage_key("the lamp KEEPER") == "the lamp keeper"
    assert passage_key("lamp-keeper") != passage_key("lamp keeper")


def test_distinct_keeps_the_first_of_each_passage_and_lists_where_it_recurs() -> None:
    kept, also = distinct([passage_key(t) for t in TEXTS])
    assert kept == [0, 2, 4, 6, 7]
    assert also == {0: [1, 3], 2: [5], 4: [], 6: [], 7: []}


def test_deepened_searches_twice_as_deep_until_it_has_enough_distinct_passages() -> None:
    inner = Ranked()
    ranked, kept, _ = deepened(lambda depth: inner.pairs("q", depth),
                               lambda pairs: [passage_key(TEXTS[p]) for p, _ in pairs], 3,
                               limit=1000)
    assert inner.depths == [3, 6]  # 3 deep holds 2 distinct passages; 6 deep holds 3
    assert [ranked[i][0] for i in kept] == [0, 2, 4]


def test_deepened_stops_where_the_ranking_ends_or_at_its_limit() -> None:
    inner = Ranked()
    _, kept, _ = deepened(lambda depth: inner.pairs("q", depth),
                          lambda pairs: [passage_key(TEXTS[p]) for p, _ in pairs], 6, limit=1000)
    assert inner.depths == [6, 12] and kept == [0, 2, 4, 6, 7]  # only 5 distinct in all
    inner = Ranked()
    _, kept, _ = deepened(lambda depth: inner.pairs("q", depth),
                          lambda pairs: [passage_key(TEXTS[p]) for p, _ in pairs], 3, limit=4)
    assert inner.depths == [3, 4] and kept == [0, 2]


def test_a_collapsed_retriever_ranks_the_same_positions_by_search_and_by_pairs() -> None:
    inner = Ranked()
    retriever = CollapsedRetriever(inner, lambda: TEXTS, limit=1000)
    hits = retriever.search("q", 4)
    assert [h.position for h in hits] == [0, 2, 4, 6]
    assert hits[1] == inner.search("q", 4)[2]  # the inner hit as it is, score and explanation
    assert retriever.pairs is not None
    assert retriever.pairs("q", 4) == [(h.position, h.score) for h in hits]


def test_a_collapsed_retriever_without_pairs_has_none() -> None:
    class SearchOnly:
        name = "only"

        def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
                   explain: bool = False) -> list[Scored]:
            return Ranked().search(query, top_k)

    retriever = CollapsedRetriever(SearchOnly(), lambda: TEXTS, limit=1000)
    assert retriever.pairs is None
    assert [h.position for h in retriever.search("q", 2)] == [0, 2]


def test_deepened_starts_at_the_candidate_depth_whatever_top_k() -> None:
    for top_k in (1, 2):
        inner = Ranked()
        ranked, kept, also = deepened(partial(inner.pairs, "q"),
                                      lambda pairs: [passage_key(TEXTS[p]) for p, _ in pairs],
                                      top_k, limit=1000, candidates=6)
        assert inner.depths == [6]
        assert [ranked[i][0] for i in kept] == [0, 2][:top_k]
        assert also[0] == [1, 3]  # every copy of the first passage, even for one hit


WORDS = st.sampled_from(["lamp", "LAMP", "Lamp", "wick", "straße", "STRASSE", "dusk", "a"])
SPACE = st.sampled_from([" ", "  ", "\n", "\t", "\u00a0", "\u2003 "])


@st.composite
def passages(draw: st.DrawFn) -> str:
    words = draw(st.lists(WORDS, max_size=2 * HEAD_WORDS + 3))
    gaps = draw(st.lists(SPACE, min_size=len(words) + 1, max_size=len(words) + 1))
    return "".join(g + w for g, w in zip(gaps, [*words, ""], strict=True))


@settings(max_examples=300, deadline=None)
@given(st.lists(passages(), max_size=12), st.lists(st.sampled_from(" \n" + "x" * 40 + "é"),
                                                   max_size=400).map("".join))
def test_passage_keys_are_equal_exactly_where_passage_keys_are(
        texts: list[str], long: str) -> None:
    texts = [*texts, *(long[:n] + t for n in (0, 150, 400) for t in texts[:2]),
             *(" " * 200 + t for t in texts[:2])]  # the same words, later than the head
    keys, whole = passage_keys(texts), [passage_key(t) for t in texts]
    for i in range(len(texts)):
        for j in range(len(texts)):
            assert (keys[i] == keys[j]) == (whole[i] == whole[j])


def test_passage_keys_key_a_passage_sharing_no_first_words_by_those_words() -> None:
    texts = ["one two three four five six seven eight nine ten", "Other text"]
    assert passage_keys(texts) == ["one two three four five six seven eight", "other text"]
    same = ["One  two three four five six seven eight nine", "one two three four five six "
            "seven eight NINE", "one two three four five six seven eight ten"]
    assert passage_keys(same) == [passage_key(t) for t in same]
