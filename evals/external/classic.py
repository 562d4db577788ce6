"""The Glasgow/SMART test-collection format (CISI, MEDLINE, ADI), read from its tarball.

The classic collections distributed by the University of Glasgow IR group
(ir.dcs.gla.ac.uk/resources/test_collections/) keep documents and queries as
records opened by ``.I <number>`` and split into fields by marker lines:
``.T`` title, ``.A`` author, ``.W`` text (abstract), ``.B`` bibliographic
source, ``.X`` cross-references, ``.K``/``.C``/``.N`` keywords, categories,
notes. A field may repeat (one ``.A`` per author); its lines are joined.
Judgments come in two layouts: ``SMART`` (``query doc 0 0.000000``, CISI and
ADI) and ``TREC`` (``query 0 doc relevance``, MEDLINE's ``MED.REL``).

What becomes text (recorded in every dataset's ``source``): a document is its
``.T`` title and ``.W`` text; a query is its ``.W`` text. Line ends are read
as LF (CISI ships CRLF) and trailing spaces are dropped from each line (MEDLINE
pads lines to 72 columns); nothing else changes. Ids are the ``.I`` numbers.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from groundkit.errors import IntegrityError

from .dataset import Dataset, DatasetError, Doc, Qrels

_MARKER = re.compile(r"\.([A-Z])(?:\s+(\S*))?\s*")


@dataclass(frozen=True, slots=True)
class ClassicLayout:
    """Which tarball members hold a collection's documents, queries and judgments."""

    docs: str
    queries: str
    qrels: str
    qrels_format: str  # "smart" or "trec"


LAYOUTS: dict[str, ClassicLayout] = {
    "cisi": ClassicLayout("CISI.ALL", "CISI.QRY", "CISI.REL", "smart"),
    "medline": ClassicLayout("MED.ALL", "MED.QRY", "MED.REL", "trec"),
    "adi": ClassicLayout("ADI.ALL", "ADI.QRY", "ADI.REL", "smart"),
}


def records(text: str, where: str) -> Iterator[tuple[str, dict[str, str]]]:
    """``(id, {field letter: text})`` for each ``.I`` record of a SMART file."""
    record_id: str | None = None
    fields: dict[str, list[str]] = {}
    current: list[str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        marker = _MARKER.fullmatch(line)
        if marker and marker.group(1) == "I":
            if record_id is not None:
                yield record_id, _joined(fields)
            if not (marker.group(2) or "").isdigit():
                raise DatasetError(f"{where}:{number}: '.I' needs a record number, got {line!r}")
            record_id, fields, current = str(int(marker.group(2))), {}, None
        elif marker and not marker.group(2):
            if record_id is None:
                raise DatasetError(f"{where}:{number}: field {line!r} before the first '.I'")
            current = fields.setdefault(marker.group(1), [])  # a repeated field continues
        elif current is not None:
            current.append(line)
        elif line.strip():
            raise DatasetError(f"{where}:{number}: text outside any field: {line[:40]!r}")
    if record_id is not None:
        yield record_id, _joined(fields)


def _joined(fields: dict[str, list[str]]) -> dict[str, str]:
    return {k: "\n".join(lines).strip() for k, lines in fields.items()}


def parse_qrels(text: str, layout: str, where: str) -> Qrels:
    """Binary judgments (every listed pair is relevant) from a ``smart`` or ``trec`` file."""
    qrels: Qrels = {}
    for number, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4 or not all(f.lstrip("-").replace(".", "", 1).isdigit()
                                       for f in fields):
            raise DatasetError(f"{where}:{number}: a judgment line has 4 numbers, got {line!r}")
        if layout == "smart":
            query_id, doc_id, relevance = fields[0], fields[1], 1
        else:
            query_id, doc_id, relevance = fields[0], fields[2], int(fields[3])
        qrels.setdefault(str(int(query_id)), {})[str(int(doc_id))] = relevance
    return qrels


def _member(archive: tarfile.TarFile, name: str, path: Path) -> str:
    try:
        handle = archive.extractfile(name)
    except KeyError:
        raise DatasetError(f"{path} has no member {name!r}") from None
    if handle is None:
        raise DatasetError(f"{path}: member {name!r} is not a regular file")
    data = handle.read()
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise DatasetError(f"{path}:{name}: not ASCII at byte {exc.start}") from None


def read_classic(name: str, tarball: str | Path) -> Dataset:
    """Load collection ``name`` (a :data:`LAYOUTS` key) from its Glasgow tarball."""
    layout = LAYOUTS.get(name)
    if layout is None:
        raise DatasetError(f"unknown classic collection {name!r}; known: {', '.join(LAYOUTS)}")
    path = Path(tarball)
    try:
        with tarfile.open(path, "r:gz") as archive:
            texts = [_member(archive, m, path)
                     for m in (layout.docs, layout.queries, layout.qrels)]
    except (OSError, tarfile.TarError, EOFError) as exc:
        raise IntegrityError(f"cannot read {path}: {exc}") from None
    docs = tuple(Doc(doc_id=i, title=f.get("T", ""), text=f.get("W", ""))
                 for i, f in records(texts[0], f"{path}:{layout.docs}"))
    queries = {i: f.get("W", "") for i, f in records(texts[1], f"{path}:{layout.queries}")}
    qrels = parse_qrels(texts[2], layout.qrels_format, f"{path}:{layout.qrels}")
    source = {"format": "glasgow-smart", "file": str(path), "members": [
        layout.docs, layout.queries, layout.qrels], "fields": "doc = .T title + .W text; "
        "query = .W text; LF line ends, trailing spaces per line dropped"}
    return Dataset(name=name, docs=docs, queries=queries, qrels=qrels, source=source)
