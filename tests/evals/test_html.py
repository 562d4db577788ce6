"""The HTML rendering: escaped, offline, highlighted, and rendered by a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evals import report as rp
from evals.__main__ import main
from evals.report.html import render, write_html

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'

LOGS, LEAVE = "ops/logging.md", "hr/<leave>.md"
DOCS = {
    LOGS: (
        "# Logging\n\nDeployment logs are kept for 30 days, then deleted by the nightly job. "
        "Audit logs are kept for seven years & archived to cold storage.\n"
    ),
    LEAVE: (
        f"Parental leave is 16 weeks at full pay. {HOSTILE} Requests go to the people team "
        "at least 8 weeks ahead.\n"
    ),
}
Q = rp.Question


def gold(doc_id: str, quote: str) -> tuple[rp.GoldAnswer]:
    start = DOCS[doc_id].index(quote)
    return (rp.GoldAnswer(doc_id=doc_id, quote=quote, start=start, end=start + len(quote)),)


QUESTIONS = [
    Q(query_id="q01", text="How long do we keep deployment logs?", kind="answerable",
      traits=("lexical",), gold=gold(LOGS, "kept for 30 days")),
    Q(query_id="q02", text="What happens to audit records?", kind="answerable",
      traits=("paraphrase",), gold=gold(LOGS, "archived to cold storage")),
    Q(query_id="q03", text="How much parental leave is there?", kind="answerable",
      traits=("lexical",), gold=gold(LEAVE, "16 weeks at full pay")),
    Q(query_id="q04", text=f"Leave notice? {HOSTILE}", kind="ambiguous",
      traits=("paraphrase", "hostile"), gold=gold(LEAVE, "at least 8 weeks ahead")),
    Q(query_id="q05", text="Who approves the budget?", kind="no-answer"),
    Q(query_id="q06", text="What's the office wifi password?", kind="no-answer",
      traits=("hostile",)),
]  # fmt: skip
CHUNKS = [(d, s, min(s + 60, len(DOCS[d]))) for d in DOCS for s in range(0, len(DOCS[d]), 30)]
RANKINGS = {
    "bm25": {"q01": [0, 2, 1], "q02": [2, 1], "q03": [5, 7], "q04": [], "q05": [], "q06": []},
    "dense": {"q01": [2, 1, 0], "q02": [3, 4], "q03": [7, 6], "q04": [9], "q05": [6], "q06": [1]},
    "hybrid": {
        "q01": [1, 0],
        "q02": [4, 3, 2],
        "q03": [6, 5],
        "q04": [8, 9],
        "q05": [],
        "q06": [2],
    },
}
VERDICTS = ["verified", "verified", "drifted", None, "unresolvable"]


def qrels() -> dict[str, dict[str, int]]:
    judged = {}
    for q in QUESTIONS:
        for g in q.gold:
            judged[q.query_id] = {
                f"c:{i}": 1
                for i, (doc_id, start, end) in enumerate(CHUNKS)
                if doc_id == g.doc_id and start < g.end and g.start < end
            }
    return judged


def hits(ranked: list[int]) -> list[rp.HitRecord]:
    return [
        rp.HitRecord(
            rank=rank, chunk_id=f"c:{i}", doc_id=CHUNKS[i][0], start=CHUNKS[i][1],
            end=CHUNKS[i][2], score=10.0 / rank, text=DOCS[CHUNKS[i][0]][CHUNKS[i][1]:CHUNKS[i][2]],
            verdict=VERDICTS[(i + rank) % len(VERDICTS)],
        )
        for rank, i in enumerate(ranked, start=1)
    ]  # fmt: skip


def sample_report() -> dict:
    stages = [
        rp.StageResult(
            name=name, description=f"{name} <retrieval> & friends",
            config={"mode": name, "note": HOSTILE},
            hits={q: hits(ranked) for q, ranked in by_q.items()},
        )
        for name, by_q in RANKINGS.items()
    ]  # fmt: skip
    provenance = rp.Provenance(
        golden_version="v1", golden_manifest_sha256="0123456789abcdef" * 4,
        groundkit_version="0.1.0", git_commit="f" * 40, python="3.11.9", libraries={},
    )  # fmt: skip
    return rp.build_report(
        questions=QUESTIONS, qrels=qrels(), stages=stages, baseline="bm25",
        provenance=provenance, config={"chunk_size": 60},
        settings=rp.Settings(resamples=1_000, permutations=1_000),
        run={"created_at": "2030-01-01T00:00:00+00:00", "host": f"host {HOSTILE}"},
    )  # fmt: skip


def test_the_page_has_the_summary_plots_abstention_breakdowns_and_every_question():
    page = render(sample_report())

    assert '<table id="summary">' in page
    assert page.count('<svg class="plot"') == 6
    assert '<table id="abstention">' in page
    assert "<h3>By kind</h3>" in page and "<h3>By trait</h3>" in page
    assert page.count('<details class="question"') == len(QUESTIONS)


class TagCollector(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parsed_tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    collector = TagCollector()
    collector.feed(page)
    return collector.tags


def test_all_document_and_question_text_is_escaped():
    page = render(sample_report())
    tags = parsed_tags(page)

    scripts = [a.get("type") for t, a in tags if t == "script"]
    assert scripts == ["application/json", None]  # its data, then the page's own script
    assert "</script" not in page.split('id="drilldown">', 1)[1].split("</script>", 1)[0]
    assert "img" not in {t for t, _ in tags}
    assert not any(name.startswith("on") for _, attrs in tags for name in attrs)
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in page
    assert "hr/\\u003cleave>.md" in page  # a document path as data, never markup


def test_the_page_loads_nothing_from_anywhere_else():
    page = render(sample_report())
    tags = parsed_tags(page)

    loading = {"src", "href", "srcset", "action", "formaction", "poster", "data"}
    assert not [(t, a) for t, attrs in tags for a in attrs if a in loading]
    assert not {"link", "img", "iframe", "object", "embed", "video", "audio"} & {t for t, _ in tags}
    assert "url(" not in page and "@import" not in page
    (policy,) = [a["content"] for t, a in tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert "default-src 'none'" in policy


def test_a_passage_shown_by_every_stage_is_stored_once():
    report = sample_report()
    page = render(report)
    shown = sum(len(q["stages"][s]["hits"]) for q in report["questions"] for s in q["stages"])
    assert len(report["passages"]) < shown
    data = json.loads(page.split('id="drilldown">', 1)[1].split("</script>", 1)[0])
    stored = sum(len(segment[2]) for segment in data["segments"])
    assert stored <= sum(len(DOCS[d]) for d in DOCS)  # overlapping chunks are stitched
    for row, (segment, offset, length) in zip(report["passages"], data["passages"], strict=True):
        doc_id, start, text = data["segments"][segment]
        assert (doc_id, start + offset) == (row["doc_id"], row["start"])
        assert text[offset:offset + length] == row["text"]


def test_question_bodies_are_left_to_the_script():
    page = render(sample_report())
    assert page.count('<div class="body"></div>') == len(QUESTIONS)


def test_the_command_renders_a_saved_report_and_rejects_an_invalid_one(tmp_path, capsys):
    saved = rp.write_json(sample_report(), tmp_path / "r.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{}", encoding="utf-8")

    assert main(["export", "--report", str(saved), "--html", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main(["export", "--report", str(broken), "--html", str(tmp_path / "x.html")]) == 1
    assert "schema" in capsys.readouterr().err
    assert main(["export", "--report", str(saved)]) == 2


def require_browser() -> str:
    if CHROMIUM is None:
        message = "chromium is not installed (apt-get install chromium)"
        if os.environ.get("GROUNDKIT_REQUIRE_BROWSER") == "1":
            pytest.fail(f"{message}, and GROUNDKIT_REQUIRE_BROWSER=1")
        pytest.skip(message)
    return CHROMIUM


def run_chromium(
    page: Path, profile: Path, screenshot: Path, fragment: str = ""
) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and every console message the page produced."""
    command = [
        require_browser(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
        "--no-first-run", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
        "--enable-logging=stderr", "--v=0",
        f"--screenshot={screenshot}", "--window-size=1280,2000", "--dump-dom",
        page.resolve().as_uri() + fragment,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


def test_the_console_check_catches_a_page_that_logs_errors(tmp_path):
    broken = tmp_path / "broken.html"
    broken.write_text(
        "<!DOCTYPE html><title>x</title><script>console.error('boom'); nope();</script>",
        encoding="utf-8",
    )

    _, console = run_chromium(broken, tmp_path / "profile", tmp_path / "broken.png")

    assert any("boom" in line for line in console)
    assert any("Uncaught ReferenceError" in line for line in console)


def test_a_real_browser_renders_the_report_without_console_messages(tmp_path):
    page = write_html(sample_report(), tmp_path / "report_sample.html")
    screenshot = tmp_path / "report_sample.png"  # never into the working tree

    dom, console = run_chromium(page, tmp_path / "profile", screenshot)

    assert console == []
    assert '<table id="summary">' in dom
    assert f"{len(QUESTIONS)} of {len(QUESTIONS)} questions" in dom  # the inline script ran
    assert screenshot.stat().st_size > 10_000


def test_the_drilldown_filter_works_in_the_browser(tmp_path):
    page = write_html(sample_report(), tmp_path / "report.html")

    dom, console = run_chromium(page, tmp_path / "profile", tmp_path / "s.png", "#q=q03")

    assert console == []
    assert f"1 of {len(QUESTIONS)} questions" in dom
    assert (
        re.search(r'<details class="question" id="q-q03"[^>]*>', dom).group(0).count("hidden") == 0
    )
    assert re.search(r'<details class="question" id="q-q01"[^>]*hidden', dom)


def test_an_opened_question_shows_its_hits_with_the_gold_overlap_marked(tmp_path):
    page = write_html(sample_report(), tmp_path / "report.html")

    dom, console = run_chromium(page, tmp_path / "profile", tmp_path / "s.png", "#q=q01")

    assert console == []
    body = dom.split('id="q-q01"', 1)[1].split("</details>", 1)[0]
    assert "<mark>kept for 30 days</mark>" in body.replace("\n", "")
    assert body.count('<table class="hits">') == len(RANKINGS)


def test_hostile_text_in_an_opened_question_stays_text(tmp_path):
    page = write_html(sample_report(), tmp_path / "report.html")

    dom, console = run_chromium(page, tmp_path / "profile", tmp_path / "s.png", "#q=q04")

    assert console == []
    body = dom.split('id="q-q04"', 1)[1].split("</details>", 1)[0]
    assert "hr/&lt;leave&gt;.md" in body and "&lt;img src=x" in body
    assert "<img" not in dom


def test_passages_that_disagree_where_they_overlap_keep_their_own_text():
    from evals.report.html import _segments

    rows = [{"doc_id": "d", "start": 0, "end": 5, "text": "abcde"},
            {"doc_id": "d", "start": 3, "end": 8, "text": "deFGH"},
            {"doc_id": "d", "start": 4, "end": 9, "text": "XXXXX"}]
    segments, located = _segments(rows)
    assert segments == [["d", 0, "abcdeFGH"], ["d", 4, "XXXXX"]]
    assert located == [[0, 0, 5], [0, 3, 5], [1, 0, 5]]


def test_a_gated_report_shows_the_gate_its_rivals_signals_and_a_risk_plot_per_mode():
    import numpy as np

    from evals.score import abstention

    rng = np.random.default_rng(5)
    parts = ("train", "calibration", "test")
    items = [abstention.Item(query_id=f"q{i}", answerable=i % 3 > 0, near_miss=i % 6 == 0,
                             retrieved=i % 3 == 1, split=parts[i % 5 % 3],
                             signals={"bm25.idf_coverage": float(rng.random() + (i % 3 > 0)),
                                      "dense.margin": float(rng.random()),
                                      "agreement.top10": float(rng.random())})
             for i in range(240)]
    report = sample_report()
    report["gate"] = abstention.report_block({"bm25": ("bm25", items),
                                              "hybrid": ("hybrid", items)})
    page = render(report)
    section = page[page.index('<section id="gate">'):]
    section = section[:section.index("</section>")]
    for table in ("gate-summary", "gate-alphas", "gate-rivals"):
        assert f'<table id="{table}">' in section
    assert section.count('<svg class="plot risk"') == 2  # one per mode
    assert section.count('class="curve"') == 2 * 2      # each curve and its legend line
    shipped = report["gate"]["stages"]["bm25"]["scorers"]["default"]["shipped"]
    at = next(r for r in shipped["at_alpha"] if r["alpha"] == 0.1)
    assert f"<td>{shipped['n0']}</td><td>{shipped['auroc']:.3f}</td>" in section
    assert f"{100 * at['coverage_retrieved']:.1f}%" in section
    assert "hybrid: mean2" in section and "both(bm25.idf_coverage + dense.margin)" in section
    assert '<section id="gate">' not in render(sample_report())  # no signals, no section
