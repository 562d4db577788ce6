"""The ``bm25-collapse`` stage: BM25 with duplicate passages collapsed, as ``grk search`` does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals import report, trec
from evals.__main__ import main
from evals.external.beir import write_beir
from evals.external.dataset import Dataset, Doc
from evals.golden import write_manifest
from evals.golden.suite import evaluate_golden, golden_suite
from groundkit.collection import Collection, index
from groundkit.model import split_chunk_id

README = "# Lamp\n\nThe lamp keeper trims the wick every evening at dusk.\n"
DOCS = {
    **{f"pkg{i}/README.md": README for i in range(6)},
    "pkg2/README.md": README.upper(),  # case aside, the same passage
    **{f"other{i}.md": f"# Other {i}\n\nA keeper of lamp number {i} and wick {i}.\n"
       for i in range(12)},
}
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "lamp keeper wick evening", "traits": [],
     "answers": [{"doc_id": "pkg3/README.md", "quote": "trims the wick every evening"}]},
    {"id": "q0002", "kind": "answerable", "question": "keeper of lamp number 4", "traits": [],
     "answers": [{"doc_id": "other4.md", "quote": "A keeper of lamp number 4 and wick 4."}]},
    {"id": "q0003", "kind": "no_answer", "question": "zebra xylophone", "traits": [],
     "answers": []},
]


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("collapse") / "golden" / "v1"
    for name, text in DOCS.items():
        (root / "docs" / name).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / name).write_text(text)
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    write_manifest(root)
    return root


@pytest.fixture(scope="module")
def built(golden: Path) -> dict[str, object]:
    return evaluate_golden(golden, golden.parent / "out", stage_names=["bm25", "bm25-collapse"],
                           settings=report.Settings(resamples=200, permutations=200))


def _keys(chunk_ids: list[str]) -> list[str]:
    """Chunk ids without their collection's name: the same span in any collection."""
    return [split_chunk_id(c)[1] for c in chunk_ids]


def test_the_stage_ranks_as_collection_search_collapses(golden: Path, built: dict[str, object],
                                                        tmp_path: Path) -> None:
    runs = {stage: trec.read_run(golden.parent / "out" / "runs" / f"{stage}.trec")
            for stage in ("bm25", "bm25-collapse")}
    index("docs", golden_suite(golden, tmp_path).base, home=tmp_path)  # the golden settings
    with Collection.open("docs", tmp_path) as coll:
        for q in QUESTIONS[:2]:
            qid, text = str(q["id"]), str(q["question"])
            collapsed = coll.search(text, top_k=100)
            plain = coll.search(text, top_k=100, collapse=False)
            # a run file lists each question's hits in rank order
            assert _keys(list(runs["bm25-collapse"][qid])) == _keys(
                [h.chunk.chunk_id for h in collapsed])
            assert _keys(list(runs["bm25"][qid])) == _keys([h.chunk.chunk_id for h in plain])
    readmes = [c for c in runs["bm25"]["q0001"] if c in runs["bm25-collapse"]["q0001"]]
    assert len(runs["bm25"]["q0001"]) - len(readmes) == 5  # five copies folded into one


def test_the_report_records_the_collapse_and_counts_documents_with_and_without(
        built: dict[str, object]) -> None:
    report.validate(built)
    stages = {s["name"]: s for s in built["stages"]}  # type: ignore[attr-defined]
    assert "collapse" in stages["bm25-collapse"]["config"]
    assert "collapse" not in stages["bm25"]["config"]
    # every passage here is a file of its own: collapse changes the passages, not how many
    # documents the top 10 come from (ten for q0001, ten for q0002 either way)
    assert stages["bm25"]["distinct_documents@10"] == (10 + 10) / 2
    assert stages["bm25-collapse"]["distinct_documents@10"] == (10 + 10) / 2
    questions = {q["query_id"]: q for q in built["questions"]}  # type: ignore[attr-defined]
    passages = built["passages"]

    def shown(stage: str) -> list[str]:
        hits = questions["q0001"]["stages"][stage]["hits"]
        return [passages[h["passage"]]["doc_id"] for h in hits]  # type: ignore[index]

    plain, folded = shown("bm25"), shown("bm25-collapse")
    assert sorted(plain[:6]) == sorted(f"pkg{i}/README.md" for i in range(6))
    assert folded[0] == plain[0] and folded[1:5] == plain[6:10]
    assert sum(d.endswith("README.md") for d in folded) == 1


def test_an_external_stage_folds_duplicate_documents_into_the_first(tmp_path: Path) -> None:
    text = "the lantern of the harbour bridge"
    docs = (Doc(doc_id="a", title="", text=text), Doc(doc_id="b", title="", text=text.upper()),
            *(Doc(doc_id=f"d{i}", title="", text=f"harbour stone {i}") for i in range(8)))
    dataset = Dataset(name="dup", docs=docs, queries={"q1": "lantern harbour"},
                      qrels={"q1": {"b": 1, "d3": 1}})
    beir = write_beir(dataset, tmp_path / "dup")
    assert main(["run", "--dataset", f"beir:{beir}", "--cache", str(tmp_path / "cache"),
                 "--out", str(tmp_path / "out"), "--resamples", "200", "--permutations", "200",
                 "--expected-dir", str(tmp_path), "--stages", "bm25", "bm25-collapse"]) == 0
    runs = {stage: list(trec.read_run(tmp_path / "out" / "runs" / "dup" / f"{stage}.trec")["q1"])
            for stage in ("bm25", "bm25-collapse")}
    assert {"a", "b"} <= set(runs["bm25"])
    assert runs["bm25-collapse"] == [d for d in runs["bm25"] if d != "b"]  # "a" is first


def test_your_own_collection_measures_collapse_by_default(golden: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    index("notes", golden_suite(golden, home).base, home=home)
    assert main(["run", "-c", "notes", "--questions", str(golden / "questions.jsonl"),
                 "--home", str(home), "--out", str(tmp_path / "out"), "--cache",
                 str(tmp_path / "cache"), "--resamples", "200", "--permutations", "200"]) == 0
    built = json.loads((tmp_path / "out" / "latest.json").read_text())
    assert [s["name"] for s in built["stages"]] == ["bm25", "bm25-collapse"]
    scores = {q["query_id"]: q["stages"] for q in built["questions"]}["q0001"]
    # q0001's quote is in pkg3's copy, which collapse folds into the first copy's also_in:
    # judged by its quote, the folded copy no longer counts
    assert scores["bm25"]["scores"]["nDCG@10"] > 0
    assert scores["bm25-collapse"]["scores"]["nDCG@10"] == 0
