"""The measuring ``bench_extract.py`` does: fidelity (CER), quotes found, speed, indexing.

Text is compared *whitespace-normalised* (every run of whitespace, no-break spaces
included, one space; ends stripped) and otherwise as it is: no case folding, no Unicode
normalisation, no hyphen joining. The character error rate is the Levenshtein distance
(rapidfuzz) over the reference's length; *per page, pooled* sums each page's distance
and each page's reference length over every page of every file, and needs the
extractor to say where pages break. The *document* CER compares each file's whole text
at once (pooled the same way over files): it exists for every extractor, and it also
charges a different reading order across pages.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extract_peers import Extracted

QUOTE_MIN, QUOTE_MAX = 40, 200
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_LINE_END_HYPHEN = re.compile(r"\w- \w")


def normalise(text: str) -> str:
    """Every run of whitespace as one space, ends stripped."""
    return " ".join(text.split())


def distance(reference: str, hypothesis: str) -> int:
    """The Levenshtein distance. The hint (2% of the reference) only picks rapidfuzz's
    algorithm (a band widened until the distance fits): the result is exact either way,
    and a whole manual against a close text takes about 1 s instead of 20."""
    from rapidfuzz.distance import Levenshtein

    return int(Levenshtein.distance(reference, hypothesis,
                                    score_hint=max(16, len(reference) // 50)))


@dataclass(slots=True)
class Fidelity:
    """Distances and lengths summed over files, and quotes found."""

    page_distance: int = 0
    page_length: int = 0
    paged: bool = True
    doc_distance: int = 0
    doc_length: int = 0
    quotes: int = 0
    found: int = 0
    per_file: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, ref_pages: Sequence[str], got: Extracted,
            quotes: Sequence[str]) -> None:
        ref_doc = normalise(" ".join(ref_pages))
        hyp_doc = normalise(got.text)
        doc = distance(ref_doc, hyp_doc)
        self.doc_distance += doc
        self.doc_length += len(ref_doc)
        row: dict[str, Any] = {"doc_cer": _rate(doc, len(ref_doc))}
        pages = _aligned(got.pages, len(ref_pages))
        if pages is None:
            self.paged = False
            row["page_cer"] = None
        else:
            dist = length = 0
            for ref, hyp in zip(ref_pages, pages, strict=True):
                ref_n = normalise(ref)
                dist += distance(ref_n, normalise(hyp))
                length += len(ref_n)
            self.page_distance += dist
            self.page_length += length
            row["page_cer"] = _rate(dist, length)
        hits = sum(quote in hyp_doc for quote in quotes)
        self.quotes += len(quotes)
        self.found += hits
        row["quotes"], row["found"] = len(quotes), hits
        self.per_file[name] = row

    def summary(self, paged_format: bool = True) -> dict[str, Any]:
        """Pooled figures; ``cer`` is the per-page CER where the format has pages and the
        extractor marks them, else the document CER (``cer_basis`` says which)."""
        page = _rate(self.page_distance, self.page_length) if self.paged else None
        doc = _rate(self.doc_distance, self.doc_length)
        basis = "page" if paged_format and page is not None else "document"
        return {"cer": page if basis == "page" else doc, "cer_basis": basis,
                "page_cer": page if paged_format else None, "doc_cer": doc,
                "quotes": self.quotes, "quotes_found": self.found,
                "quote_share": round(self.found / self.quotes, 4) if self.quotes else None,
                "reference_chars": self.doc_length, "files": self.per_file}


def _rate(dist: int, length: int) -> float | None:
    return round(dist / length, 5) if length else None


def _aligned(pages: Sequence[str] | None, count: int) -> list[str] | None:
    """``pages`` padded with empty pages to ``count`` (an extractor may stop at its last
    page with text), or None when it has none or more pages than the reference."""
    if pages is None or len(pages) > count:
        return None
    return [*pages, *([""] * (count - len(pages)))]


def sample_quotes(pages: Sequence[str], every: int) -> list[str]:
    """Every ``every``-th sentence of 40-200 characters of the reference, whitespace-
    normalised, taken within pages (a sentence across a page break carries running
    heads). Sentences where the reference keeps a hyphen before a space (``x- y``: a
    line-end hyphen poppler did not join) are left out, since whether to join it is the
    extractor's choice."""
    candidates = []
    for page in pages:
        for sentence in _SENTENCE_END.split(normalise(page)):
            if QUOTE_MIN <= len(sentence) <= QUOTE_MAX and not _LINE_END_HYPHEN.search(sentence):
                candidates.append(sentence)
    return candidates[::max(1, every)]


# -- speed ----------------------------------------------------------------------------

@dataclass(slots=True)
class Runs:
    """Each extractor's output (first run) and best time per file, or why it failed."""

    outputs: dict[str, dict[str, Extracted]] = field(default_factory=dict)
    best_ms: dict[str, dict[str, float]] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)


def run_round_robin(files: Mapping[str, bytes], extractors: Mapping[str, Callable[[bytes],
                    Extracted]], repeat: int, log: Callable[[str], None]) -> Runs:
    """``repeat`` rounds; each round runs every extractor on every file, one after the
    other (so all meet the same load), keeping the first output and the best time."""
    runs = Runs()
    for round_no in range(max(1, repeat)):
        for name, data in files.items():
            for ext, fn in extractors.items():
                if ext in runs.failed:
                    continue
                start = time.perf_counter_ns()
                try:
                    got = fn(data)
                except Exception as exc:  # noqa: BLE001 - a peer failing is a row, not a crash
                    runs.failed[ext] = f"{name}: {exc.__class__.__name__}: {exc}"[:300]
                    continue
                ms = (time.perf_counter_ns() - start) / 1e6
                best = runs.best_ms.setdefault(ext, {})
                best[name] = min(ms, best.get(name, ms))
                if round_no == 0:
                    runs.outputs.setdefault(ext, {})[name] = got
        log(f"  round {round_no + 1}/{repeat} done")
    return runs


def throughput(best_ms: Mapping[str, float], sizes: Mapping[str, int]) -> dict[str, Any]:
    """MB/s (10^6 bytes) of raw input over every file: total bytes over the sum of each
    file's best time."""
    seconds = sum(best_ms.values()) / 1e3
    total = sum(sizes[name] for name in best_ms)
    return {"mb": round(total / 1e6, 3), "seconds": round(seconds, 3),
            "mb_per_s": round(total / 1e6 / seconds, 3) if seconds else None,
            "files": len(best_ms)}


# -- indexing -------------------------------------------------------------------------

INDEX_CHILD = """
import json, resource, sys
sys.path.insert(0, sys.argv[4])
from common import peak_rss_mib, timed_ms
from groundkit.collection import IndexConfig, index
include = tuple(sys.argv[3].split(","))
ms, r = timed_ms(lambda: index("bench", IndexConfig(roots=(sys.argv[1],), include=include),
                               home=sys.argv[2]))
print(json.dumps({"seconds": ms / 1e3, "bytes": r.bytes_read, "chunks": r.chunks,
                  "files": r.added + r.changed + r.unchanged, "skipped": len(r.skipped),
                  "skip_reasons": [str(s) for s in r.skipped][:5],
                  "peak_rss_mib": peak_rss_mib(), "children_peak_rss_mib":
                  resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))
"""


def index_once(folder: Path, home: Path, include: str) -> dict[str, Any]:
    """``index()`` (as ``grk index`` runs it, derived indexes included) of ``folder`` into
    a new collection, in a fresh process so its peak RSS is its own."""
    out = subprocess.run([sys.executable, "-c", INDEX_CHILD, str(folder), str(home), include,
                          str(Path(__file__).resolve().parent)],
                         capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"index failed: {out.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(out.stdout))


def index_slices(folders: Mapping[str, tuple[Path, str]], home: Path, repeat: int,
                 ) -> dict[str, dict[str, Any]]:
    """Each folder indexed ``repeat`` times, alternating; the fastest run of each, with the
    largest peak RSS seen: of the indexing process, and of its largest child (a worker
    that decodes and chunks, or a PDF extraction's sandbox: ``RUSAGE_CHILDREN``)."""
    best: dict[str, dict[str, Any]] = {}
    for round_no in range(max(1, repeat)):
        for label, (folder, include) in folders.items():
            run = index_once(folder, home / f"{label}-{round_no}", include)
            kept = best.get(label)
            peaks = {key: max(run[key], kept[key] if kept else 0.0)
                     for key in ("peak_rss_mib", "children_peak_rss_mib")}
            if kept is None or run["seconds"] < kept["seconds"]:
                best[label] = run
            best[label].update(peaks)
    for run in best.values():
        run["mb"] = round(run["bytes"] / 1e6, 3)
        run["mb_per_s"] = round(run["bytes"] / 1e6 / run["seconds"], 3)
        run["seconds"] = round(run["seconds"], 3)
        run["peak_rss_mib"] = round(run["peak_rss_mib"], 1)
        run["children_peak_rss_mib"] = round(run["children_peak_rss_mib"], 1)
        run["runs"] = max(1, repeat)
    return best
