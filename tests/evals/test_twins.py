"""Same content, two formats: quotes found again in the HTML view, both sides judged alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evals import report as rpt
from evals.golden import load_golden
from evals.golden.corpus import lint_golden
from evals.golden.model import Answer
from evals.golden.twins import pairs, reanchor, sides, twin_id, words_pattern

V3 = Path(__file__).resolve().parents[2] / "golden" / "v3"


def test_a_quote_is_found_again_across_the_converters_markup() -> None:
    markdown = "Intro.\n\n- first item with `code`\n- the limit is 2^31 rows\n"
    html = "Intro.\n\nfirst item with code\nthe limit is 231 rows\n"
    quote = "- the limit is 2^31 rows"
    start = markdown.index(quote)
    answer = Answer(doc_id="d/page.md", quote=quote, occurrence=None, start=start,
                    end=start + len(quote))
    found = reanchor(answer, markdown, html)
    assert isinstance(found, Answer)
    assert found.doc_id == "d/page.html"
    assert html[found.start:found.end] == found.quote == "the limit is 231 rows"


def test_words_a_space_separated_never_run_together() -> None:
    pattern = words_pattern("the limit")
    assert pattern is not None
    assert pattern.search("thelimit") is None
    assert pattern.search("the\nlimit") is not None


def test_a_quote_whose_occurrences_differ_between_the_views_is_left_out() -> None:
    markdown = "Note: repeat.\n\nbody\n"
    html = "Note: repeat.\n\nbody\nNote: repeat.\n"
    answer = Answer(doc_id="d.md", quote="Note: repeat.", occurrence=None, start=0, end=13)
    assert reanchor(answer, markdown, html) == (
        "quote's words occur a different number of times in the two views")
    gone = Answer(doc_id="d.md", quote="body", occurrence=None, start=15, end=19)
    assert reanchor(gone, markdown, "nothing here") == "quote's words not found in the HTML view"


@pytest.mark.skipif(not V3.is_dir(), reason="golden v3 is not in this checkout")
def test_golden_v3_twins_every_whole_page_html_document(tmp_path: Path) -> None:
    golden = load_golden(V3, coverage=False, rules=False)
    twins = pairs(golden)
    assert len(twins) == 49
    provenance = json.loads((V3 / "PROVENANCE.json").read_text(encoding="utf-8"))["documents"]
    for doc_id in twins:
        assert provenance[doc_id]["source_path"].endswith(".html")
        assert "sections" not in provenance[doc_id]
    by_side, left_out = sides(golden, tmp_path)
    md, html = by_side["markdown"], by_side["html"]
    assert len(md.questions) == len(html.questions) > 250
    assert sum(left_out.values()) < len(md.questions) // 10
    assert sorted(p.relative_to(tmp_path / "html").as_posix()
                  for p in (tmp_path / "html").rglob("*.html")) == sorted(map(twin_id, twins))
    for q_md, q_html in zip(md.questions, html.questions, strict=True):
        assert q_md.id == q_html.id
        for a in q_html.answers:  # every re-anchored quote is a span of the HTML view
            assert html.documents[a.doc_id][a.start:a.end] == a.quote


def test_an_installed_extractor_other_than_the_pinned_one_is_a_lint_problem(
        tmp_path: Path) -> None:
    """A golden version pins the extractor of every extracted document (the view, and so
    every quote offset, depends on it): another one is named, never a silent shift."""
    root = tmp_path / "v3"
    (root / "docs" / "d").mkdir(parents=True)
    (root / "docs" / "d" / "page.html").write_bytes(
        b"<html><body><h1>Title</h1><p>The answer is forty-two.</p></body></html>")
    (root / "questions.jsonl").write_text(json.dumps({
        "id": "q0001", "domain": "d", "kind": "answerable", "question": "What is the answer?",
        "traits": [], "answers": [{"doc_id": "d/page.html",
                                   "quote": "The answer is forty-two."}]}) + "\n")
    from evals.golden.corpus import write_manifest

    manifest = write_manifest(root)
    assert manifest["extractors"]["d/page.html"].startswith("html/selectolax=")
    assert lint_golden(root, coverage=False) == []
    manifest["extractors"]["d/page.html"] = "html/selectolax=0.0.1;v0"
    (root / "MANIFEST.json").write_text(json.dumps(manifest))
    problems = lint_golden(root, coverage=False)
    assert len(problems) == 1
    assert "pins extractor html/selectolax=0.0.1;v0" in problems[0]
    assert "requirements.lock" in problems[0]
    shutil.rmtree(root)


def test_the_summary_and_the_html_show_the_twins_block() -> None:
    from evals.report.gate_html import twins_section
    from evals.summary import twins_lines

    delta = {"delta": -0.001, "ci_low": -0.013, "ci_high": 0.011, "p_value": 0.9, "wins": 1,
             "ties": 2, "losses": 1}
    report = {"twins": {"documents": 49, "questions": 292, "left_out": {"why": 3},
                        "measures": ["nDCG@10"], "what": "",
                        "stages": {"bm25": {"markdown": {"nDCG@10": 0.613},
                                            "html": {"nDCG@10": 0.612},
                                            "delta": {"nDCG@10": delta}}}}}
    lines = "\n".join(twins_lines(report))
    assert "49 documents, 292 questions" in lines
    assert "delta -0.001 [-0.013,+0.011]" in lines and "3 (why)" in lines
    html = twins_section(report)
    assert 'id="twins-table"' in html and "-0.001 [-0.013, +0.011]" in html
    assert twins_lines({}) == [] and twins_section(rpt.canonical({})) == ""


def test_a_golden_suite_fails_when_the_index_skipped_one_of_its_documents() -> None:
    from evals.golden.suite import _all_indexed
    from groundkit.collection import IndexReport
    from groundkit.collection.ingest import Skipped
    from groundkit.errors import IntegrityError

    _all_indexed("golden v3", IndexReport(collection="c", generation=1))
    skipped = [Skipped("gnuplot/gnuplot.pdf", "extraction timed out after 60 s")]
    report = IndexReport(collection="c", generation=1, skipped=skipped)
    with pytest.raises(IntegrityError, match=r"1 document.*gnuplot\.pdf: extraction timed out"):
        _all_indexed("golden v3", report)
