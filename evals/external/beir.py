"""The BEIR directory format: reading any BEIR dataset, writing one.

A BEIR dataset directory holds (Thakur et al., NeurIPS 2021 Datasets track)::

    corpus.jsonl      {"_id": ..., "title": ..., "text": ..., "metadata": {...}} per line
                      (or corpus.jsonl.gz)
    queries.jsonl     {"_id": ..., "text": ..., "metadata": {...}} per line, every split
    qrels/<split>.tsv query-id <TAB> corpus-id <TAB> score, with a header line

Reading is strict: a malformed line is an error naming the file and line. As
BEIR's own loader does, a split keeps only the queries its qrels judge.
Writing produces the same layout (LF line ends, header line, ``json.dumps``
defaults as BEIR's files use), so a written dataset reads back identically.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from groundkit.errors import IntegrityError

from .checksums import FileSpec, verify_file
from .dataset import Dataset, DatasetError, Doc, Qrels

QRELS_HEADER = "query-id\tcorpus-id\tscore"


def corpus_path(directory: Path) -> Path:
    """``corpus.jsonl`` or ``corpus.jsonl.gz`` in ``directory`` (the plain one wins)."""
    for name in ("corpus.jsonl", "corpus.jsonl.gz"):
        if (directory / name).is_file():
            return directory / name
    raise DatasetError(f"{directory} has no corpus.jsonl or corpus.jsonl.gz: not a BEIR dataset")


def read_beir(
    directory: str | Path, *, split: str = "test", name: str | None = None,
    checksums: Mapping[str, FileSpec] | None = None,
) -> Dataset:
    """Load one split of a BEIR directory; ``checksums`` (relpath -> spec) are verified first."""
    root = Path(directory)
    corpus = corpus_path(root)
    qrels_file = root / "qrels" / f"{split}.tsv"
    if not qrels_file.is_file():
        have = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        raise DatasetError(f"{root}: no qrels/{split}.tsv "
                           f"(splits here: {', '.join(have) or 'none'})")
    for rel, spec in (checksums or {}).items():
        verify_file(root / rel, spec)
    qrels = read_qrels_tsv(qrels_file)
    queries = {q: t for q, t in read_queries(root / "queries.jsonl") if q in qrels}
    docs = tuple(read_corpus(corpus))
    source = {"format": "beir", "directory": str(root), "split": split,
              "files": sorted(p.relative_to(root).as_posix()
                              for p in (corpus, root / "queries.jsonl", qrels_file))}
    return Dataset(name=name or root.name, docs=docs, queries=queries, qrels=qrels,
                   split=split, source=source)


def _open_text(path: Path) -> IO[str]:
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _json_lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        with _open_text(path) as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from None
                if not isinstance(obj, dict) or not isinstance(obj.get("_id"), str | int):
                    raise DatasetError(f"{path}:{number}: a JSON object with an '_id' is needed")
                yield number, obj
    except (OSError, EOFError) as exc:
        raise IntegrityError(f"cannot read {path}: {exc}") from None


def _field(obj: dict[str, Any], key: str, path: Path, number: int) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DatasetError(f"{path}:{number}: {key!r} must be a string, got {type(value).__name__}")
    return value


def read_corpus(path: Path) -> Iterator[Doc]:
    for number, obj in _json_lines(path):
        yield Doc(doc_id=str(obj["_id"]), title=_field(obj, "title", path, number),
                  text=_field(obj, "text", path, number))


def read_queries(path: Path) -> Iterator[tuple[str, str]]:
    for number, obj in _json_lines(path):
        yield str(obj["_id"]), _field(obj, "text", path, number)


def read_qrels_tsv(path: Path) -> Qrels:
    """``query-id, corpus-id, score`` rows (header optional, CRLF or LF) as nested dicts."""
    qrels: Qrels = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise IntegrityError(f"cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip() or (number == 1 and line.split("\t")[-1].strip() == "score"):
            continue
        fields = line.split("\t")
        if len(fields) != 3:
            raise DatasetError(f"{path}:{number}: a qrels row has 3 tab-separated fields")
        query_id, doc_id, score = (f.strip() for f in fields)
        try:
            qrels.setdefault(query_id, {})[doc_id] = int(score)
        except ValueError:
            raise DatasetError(f"{path}:{number}: score {score!r} is not an integer") from None
    return qrels


def write_beir(
    dataset: Dataset, directory: str | Path, *,
    metadata: Mapping[str, Mapping[str, Any]] | None = None, gzip_corpus: bool = False,
    write_corpus: bool = True,
) -> Path:
    """Write ``dataset`` as a BEIR directory (qrels as ``qrels/<split>.tsv``); returns it."""
    root = Path(directory)
    (root / "qrels").mkdir(parents=True, exist_ok=True)
    if write_corpus:
        _write_corpus(dataset, root, metadata or {}, gzip_corpus)
    queries = "".join(json.dumps({"_id": q, "text": t, "metadata": {}}) + "\n"
                      for q, t in dataset.queries.items())
    (root / "queries.jsonl").write_text(queries, encoding="utf-8", newline="")
    rows = [QRELS_HEADER] + [f"{q}\t{d}\t{r}" for q in sorted(dataset.qrels)
                             for d, r in sorted(dataset.qrels[q].items())]
    (root / "qrels" / f"{dataset.split}.tsv").write_text("\n".join(rows) + "\n",
                                                          encoding="utf-8", newline="")
    return root


def _write_corpus(dataset: Dataset, root: Path, meta: Mapping[str, Mapping[str, Any]],
                  gzip_corpus: bool) -> None:
    corpus = "".join(
        json.dumps({"_id": d.doc_id, "title": d.title, "text": d.text,
                    "metadata": dict(meta.get(d.doc_id, {}))}) + "\n"
        for d in dataset.docs)
    if gzip_corpus:
        with gzip.open(root / "corpus.jsonl.gz", "wt", encoding="utf-8", newline="") as f:
            f.write(corpus)
    else:
        (root / "corpus.jsonl").write_text(corpus, encoding="utf-8", newline="")
