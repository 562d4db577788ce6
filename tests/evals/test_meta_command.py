"""python -m evals meta: the table it prints, the JSON and HTML it writes, its gates, and
the page in a real headless Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from meta_fixture import make_report, write_reports

from evals.__main__ import main
from evals.meta import meta_analysis
from evals.meta.html import render

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SHIFTS = {"dense": {"a": 3, "b": -3, "c": 0, "d": 0},
          "hybrid": {"a": 2, "b": 1, "c": 1, "d": 2}}


@pytest.fixture
def reports(tmp_path: Path) -> list[Path]:
    golden = make_report(domains={"a": 30, "b": 30, "c": 30, "d": 20}, shifts=SHIFTS)
    hostile = make_report(domains={"": 25}, shifts={"dense": {"": 1}, "hybrid": {"": 1}},
                          dataset='<script>alert("x")</script>', texts="claim", seed=5)
    return write_reports(tmp_path, [("golden", golden), ("hostile", hostile)])


def test_meta_prints_a_verdict_per_stage_and_writes_json_and_html(reports, tmp_path, capsys):
    out_json, out_html = tmp_path / "meta.json", tmp_path / "meta.html"

    code = main(["meta", *map(str, reports), "--json", str(out_json), "--html", str(out_html)])

    assert code == 0
    table = capsys.readouterr().out.split("\nsuites:")[0]
    lines = {line.split()[0]: line for line in table.splitlines() if line.startswith(
        ("dense ", "hybrid "))}
    assert lines["dense"].endswith("collection-dependent")
    assert lines["hybrid"].endswith("robust")  # every suite gains: PI above 0
    assert " 5 " in lines["dense"]  # four golden domains and the external suite
    result = json.loads(out_json.read_text(encoding="utf-8"))
    assert [c["stage"] for c in result["comparisons"]] == ["dense", "hybrid"]
    assert result == meta_analysis(reports)
    assert out_html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_the_gates_pass_on_their_own_result_and_fail_when_a_pin_moves(reports, tmp_path,
                                                                        capsys):
    pins = tmp_path / "pins.json"
    assert main(["meta", *map(str, reports), "--write-expected", str(pins)]) == 0
    assert main(["meta", *map(str, reports), "--expected", str(pins)]) == 0
    assert "meta gates: passed" in capsys.readouterr().out

    moved = json.loads(pins.read_text(encoding="utf-8"))
    moved["comparisons"]["hybrid"]["estimate"]["value"] += 0.02
    moved["comparisons"]["dense"]["verdict"] = "robust"
    pins.write_text(json.dumps(moved), encoding="utf-8")

    assert main(["meta", *map(str, reports), "--expected", str(pins)]) == 8
    err = capsys.readouterr().err
    assert "hybrid: estimate = " in err
    assert "dense: verdict = 'collection-dependent', expected 'robust'" in err


def test_bad_input_is_one_line_and_its_exit_code(reports, capsys):
    assert main(["meta", str(reports[0]), "--measure", "R@100"]) == 1
    assert "has no R@100 scores" in capsys.readouterr().err
    assert main(["meta", str(reports[0]), "--stages", "colbert"]) == 2
    assert main(["meta", str(reports[0]), "--confidence", "1.5"]) == 2


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_page_has_one_forest_per_comparison_loads_nothing_and_escapes_names(reports):
    page = render(meta_analysis(reports))
    parser = _Tags()
    parser.feed(page)
    tags = {t for t, _ in parser.tags}

    assert page.count('<svg class="plot"') == 2
    assert page.count('class="pooled"') == 2 and page.count('class="pi"') == 2
    assert "script" not in tags and "img" not in tags and "link" not in tags
    assert not [a for _, attrs in parser.tags for a in attrs
                if a in {"src", "href", "action"} or a.startswith("on")]
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def _chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("GROUNDKIT_REQUIRE_BROWSER") == "1":
            pytest.fail("chromium is not installed, and GROUNDKIT_REQUIRE_BROWSER=1")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return CHROMIUM


def test_a_real_browser_draws_the_forest_plots_without_console_messages(reports, tmp_path):
    page = tmp_path / "meta.html"
    assert main(["meta", *map(str, reports), "--html", str(page)]) == 0
    screenshot = tmp_path / "meta.png"
    command = [
        _chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
        "--enable-logging=stderr", "--v=0", f"--screenshot={screenshot}",
        "--window-size=1280,1600", "--dump-dom", page.resolve().as_uri(),
    ]  # fmt: skip

    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)

    assert done.returncode == 0, done.stderr[-2000:]
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []
    assert len(re.findall(r"<svg class=\"plot\"", done.stdout)) == 2
    assert '<table id="decisions">' in done.stdout
    assert screenshot.stat().st_size > 10_000
