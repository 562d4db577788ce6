"""Importing a dataset as a groundkit collection: documents become real files.

groundkit collections are folder trees of real files and every passage is an
exact span of one, so an external collection is *materialised* first::

    <dir>/groundkit-external.json   the sidecar: file -> dataset doc id (and title), join,
                                    dataset name, split, content fingerprint
    <dir>/queries.jsonl             the split's queries   } BEIR layout, so the folder
    <dir>/qrels/<split>.tsv         its judgments         } exports back losslessly
    <dir>/docs/<safe name>.txt      one UTF-8 file per document: join_text(doc, join)

then indexed like any folder. Judgments keep the dataset's own doc ids; the
sidecar maps the collection's document ids (file paths) back to them. File
names are the doc id when it is a plain ``[A-Za-z0-9._-]`` name, else a
sanitised name with a short hash; collections of more than
:data:`SHARD_ABOVE` documents are spread over 256 sub-folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundkit.collection import Collection, IndexConfig, index
from groundkit.collection.indexer import IndexReport
from groundkit.errors import GroundkitError, IntegrityError
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer
from groundkit.text.chunking import ChunkerConfig

from .beir import read_qrels_tsv, read_queries, write_beir
from .dataset import Dataset, DatasetError, Doc, join_text, split_text

SIDECAR = "groundkit-external.json"
FORMAT = "groundkit-external/1"
DOCS = "docs"
SHARD_ABOVE = 10_000
_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

DOC_CHUNKER = ChunkerConfig(target=20_000, overlap=0, max_factor=4.0)
"""One chunk per document: a document of up to 80,000 characters is never split."""


@dataclass(frozen=True, slots=True)
class Materialised:
    """A materialised dataset folder and its id mappings."""

    directory: Path
    dataset: str
    split: str
    join: str
    fingerprint: str
    files: Mapping[str, str]
    """collection doc id (path under ``docs/``) -> dataset doc id"""
    titles: Mapping[str, str]
    """dataset doc id -> title"""

    @property
    def docs_dir(self) -> Path:
        return self.directory / DOCS

    def path_of(self) -> dict[str, str]:
        """dataset doc id -> collection doc id."""
        return {doc_id: path for path, doc_id in self.files.items()}


def safe_name(doc_id: str, taken: set[str]) -> str:
    """A portable, unique (case-insensitively) file stem for ``doc_id``; adds to ``taken``."""
    stem = doc_id if _PLAIN.fullmatch(doc_id) else ""
    if not stem or stem.casefold() in taken:
        digest = hashlib.sha256(doc_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        stem = f"{_UNSAFE.sub('_', doc_id)[:80].lstrip('.') or 'doc'}~{digest}"
    if stem.casefold() in taken:
        raise DatasetError(f"cannot give document {doc_id!r} a unique file name")
    taken.add(stem.casefold())
    return stem


def _relpath(stem: str, shard: bool) -> str:
    if not shard:
        return f"{stem}.txt"
    return f"{hashlib.sha256(stem.encode()).hexdigest()[:2]}/{stem}.txt"


def materialise(dataset: Dataset, directory: str | Path, *, join: str = "flat",
                reuse: bool = True) -> Materialised:
    """Write ``dataset`` under ``directory`` (see the module docstring); returns the mapping.

    With ``reuse``, a folder whose sidecar already records this content
    fingerprint and join is kept as it is.
    """
    root = Path(directory)
    fingerprint = dataset.fingerprint()
    if reuse and (root / SIDECAR).is_file():
        try:
            existing = load_materialised(root)
        except GroundkitError:
            existing = None
        if existing and existing.fingerprint == fingerprint and existing.join == join:
            return existing
    if (root / DOCS).exists():
        shutil.rmtree(root / DOCS)
    rows = _write_docs(dataset, root / DOCS, join)
    write_beir(Dataset(name=dataset.name, docs=(), queries=dataset.queries, qrels=dataset.qrels,
                       split=dataset.split), root, write_corpus=False)
    sidecar = {"format": FORMAT, "dataset": dataset.name, "split": dataset.split, "join": join,
               "fingerprint": fingerprint, "source": dict(dataset.source),
               "docs": rows}
    (root / SIDECAR).write_text(json.dumps(sidecar, ensure_ascii=False), encoding="utf-8")
    return load_materialised(root)


def _write_docs(dataset: Dataset, docs: Path, join: str) -> list[list[str]]:
    """Write every document under ``docs``; the sidecar's rows ``[file, doc id, title]``."""
    taken: set[str] = set()
    shard = len(dataset.docs) > SHARD_ABOVE
    made: set[str] = set()
    rows = []
    for doc in dataset.docs:
        rel = _relpath(safe_name(doc.doc_id, taken), shard)
        folder = os.path.join(docs, os.path.dirname(rel))
        if folder not in made:
            os.makedirs(folder, exist_ok=True)
            made.add(folder)
        _write_new(os.path.join(docs, rel), join_text(doc, join).encode("utf-8", "surrogatepass"))
        rows.append([rel, doc.doc_id, doc.title])
    return rows


def _write_new(path: str, data: bytes) -> None:
    """Create ``path`` (it must not exist: names are unique) holding exactly ``data``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def load_materialised(directory: str | Path) -> Materialised:
    """Read a materialised folder's sidecar (``IntegrityError`` when it is not one)."""
    root = Path(directory)
    try:
        data = json.loads((root / SIDECAR).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise IntegrityError(f"{root} is not a materialised dataset ({SIDECAR}: {exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise IntegrityError(f"{root / SIDECAR} is not {FORMAT}")
    files = {rel: doc_id for rel, doc_id, _ in data["docs"]}
    titles = {doc_id: title for _, doc_id, title in data["docs"]}
    return Materialised(directory=root, dataset=data["dataset"], split=data["split"],
                        join=data["join"], fingerprint=data["fingerprint"], files=files,
                        titles=titles)


def read_back(directory: str | Path) -> Dataset:
    """The dataset a materialised folder holds, re-read from its files (for export)."""
    m = load_materialised(directory)
    docs = []
    for rel, doc_id in m.files.items():
        try:
            joined = (m.docs_dir / rel).read_bytes().decode("utf-8", "surrogatepass")
        except OSError as exc:
            raise IntegrityError(f"{m.docs_dir / rel}: {exc.strerror or exc}") from None
        text = split_text(joined, m.titles[doc_id], m.join)
        if text is None:
            raise IntegrityError(f"{m.docs_dir / rel} no longer starts with its title")
        docs.append(Doc(doc_id=doc_id, title=m.titles[doc_id], text=text))
    qrels = read_qrels_tsv(m.directory / "qrels" / f"{m.split}.tsv")
    queries = dict(read_queries(m.directory / "queries.jsonl"))
    return Dataset(name=m.dataset, docs=tuple(docs), queries=queries, qrels=qrels, split=m.split,
                   source={"format": "materialised", "directory": str(m.directory)})


def index_config(m: Materialised, chunker: ChunkerConfig, analyzer: Analyzer,
                 bm25: BM25Params) -> IndexConfig:
    return IndexConfig(roots=(str(m.docs_dir),), include=("*.txt",), exclude=(),
                       max_bytes=1 << 30, chunker=chunker,
                       extra={"analyzer": analyzer.to_dict(), "bm25": bm25.to_dict()})


def import_collection(
    m: Materialised, name: str, *, home: str | os.PathLike[str],
    chunker: ChunkerConfig = DOC_CHUNKER, analyzer: Analyzer | None = None,
    bm25: BM25Params | None = None, reuse: bool = True,
) -> IndexReport | None:
    """Index a materialised folder as collection ``name``; None when an identical one exists."""
    config = index_config(m, chunker, analyzer or Analyzer(), bm25 or BM25Params())
    if reuse and _same_collection(name, home, config):
        return None
    return index(name, config, home=home)


def _same_collection(name: str, home: str | os.PathLike[str], config: IndexConfig) -> bool:
    try:
        with Collection.open(name, home) as coll:
            recorded = coll.snapshot.config
            same = all(recorded.get(k) == v for k, v in config.to_dict().items())
            return same and coll.snapshot.chunk_count > 0 and not coll.check()
    except (GroundkitError, sqlite3.Error, OSError, KeyError, ValueError):
        return False


def judged_docs(m: Materialised, qrels: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """How many judged documents the collection holds (every judged doc should be a file)."""
    known = set(m.files.values())
    judged = {d for docs in qrels.values() for d in docs}
    return {"judged_docs": len(judged), "judged_docs_missing": len(judged - known)}
