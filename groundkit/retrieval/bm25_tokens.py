"""Batch tokenisation for index builds: many texts in, one array of term ids out.

Gives exactly the terms :meth:`Analyzer.analyze` gives, text by text, but works on
a whole batch at once so that the per-token work is done by C loops
(``bytes.translate``, then the compiled chunk table of ``_chunkc.c``, or else
``bytes.split`` and dict lookups) rather than the Python regex engine:

1. Each text is lowercased (``str.lower`` for non-ASCII text, a byte table for
   ASCII), encoded as UTF-8 and translated through a byte table that keeps word
   bytes (``[a-z0-9_]``, and every byte of a non-ASCII character), the five
   joiner bytes ``: ' . , ;`` and maps everything else to a space. Texts are
   joined with a separator chunk (``\\x01``) that no text can contain any more.
2. A joiner stays only where UAX #29 (as :func:`~groundkit.analysis.token_pattern`
   implements it) would join: ``: ' .`` between two letters, ``, ; . '`` between
   two digits. Joiners next to a non-ASCII byte stay as well; their chunk is
   tokenised by the Unicode tokeniser (step 4). This is vectorised with numpy.
3. The batch is cut into chunks as ``bytes.split`` cuts it; a chunk of ASCII bytes
   is exactly one surface token (or a run of underscores, which is none).
4. Each distinct chunk is analysed once (possessive, stopwords, stemming; a
   non-ASCII chunk goes through :func:`~groundkit.analysis.split_tokens` and may
   give several terms) and remembered in a chunk table, so a batch costs one
   lookup per chunk: :class:`CompiledChunks` when the extension is built, else
   :class:`DictChunks` (the same codes, so the same index).

``tests/retrieval/test_bm25_tokens.py`` checks the equality with ``analyze`` on
arbitrary Unicode and on joiner-heavy ASCII text (hypothesis).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from itertools import islice, repeat
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import numpy.typing as npt

from ..text.analysis import Analyzer, split_tokens

if TYPE_CHECKING:
    from . import _chunkc

I32Array = npt.NDArray[np.int32]

_SEP = b" \x01 "
_SEP_CHUNK = b"\x01"
SEPARATOR, DROPPED = -2, -1
"""Chunk codes: a text boundary, a chunk with no index term; ``<= -3``: several terms."""
_MISS = -(2**31)
CHUNKS_VERSION = 1
"""The ``_chunkc`` interface this module speaks (its ``VERSION``); another is not used."""

_LETTER, _DIGIT, _HIGH = 1, 2, 4
_JOINERS = {ord(":"): _LETTER, ord("'"): _LETTER | _DIGIT, ord("."): _LETTER | _DIGIT,
            ord(","): _DIGIT, ord(";"): _DIGIT}


def _tables(lowercase: bool) -> tuple[bytes, bytes, npt.NDArray[np.uint8], npt.NDArray[np.uint8]]:
    """(word table, joiner mask table, byte classes, joiner kinds) for one case mode."""
    word = bytearray(b" " * 256)
    cls = np.zeros(256, dtype=np.uint8)
    for c in range(256):
        ch = chr(c)
        if c >= 0x80:
            word[c], cls[c] = c, _HIGH
        elif ch.isascii() and (ch.isalnum() or ch == "_"):
            word[c] = ord(ch.lower()) if lowercase else c
            cls[c] = _DIGIT if ch.isdigit() else _LETTER if ch.isalpha() else 0
        elif c in _JOINERS:
            word[c] = c
    joiner_mask = bytes(1 if c in _JOINERS else 0 for c in range(256))
    kinds = np.zeros(256, dtype=np.uint8)
    for c, kind in _JOINERS.items():
        kinds[c] = kind
    return bytes(word), joiner_mask, cls, kinds


_TABLES = {True: _tables(True), False: _tables(False)}


def chunk_buffer(texts: Sequence[str], lowercase: bool) -> bytearray:
    """``texts`` after steps 1-2: their chunks are what ``bytes.split`` cuts the buffer into,
    a separator chunk before and after each text."""
    word, joiner_mask, cls, kinds = _TABLES[lowercase]
    if lowercase:
        encoded = [(t.encode() if t.isascii() else t.lower().encode("utf-8", "surrogatepass"))
                   .translate(word) for t in texts]
    else:
        encoded = [t.encode("utf-8", "surrogatepass").translate(word) for t in texts]
    encoded.insert(0, b"")
    encoded.append(b"")
    buf = bytearray(_SEP).join(encoded)  # starts and ends with a space: neighbours exist
    joiners = np.flatnonzero(np.frombuffer(buf.translate(joiner_mask), dtype=bool))
    if len(joiners):
        a = np.frombuffer(buf, dtype=np.uint8)
        before, after = cls[a[joiners - 1]], cls[a[joiners + 1]]
        keep = ((before | after) & _HIGH) | (before & after & kinds[a[joiners]])
        a[joiners[keep == 0]] = 32
    return buf


def chunk_batch(texts: Sequence[str], lowercase: bool) -> list[bytes]:
    """The chunks of ``texts`` (steps 1-3); a separator chunk precedes and follows each."""
    return bytes(chunk_buffer(texts, lowercase)).split()


Analyse = Callable[[list[bytes]], I32Array]
"""The codes of chunks first seen (:meth:`ChunkTerms._analyse`)."""


def compiled_table() -> _chunkc.ChunkTable | None:
    """A new compiled chunk table (``_chunkc.c``), or ``None``: not built, another version,
    or ``GROUNDKIT_BM25_BUILD=python`` (:class:`DictChunks` gives the same codes)."""
    if os.environ.get("GROUNDKIT_BM25_BUILD", "").strip().lower() == "python":
        return None
    try:
        from . import _chunkc
    except ImportError:
        return None
    return _chunkc.ChunkTable() if getattr(_chunkc, "VERSION", None) == CHUNKS_VERSION else None


class CompiledChunks:
    """The chunk table in C: each chunk looked up without a Python object of its own."""

    def __init__(self, table: _chunkc.ChunkTable) -> None:
        self._table = table
        self.codes(bytearray(_SEP_CHUNK), lambda new: np.array([SEPARATOR], dtype=np.int32))

    def __len__(self) -> int:
        return len(self._table)

    def codes(self, buf: bytearray, analyse: Analyse) -> I32Array:
        """The code of each chunk of ``buf`` (analysing the chunks never seen before)."""
        raw, raw_positions, new = self._table.lookup(buf)
        codes = np.frombuffer(raw, dtype=np.int32)
        if new:
            fresh = np.ascontiguousarray(analyse(new), dtype=np.int32)
            self._table.settle(fresh)
            positions = np.frombuffer(raw_positions, dtype=np.int32)
            codes[positions] = fresh[codes[positions]]
        return codes


class DictChunks(dict[bytes, int]):
    """The chunk table in Python: chunk -> chunk id, dense in order of first sight.

    Chunks met often also go into ``hot``, a small chunk -> code table that stays in
    the CPU cache (a lookup in the full table, hundreds of thousands of chunks, costs a
    cache miss or two).
    """

    HOT_MAX = 32_768
    HOT_AFTER = 4
    """Occurrences looked up in the full table before a chunk joins the hot table."""

    def __init__(self) -> None:
        super().__init__({_SEP_CHUNK: 0})
        self.hot: dict[bytes, int] = {_SEP_CHUNK: SEPARATOR}
        self._chunks: list[bytes] = [_SEP_CHUNK]
        self._codes = np.array([SEPARATOR], dtype=np.int32)
        self._seen = np.zeros(1, dtype=np.int64)
        self._pending: list[bytes] = []

    def __missing__(self, chunk: bytes) -> int:
        chunk_id = self[chunk] = len(self)
        self._pending.append(chunk)
        return chunk_id

    def codes(self, buf: bytearray, analyse: Analyse) -> I32Array:
        """The code of each chunk of ``buf`` (analysing the chunks never seen before)."""
        chunks = bytes(buf).split()
        codes = np.fromiter(map(self.hot.get, chunks, repeat(_MISS)), dtype=np.int32,
                            count=len(chunks))
        miss = np.flatnonzero(codes == _MISS)
        if len(miss):
            missed = itemgetter(*miss.tolist())(chunks) if len(miss) > 1 else [chunks[miss[0]]]
            ids = np.fromiter(map(self.__getitem__, missed), dtype=np.int32, count=len(miss))
            del missed
            if self._pending:
                self._codes = np.concatenate([self._codes, analyse(self._pending)])
                self._chunks += self._pending
                self._pending = []
            codes[miss] = self._codes[ids]
            self._promote(ids)
        return codes

    def _promote(self, chunk_ids: I32Array) -> None:
        room = self.HOT_MAX - len(self.hot)
        if room <= 0:
            return
        seen = np.bincount(chunk_ids, minlength=len(self._chunks))
        seen[: len(self._seen)] += self._seen
        ready = np.flatnonzero(seen >= self.HOT_AFTER)[:room]
        seen[ready] = -(2**40)  # never again
        self._seen = seen
        if len(ready):
            ready_chunks = [self._chunks[i] for i in ready.tolist()]
            self.hot.update(zip(ready_chunks, self._codes[ready].tolist(), strict=True))


class ChunkTerms:
    """Chunks to codes, through a chunk table (:class:`CompiledChunks` when it is built,
    else :class:`DictChunks`) that remembers each chunk's code once analysed.

    A chunk's code is a term id (registered in ``term_ids``, term -> id, dense in
    order of first sight), ``DROPPED``, ``SEPARATOR``, or ``<= -3`` for a chunk
    that holds several terms (``compounds[-3 - code]``). New chunks are analysed
    in bulk, a batch at a time.
    """

    def __init__(self, analyzer: Analyzer, term_ids: dict[str, int],
                 compiled: bool | None = None) -> None:
        """``compiled``: the C table (an error when it is not built), the Python one, or
        (``None``) the C table when it is built."""
        self.term_ids = term_ids
        self.compounds: list[I32Array] = []
        self._terms = analyzer.new_bulk_terms()
        self._cjk = analyzer.cjk
        self._compiled = compiled
        self.table = self._new_table()

    def _new_table(self) -> CompiledChunks | DictChunks:
        table = None if self._compiled is False else compiled_table()
        if table is None and self._compiled:
            raise RuntimeError("the compiled chunk table (_chunkc) is not built")
        return DictChunks() if table is None else CompiledChunks(table)

    def __len__(self) -> int:
        """The chunks the table holds (the separator chunk among them)."""
        return len(self.table)

    def release(self) -> None:
        """Forget every chunk (the tables are large; the term ids stay valid)."""
        self.table, self.compounds = self._new_table(), []

    def lookup(self, buf: bytearray) -> I32Array:
        """The code of each chunk of ``buf`` (:func:`chunk_buffer`)."""
        return self.table.codes(buf, self._analyse)

    def _ids(self, tokens: list[str]) -> list[int]:
        term_ids = self.term_ids
        return [term_ids.setdefault(t, len(term_ids)) if t else DROPPED
                for t in self._terms(tokens)]

    def _analyse(self, chunks: list[bytes]) -> I32Array:
        is_ascii = [c.isascii() for c in chunks]
        ascii_chunks = [c for c, a in zip(chunks, is_ascii, strict=True) if a]
        words = b"\n".join(ascii_chunks).decode().split("\n") if ascii_chunks else []
        ascii_ids = self._ids([w if w.strip("_") else "" for w in words])
        if len(ascii_ids) == len(chunks):
            return np.array(ascii_ids, dtype=np.int32)
        split = [split_tokens(c.decode("utf-8", "surrogatepass"), lowercase=False, cjk=self._cjk)
                 for c, a in zip(chunks, is_ascii, strict=True) if not a]
        flat = iter(self._ids([t for tokens in split for t in tokens]))
        unicode_codes = [self._code([i for i in islice(flat, len(tokens)) if i >= 0])
                         for tokens in split]
        ascii_it, unicode_it = iter(ascii_ids), iter(unicode_codes)
        return np.array([next(ascii_it) if a else next(unicode_it) for a in is_ascii],
                        dtype=np.int32)

    def _code(self, ids: list[int]) -> int:
        """The code of a chunk holding the terms ``ids``."""
        if len(ids) <= 1:
            return ids[0] if ids else DROPPED
        self.compounds.append(np.array(ids, dtype=np.int32))
        return -2 - len(self.compounds)

    def expand(self, codes: I32Array, docs: I32Array) -> tuple[I32Array, I32Array]:
        """The (term id, doc) pairs of chunk ``codes`` in documents ``docs``."""
        keep = codes >= 0
        many = np.flatnonzero(codes <= -3)
        if not len(many):
            return codes[keep], docs[keep]
        parts: list[Any] = [self.compounds[-3 - int(c)] for c in codes[many]]
        extra_docs = np.repeat(docs[many], [len(p) for p in parts])
        return (np.concatenate([codes[keep], *parts]),
                np.concatenate([docs[keep], extra_docs]))


def batch_term_ids(texts: Sequence[str], chunks: ChunkTerms,
                   lowercase: bool) -> tuple[I32Array, I32Array]:
    """Term ids of every kept token of ``texts`` and the text (0-based) each comes from."""
    codes = chunks.lookup(chunk_buffer(texts, lowercase))
    docs = np.cumsum(codes == SEPARATOR, dtype=np.int32)
    docs -= 1
    return chunks.expand(codes, docs)


class TermBags(NamedTuple):
    """Several texts' index terms in a compact form: each text's a bag (counts kept, order
    not). ``terms`` are the distinct terms, ``ids`` index into them text after text (text
    ``i``'s are ``ids[ends[i - 1]:ends[i]]``, ``ends[-1]`` being 0). Made where the texts
    are (a Ray task), merged into an index build by :meth:`.bm25_build.Builder.add`."""

    terms: tuple[str, ...]
    ids: npt.NDArray[Any]
    ends: npt.NDArray[np.int64]


def term_bags(texts: Sequence[str], analyzer: Analyzer) -> TermBags:
    """The :class:`TermBags` of ``texts``: each text's terms are those
    :meth:`Analyzer.analyze` gives it (what a build analyses it into)."""
    return BagMaker(analyzer).make(texts)


class BagMaker:
    """Makes :class:`TermBags` batch after batch, remembering each chunk it has analysed
    (a Ray worker keeps one across its tasks: each distinct token is stemmed once per worker,
    as once per build in one process), up to :data:`MAX_TERMS` terms, then starting afresh."""

    MAX_TERMS = 2_000_000

    def __init__(self, analyzer: Analyzer) -> None:
        self.analyzer = analyzer
        self._reset()

    def _reset(self) -> None:
        self._term_ids: dict[str, int] = {}
        self._terms: list[str] = []
        self._chunks = ChunkTerms(self.analyzer, self._term_ids)

    def make(self, texts: Sequence[str]) -> TermBags:
        if len(self._term_ids) > self.MAX_TERMS:
            self._reset()
        tids, docs = batch_term_ids(texts, self._chunks, self.analyzer.lowercase)
        if len(self._terms) < len(self._term_ids):
            self._terms.extend(islice(self._term_ids, len(self._terms), None))
        used, local = np.unique(tids, return_inverse=True)
        order = np.argsort(docs, kind="stable")
        ends = np.cumsum(np.bincount(docs, minlength=len(texts)), dtype=np.int64)
        terms = self._terms
        return TermBags(tuple(terms[i] for i in used.tolist()),
                        local[order].astype(np.uint16 if len(used) <= 2**16 else np.int32), ends)
