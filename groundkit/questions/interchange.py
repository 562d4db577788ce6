"""Question sets in other tools' formats: BEIR folders, RAGAS test sets, LlamaIndex JSON.

Each format is read into :class:`Foreign` records (a question and its contexts as
text, with an optional hint of where a context is) and written from a question
file. Reading never trusts a context's text as a quote: :func:`to_entries` aligns
each one to an exact span (:mod:`.align`), and lists what it could not align.

* **BEIR** (a folder): ``queries.jsonl`` (``_id``, ``text``), ``qrels/<split>.tsv``
  (``query-id corpus-id score``) and ``corpus.jsonl`` (``_id``, ``title``, ``text``).
  Written against the collection's files: one corpus document per file (its path
  the ``_id`` and ``title``, its text as indexed), file-level qrels, and each query's
  exact quotes in its ``metadata`` (BEIR tools ignore it; reading it back is exact).
  Read: a positive qrel names a corpus passage, whose text is aligned (the title,
  when it is a collection path, narrows the search); a qrel naming a whole file has
  no passage to quote, unless the query's metadata carries the quotes.
* **RAGAS** (JSON lines, a JSON list, or ``to_csv``'s CSV): ``user_input`` (or ``question``),
  ``reference_contexts`` (or ``contexts``), ``reference`` (or ``ground_truth``).
  Written with the quotes as reference contexts and as the reference; a no-answer
  question has no contexts.
* **LlamaIndex** (``EmbeddingQAFinetuneDataset`` JSON): ``queries`` (id -> text),
  ``corpus`` (node id -> text), ``relevant_docs`` (id -> node ids). Written with
  one node per quote, its id ``<path>#<start>-<end>`` (the hint when read back).
"""

from __future__ import annotations

import ast
import csv
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .align import Aligned, Aligner
from .parse import find_all

FORMATS = {"beir": "a BEIR folder (queries.jsonl, qrels/test.tsv, corpus.jsonl)",
           "ragas": "a RAGAS test set (JSON lines or CSV: user_input, reference_contexts)",
           "llamaindex": "a LlamaIndex question-context JSON (queries, corpus, relevant_docs)"}
_NODE = re.compile(r"(?P<doc>.+)#(?P<start>\d+)-(?P<end>\d+)")


@dataclass(slots=True)
class Foreign:
    """One question as another tool has it."""

    source_id: str
    question: str
    contexts: list[tuple[str, str | None]] = field(default_factory=list)
    """(text, hint: a collection path the context is said to be in, or None)."""
    quotes: list[dict[str, Any]] | None = None
    """Exact answers carried in a BEIR query's metadata (groundkit's own export)."""
    extra: dict[str, Any] = field(default_factory=dict)


def check_format(name: str) -> str:
    if name not in FORMATS:
        raise UsageError(f"unknown format {name!r}; valid: "
                         + "; ".join(f"{k}: {v}" for k, v in FORMATS.items()))
    return name


# -- reading -------------------------------------------------------------------------


def read(fmt: str, source: str | Path) -> list[Foreign]:
    path = Path(source)
    if not path.exists():
        raise UsageError(f"{path} does not exist")
    return {"beir": _read_beir, "ragas": _read_ragas, "llamaindex": _read_llamaindex}[
        check_format(fmt)](path)


def _json_lines(path: Path) -> list[Any]:
    text = path.read_bytes().decode("utf-8")
    try:
        if text.lstrip().startswith("["):
            return list(json.loads(text))
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: invalid JSON: {exc.msg} (line {exc.lineno})") from None


def _ragas_csv(path: Path) -> list[dict[str, Any]]:
    """RAGAS's ``to_csv``: list columns are written as Python list literals."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = [dict(r) for r in csv.DictReader(f)]
    for row in rows:
        for key in ("reference_contexts", "contexts"):
            value = row.get(key)
            if isinstance(value, str):
                try:
                    row[key] = ast.literal_eval(value) if value.strip() else []
                except (ValueError, SyntaxError):
                    raise UsageError(f"{path}: {key} {value[:60]!r} is not a list") from None
    return rows


def _read_ragas(path: Path) -> list[Foreign]:
    out = []
    records = _ragas_csv(path) if path.suffix.lower() == ".csv" else _json_lines(path)
    for i, row in enumerate(records, start=1):
        if not isinstance(row, dict):
            raise UsageError(f"{path}: record {i} is not a JSON object")
        question = row.get("user_input", row.get("question"))
        contexts = row.get("reference_contexts", row.get("contexts", []))
        if not isinstance(question, str) or not isinstance(contexts, list):
            raise UsageError(f"{path}: record {i} needs user_input (or question) and "
                             "reference_contexts (or contexts)")
        out.append(Foreign(str(row.get("id", i)), question,
                           [(str(c), None) for c in contexts]))
    return out


def _read_llamaindex(path: Path) -> list[Foreign]:
    data = json.loads(path.read_bytes().decode("utf-8"))
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict)
                                             for k in ("queries", "corpus", "relevant_docs")):
        raise UsageError(f"{path}: needs the objects queries, corpus and relevant_docs")
    corpus = data["corpus"]
    out = []
    for qid, text in data["queries"].items():
        contexts = []
        for node in data["relevant_docs"].get(qid, []):
            if node not in corpus:
                raise UsageError(f"{path}: query {qid} names node {node!r}, not in corpus")
            m = _NODE.fullmatch(node)
            contexts.append((str(corpus[node]), m.group("doc") if m else None))
        out.append(Foreign(str(qid), str(text), contexts))
    return out


def _read_beir(path: Path) -> list[Foreign]:
    queries = {str(q["_id"]): q for q in _json_lines(path / "queries.jsonl")}
    corpus_path = path / "corpus.jsonl"
    corpus = {str(d["_id"]): d for d in _json_lines(corpus_path)} if corpus_path.is_file() \
        else {}
    qrels: dict[str, list[str]] = defaultdict(list)
    for tsv in sorted((path / "qrels").glob("*.tsv")):
        with tsv.open(newline="", encoding="utf-8") as f:
            for row in csv.reader(f, delimiter="\t"):
                if len(row) >= 3 and row[0] != "query-id" and float(row[2]) > 0:
                    qrels[row[0]].append(row[1])
    out = []
    for qid, q in queries.items():
        meta = q.get("metadata") or {}
        foreign = Foreign(qid, str(q.get("text", "")), quotes=meta.get("answers"),
                          extra={k: meta[k] for k in ("kind", "traits") if k in meta})
        for cid in qrels.get(qid, []):
            doc = corpus.get(cid)
            if doc is None:
                raise UsageError(f"{path}: qrels name {cid!r}, which corpus.jsonl lacks")
            title = str(doc.get("title") or "") or None
            foreign.contexts.append((str(doc.get("text", "")), title))
        out.append(foreign)
    return out


# -- aligning ------------------------------------------------------------------------


def to_entries(foreign: Sequence[Foreign], aligner: Aligner) -> tuple[list[dict[str, Any]],
                                                                      list[dict[str, Any]]]:
    """Question entries (quotes aligned to exact spans) and what could not be aligned."""
    docs = aligner.indexed.documents
    rows: list[dict[str, Any]] = []
    problems: list[dict[str, Any]] = []
    for f in foreign:
        answers, notes = _answers(f, aligner, docs, problems)
        if f.contexts and not answers:
            continue  # nothing aligned: reported, not written
        kind = f.extra.get("kind") or ("no_answer" if not answers else
                                       "answerable" if len(answers) == 1 else "ambiguous")
        row: dict[str, Any] = {"id": f"q{len(rows) + 1:04d}", "kind": kind,
                               "question": f.question, "traits": list(f.extra.get("traits", [])),
                               "answers": answers,
                               "notes": "; ".join([f"imported: source id {f.source_id}", *notes])}
        if notes:
            row["status"] = "draft"
        rows.append(row)
    return rows, problems


def _answers(f: Foreign, aligner: Aligner, docs: dict[str, str],
             problems: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    if f.quotes is not None and all(_exact(q, docs) for q in f.quotes):
        return [dict(q) for q in f.quotes], []
    answers, notes, seen = [], [], set()
    repeated = Counter(f.contexts)
    for number, (text, hint) in enumerate(f.contexts, start=1):
        if hint in docs and docs[hint] == text:
            problems.append({"source_id": f.source_id, "context": number,
                             "reason": f"judged at file level ({hint}): no passage to quote"})
            continue
        every = aligner.places(text, hint) if repeated[(text, hint)] > 1 else []
        if len(every) == repeated[(text, hint)]:  # as many contexts as places: all of them
            for d, start in every:
                if (d, start) not in seen:
                    seen.add((d, start))
                    answers.append(quote_of(docs, d, start, start + len(text)))
            continue
        got = aligner.align(text, hint)
        if not isinstance(got, Aligned):
            problems.append({"source_id": f.source_id, "context": number,
                             "reason": got.reason, "text": text[:200]})
            continue
        if (got.doc_id, got.start) in seen:
            continue
        seen.add((got.doc_id, got.start))
        answers.append(quote_of(docs, got.doc_id, got.start, got.end))
        if got.method == "fuzzy":
            notes.append(f"context {number} aligned fuzzily (similarity {got.score:.2f}): "
                         "check the quote")
    return answers, notes


def _exact(q: Any, docs: dict[str, str]) -> bool:
    return (isinstance(q, dict) and q.get("doc_id") in docs and isinstance(q.get("quote"), str)
            and bool(find_all(docs[q["doc_id"]], q["quote"])))


def quote_of(docs: dict[str, str], doc_id: str, start: int, end: int) -> dict[str, Any]:
    """``{doc_id, quote[, occurrence]}`` for the span (occurrence when the text repeats)."""
    quote = docs[doc_id][start:end]
    starts = find_all(docs[doc_id], quote)
    out: dict[str, Any] = {"doc_id": doc_id, "quote": quote}
    if len(starts) > 1:
        out["occurrence"] = starts.index(start) + 1
    return out


# -- writing -------------------------------------------------------------------------


def write(fmt: str, rows: Iterable[dict[str, Any]], out: str | Path,
          documents: dict[str, str]) -> dict[str, int]:
    """Write ``rows`` (question lines) as ``fmt`` to ``out``; returns counts."""
    rows = list(rows)
    return {"beir": _write_beir, "ragas": _write_ragas, "llamaindex": _write_llamaindex}[
        check_format(fmt)](rows, Path(out), documents)


def _quotes(row: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in row.get("answers", []) if isinstance(a, dict) and "quote" in a]


def _write_ragas(rows: list[dict[str, Any]], out: Path, documents: dict[str, str]
                 ) -> dict[str, int]:
    with out.open("w", encoding="utf-8") as f:
        for r in rows:
            quotes = [a["quote"] for a in _quotes(r)]
            f.write(json.dumps({"user_input": r["question"], "reference_contexts": quotes,
                                "reference": "\n\n".join(quotes),
                                "synthesizer_name": "groundkit"}, ensure_ascii=False) + "\n")
    return {"questions": len(rows), "contexts": sum(len(_quotes(r)) for r in rows)}


def _span(a: dict[str, Any], documents: dict[str, str]) -> tuple[int, int]:
    starts = find_all(documents[a["doc_id"]], a["quote"])
    start = starts[(a.get("occurrence") or 1) - 1]
    return start, start + len(a["quote"])


def _write_llamaindex(rows: list[dict[str, Any]], out: Path, documents: dict[str, str]
                      ) -> dict[str, int]:
    queries, corpus, relevant = {}, {}, {}
    for r in rows:
        queries[r["id"]] = r["question"]
        nodes = []
        for a in _quotes(r):
            start, end = _span(a, documents)
            node = f"{a['doc_id']}#{start}-{end}"
            corpus[node] = a["quote"]
            nodes.append(node)
        relevant[r["id"]] = nodes
    out.write_text(json.dumps({"queries": queries, "corpus": corpus, "relevant_docs": relevant,
                               "mode": "text"}, ensure_ascii=False, indent=1), encoding="utf-8")
    return {"questions": len(rows), "contexts": len(corpus)}


def _write_beir(rows: list[dict[str, Any]], out: Path, documents: dict[str, str]
                ) -> dict[str, int]:
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w", encoding="utf-8") as f:
        for doc_id, text in sorted(documents.items()):
            f.write(json.dumps({"_id": doc_id, "title": doc_id, "text": text},
                               ensure_ascii=False) + "\n")
    qrels = []
    with (out / "queries.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            meta = {"kind": r["kind"], "traits": r.get("traits", []), "answers": _quotes(r)}
            f.write(json.dumps({"_id": r["id"], "text": r["question"], "metadata": meta},
                               ensure_ascii=False) + "\n")
            qrels += [(r["id"], d) for d in dict.fromkeys(a["doc_id"] for a in _quotes(r))]
    (out / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels),
        encoding="utf-8")
    return {"questions": len(rows), "documents": len(documents), "qrels": len(qrels)}
