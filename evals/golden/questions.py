"""Bring your own questions: score an existing collection with a questions file.

The file is in the golden format (``golden/README.md``), one question per line,
``doc_id`` relative to the collection's root (the ids ``grk search`` shows). Its
quotes are resolved against the files as they are now; a file changed since the
collection was indexed fails closed (the judgments would not match the index).
Any number of questions is accepted: the corpus-level minimums of the shipped
golden versions become warnings here (too few no-answer questions to say much
about abstention, say), never a refusal.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import groundkit
from evals import report as rpt
from evals.golden.corpus import minimum_problems
from evals.golden.model import USER_RULES, Golden
from evals.golden.parse import parse_lines
from evals.golden.rules import set_problems, shared_stems
from evals.golden.suite import CollectionSuite
from evals.harness import Log
from groundkit.collection import Collection, IndexConfig
from groundkit.collection.home import Home
from groundkit.errors import IntegrityError, UsageError
from groundkit.questions.documents import current_documents
from groundkit.text.chunking import ChunkerConfig

MAX_PROBLEMS_SHOWN = 20


def questions_suite(name: str, questions: str | Path, work: Path, *, home: Home = None,
                    embedding_cache: Path | None = None,
                    log: Log = lambda _: None) -> CollectionSuite:
    """A suite over collection ``name`` and the questions in ``questions``."""
    path = Path(questions)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the questions file {path}: {exc.strerror}") from None
    with Collection.open(name, home) as coll:
        snap = coll.snapshot
        documents = current_documents(coll)
        config, generation = dict(snap.config), snap.generation
    golden = _parse(path, data, documents)
    for warning in warnings(golden):
        log(f"warning: {warning}")
    python, libraries = rpt.environment()
    provenance = rpt.Provenance(
        golden_version=f"questions:{path.name} on {name} generation {generation}",
        golden_manifest_sha256=hashlib.sha256(data).hexdigest(),
        groundkit_version=groundkit.__version__,
        git_commit=rpt.git_commit(Path(__file__).resolve().parents[2]), python=python,
        libraries=libraries)
    base = IndexConfig(
        roots=tuple(config["roots"]), include=tuple(config["include"]),
        exclude=tuple(config["exclude"]), max_bytes=int(config["max_bytes"]),
        chunker=ChunkerConfig(**config["chunker"]),
        extra={k: config[k] for k in ("analyzer", "bm25", "embedding") if config.get(k)})
    return CollectionSuite(label=f"{name} ({path.name})", golden=golden, base=base,
                           provenance=provenance, home=work, existing=(name, home),
                           embedding_cache=embedding_cache)


def warnings(golden: Golden) -> list[str]:
    """What a question set is too small or too loosely labelled to show (never a refusal)."""
    out = [w.removeprefix("corpus: ") for w in
           minimum_problems(golden.documents, golden.questions, USER_RULES)]
    loose = [q.id for q in golden.questions if "paraphrase" in q.traits and q.answers
             and shared_stems(q.question, (a.quote for a in q.answers))]
    if loose:
        out.append(f"{len(loose)} paraphrase question(s) share content-word stems with their "
                   f"quotes ({', '.join(loose[:5])}{', …' if len(loose) > 5 else ''}): their "
                   "breakdown flatters BM25")
    return out


def _parse(path: Path, data: bytes, documents: dict[str, str]) -> Golden:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 (byte {exc.start})") from None
    parsed, problems, incomplete = parse_lines(text, path.name, documents, USER_RULES)
    problems += set_problems(parsed, documents, USER_RULES, incomplete)
    if problems:
        shown = "\n".join(problems[:MAX_PROBLEMS_SHOWN])
        more = len(problems) - MAX_PROBLEMS_SHOWN
        raise IntegrityError(f"{path}: {len(problems)} problem(s):\n{shown}"
                             + (f"\n… and {more} more" if more > 0 else ""))
    if not any(q.answers for q in parsed):
        raise UsageError(f"{path}: no question has an answer, so there is nothing to measure")
    return Golden(version=0, root=path.parent, documents=documents, questions=tuple(parsed))
