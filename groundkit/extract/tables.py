"""Tables in a text view: one row a line, cells joined by `` | ``, the header rows marked.

A table's rows stay together in the view (a row is one line, its cells in order, joined
by `` | ``), so a chunk never holds half a row and an answer can quote the row that
answers with the column names it needs. The view says where its tables are in
:attr:`~groundkit.extract.base.TextView.tables`, runs ``(start, end, header_end)``
beside the text like furniture: ``[start, header_end)`` are the header rows (the column
names), the other lines of ``[start, end)`` the body rows. The mark changes no
character of the view and no segment of its map: every cell's text is mapped as the
extractor maps any text, and the `` | `` and line breaks between cells are separators
that map to nothing.

Where a format says what a table is, that is what is read: HTML ``<table>``/``<tr>``/
``<td>`` (EPUB's chapters are HTML), DOCX ``w:tbl``/``w:tr``/``w:tc``, ODT
``table:table``/``table:table-row``/``table:table-cell``. A header row is one the format
marks as such, at the top of its table: HTML rows in ``<thead>`` or whose cells are all
``<th>``, DOCX rows with ``w:tblHeader`` (Word's "repeat as header row"), ODT rows inside
``table:table-header-rows``. An unmarked first row is a body row: a table of callouts or
of key-value pairs has no column names, and a row taken for a header is never quoted.
Only outermost tables are marked; a table nested in a cell is part of that cell's text.

:class:`TableMarks` is what a builder calls as it writes a table's rows;
:func:`rows` gives back a mark's row lines. :func:`kept` is the builder's last step: a
mark the view's own check (:func:`~groundkit.extract.base.check_tables`) would refuse is
dropped and logged, its text kept as plain lines, so a fault in the row bookkeeping costs
a table its rows, never the whole file its place in the index (ADR-0024).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from .base import ExtractError, check_tables

_log = logging.getLogger(__name__)

Table = tuple[int, int, int]
"""``(start, end, header_end)`` of a table in a text view (see the module)."""


@dataclass(slots=True)
class TableMarks:
    """Collects the rows a builder writes inside tables and marks each outermost table.

    A builder calls :meth:`open` and :meth:`close` around every table (nested ones too:
    their rows are not rows of the view) and :meth:`row` with the view offsets of each
    outermost row that got text."""

    marks: list[Table] = field(default_factory=list)
    _depth: int = 0
    _rows: list[tuple[int, int, bool]] = field(default_factory=list)

    @property
    def outermost(self) -> bool:
        """Whether the innermost open table is an outermost one (its rows are rows)."""
        return self._depth == 1

    def open(self) -> None:
        self._depth += 1
        if self._depth == 1:
            self._rows = []

    def row(self, start: int, end: int, header: bool) -> None:
        """A row of the outermost open table: its text is ``[start, end)`` of the view."""
        if self._depth == 1 and start < end:
            self._rows.append((start, end, header))

    def close(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth or not self._rows:
            return
        start, header_end = self._rows[0][0], self._rows[0][0]
        for _, end, header in self._rows:
            if not header:
                break
            header_end = end
        self.marks.append((start, self._rows[-1][1], header_end))
        self._rows = []


def rows(text: str, table: Table) -> Iterator[tuple[int, int, bool]]:
    """``(start, end, is_header)`` of each row line of ``table`` in ``text``."""
    start, end, header_end = table
    at = start
    while at < end:
        stop = text.find("\n", at, end)
        stop = end if stop < 0 else stop
        if stop > at:
            yield at, stop, stop <= header_end
        at = stop + 1


def consistent(text: str, marks: Sequence[Table], format: str) -> tuple[Table, ...]:
    """The ``marks`` that :func:`~groundkit.extract.base.check_tables` accepts over
    ``text``, in order; each other one is left out with a warning saying why (its lines
    stay in the view, read as lines, not rows)."""
    out: list[Table] = []
    for mark in marks:
        try:
            check_tables(text, [*out[-1:], mark], format)
        except ExtractError as exc:
            _log.warning("%s: the table [%d, %d) is kept as text, without its rows marked",
                         exc, mark[0], mark[1])
            continue
        out.append(mark)
    return tuple(out)
