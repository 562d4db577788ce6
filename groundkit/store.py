"""SQLite, the source of truth of a collection: documents, chunks, generations.

Layout of one collection directory::

    store.sqlite3        this schema (WAL mode)
    gen-<N>/             derived indexes of generation N (BM25, vectors), rebuildable
    .lock                held while an indexer runs

Chunk rows are content-addressed (their id hashes the document path, the
document's content hash and the span) and are never rewritten, so a citation
made against an old generation still finds its stored text and can be judged
*drifted* rather than unknown. Which chunks make up a generation is recorded in
``generation_chunks``. A generation is invisible until one transaction flips
``meta.current_generation`` to it: a killed indexer leaves the previous
generation exactly as it was.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import IntegrityError
from .model import Chunk, Duplicate, Locator

SCHEMA_VERSION = 4
STORE_FILE = "store.sqlite3"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS generations (
    id INTEGER PRIMARY KEY,
    state TEXT NOT NULL CHECK (state IN ('building', 'published', 'retired')),
    created_at TEXT NOT NULL,
    config TEXT NOT NULL,
    stats TEXT
);
CREATE TABLE IF NOT EXISTS documents (
    generation INTEGER NOT NULL, doc_id TEXT NOT NULL, root TEXT NOT NULL,
    relpath TEXT NOT NULL, sha256 TEXT NOT NULL, size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL, encoding TEXT NOT NULL, bom_len INTEGER NOT NULL,
    extractor TEXT NOT NULL DEFAULT '', standing TEXT,
    PRIMARY KEY (generation, doc_id)
);
CREATE TABLE IF NOT EXISTS chunks (
    rowid INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL,
    root TEXT NOT NULL, relpath TEXT NOT NULL, doc_sha256 TEXT NOT NULL,
    start INTEGER NOT NULL, "end" INTEGER NOT NULL, byte_start INTEGER NOT NULL,
    byte_end INTEGER NOT NULL, start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
    utf16_start INTEGER NOT NULL, utf16_end INTEGER NOT NULL,
    text TEXT NOT NULL, span_sha256 TEXT NOT NULL,
    extractor TEXT NOT NULL DEFAULT '', locator TEXT, headings TEXT, layout TEXT
);
CREATE TABLE IF NOT EXISTS generation_chunks (
    generation INTEGER NOT NULL, doc_id TEXT NOT NULL, start INTEGER NOT NULL,
    chunk_rowid INTEGER NOT NULL, PRIMARY KEY (generation, doc_id, start, chunk_rowid)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS skipped (
    generation INTEGER NOT NULL, path TEXT NOT NULL, reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS derived_files (
    generation INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,
    sha256 TEXT NOT NULL, PRIMARY KEY (generation, path)
) WITHOUT ROWID;
"""

_CHUNK_COLUMNS = (
    "chunk_id, doc_id, doc_sha256, start, \"end\", byte_start, byte_end, "
    "start_line, end_line, utf16_start, utf16_end, text, span_sha256, "
    "extractor, locator, headings, layout"
)
_ADDED_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "documents": (("extractor", "TEXT NOT NULL DEFAULT ''"), ("standing", "TEXT")),
    "chunks": (("extractor", "TEXT NOT NULL DEFAULT ''"), ("locator", "TEXT"),
               ("headings", "TEXT"), ("layout", "TEXT")),
}
"""Columns later schemas added: version 2 documents in other formats, version 3 a document's
standing (``NULL``: not recorded yet; ``''``: current; else the evidence it is superseded),
version 4 a chunk's layout (its furniture runs, the sections that start inside it and, added
in the same JSON without a new version, the tables it holds; ``NULL``: none, or not recorded
by an older version)."""


@dataclass(frozen=True, slots=True)
class StoredChunk:
    """A chunk row plus where its file lives (needed to re-read it)."""

    chunk: Chunk
    root: str
    relpath: str


def connect(directory: Path, *, readonly: bool = False) -> sqlite3.Connection:
    """Open the collection's database; read-only works on a read-only filesystem."""
    path = directory / STORE_FILE
    if readonly:
        if not path.is_file():
            raise IntegrityError(f"no store at {path}")
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, check_same_thread=False)
            conn.execute("SELECT 1 FROM meta LIMIT 1").fetchall()
        except sqlite3.OperationalError:
            # WAL needs a writable -shm file; on a read-only filesystem, open immutable.
            conn = sqlite3.connect(f"file:{path}?immutable=1", uri=True, check_same_thread=False)
        _shadow_old_tables(conn)
        return conn
    directory.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA foreign_keys=ON")
    conn.executescript(_SCHEMA)
    _migrate(conn)
    return conn


def _missing_columns(conn: sqlite3.Connection, table: str) -> list[tuple[str, str]]:
    have = {row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")}
    return [(name, decl) for name, decl in _ADDED_COLUMNS[table] if name not in have]


def _migrate(conn: sqlite3.Connection) -> None:
    """Bring a store of an older schema to this one (new columns take their defaults:
    every document of a version-1 store is plain text)."""
    missing = {table: _missing_columns(conn, table) for table in _ADDED_COLUMNS}
    if (get_meta(conn, "schema_version") or 0) >= SCHEMA_VERSION and not any(missing.values()):
        return  # the common case takes no write lock
    with transaction(conn):
        for table, columns in missing.items():
            for name, decl in columns:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {decl}")
        set_meta(conn, "schema_version", SCHEMA_VERSION)


def _shadow_old_tables(conn: sqlite3.Connection) -> None:
    """A read-only store of an older schema cannot be migrated: a temporary view of each
    table with the new columns at their defaults stands in front of it, so readers see
    one shape (a name resolves to the temporary schema first)."""
    for table in _ADDED_COLUMNS:
        missing = _missing_columns(conn, table)
        if missing:
            defaults = ", ".join(
                f"{decl.split('DEFAULT ')[1] if 'DEFAULT' in decl else 'NULL'} AS {name}"
                for name, decl in missing)
            conn.execute(f"CREATE TEMP VIEW {table} AS SELECT *, {defaults} FROM main.{table}")


def get_meta(conn: sqlite3.Connection, key: str) -> Any:
    text = get_meta_text(conn, key)
    return None if text is None else json.loads(text)


def get_meta_text(conn: sqlite3.Connection, key: str) -> str | None:
    """The stored JSON text of ``key``, unparsed (to tell whether it changed)."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def set_meta(conn: sqlite3.Connection, key: str, value: Any) -> None:
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?, ?) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, json.dumps(value, sort_keys=True)),
    )


def current_generation(conn: sqlite3.Connection) -> int | None:
    value = get_meta(conn, "current_generation")
    return None if value is None else int(value)


def generation_config(conn: sqlite3.Connection, generation: int) -> dict[str, Any]:
    row = conn.execute("SELECT config FROM generations WHERE id = ?", (generation,)).fetchone()
    if row is None:
        raise IntegrityError(f"generation {generation} is not in the store")
    return dict(json.loads(row[0]))


def _row_to_chunk(row: Sequence[Any]) -> Chunk:
    return Chunk(
        chunk_id=row[0], doc_id=row[1], doc_sha256=row[2], start=row[3], end=row[4],
        byte_start=row[5], byte_end=row[6], start_line=row[7], end_line=row[8],
        utf16_start=row[9], utf16_end=row[10], text=row[11], span_sha256=row[12],
        extractor=row[13], locator=Locator.from_dict(json.loads(row[14])) if row[14] else None,
        headings=tuple(json.loads(row[15])) if row[15] else (),
        **(_layout(json.loads(row[16])) if row[16] else {}),
    )


def _layout(data: dict[str, Any]) -> dict[str, Any]:
    """A chunk's ``layout`` column as :class:`Chunk` fields."""
    return {"furniture": tuple((int(a), int(b), str(k)) for a, b, k in data.get("furniture", ())),
            "sections": tuple((int(o), tuple(p)) for o, p in data.get("sections", ())),
            "tables": tuple((int(a), int(b), int(h), str(t)) for a, b, h, t in
                            data.get("tables", ()))}


def _layout_json(c: Chunk) -> str | None:
    if not c.furniture and not c.sections and not c.tables:
        return None
    data: dict[str, Any] = {}
    if c.furniture:
        data["furniture"] = [list(f) for f in c.furniture]
    if c.sections:
        data["sections"] = [[o, list(p)] for o, p in c.sections]
    if c.tables:
        data["tables"] = [list(t) for t in c.tables]
    return json.dumps(data, ensure_ascii=False, sort_keys=True)


def lookup_chunk(conn: sqlite3.Connection, chunk_id: str) -> StoredChunk | None:
    row = conn.execute(
        f"SELECT {_CHUNK_COLUMNS}, root, relpath FROM chunks WHERE chunk_id = ?", (chunk_id,)
    ).fetchone()
    return None if row is None else StoredChunk(_row_to_chunk(row), row[17], row[18])


def chunks_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]) -> list[StoredChunk]:
    """Chunks for ``rowids``, in the order given."""
    if not rowids:
        return []
    marks = ",".join("?" * len(rowids))
    rows = conn.execute(
        f"SELECT rowid, {_CHUNK_COLUMNS}, root, relpath FROM chunks WHERE rowid IN ({marks})",
        [int(r) for r in rowids],
    ).fetchall()
    by_id = {r[0]: StoredChunk(_row_to_chunk(r[1:]), r[18], r[19]) for r in rows}
    return [by_id[int(r)] for r in rowids]


def places_by_rowid(conn: sqlite3.Connection, rowids: Sequence[int]
                    ) -> list[tuple[Duplicate, str]]:
    """Where each chunk of ``rowids`` lies, and its text, in the order given: what
    duplicate collapse reads of a candidate list, without building whole chunks."""
    if not rowids:
        return []
    marks = ",".join("?" * len(rowids))
    rows = conn.execute(
        f'SELECT rowid, doc_id, chunk_id, start, "end", text FROM chunks '
        f"WHERE rowid IN ({marks})", [int(r) for r in rowids]).fetchall()
    by_id = {r[0]: (Duplicate(r[1], r[2], r[3], r[4]), r[5]) for r in rows}
    return [by_id[int(r)] for r in rowids]


@dataclass(frozen=True, slots=True)
class DocumentRow:
    """Where a generation's document lives, and the content hash it was indexed with."""

    doc_id: str
    root: str
    relpath: str
    sha256: str
    extractor: str = ""
    """The identity of the extractor that made its text view; empty for plain text."""


def generation_documents(conn: sqlite3.Connection, generation: int) -> list[DocumentRow]:
    """The documents of ``generation``, by doc id."""
    rows = conn.execute("SELECT doc_id, root, relpath, sha256, extractor FROM documents "
                        "WHERE generation = ? ORDER BY doc_id", (generation,))
    return [DocumentRow(*row) for row in rows]


def document_head(conn: sqlite3.Connection, generation: int, doc_id: str) -> str | None:
    """The text of the first chunk of ``doc_id`` in ``generation`` (``None``: no chunk)."""
    row = conn.execute(
        "SELECT c.text FROM generation_chunks g JOIN chunks c ON c.rowid = g.chunk_rowid "
        "WHERE g.generation = ? AND g.doc_id = ? ORDER BY g.start LIMIT 1",
        (generation, doc_id)).fetchone()
    return None if row is None else str(row[0])


def document_standing(conn: sqlite3.Connection, generation: int, doc_id: str) -> str | None:
    """``doc_id``'s recorded standing in ``generation`` (see :data:`_ADDED_COLUMNS`)."""
    row = conn.execute("SELECT standing FROM documents WHERE generation = ? AND doc_id = ?",
                       (generation, doc_id)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def generation_size(conn: sqlite3.Connection, generation: int) -> int:
    """How many chunks make up ``generation``."""
    row = conn.execute(
        "SELECT COUNT(*) FROM generation_chunks WHERE generation = ?", (generation,)).fetchone()
    return int(row[0])


def generation_rowids(conn: sqlite3.Connection, generation: int) -> list[int]:
    """The chunk rows of a generation in their canonical order (doc_id, start)."""
    rows = conn.execute(
        "SELECT chunk_rowid FROM generation_chunks WHERE generation = ? "
        "ORDER BY doc_id, start, chunk_rowid",
        (generation,),
    )
    return [r[0] for r in rows]


def iter_generation_chunks(conn: sqlite3.Connection, generation: int) -> Iterator[Chunk]:
    """Every chunk of a generation, in canonical order."""
    rows = conn.execute(
        f"SELECT {', '.join('c.' + c.strip() for c in _CHUNK_COLUMNS.split(','))} "
        "FROM generation_chunks g JOIN chunks c ON c.rowid = g.chunk_rowid "
        "WHERE g.generation = ? ORDER BY g.doc_id, g.start, g.chunk_rowid",
        (generation,),
    )
    for row in rows:
        yield _row_to_chunk(row)


ChunkRow = tuple[str, str, str, int, int, int, int, int, int, int, int, str, str,
                 str, str | None, str | None, str | None]
"""A chunk as a plain tuple in ``_CHUNK_COLUMNS`` order (cheap to pass between processes)."""


def chunk_row(c: Chunk) -> ChunkRow:
    return (c.chunk_id, c.doc_id, c.doc_sha256, c.start, c.end, c.byte_start, c.byte_end,
            c.start_line, c.end_line, c.utf16_start, c.utf16_end, c.text, c.span_sha256,
            c.extractor,
            json.dumps(c.locator.to_dict(), sort_keys=True) if c.locator else None,
            json.dumps(list(c.headings), ensure_ascii=False) if c.headings else None,
            _layout_json(c))


def insert_chunks(
    conn: sqlite3.Connection, generation: int, root: str, relpath: str, rows: Sequence[ChunkRow]
) -> int:
    """Store chunk rows (idempotently) and make them members of ``generation``.

    ``rows`` come from validated :class:`Chunk` values (:func:`chunk_row`). Row
    ids are assigned here (the indexer holds the collection's write lock), so
    memberships need no lookup; a chunk that already exists (the same span of the
    same content, e.g. a file changed back) keeps its old row.
    """
    if not rows:
        return 0
    first = int(conn.execute("SELECT COALESCE(MAX(rowid), 0) + 1 FROM chunks").fetchone()[0])
    before = conn.total_changes
    conn.executemany(
        f"INSERT OR IGNORE INTO chunks (rowid, {_CHUNK_COLUMNS}, root, relpath) "
        f"VALUES ({', '.join('?' * 20)})",
        [(first + i, *row, root, relpath) for i, row in enumerate(rows)],
    )
    if conn.total_changes - before == len(rows):
        conn.executemany(
            "INSERT INTO generation_chunks (generation, doc_id, start, chunk_rowid) "
            "VALUES (?, ?, ?, ?)",
            [(generation, row[1], row[3], first + i) for i, row in enumerate(rows)],
        )
    else:  # some rows already existed: look their row ids up
        conn.executemany(
            "INSERT OR IGNORE INTO generation_chunks (generation, doc_id, start, chunk_rowid) "
            "SELECT ?, doc_id, start, rowid FROM chunks WHERE chunk_id = ?",
            [(generation, row[0]) for row in rows],
        )
    return len(rows)


def carry_document(conn: sqlite3.Connection, source: int, target: int, doc_id: str) -> int:
    """Reuse an unchanged document's chunks from generation ``source`` in ``target``."""
    cur = conn.execute(
        "INSERT INTO generation_chunks (generation, doc_id, start, chunk_rowid) SELECT ?, "
        "doc_id, start, chunk_rowid FROM generation_chunks WHERE generation = ? AND doc_id = ?",
        (target, source, doc_id))
    return cur.rowcount


DerivedFile = tuple[str, int, str]
"""``(path relative to gen-<N>/, size in bytes, sha256 hex)`` of one derived file."""


def record_derived_files(conn: sqlite3.Connection, generation: int,
                         files: Sequence[DerivedFile]) -> None:
    """Record the checksums of a generation's derived files (inside the publish transaction)."""
    conn.execute("DELETE FROM derived_files WHERE generation = ?", (generation,))
    conn.executemany("INSERT INTO derived_files VALUES (?, ?, ?, ?)",
                     [(generation, path, size, sha) for path, size, sha in files])


def derived_files(conn: sqlite3.Connection, generation: int) -> dict[str, tuple[int, str]] | None:
    """path -> (size, sha256) recorded for ``generation``; ``None`` when none are recorded.

    A store written before checksums existed has no such table (a read-only
    connection does not create it) or no rows for its older generations.
    """
    try:
        rows = conn.execute("SELECT path, size, sha256 FROM derived_files WHERE generation = ?",
                            (generation,)).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return {str(p): (int(size), str(sha)) for p, size, sha in rows} or None


def check(conn: sqlite3.Connection) -> list[str]:
    """Integrity problems of the store (empty when sound)."""
    problems = [r[0] for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
    generation = current_generation(conn)
    if generation is None:
        return problems
    state = conn.execute("SELECT state FROM generations WHERE id = ?", (generation,)).fetchone()
    if state is None or state[0] != "published":
        problems.append(f"current generation {generation} is not published")
    orphans = conn.execute(
        "SELECT COUNT(*) FROM generation_chunks g LEFT JOIN chunks c ON c.rowid = g.chunk_rowid "
        "WHERE g.generation = ? AND c.rowid IS NULL",
        (generation,),
    ).fetchone()[0]
    if orphans:
        problems.append(f"{orphans} chunk memberships of generation {generation} have no chunk")
    stale = conn.execute(
        "SELECT COUNT(*) FROM generation_chunks g JOIN chunks c ON c.rowid = g.chunk_rowid "
        "LEFT JOIN documents d ON d.generation = g.generation AND d.doc_id = c.doc_id "
        "WHERE g.generation = ? AND (d.sha256 IS NULL OR d.sha256 != c.doc_sha256)",
        (generation,),
    ).fetchone()[0]
    if stale:
        problems.append(f"{stale} chunks of generation {generation} belong to no current document")
    try:
        for _ in iter_generation_chunks(conn, generation):
            pass
    except Exception as exc:  # noqa: BLE001 - report any invalid row as a problem
        problems.append(f"invalid chunk row: {exc}")
    return problems


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """``with transaction(conn):`` runs BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
