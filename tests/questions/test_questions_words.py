"""documents.Words narrows exact-text searches without changing their answers."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st
from questions_corpus import DOCS

from groundkit.questions.documents import Words

TEXTS = {**DOCS, "ja/a.md": "東日本語のテキスト、本語だけ。\nnaïve Straße O’Brien's don't",
         "ja/b.md": "日本語の本。x-ray, e.g. 3.14 and ＡＢＣ full width"}


def brute(text: str) -> list[str]:
    return sorted(d for d, t in TEXTS.items() if text in t)


def test_every_substring_sampled_is_found_where_a_full_scan_finds_it() -> None:
    words, rng = Words(TEXTS), random.Random(7)
    for _ in range(3000):
        doc = rng.choice(sorted(TEXTS))
        text = TEXTS[doc]
        start = rng.randrange(len(text))
        piece = text[start:start + rng.randrange(1, 80)]
        assert words.containing(piece) == brute(piece), piece


@given(st.text(alphabet="aeiou 日本語.'’-\n", max_size=30))
def test_any_text_gets_the_full_scans_answer(piece: str) -> None:
    assert Words(TEXTS).containing(piece) == brute(piece)
