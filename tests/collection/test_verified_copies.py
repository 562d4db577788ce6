"""Verified copies first: a hit whose file is gone is shown, and cited, as an identical copy
that still verifies, saying which place it replaces; where copies are looked for does not
depend on ``top_k``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer import ask
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index
from groundkit.model import Hit, Status
from groundkit.retrieval.collapse import passage_key

LAMP = "# Lamp\n\nThe lamp keeper trims the wick every evening at dusk.\n"
QUERY = "when does the lamp keeper trim the wick"
OTHERS = {f"other{i}.md": f"# Other {i}\n\nA keeper of lamp number {i} sells oil.\n"
          for i in range(8)}


def _indexed(make_tree: TreeMaker, home: Path, copies: int) -> Path:
    files: dict[str, str | bytes] = {f"pkg{i}/README.md": LAMP for i in range(copies)}
    files.update(OTHERS)
    root = make_tree(files)
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    return root


def _search(home: Path, **options: object) -> list[Hit]:
    with Collection.open("docs", home) as coll:
        return coll.search(QUERY, **options)  # type: ignore[arg-type]


def _lamp(hits: list[Hit]) -> Hit:
    (hit,) = [h for h in hits if "dusk" in h.chunk.text]
    return hit


def grk(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_also_in_lists_the_same_copies_whatever_top_k(make_tree: TreeMaker, home: Path) -> None:
    _indexed(make_tree, home, copies=12)
    everywhere = {f"pkg{i}/README.md" for i in range(12)}
    seen = []
    for top_k in (1, 2, 3, 10):
        hit = _search(home, top_k=top_k)[0]
        assert "dusk" in hit.chunk.text
        assert {hit.chunk.doc_id, *(d.path for d in hit.also_in)} == everywhere
        seen.append((hit.chunk.chunk_id, hit.also_in))
    assert all(s == seen[0] for s in seen)


def test_collapse_keeps_the_same_ranking_whatever_top_k(make_tree: TreeMaker,
                                                        home: Path) -> None:
    _indexed(make_tree, home, copies=3)
    deep = _search(home, top_k=9)
    every = _search(home, top_k=20, collapse=False)
    firsts = {passage_key(h.chunk.text): h.chunk.chunk_id for h in reversed(every)}
    assert [h.chunk.chunk_id for h in deep] == [
        h.chunk.chunk_id for h in every if firsts[passage_key(h.chunk.text)] == h.chunk.chunk_id]
    for top_k in (1, 2, 5):
        assert ([h.to_dict("docs") for h in _search(home, top_k=top_k)]
                == [h.to_dict("docs") for h in deep[:top_k]])


def test_a_hit_whose_file_is_gone_shows_its_verified_copy_and_names_the_place_it_replaces(
        make_tree: TreeMaker, home: Path) -> None:
    root = _indexed(make_tree, home, copies=3)
    first = _lamp(_search(home, top_k=3))
    (root / first.chunk.doc_id).unlink()

    hit = _lamp(_search(home, top_k=3, verify=True))
    assert hit.verdict is not None and hit.verdict.status is Status.VERIFIED
    assert hit.chunk.doc_id == first.also_in[0].path
    assert hit.rank == first.rank and hit.score == first.score
    (gone,) = hit.replaced
    assert (gone.place.path, gone.place.chunk_id) == (first.chunk.doc_id, first.chunk.chunk_id)
    assert gone.status is Status.UNRESOLVABLE and "missing" in gone.reason
    assert hit.also_in == first.also_in[1:]  # the copy not checked; the gone one is replaced
    assert hit.stale is False  # the copy shown is unchanged
    data = hit.to_dict("docs")
    assert data["path"] == hit.chunk.doc_id and data["verdict"]["status"] == "verified"
    assert data["replaced"] == [{"path": first.chunk.doc_id, "chunk_id": first.chunk.chunk_id,
                                 "start": first.chunk.start, "end": first.chunk.end,
                                 "status": "unresolvable", "reason": gone.reason}]


def test_copies_that_fail_too_are_listed_before_the_one_shown(make_tree: TreeMaker,
                                                             home: Path) -> None:
    root = _indexed(make_tree, home, copies=3)
    first = _lamp(_search(home))
    (root / first.chunk.doc_id).unlink()
    changed = root / first.also_in[0].path
    changed.write_text(LAMP.replace("dusk", "dawn"), encoding="utf-8")

    hit = _lamp(_search(home, verify=True))
    assert hit.verdict is not None and hit.verdict.status is Status.VERIFIED
    assert hit.chunk.doc_id == first.also_in[1].path
    assert [(r.place.path, r.status) for r in hit.replaced] == [
        (first.chunk.doc_id, Status.UNRESOLVABLE), (first.also_in[0].path, Status.DRIFTED)]
    assert hit.also_in == ()


def test_when_no_copy_verifies_the_hit_stays_where_it_ranked(make_tree: TreeMaker,
                                                            home: Path) -> None:
    root = _indexed(make_tree, home, copies=2)
    first = _lamp(_search(home))
    for place in (first.chunk.doc_id, first.also_in[0].path):
        (root / place).unlink()
    hit = _lamp(_search(home, verify=True))
    assert hit.chunk.chunk_id == first.chunk.chunk_id and hit.also_in == first.also_in
    assert hit.verdict is not None and hit.verdict.status is Status.UNRESOLVABLE
    assert hit.replaced == ()


def test_without_verify_or_collapse_nothing_is_replaced(make_tree: TreeMaker,
                                                       home: Path) -> None:
    root = _indexed(make_tree, home, copies=2)
    first = _lamp(_search(home))
    (root / first.chunk.doc_id).unlink()
    plain = _lamp(_search(home))
    assert plain.chunk.chunk_id == first.chunk.chunk_id and plain.replaced == ()
    assert plain.stale is True
    every = [h for h in _search(home, verify=True, collapse=False) if "dusk" in h.chunk.text]
    assert [h.chunk.doc_id for h in every] == [first.chunk.doc_id, first.also_in[0].path]
    assert [h.verdict.status for h in every if h.verdict] == [Status.UNRESOLVABLE,
                                                              Status.VERIFIED]
    assert all(h.replaced == () for h in every)


def test_a_gated_search_shows_the_same_verified_copy(make_tree: TreeMaker, home: Path,
                                                     tmp_path: Path) -> None:
    root = _indexed(make_tree, home, copies=2)
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps({"question": q, "kind": kind}) + "\n" for q, kind in [
        (QUERY, "answerable"), ("who sells lamp oil", "answerable"),
        *((f"where is the harbour crane number {i}", "no_answer") for i in range(10))]),
        encoding="utf-8")
    with Collection.open("docs", home) as coll:
        coll.calibrate(questions)
        first = _lamp(coll.search(QUERY))
        (root / first.chunk.doc_id).unlink()
        gated = coll.search_or_abstain(QUERY, alpha=0.5, verify=True)
        plain = coll.search(QUERY, verify=True)
    assert gated.decision.answer
    assert [h.to_dict("docs") for h in gated.hits] == [h.to_dict("docs") for h in plain]
    assert _lamp(gated.hits).replaced[0].place.path == first.chunk.doc_id


def test_grk_search_verify_shows_the_copy_and_what_it_replaces(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _indexed(make_tree, home, copies=2)
    first = _lamp(_search(home))
    (root / first.chunk.doc_id).unlink()
    copy = first.also_in[0].path

    code, out, _ = grk(capsys, "search", QUERY, "-c", "docs", "--verify", "--top-k", "1")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"  1. {copy}:") and lines[0].endswith("[verified]")
    assert (f"     in place of: {first.chunk.doc_id} [unresolvable: file missing (deleted or "
            "renamed)]") in lines
    assert not any(line.startswith("     also in:") for line in lines)

    code, out, _ = grk(capsys, "search", QUERY, "-c", "docs", "--verify", "--top-k", "1",
                       "--json")
    (hit,) = json.loads(out)["hits"]
    assert code == 0 and hit["path"] == copy and hit["verdict"]["status"] == "verified"
    assert [(r["path"], r["status"]) for r in hit["replaced"]] == [
        (first.chunk.doc_id, "unresolvable")]


def test_ask_answers_from_the_verified_copy_and_says_which_place_it_replaces(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree({"a/lamp.md": LAMP, "b/lamp.md": LAMP})
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    first = _lamp(_search(home))
    (root / first.chunk.doc_id).unlink()
    copy = first.also_in[0].path

    with Collection.open("docs", home) as coll:
        answer = ask(coll, QUERY)
    assert answer.kind == "extractive" and "dusk" in answer.text
    (cited,) = answer.citations
    assert cited.path == copy and cited.verdict == "verified"
    assert [(r.place.path, r.status) for r in cited.replaced] == [
        (first.chunk.doc_id, Status.UNRESOLVABLE)]
    assert LAMP[cited.start:cited.end] == cited.text

    code, out, _ = grk(capsys, "ask", QUERY, "-c", "docs")
    assert code == 0
    assert (f"(verified) — in place of {first.chunk.doc_id} (unresolvable: file missing "
            "(deleted or renamed))") in out
    code, out, _ = grk(capsys, "ask", QUERY, "-c", "docs", "--json")
    data = json.loads(out)
    assert code == 0 and data["citations"][0]["path"] == copy
    assert data["citations"][0]["replaced"][0]["path"] == first.chunk.doc_id
    assert data["passages"][0]["replaced"] == data["citations"][0]["replaced"]


def test_ask_still_gives_up_when_no_copy_holds(make_tree: TreeMaker, home: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = make_tree({"a/lamp.md": LAMP, "b/lamp.md": LAMP})
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    for place in ("a/lamp.md", "b/lamp.md"):
        (root / place).unlink()
    code, out, _ = grk(capsys, "ask", QUERY, "-c", "docs")
    assert code == 12 and "none of the 1 passages found still holds" in out


def test_a_search_of_several_collections_shows_a_verified_copy_from_another_one(
        make_tree: TreeMaker, home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    roots = {"a": make_tree({"lamp.md": LAMP, **OTHERS}), "b": make_tree({"copy.md": LAMP})}
    for name, root in roots.items():
        index(name, IndexConfig(roots=(str(root),)), home=home)
    _, out, _ = grk(capsys, "search", QUERY, "-c", "a", "-c", "b", "--json")
    first = json.loads(out)["hits"][0]
    (copy,) = first["also_in"]
    (roots[first["collection"]] / first["path"]).unlink()

    code, out, _ = grk(capsys, "search", QUERY, "-c", "a", "-c", "b", "--verify", "--json")
    hit = json.loads(out)["hits"][0]
    assert code == 0 and hit["verdict"]["status"] == "verified"
    assert (hit["chunk_id"], hit["path"], hit["score"]) == (copy["chunk_id"], copy["path"],
                                                            first["score"])
    assert hit["collection"] == copy["chunk_id"].split(":")[0] != first["collection"]
    assert [(r["chunk_id"], r["status"]) for r in hit["replaced"]] == [
        (first["chunk_id"], "unresolvable")]
    assert hit["also_in"] == []
    _, out, _ = grk(capsys, "search", QUERY, "-c", "a", "-c", "b", "--verify")
    assert f"     in place of: {first['path']} [unresolvable: file missing" in out
