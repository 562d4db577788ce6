from __future__ import annotations

import pytest

from groundkit.errors import InvalidSpanError
from groundkit.model import Chunk, Status, Verdict, make_chunk_id, sha256_text, split_chunk_id

DOC = "alpha beta gamma"


def chunk(start: int, end: int, text: str | None = None, **overrides: object) -> Chunk:
    text = DOC[start:end] if text is None else text
    fields: dict[str, object] = dict(
        chunk_id=make_chunk_id("c", "a.md", "0" * 64, start, end), doc_id="a.md",
        doc_sha256="0" * 64, start=start, end=end, byte_start=start, byte_end=end,
        start_line=1, end_line=1, utf16_start=start, utf16_end=start + len(text), text=text,
        span_sha256=sha256_text(text), document=DOC,
    )
    fields.update(overrides)
    return Chunk(**fields)  # type: ignore[arg-type]


def test_a_chunk_that_slices_its_document_constructs() -> None:
    c = chunk(6, 10)
    assert c.text == "beta" and c.collection == "c"


def test_a_chunk_whose_text_is_not_the_document_slice_cannot_exist() -> None:
    with pytest.raises(InvalidSpanError, match="not document"):
        chunk(6, 10, text="BETA")


@pytest.mark.parametrize(("start", "end"), [(5, 5), (7, 3), (-1, 2)])
def test_empty_or_inverted_spans_are_rejected(start: int, end: int) -> None:
    with pytest.raises(InvalidSpanError):
        chunk(start, end, text="x" * max(0, end - start))


def test_a_span_past_the_document_end_is_rejected() -> None:
    with pytest.raises(InvalidSpanError, match="past the document end"):
        chunk(14, 20, text="mmaxyz")


def test_a_wrong_span_hash_is_rejected() -> None:
    with pytest.raises(InvalidSpanError, match="hash"):
        chunk(6, 10, span_sha256="f" * 64)


def test_chunk_ids_are_stable_and_name_their_collection() -> None:
    a = make_chunk_id("notes", "x.md", "ab" * 32, 0, 10)
    assert a == make_chunk_id("notes", "x.md", "ab" * 32, 0, 10)
    assert a != make_chunk_id("notes", "x.md", "ab" * 32, 0, 11)
    assert split_chunk_id(a)[0] == "notes"


@pytest.mark.parametrize(
    "bad", ["", "nocolon", "c:xyz", "../x:0123456789abcdef0123", "c:" + "0" * 19]
)
def test_malformed_chunk_ids_are_rejected(bad: str) -> None:
    with pytest.raises(InvalidSpanError, match="malformed chunk id"):
        split_chunk_id(bad)


def test_utf16_offsets_count_astral_characters_twice() -> None:
    doc = "😀 ab"
    fields: dict[str, object] = dict(
        chunk_id=make_chunk_id("c", "e.md", "0" * 64, 2, 4), doc_id="e.md", doc_sha256="0" * 64,
        start=2, end=4, byte_start=5, byte_end=7, start_line=1, end_line=1, utf16_start=3,
        utf16_end=5, text="ab", span_sha256=sha256_text("ab"), document=doc,
    )
    assert Chunk(**fields).utf16_start == 3  # type: ignore[arg-type]
    with pytest.raises(InvalidSpanError, match="UTF-16"):
        Chunk(**{**fields, "utf16_end": 6})  # type: ignore[arg-type]


def test_only_a_drifted_verdict_carries_relocated_offsets() -> None:
    with pytest.raises(InvalidSpanError):
        Verdict(chunk_id="c:x", status=Status.VERIFIED, reason="", relocated=(1, 2))
    v = Verdict(chunk_id="c:x", status=Status.DRIFTED, reason="moved", relocated=(1, 2))
    assert v.to_dict()["relocated"] == [1, 2] and v.to_dict()["offset_unit"] == "codepoint"
