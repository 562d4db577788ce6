"""Where a shown hit's passage sits: its heading path and, for an extracted format, its
source locator, from the hit to the report's record, its JSON and its drill-down."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_html import run_chromium  # tests/evals is on the path

import groundkit
from evals import report as rp
from evals.golden import write_manifest
from evals.golden.suite import evaluate_golden, golden_suite
from evals.report.html import render, write_html
from evals.report.markup import source_label
from evals.stages import STAGES

FIXTURES = Path(__file__).resolve().parents[1] / "extract" / "fixtures"
INTRO = " ".join(f"The lamp room on floor {i} sits above the stair." for i in range(23))
WICKS = " ".join(f"Spare wick number {i} is kept in the brass box." for i in range(60))
ANSWER = "The keeper trims the wick every evening at dusk."
DOCS = {  # lamps.md is long enough that its last chunks start under "## Wicks"
    "lamps.md": f"# Lamp care\n\n{INTRO}\n\n## Wicks\n\n{WICKS} {ANSWER}\n",
    "tides.txt": "Tide tables are posted weekly by the harbour office.\n",
}
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "when does the keeper trim the wick",
     "traits": [], "answers": [{"doc_id": "lamps.md", "quote": ANSWER}]},
    {"id": "q0002", "kind": "answerable", "question": "how often are tide tables posted",
     "traits": [], "answers": [{"doc_id": "tides.txt", "quote": "posted weekly"}]},
    {"id": "q0003", "kind": "no_answer", "question": "what colour is the door", "traits": [],
     "answers": []},
]
SETTINGS = rp.Settings(resamples=200, permutations=200)


def lamp_golden(root: Path) -> Path:
    (root / "docs").mkdir(parents=True)
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text, encoding="utf-8")
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    write_manifest(root)
    return root


def drilldown_data(page: str) -> dict:
    return json.loads(page.split('id="drilldown">', 1)[1].split("</script>", 1)[0])


def test_a_shown_markdown_hit_records_its_headings_and_the_hits_below_it_stay_bare(tmp_path):
    suite = golden_suite(lamp_golden(tmp_path / "golden" / "v1"), tmp_path / "home")
    try:
        run = suite.open(STAGES["bm25"], lambda _: None)
        top, *rest = run.rank(suite.questions[0], 100, 1)
    finally:
        suite.close()
    assert (top.doc_id, top.headings, top.source) == ("lamps.md", ("Lamp care", "Wicks"), None)
    assert ANSWER in top.text
    assert rest and all(r.text == "" and r.headings == () and r.source is None for r in rest)


@pytest.fixture(scope="module")
def lamp_report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    pytest.importorskip("mcp")
    base = tmp_path_factory.mktemp("places")
    return evaluate_golden(lamp_golden(base / "golden" / "v1"), base / "out",
                           stage_names=["bm25", "mcp-stdio-bm25"], settings=SETTINGS)


def test_markdown_headings_reach_the_json_through_the_direct_and_the_mcp_stage(lamp_report):
    rp.validate(lamp_report)
    assert rp.canonical(lamp_report) == lamp_report
    passages = lamp_report["passages"]
    by_id = {q["query_id"]: q["stages"] for q in lamp_report["questions"]}
    direct, mcp = (by_id["q0001"][s]["hits"][0] for s in ("bm25", "mcp-stdio-bm25"))
    assert direct["passage"] == mcp["passage"]  # one passage, the same place
    assert passages[direct["passage"]]["headings"] == ["Lamp care", "Wicks"]
    (tides,) = [p for p in passages if p["doc_id"] == "tides.txt"]
    assert "headings" not in tides and "source" not in tides  # plain text: nothing to add
    assert not any("source" in p for p in passages)


def test_markdown_headings_show_as_breadcrumbs_in_the_drilldown(lamp_report, tmp_path):
    data = drilldown_data(render(lamp_report))
    assert [["Lamp care", "Wicks"], ""] in data["places"]
    page = write_html(lamp_report, tmp_path / "report.html")

    dom, console = run_chromium(page, tmp_path / "profile", tmp_path / "s.png", "#q=q0001")

    assert console == []
    body = dom.split('id="q-q0001"', 1)[1].split("</details>", 1)[0]
    shown = [lamp_report["passages"][h["passage"]].get("headings") for q in
             lamp_report["questions"] if q["query_id"] == "q0001" for s in q["stages"].values()
             for h in s["hits"]]
    assert shown.count(["Lamp care", "Wicks"]) >= 2  # at least each stage's first
    assert body.count('<div class="crumbs">Lamp care › Wicks</div>') == shown.count(
        ["Lamp care", "Wicks"])
    assert body.count('<div class="crumbs">Lamp care</div>') == shown.count(["Lamp care"])


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, rp.HitRecord]:
    """A shown hit of each extracted kind: PDF pages, a DOCX part's bytes, an HTML file's."""
    pytest.importorskip("pypdfium2")
    pytest.importorskip("selectolax")
    root, home = tmp_path_factory.mktemp("formats"), tmp_path_factory.mktemp("home")
    for name, fixture in (("manual.pdf", "pdf/gnuplot-p21-23.pdf"),
                          ("handbook.docx", "office/handbook.docx"),
                          ("apparmor.html", "html/en-US_sect.apparmor.html")):
        (root / name).write_bytes((FIXTURES / fixture).read_bytes())
    groundkit.index("k", groundkit.IndexConfig(roots=(str(root),)), home=home)
    wanted = {"manual.pdf": lambda hit: len(hit.chunk.locator.pages) == 2,  # p. N–N+1
              "handbook.docx": lambda hit: bool(hit.chunk.headings),
              "apparmor.html": lambda hit: bool(hit.chunk.headings)}
    found: dict[str, rp.HitRecord] = {}
    with groundkit.open_collection("k", home) as coll:
        for query in ("gnuplot plot styles lines", "Debian handbook migrate", "AppArmor profile"):
            for hit in coll.search(query, top_k=10):
                if hit.chunk.doc_id not in found and wanted[hit.chunk.doc_id](hit):
                    found[hit.chunk.doc_id] = rp.HitRecord.from_hit(hit.to_dict("k"), "verified")
    assert sorted(found) == ["apparmor.html", "handbook.docx", "manual.pdf"]
    return found


def test_an_extracted_hit_records_a_compact_locator(extracted):
    pdf, docx, html = (extracted[d] for d in ("manual.pdf", "handbook.docx", "apparmor.html"))
    assert pdf.source is not None and pdf.source["format"] == "pdf"
    first, last = pdf.source["pages"]
    assert last == first + 1 and source_label(pdf.source) == f"p. {first}–{last}"
    assert docx.source is not None and docx.headings
    assert set(docx.source) == {"format", "part", "byte_start", "byte_end"}
    assert (docx.source["format"], docx.source["part"]) == ("docx", "word/document.xml")
    assert source_label(docx.source) == (f"bytes {docx.source['byte_start']}–"
                                         f"{docx.source['byte_end']} in word/document.xml")
    assert html.source is not None and "part" not in html.source
    assert source_label(html.source).startswith("bytes ") and " in " not in source_label(
        html.source)


def extracted_report(records: dict[str, rp.HitRecord]) -> dict:
    pdf, docx, html = (records[d] for d in ("manual.pdf", "handbook.docx", "apparmor.html"))
    quote = pdf.text[:20]
    gold = rp.GoldAnswer(doc_id=pdf.doc_id, quote=quote, start=pdf.start,
                         end=pdf.start + len(quote))
    questions = [rp.Question(query_id="q1", text="gnuplot styles", kind="answerable",
                             gold=(gold,)),
                 rp.Question(query_id="q2", text="migrating a server", kind="no_answer")]
    ranked = [r._replace(rank=i) for i, r in enumerate((pdf, docx, html), start=1)]
    stage = rp.StageResult(name="bm25", description="BM25", config={},
                           hits={"q1": ranked, "q2": ranked[1:2]})
    provenance = rp.Provenance(golden_version="formats", golden_manifest_sha256="0" * 64,
                               groundkit_version="0", git_commit=None, python="3")
    return rp.build_report(questions=questions, qrels={"q1": {pdf.chunk_id: 2}}, stages=[stage],
                           baseline="bm25", provenance=provenance, config={}, settings=SETTINGS,
                           run={"created_at": "2030-01-01T00:00:00+00:00", "host": "h"})


def test_an_extracted_hits_locator_is_in_the_json_and_beside_its_path_on_the_page(
        extracted, tmp_path):
    built = extracted_report(extracted)
    rp.validate(built)
    rows = {p["doc_id"]: p for p in built["passages"]}
    for doc_id, record in extracted.items():
        assert rows[doc_id]["source"] == record.source
        assert rows[doc_id].get("headings", []) == list(record.headings)
    page = write_html(built, tmp_path / "report.html")
    labels = {label for _, label in drilldown_data(page.read_text(encoding="utf-8"))["places"]}
    assert labels == {source_label(r.source) for r in extracted.values()}

    dom, console = run_chromium(page, tmp_path / "profile", tmp_path / "s.png", "#q=q1")

    assert console == []
    body = dom.split('id="q-q1"', 1)[1].split("</details>", 1)[0]
    for record in extracted.values():
        assert f'<span class="loc"> · {source_label(record.source)}</span>' in body
    crumbs = " › ".join(extracted["handbook.docx"].headings).replace("\xa0", "&nbsp;")
    assert f'<div class="crumbs">{crumbs}</div>' in body


def test_a_locator_label_names_pages_as_runs_and_bytes_with_their_part():
    assert rp.compact_source(None) is None
    spans = [{"page": 3}, {"page": 5}, {"page": 6}, {"page": 5}]
    assert rp.compact_source({"format": "pdf", "spans": spans}) == {
        "format": "pdf", "pages": [3, 5, 6]}
    assert source_label({"format": "pdf", "pages": [3, 5, 6]}) == "p. 3, 5–6"
    assert source_label({"format": "pdf", "pages": [41]}) == "p. 41"
    epub = {"format": "epub", "spans": [
        {"part": "ch1.xhtml", "byte_start": 900, "byte_end": 950},
        {"part": "ch2.xhtml", "byte_start": 10, "byte_end": 400},
        {"part": "ch1.xhtml", "byte_start": 960, "byte_end": 1200, "page": None},
        {"part": "ch3.xhtml", "byte_start": 0, "byte_end": 80}]}
    compact = rp.compact_source(epub)
    assert compact == {"format": "epub", "part": "ch1.xhtml", "byte_start": 900,
                       "byte_end": 1200, "parts": 3}
    assert source_label(compact) == "bytes 900–1200 in ch1.xhtml (+2 parts)"
    assert source_label({"format": "html", "byte_start": 1804, "byte_end": 2930}) == (
        "bytes 1804–2930")
    assert source_label({"format": "pdf"}) == source_label(None) == ""


def test_the_schema_rejects_a_malformed_source():
    report = stub_report()
    rp.validate(report)
    report["passages"][0]["source"] = {"format": "pdf", "pages": []}
    with pytest.raises(rp.ReportError, match="schema"):
        rp.validate(report)
    report["passages"][0]["source"] = {"format": "docx", "part": "word/document.xml"}
    with pytest.raises(rp.ReportError, match="schema"):
        rp.validate(report)


def stub_report() -> dict:
    text = "Plot styles are set with set style."
    record = rp.HitRecord(1, "k:a", "manual.pdf", 0, len(text), 1.5, text, "verified",
                          ("Plotting",), {"format": "pdf", "pages": [21, 22]})
    gold = rp.GoldAnswer(doc_id="manual.pdf", quote=text, start=0, end=len(text))
    return rp.build_report(
        questions=[rp.Question(query_id="q1", text="styles", kind="answerable", gold=(gold,))],
        qrels={"q1": {"k:a": 2}}, stages=[rp.StageResult(name="bm25", description="BM25",
                                                         config={}, hits={"q1": [record]})],
        baseline="bm25", settings=SETTINGS,
        provenance=rp.Provenance(golden_version="x", golden_manifest_sha256="0" * 64,
                                 groundkit_version="0", git_commit=None, python="3"),
        config={})
