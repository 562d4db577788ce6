"""Duplicate collapse: one passage installed at several places is one hit, with ``also_in``."""

from __future__ import annotations

from pathlib import Path

from conftest import TreeMaker

from groundkit.collection import Collection, IndexConfig, index
from groundkit.retrieval.collapse import passage_key

README = "# Lamp\n\nThe lamp keeper trims the wick every evening at dusk.\n"


def _tree(make_tree: TreeMaker) -> Path:
    files: dict[str, str | bytes] = {f"pkg{i}/README.md": README for i in range(6)}
    files["pkg2/README.md"] = README.replace("evening", "evening").upper()  # case aside: same
    files.update({f"other{i}.md": f"# Other {i}\n\nA keeper of lamp number {i} and wick {i}.\n"
                  for i in range(12)})
    return make_tree(files)


def test_copies_of_a_passage_fold_into_the_best_hit(make_tree: TreeMaker, home: Path) -> None:
    index("docs", IndexConfig(roots=(str(_tree(make_tree)),)), home=home)
    with Collection.open("docs", home) as coll:
        every = coll.search("lamp keeper wick evening", top_k=20, collapse=False)
        folded = coll.search("lamp keeper wick evening", top_k=10)
    readmes = [h for h in every if h.chunk.doc_id.endswith("README.md")]
    assert len(readmes) == 6
    first = folded[0]
    assert first.chunk.chunk_id == readmes[0].chunk.chunk_id
    assert sorted(d.path for d in first.also_in) == sorted(
        h.chunk.doc_id for h in readmes[1:])
    assert first.to_dict("docs")["also_in"][0]["chunk_id"] == first.also_in[0].chunk_id
    # the list is filled from deeper in the ranking: still 10 distinct passages
    assert len(folded) == 10
    assert len({passage_key(h.chunk.text) for h in folded}) == 10
    assert [h.rank for h in folded] == list(range(1, 11))
    assert [h.chunk.chunk_id for h in folded[1:]] == [
        h.chunk.chunk_id for h in every if not h.chunk.doc_id.endswith("README.md")][:9]


def test_without_duplicates_collapse_changes_nothing(make_tree: TreeMaker, home: Path) -> None:
    root = make_tree({f"n{i}.md": f"# Note {i}\n\nNote {i} about lamps.\n" for i in range(5)})
    index("docs", IndexConfig(roots=(str(root),)), home=home)
    with Collection.open("docs", home) as coll:
        assert ([h.to_dict("docs") for h in coll.search("lamps note", top_k=3)]
                == [h.to_dict("docs") for h in coll.search("lamps note", top_k=3,
                                                           collapse=False)])
