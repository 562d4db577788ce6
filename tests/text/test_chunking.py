from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from groundkit.errors import UsageError
from groundkit.model import Document
from groundkit.sources import decode_bytes
from groundkit.text.chunking import ChunkerConfig, make_chunks, spans

# Text that stresses offsets: every line-ending style, astral characters,
# combining marks, a BOM character inside the text, CJK, whitespace runs.
PIECES = st.sampled_from([
    "word", "Wort", " ", "  ", "\n", "\r\n", "\r", "\n\n", "\r\n\r\n", ". ", "! ", "# Head\n",
    "😀", "𝔘", "é", "e\u0301", "\u0301", "\ufeff", "日本語", "\t", "-", "x" * 40,
])
TEXTS = st.one_of(
    st.lists(PIECES, max_size=300).map("".join),
    st.text(max_size=3000),
    st.just(""), st.just("a"), st.just(" "),
)
CONFIGS = st.builds(
    ChunkerConfig,
    target=st.integers(50, 400),
    overlap=st.integers(0, 24),
    max_factor=st.sampled_from([1.0, 1.5, 2.0, 4.0]),
    boundaries=st.sampled_from(["structure", "sentences", "words"]),
)
ENCODINGS = st.sampled_from([("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"),
                             ("utf-16-be", b"\xfe\xff")])


def document(text: str, encoding: str = "utf-8", bom: bytes = b"") -> Document:
    raw = bom + text.encode(encoding, "surrogatepass")
    return Document(doc_id="d.md", root="/r", relpath="d.md",
                    sha256=hashlib.sha256(raw).hexdigest(), size=len(raw), encoding=encoding,
                    bom_len=len(bom), text=text)


@given(text=TEXTS, config=CONFIGS, enc=ENCODINGS)
def test_every_chunk_slices_back_exactly_and_its_byte_span_decodes_to_its_text(
    text: str, config: ChunkerConfig, enc: tuple[str, bytes],
) -> None:
    encoding, bom = enc
    text = "".join(ch for ch in text if not 0xD800 <= ord(ch) <= 0xDFFF)
    assume(bom or not text.startswith("\ufeff"))  # a file's leading U+FEFF is its BOM
    raw = bom + text.encode(encoding)
    assert decode_bytes(raw).text == text or b"\x00" in raw[:8192]
    for c in make_chunks("c", document(text, encoding, bom), config):
        assert text[c.start : c.end] == c.text
        assert raw[c.byte_start : c.byte_end].decode(encoding) == c.text
        assert c.byte_start == len(bom) + len(text[: c.start].encode(encoding))
        assert c.utf16_start == len(text[: c.start].encode("utf-16-le")) // 2


@given(text=TEXTS, config=CONFIGS)
def test_every_non_whitespace_character_is_covered_by_some_chunk(
    text: str, config: ChunkerConfig,
) -> None:
    covered = bytearray(len(text))
    for start, end in spans(text, config):
        covered[start:end] = b"\x01" * (end - start)
    assert all(covered[i] or ch.isspace() for i, ch in enumerate(text))


@given(text=TEXTS, config=CONFIGS)
def test_windows_advance_overlap_boundedly_and_respect_the_maximum(
    text: str, config: ChunkerConfig,
) -> None:
    windows = list(spans(text, config))
    for (s1, e1), (s2, _) in itertools.pairwise(windows):
        assert s1 < s2  # progress
        assert s2 <= e1 or text[e1:s2].isspace()  # overlap, or only whitespace skipped
    for start, end in windows:
        assert 0 <= start < end <= len(text)
        assert end - start <= config.maximum
        assert not text[start].isspace()


def line_of(text: str, p: int) -> int:
    """1-based line of the character at ``p``; a CRLF pair is one break."""
    line = 1 + len(re.findall(r"\r\n|\r|\n", text[:p]))
    if 0 < p < len(text) and text[p - 1] == "\r" and text[p] == "\n":
        line -= 1  # the LF of a CRLF pair is on the CR's line
    return line


@given(text=TEXTS)
def test_line_numbers_count_crlf_cr_and_lf_as_one_break_each(text: str) -> None:
    for c in make_chunks("c", document(text), ChunkerConfig(target=60, overlap=10)):
        assert c.start_line == line_of(text, c.start)
        assert c.end_line == line_of(text, c.end - 1)


def test_empty_and_blank_documents_have_no_chunks() -> None:
    assert make_chunks("c", document(""), ChunkerConfig()) == []
    assert make_chunks("c", document(" \r\n\t "), ChunkerConfig()) == []


def test_a_one_character_document_is_one_chunk() -> None:
    [c] = make_chunks("c", document("x"), ChunkerConfig())
    assert (c.start, c.end, c.text, c.start_line, c.end_line) == (0, 1, "x", 1, 1)


def test_chunks_prefer_paragraph_boundaries_near_the_target() -> None:
    paragraphs = [f"Paragraph {i}. " + "word " * 30 for i in range(12)]
    text = "\n\n".join(paragraphs)
    chunks = make_chunks("c", document(text), ChunkerConfig(target=400, overlap=50))
    assert len(chunks) > 3
    for c in chunks[:-1]:
        assert text[c.end :].lstrip(" ").startswith("\n\n") or text[c.end - 1] == "."


def test_the_boundaries_setting_leaves_out_the_structure_classes() -> None:
    # paragraphs of ~330 characters: at a 400 target, "structure" ends every chunk at a
    # blank line; "sentences" at any sentence end; "words" at a space (no sentence ends here)
    paragraphs = [f"Heading {i}\n\n" + "alpha beta gamma. " * 18 for i in range(10)]
    text = "".join(paragraphs)
    cut = {b: [(s, e) for s, e in spans(text, ChunkerConfig(target=400, overlap=0, boundaries=b))]
           for b in ("structure", "sentences", "words")}
    at_blank = {b: sum(text[e:].startswith("\n\n") or text[e:].startswith("\n\nH")
                       or text[e - 1:e + 2] == ". H" or text[e:e + 1] == "\n"
                       for _, e in c[:-1]) / (len(c) - 1) for b, c in cut.items()}
    assert at_blank["structure"] == 1.0
    assert at_blank["sentences"] < 1.0
    assert all(text[e - 1] == "." for _, e in cut["sentences"][:-1])
    assert not all(text[e - 1] == "." for _, e in cut["words"][:-1])
    with pytest.raises(UsageError, match="boundaries"):
        ChunkerConfig(boundaries="pages")


def test_the_default_boundaries_are_not_recorded_so_older_settings_stay_equal() -> None:
    assert "boundaries" not in ChunkerConfig().to_dict()
    assert ChunkerConfig(boundaries="words").to_dict()["boundaries"] == "words"
    assert ChunkerConfig(**ChunkerConfig(boundaries="words").to_dict()).boundaries == "words"


def test_chunking_is_deterministic() -> None:
    text = "Alpha beta. " * 500
    a = make_chunks("c", document(text), ChunkerConfig(target=300, overlap=40))
    b = make_chunks("c", document(text), ChunkerConfig(target=300, overlap=40))
    assert a == b


@pytest.mark.parametrize("kw", [dict(target=10), dict(target=100, overlap=60),
                                dict(max_factor=9.0), dict(overlap=-1)])
def test_invalid_chunker_settings_are_usage_errors(kw: dict[str, float]) -> None:
    with pytest.raises(UsageError):
        ChunkerConfig(**kw)  # type: ignore[arg-type]


@given(text=TEXTS, config=CONFIGS)
def test_the_fast_patterns_for_text_without_carriage_returns_cut_identically(
    text: str, config: ChunkerConfig,
) -> None:
    import groundkit.text.chunking as chunking

    text = text.replace("\r", "")
    fast = list(spans(text, config))
    general = chunking._BOUNDARIES_LF
    try:
        chunking._BOUNDARIES_LF = chunking._BOUNDARIES
        assert list(spans(text, config)) == fast
    finally:
        chunking._BOUNDARIES_LF = general
