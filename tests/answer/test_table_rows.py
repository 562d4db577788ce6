"""Answers read a marked table row by row, with its header, wherever the header is.

An extractor marks its tables (:mod:`groundkit.extract.tables`); each chunk keeps the
part of a table it holds and the table's header text (``Chunk.tables``), so a row in a
chunk after the header's is still read and scored with its column names, and an
unmarked first row is quotable, not taken for a header.
"""

from __future__ import annotations

from pathlib import Path

from conftest import TreeMaker
from extract.test_office import docx, para

from groundkit import store
from groundkit.answer import ask
from groundkit.answer.sentences import Unit, units
from groundkit.collection import Collection, IndexConfig, index
from groundkit.model import Chunk, sha256_text
from groundkit.text.chunking import ChunkerConfig

GRID = "alpha | 1\nbeta | 2\ngamma | 3"


def test_without_a_mark_the_first_line_of_a_grid_is_taken_for_its_header() -> None:
    assert [u.kind for u in units(GRID)] == ["header", "row", "row"]


def test_a_marked_table_without_a_header_row_is_all_rows() -> None:
    found = units(GRID, tables=((0, len(GRID), 0, ""),))
    assert [(GRID[u.start:u.end], u.kind, u.context, u.header) for u in found] == [
        ("alpha | 1", "row", None, ""), ("beta | 2", "row", None, ""),
        ("gamma | 3", "row", None, "")]


def test_a_row_whose_header_is_in_an_earlier_chunk_carries_its_text() -> None:
    found = units(GRID, tables=((0, len(GRID), 0, "Name | Count"),))
    assert {u.header for u in found} == {"Name | Count"}


def test_a_marked_header_in_the_passage_is_the_rows_context_and_prose_stays() -> None:
    text = "Counts follow.\n\nName | Count\n" + GRID + "\n\nThat is all."
    start = text.index("Name")
    found = units(text, tables=((start, start + 13 + len(GRID), start + 12, "Name | Count"),))
    assert [(text[u.start:u.end], u.kind) for u in found] == [
        ("Counts follow.", "sentence"), ("Name | Count", "header"), ("alpha | 1", "row"),
        ("beta | 2", "row"), ("gamma | 3", "row"), ("That is all.", "sentence")]
    assert {u.context for u in found if u.kind == "row"} == {(start, start + 12)}
    assert {u.header for u in found} == {""}


def test_a_chunks_tables_survive_the_store(tmp_path: Path) -> None:
    chunk = Chunk(chunk_id="c:" + "0" * 20, doc_id="d.docx", doc_sha256="0" * 64, start=0,
                  end=len(GRID), byte_start=0, byte_end=len(GRID), start_line=1, end_line=3,
                  utf16_start=0, utf16_end=len(GRID), text=GRID, span_sha256=sha256_text(GRID),
                  tables=((0, len(GRID), 0, "Name | Count"),))
    conn = store.connect(tmp_path)
    store.insert_chunks(conn, 1, str(tmp_path), "d.docx", [store.chunk_row(chunk)])
    found = store.lookup_chunk(conn, chunk.chunk_id)
    assert found is not None and found.chunk == chunk
    assert units(found.chunk.text, tables=found.chunk.tables)[0] == Unit(
        0, 9, "row", None, "Name | Count")


def table(column: str, offset: int, rows: int = 40) -> str:
    def row(header: bool, *cells: str) -> str:
        props = "<w:trPr><w:tblHeader/></w:trPr>" if header else ""
        return f"<w:tr>{props}" + "".join(f"<w:tc>{para(c)}</w:tc>" for c in cells) + "</w:tr>"

    body = "".join(row(False, f"Service Q{n:02d}X logs", f"{n + offset} weeks")
                   for n in range(rows))
    return "<w:tbl>" + row(True, "Record", column) + body + "</w:tbl>"


def test_a_row_far_below_its_header_is_answered_with_the_header_known(
        make_tree: TreeMaker, home: Path) -> None:
    """Two tables list the same services, one their retention, one their review period:
    only the header tells the rows apart, and it is in neither row's chunk."""
    root = make_tree({})
    (root / "records.docx").write_bytes(docx(
        para("Log keeping") + table("Retention period", 100) + para("Reviews")
        + table("Review interval", 200) + para("Ask the records office about the rest.")))
    config = IndexConfig(roots=(str(root),), chunker=ChunkerConfig(target=200, overlap=0))
    index("t", config, home=home)
    with Collection.open("t", home) as coll:
        holding = [c for c in coll.chunks() if "Service Q33X logs" in c.text]
        assert len(holding) == 2
        assert not any("period" in c.text or "interval" in c.text for c in holding)
        assert {c.tables[0][3] for c in holding} == {"Record | Retention period",
                                                      "Record | Review interval"}
        retention = ask(coll, "What is the retention period of Service Q33X logs?")
        review = ask(coll, "What is the review interval of Service Q33X logs?")
    assert retention.sentences[0].citations[0].text == "Service Q33X logs | 133 weeks"
    assert review.sentences[0].citations[0].text == "Service Q33X logs | 233 weeks"
