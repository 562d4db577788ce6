"""The furniture measures of `make eval`: quotes of furniture counted, the formats slice
scored, the detector scored against labelled lines."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from conftest import TreeMaker
from extract.test_furniture import manual

from evals.golden.answers import _furniture, _scores
from evals.golden.furniture import detector_block, marked, sample, wilson
from evals.report import model as rpt
from groundkit import extract
from groundkit.answer import ask
from groundkit.collection import Collection, IndexConfig, index


def golden_with_a_manual(root: Path) -> Path:
    docs = root / "docs"
    docs.mkdir(parents=True)
    (docs / "manual.pdf").write_bytes(manual(5, ("Burrow logs of page {w} are kept.",)))
    (docs / "site").mkdir()
    for n in range(3):
        (docs / "site" / f"p{n}.html").write_bytes(
            b"<html><body><nav>Home | Next</nav><p>Page %d text.</p></body></html>" % n)
    return root


def test_the_sample_is_every_line_of_the_chosen_pages_and_the_labels_score_it(
        tmp_path: Path) -> None:
    golden = golden_with_a_manual(tmp_path / "g")
    items = sample(golden)
    assert [i["id"] for i in items] == [f"f{n:05d}" for n in range(1, len(items) + 1)]
    view = extract.extract("pdf", (golden / "docs" / "manual.pdf").read_bytes())
    assert all(view.text[i["start"]:i["end"]] == i["text"] for i in items if i["format"] == "pdf")
    labels = tmp_path / "labels.jsonl"
    # A reader labels the running heads and page numbers furniture, and (wrongly, to
    # check the arithmetic) one body line too.
    rows = [{**i, "furniture": i["text"].startswith(("Acme", "Home")) or i["text"].isdigit()
             or i["text"] == "Burrow logs of page beta are kept.", "kind": None} for i in items]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    block = detector_block(golden, labels)
    furniture = sum(r["furniture"] for r in rows)
    assert block["measured"] and block["lines"] == len(rows)
    assert (block["labelled_furniture"], block["true_positives"]) == (furniture, furniture - 1)
    assert block["precision"] == 1.0 and block["recall"] == (furniture - 1) / furniture
    assert block["by_format"]["html"]["recall"] == 1.0


def test_labels_that_no_longer_match_the_view_are_not_measured(tmp_path: Path) -> None:
    golden = golden_with_a_manual(tmp_path / "g")
    [first, *_] = sample(golden)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({**first, "text": "something else", "furniture": False}) + "\n",
                      encoding="utf-8")
    assert detector_block(golden, labels)["measured"] is False
    assert detector_block(golden, tmp_path / "missing.jsonl")["measured"] is False


def test_a_line_is_marked_when_half_of_it_is_furniture() -> None:
    view = extract.TextView("abcdefgh", "pdf", furniture=((0, 4, "running-head"),))
    assert marked(view, 0, 8) == "running-head" and marked(view, 0, 9) is None
    assert marked(view, 4, 8) is None


def test_the_site_pass_counts_with_the_extractor_and_never_twice() -> None:
    view = extract.TextView("abcdefgh", "html", furniture=((0, 2, "navigation"),))
    assert marked(view, 0, 8, site=[(5, 6)]) is None  # 2 + 1 of 8: under half
    assert marked(view, 0, 8, site=[(2, 4)]) == "navigation"  # a tie: the extractor's
    assert marked(view, 0, 8, site=[(0, 3)]) is None  # the overlap counted once
    assert marked(view, 0, 8, site=[(2, 7)]) == "site-repeated"


def test_a_menu_on_every_page_of_a_golden_site_is_marked(tmp_path: Path) -> None:
    docs = tmp_path / "g" / "docs" / "site"
    docs.mkdir(parents=True)
    menu = "<div><p>Start page of the project</p><p>Reference of every option</p></div>"
    for n in range(3):
        (docs / f"p{n}.html").write_bytes(
            f"<html><body>{menu}<p>Page {n} text.</p></body></html>".encode())
    labels = tmp_path / "labels.jsonl"
    rows = [{**i, "furniture": "Page" not in i["text"], "kind": None}
            for i in sample(tmp_path / "g")]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    block = detector_block(tmp_path / "g", labels)
    assert (block["labelled_furniture"], block["marked"], block["true_positives"]) == (6, 6, 6)


def test_wilson_intervals_hold_the_rate() -> None:
    low, high = wilson(45, 50) or [0.0, 0.0]
    assert low < 0.9 < high and low >= 0 and high <= 1
    assert wilson(0, 0) is None


def test_answers_never_count_a_furniture_quote_and_the_formats_slice_is_scored(
        make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({"notes.md": "# Notes\n\nBurrow logs are noted here.\n"})
    (root / "manual.pdf").write_bytes(manual(5, ("Burrow logs of page {w} are kept.",)))
    index("f", IndexConfig(roots=(str(root),)), home=home)
    question = rpt.Question(query_id="q1", text="acme users manual burrow logs gamma",
                            kind="answerable", traits=(), gold=(), domain="d", split="test")
    with Collection.open("f", home) as coll:
        answer = ask(coll, question.text)
    cited = answer.citations[0]
    gold = rpt.GoldAnswer(doc_id=cited.path, quote=cited.text, start=cited.start,
                          end=cited.end)
    scores = _scores([dataclasses.replace(question, gold=(gold,))], {"q1": answer})
    assert scores["furniture_quotes"] == 0 and "Acme" not in cited.text
    assert (scores["formats_judged"], scores["formats_answer_success"]) == (1, 1.0)
    # A citation of a passage's running head would be counted.
    passage = next(p for p in answer.passages if p.chunk.furniture)
    a, b, _ = passage.chunk.furniture[0]
    assert _furniture(answer, passage.cite(a, b))
    assert not _furniture(answer, cited)


def test_the_committed_labels_are_golden_v4s_sample_line_for_line() -> None:
    from evals.external.checksums import REPO
    from evals.golden.furniture import LABELS

    labelled = [json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines()]
    drawn = sample(REPO / "golden" / "v4")
    assert [{k: row[k] for k in drawn[0]} for row in labelled] == drawn
    assert {row["kind"] for row in labelled if row["furniture"]} == {
        "running-head", "page-number", "contents", "index", "navigation"}
