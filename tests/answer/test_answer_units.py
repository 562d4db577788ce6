"""What an answer may quote: never furniture or a bare heading; its own section's path;
sentences that hold what the question asks for."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import TreeMaker
from extract.test_furniture import WORDS, placed
from extract.test_pdf import document

from groundkit import store
from groundkit.answer import ask
from groundkit.answer.asked import asked_for, holds
from groundkit.answer.sentences import Unit, units
from groundkit.collection import Collection, IndexConfig, index
from groundkit.model import Chunk


def quoted(text: str, furniture: tuple[tuple[int, int, str], ...] = ()) -> list[tuple[str, str]]:
    return [(u.kind, text[u.start:u.end]) for u in units(text, furniture)]


def test_a_furniture_run_is_cut_out_of_the_unit_it_is_glued_to() -> None:
    text = "Acme Manual 24\nThe retention is 30 days. It can be\n25 Acme Manual\nraised."
    head, foot = (0, 14, "running-head"), (51, 65, "running-head")
    assert quoted(text, (head, foot)) == [("sentence", "The retention is 30 days."),
                                          ("sentence", "It can be")]  # "raised.": a scrap
    assert quoted("Acme Manual 24\nYes.", (head,)) == [("sentence", "Yes.")]  # a sentence
    assert all("Acme" not in t for _, t in quoted(text, (head, foot)))
    assert ("sentence", "Acme Manual 24\nThe retention is 30 days.") in quoted(text)


def test_a_sentence_a_menu_cuts_after_every_keyword_leaves_no_scrap_to_quote() -> None:
    menu = "\n\nThis keyword is available in sections :\nBind options\n\n"
    text = (f'sslbindconf supports "allow-0rtt{menu}", "alpn{menu}", "ca-file{menu}", '
            '"ciphers" and "verify" as options.')
    runs = []
    at = 0
    while (found := text.find(menu, at)) >= 0:
        runs.append((found + 2, found + len(menu) - 2, "navigation"))
        at = found + len(menu)
    assert quoted(text, tuple(runs)) == [  # the scraps between two menus are gone
        ("sentence", 'sslbindconf supports "allow-0rtt'),
        ("sentence", '", "ciphers" and "verify" as options.')]
    assert len(quoted(text)) > 1  # without the marks the menus are quotable text


def test_setext_asciidoc_and_wiki_headings_are_headings() -> None:
    text = "Rotating certificates\n---------------------\n\nTell customers 14 days ahead.\n\n" \
           "== PHP-CGI ==\n\nCHILD=10 is the default.\n"
    assert quoted(text) == [("heading", "Rotating certificates"),
                            ("sentence", "Tell customers 14 days ahead."),
                            ("heading", "== PHP-CGI =="),
                            ("sentence", "CHILD=10 is the default.")]


def test_a_paragraph_of_lines_with_no_sentence_end_is_a_listing_line_by_line() -> None:
    text = "Option   Default\nsize     640\ncolor    on\nfont     Arial\n"
    assert [t for _, t in quoted(text)] == ["Option   Default", "size     640", "color    on",
                                            "font     Arial"]


def test_an_extracted_table_is_a_header_and_rows_with_it_as_context() -> None:
    text = "Intro line.\n\nName | Default | Meaning\nsize | 640 | width in pixels\n" \
           "color | on | use colour\n\nA | pipe in prose | is prose.\n"
    found = units(text)
    assert [(u.kind, text[u.start:u.end]) for u in found] == [
        ("sentence", "Intro line."), ("header", "Name | Default | Meaning"),
        ("row", "size | 640 | width in pixels"), ("row", "color | on | use colour"),
        ("sentence", "A | pipe in prose | is prose.")]
    assert {text[u.context[0]:u.context[1]] for u in found if u.context} == {
        "Name | Default | Meaning"}


def test_a_short_line_of_hard_wrapped_text_ends_its_unit() -> None:
    text = ("Output resolution\nThe default resolution of the png terminal is ninety six dots "
            "per inch,\nwhich suits most screens and printers that people use today.\n")
    assert [t for _, t in quoted(text)] == [
        "Output resolution",
        "The default resolution of the png terminal is ninety six dots per inch,\n"
        "which suits most screens and printers that people use today."]


@pytest.mark.parametrize(("question", "kind", "good", "bad"), [
    ("How quickly must a SEV2 page be acknowledged?", "duration", "| SEV2 | 15 minutes |",
     "Pages go to the incident commander for SEV2."),
    ("How often are laptops replaced?", "frequency", "Laptops are refreshed every three years.",
     "Laptops are MacBooks."),
    ("How many children does the init script start?", "number", "CHILD=10", "CHILD is set."),
    ("When is the deploy freeze?", "time", "The freeze starts on 20 December.", "A freeze."),
    ("Which option enables verbose output?", "typed", "Pass `--verbose`.", "Verbose is nice."),
])
def test_what_a_question_asks_for_and_which_sentence_holds_it(
        question: str, kind: str, good: str, bad: str) -> None:
    assert asked_for(question) == kind
    assert holds(kind, good) and not holds(kind, bad)


def test_a_question_of_no_known_kind_gets_no_bonus() -> None:
    assert asked_for("Wer darf den at-Dienst benutzen?") is None
    assert not holds(None, "30 days")


def test_the_sentence_holding_the_asked_duration_is_quoted(
        make_tree: TreeMaker, home: Path) -> None:
    docs = {"oncall.md": "# Severities\n\nPages go to the incident commander for SEV2 and "
                         "SEV1 alike, SEV2 included.\nA SEV2 page must be acknowledged within "
                         "15 minutes.\n"}
    index("s", IndexConfig(roots=(str(make_tree(docs)),)), home=home)
    with Collection.open("s", home) as coll:
        answer = ask(coll, "How quickly must a SEV2 page be acknowledged?")
    assert answer.sentences[0].text == "A SEV2 page must be acknowledged within 15 minutes."


def test_a_bare_heading_is_never_the_answer(make_tree: TreeMaker, home: Path) -> None:
    docs = {"a.md": "# Wombat husbandry\n\nFeed them carrots.\n"}
    index("h", IndexConfig(roots=(str(make_tree(docs)),)), home=home)
    with Collection.open("h", home) as coll:
        answer = ask(coll, "wombat husbandry")
    assert answer.kind == "empty" and not answer.sentences


def test_a_pdf_answer_never_quotes_its_running_head(make_tree: TreeMaker, home: Path) -> None:
    pytest.importorskip("pypdfium2")
    pages = [placed((760, f"Wombat Manual, retention edition {n}"),
                    (700, f"Chapter {WORDS[n]} is about something else entirely."),
                    (686, "Burrow logs are kept for thirty days by the wombat." if n == 3
                     else f"Nothing about {WORDS[n]} here."), (40, str(n)))
             for n in range(1, 6)]
    root = make_tree({})
    (root / "manual.pdf").write_bytes(document(pages))
    index("p", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("p", home) as coll:
        answer = ask(coll, "wombat manual retention burrow logs")
    [sentence] = answer.sentences
    assert sentence.text == "Burrow logs are kept for thirty days by the wombat."
    [citation] = sentence.citations
    assert citation.locator is not None and citation.locator.pages == (3,)


def test_a_citation_carries_its_own_sections_heading_path(
        make_tree: TreeMaker, home: Path) -> None:
    docs = {"guide.md": "# Guide\n\nIntro text.\n\n## Backups\n\nBackups run nightly.\n\n"
                        "## Restores\n\nRestores need a ticket.\n"}
    index("g", IndexConfig(roots=(str(make_tree(docs)),)), home=home)
    with Collection.open("g", home) as coll:
        answer = ask(coll, "do restores need a ticket")
    [citation] = answer.sentences[0].citations
    assert citation.text == "Restores need a ticket."
    assert citation.headings == ("Guide", "Restores")


def test_a_chunks_layout_survives_the_store(tmp_path: Path) -> None:
    text = "Head 1\nBody.\n## B\nMore."
    chunk = Chunk(chunk_id="c:" + "0" * 20, doc_id="d.md", doc_sha256="0" * 64, start=0,
                  end=len(text), byte_start=0, byte_end=len(text), start_line=1, end_line=4,
                  utf16_start=0, utf16_end=len(text), text=text,
                  span_sha256=__import__("groundkit.model").model.sha256_text(text),
                  headings=("A",), furniture=((0, 6, "running-head"),),
                  sections=((13, ("A", "B")),))
    conn = store.connect(tmp_path)
    store.insert_chunks(conn, 1, str(tmp_path), "d.md", [store.chunk_row(chunk)])
    found = store.lookup_chunk(conn, chunk.chunk_id)
    assert found is not None and found.chunk == chunk
    assert (chunk.heading_path_at(12), chunk.heading_path_at(14)) == (("A",), ("A", "B"))
    assert units(text, chunk.furniture)[0] == Unit(7, 12, "sentence")


def labelled_manual(root: Path) -> Path:
    """A five-page PDF whose pages are labelled i, ii, 1, 2, 3; the answer is on page 4."""
    pages = [placed((760, f"Wombat Manual {n}"), (700, f"Chapter {WORDS[n]} is elsewhere."),
                    (686, "Burrow logs are kept for thirty days by the wombat." if n == 4
                     else f"Nothing about {WORDS[n]} here."))
             for n in range(1, 6)]
    path = root / "manual.pdf"
    path.write_bytes(document(pages, catalog=b"/PageLabels << /Nums [0 << /S /r >> "
                                              b"2 << /S /D >>] >>"))
    return path


def test_every_face_gives_the_page_its_label_and_a_link_that_opens_it(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pypdfium2")
    import json

    from groundkit.cli import main

    root = make_tree({"notes.md": "# Burrows\n\nBurrow logs are also noted in notes.\n"})
    pdf = labelled_manual(root)
    index("m", IndexConfig(roots=(str(root),)), home=home)
    args = ["-c", "m", "--home", str(home)]
    assert main(["ask", "how long are burrow logs kept by the wombat", *args]) == 0
    out = capsys.readouterr().out
    assert "manual.pdf p. 4 (printed 2), chars" in out
    assert f"open: {pdf.as_uri()}#page=4" in out
    assert main(["ask", "how long are burrow logs kept by the wombat", *args, "--json"]) == 0
    [citation] = json.loads(capsys.readouterr().out)["sentences"][0]["citations"]
    assert (citation["page"], citation["link"]) == ("p. 4 (printed 2)", f"{pdf.as_uri()}#page=4")
    assert citation["source"]["spans"][0]["page_label"] == "2"
    assert main(["search", "burrow logs noted", *args, "--top-k", "2"]) == 0
    assert f"open: {root / 'notes.md'}:1" in capsys.readouterr().out
    assert main(["search", "burrow logs wombat", *args, "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)["hits"]
    assert f"{pdf.as_uri()}#page={hits[0]['source']['spans'][0]['page']}" in {
        h["link"] for h in hits}


def test_a_search_snippet_starts_at_a_match_outside_the_running_head() -> None:
    from groundkit.cli.render import snippet
    from groundkit.text.analysis import Analyzer

    analyzer = Analyzer()
    text = "Wombat Manual 3\n" + "filler words here. " * 5 + "The wombat sleeps all day."
    terms = set(analyzer.analyze("wombat"))
    furniture = ((0, 15, "running-head"),)
    assert snippet(text, terms, analyzer).startswith("Wombat Manual 3")
    shown = snippet(text, terms, analyzer, furniture)
    assert shown.startswith("…") and "The wombat sleeps all day." in shown


def test_the_python_api_refuses_a_threshold_that_is_not_a_number(
        make_tree: TreeMaker, home: Path) -> None:
    from groundkit.errors import UsageError

    index("n", IndexConfig(roots=(str(make_tree({"a.md": "wombat\n"})),)), home=home)
    with Collection.open("n", home) as coll:
        for bad in (float("nan"), float("inf")):
            with pytest.raises(UsageError, match="finite"):
                coll.search("wombat", score_threshold=bad)
        assert coll.search("wombat", score_threshold=0.0)


def test_an_empty_question_is_a_usage_error(make_tree: TreeMaker, home: Path) -> None:
    from groundkit.cli import main

    index("e", IndexConfig(roots=(str(make_tree({"a.md": "wombat\n"})),)), home=home)
    assert main(["ask", "  ", "-c", "e", "--home", str(home)]) == 2
