"""The eval HTML report's drill-down links each hit and each gold quote to its citation
page: the ``grk open`` command a static file can give, checked in headless Chromium and
then run against a real collection.

The browser part is skipped without Chromium, except with GROUNDKIT_REQUIRE_BROWSER=1.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from browser import Browser, require_browser
from conftest import REPO
from test_view_serve import get, readline

from evals import report as rp
from evals.report.html import write_html
from groundkit.collection import Collection, IndexConfig, index
from groundkit.text.chunking import ChunkerConfig

TEXT = ("# Retention\n\nDeployment logs are kept for 30 days, then deleted by the nightly "
        "job.\n\n# Leave\n\nParental leave is 16 weeks at full pay.\n")
HELD, ORPHAN = "kept for 30 days", "16 weeks at full pay"


def _gold(quote: str) -> tuple[rp.GoldAnswer]:
    start = TEXT.index(quote)
    return (rp.GoldAnswer(doc_id="notes.md", quote=quote, start=start, end=start + len(quote)),)


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any]]:
    base = tmp_path_factory.mktemp("report-links")
    (base / "docs").mkdir()
    (base / "docs" / "notes.md").write_text(TEXT, encoding="utf-8")
    config = IndexConfig(roots=(str(base / "docs"),), chunker=ChunkerConfig(target=60,
                                                                              overlap=0))
    index("docs", config, home=base / "home")
    with Collection.open("docs", base / "home") as coll:
        return base / "home", coll.chunks()


def report(chunks: list[Any]) -> dict[str, Any]:
    """Two questions: one whose gold quote a shown hit holds, one whose gold no hit holds."""
    first = next(c for c in chunks if HELD in c.text)
    assert ORPHAN not in first.text

    def hit(rank: int, c: Any) -> rp.HitRecord:
        return rp.HitRecord(rank=rank, chunk_id=c.chunk_id, doc_id=c.doc_id, start=c.start,
                            end=c.end, score=1.0 / rank, text=c.text, verdict="verified")

    questions = [
        rp.Question(query_id="q01", text="How long are logs kept?", kind="answerable",
                    traits=("lexical",), gold=_gold(HELD)),
        rp.Question(query_id="q02", text="How long is parental leave?", kind="answerable",
                    traits=("lexical",), gold=_gold(ORPHAN)),
    ]
    stage = rp.StageResult(name="bm25", description="bm25", config={"mode": "bm25"},
                           hits={"q01": [hit(1, first)], "q02": [hit(1, first)]})
    qrels = {"q01": {first.chunk_id: 1}, "q02": {}}
    provenance = rp.Provenance(golden_version="v1", golden_manifest_sha256="0" * 64,
                               groundkit_version="0.1.0", git_commit="f" * 40,
                               python="3.11", libraries={})
    return rp.build_report(questions=questions, qrels=qrels, stages=[stage], baseline="bm25",
                           provenance=provenance, config={},
                           settings=rp.Settings(resamples=100, permutations=100),
                           run={"created_at": "2030-01-01T00:00:00+00:00", "host": "h"})


def drilldown(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="drilldown">(.*?)</script>', page,
                      re.S)
    assert found
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_the_report_names_a_chunk_of_every_passage_and_the_collections_home(
        collection, tmp_path):
    home, chunks = collection
    built = report(chunks)
    page = write_html(built, tmp_path / "r.html", views_home=home).read_text(encoding="utf-8")
    bare = write_html(built, tmp_path / "bare.html").read_text(encoding="utf-8")

    data = drilldown(page)
    shown = [h["chunk_id"] for q in built["questions"] for s in q["stages"].values()
             for h in s["hits"]]
    assert set(data["ids"]) == set(shown) and len(data["ids"]) == len(built["passages"])
    assert data["home"] == f"--home {home}" and f"<code>{home}</code>" in page
    assert drilldown(bare)["home"] == "" and "add <code>--home DIR</code>" in bare


def test_in_a_browser_each_hit_and_held_gold_quote_gives_a_grk_open_that_shows_it(
        collection, tmp_path):
    require_browser()
    home, chunks = collection
    built = report(chunks)
    browser = Browser(tmp_path / "profile")
    try:
        commands = {}
        for q in ("q01", "q02"):  # a page each: a new fragment alone fires no load event
            page = write_html(built, tmp_path / f"{q}.html", views_home=home)
            browser.open(page.as_uri() + f"#q={q}")
            hidden = browser.evaluate(f"Array.from(document.querySelectorAll("
                                      f"'#q-{q} .view code')).map(c => c.hidden)")
            browser.evaluate(f"document.querySelectorAll('#q-{q} .view button')"
                             ".forEach(b => b.click())")
            commands[q] = browser.evaluate(
                f"Array.from(document.querySelectorAll('#q-{q} .view code'))"
                ".filter(c => !c.hidden).map(c => c.textContent)")
            noview = browser.evaluate(f"document.querySelectorAll('#q-{q} .noview').length")
            assert all(hidden), q  # a command shows when its button is pressed
            assert noview == (1 if q == "q02" else 0), q
        assert browser.messages() == []
        assert all(url.startswith("file://") for url in browser.requests())
    finally:
        browser.close()

    gold_cmd, hit_cmd = commands["q01"]
    start = TEXT.index(HELD)
    assert re.fullmatch(rf"grk open docs:[0-9a-f]{{20}} --start {start} --end "
                        rf"{start + len(HELD)} --home {re.escape(str(home))}", gold_cmd)
    assert hit_cmd == f"grk open {gold_cmd.split()[2]} --home {home}"
    assert len(commands["q02"]) == 1  # the hit's; its gold is held by no shown hit

    argv = shlex.split(gold_cmd)
    proc = subprocess.Popen([sys.executable, "-m", "groundkit", *argv[1:], "--print",
                             "--timeout", "60"], cwd=REPO, stdout=subprocess.PIPE)
    assert proc.stdout
    try:
        url = readline(proc.stdout, time.monotonic() + 60).strip()
        status, _, shown = get(url.split("#")[0])
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    assert status == 200 and f'<mark class="hl" id="quote">{HELD}</mark>' in shown
