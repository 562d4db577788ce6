"""Human-readable output of search hits: snippets with the matching terms highlighted, and
each hit's link to its citation page (:mod:`groundkit.viewer.links`)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Collection, Sequence

from ..model import Chunk, Hit, Locator, open_link, page_place
from ..retrieval.gate import Decision
from ..text import terminal
from ..text.analysis import Analyzer
from ..viewer.links import Views, server_from_env

SNIPPET = 240
NO_SERVER = Views()
"""Pages linked by ``grk open``'s command line."""
_WORD = re.compile(r"\w+", re.UNICODE)


def _highlight(text: str, terms: Collection[str], analyzer: Analyzer, on: bool) -> str:
    if not on or not terms:
        return text

    def mark(m: re.Match[str]) -> str:
        analyzed = analyzer.analyze(m.group(0))
        return f"\033[1;33m{m.group(0)}\033[0m" if analyzed and analyzed[0] in terms else m.group(0)

    return _WORD.sub(mark, text)


def snippet(text: str, terms: Collection[str], analyzer: Analyzer,
            furniture: Sequence[tuple[int, int, str]] = ()) -> str:
    """About ``SNIPPET`` characters of ``text`` around its first matching word outside
    page furniture (a running head matches the product's name on every page)."""
    first = 0
    for m in _WORD.finditer(text):
        if any(a <= m.start() < b for a, b, _ in furniture):
            continue
        analyzed = analyzer.analyze(m.group(0))
        if analyzed and analyzed[0] in terms:
            first = m.start()
            break
    start = max(0, first - SNIPPET // 3)
    piece = terminal.line(" ".join(text[start : start + SNIPPET].split()))
    return ("…" if start else "") + piece + ("…" if start + SNIPPET < len(text) else "")


def where(c: Chunk) -> str:
    """Where a chunk is, as a person looks for it: lines of a text file, pages of a PDF,
    the byte range (and zip member) of a markup file."""
    doc = terminal.line(c.doc_id)
    if c.locator is None:
        return f"{doc}:{c.start_line}-{c.end_line}"
    place = source_place(c.locator)
    return f"{doc} {place}" if place else doc


def source_place(locator: Locator) -> str:
    """``p. 41-42`` for PDF pages (``p. 14 (printed iv)`` where the PDF labels its pages);
    ``bytes 1804-2930`` (``in OEBPS/ch1.xhtml``) else."""
    if locator.pages:
        return terminal.line(page_place(locator))
    first = locator.spans[0] if locator.spans else None
    if first is None or first.byte_start is None:
        return ""
    part = f" in {terminal.line(first.part)}" if first.part else ""
    return f"bytes {first.byte_start}-{first.byte_end}{part}"


def views_of(args: argparse.Namespace) -> Views:
    """How this command links its citations to their pages: to the server
    ``GROUNDKIT_VIEW_SERVER`` names, else by ``grk open``'s command line (with the
    command's ``--home``)."""
    home = getattr(args, "home", None)
    return Views(server=server_from_env(), home=os.path.abspath(home) if home else None)


def print_hits(hits: list[Hit], terms: Collection[str], analyzer: Analyzer, *,
               explain: bool = False, views: Views = NO_SERVER) -> None:
    tty = sys.stdout.isatty()
    if not hits:
        print("no hits: nothing in the collection matches this query")
        return
    for hit in hits:
        c = hit.chunk
        verdict = f"  [{hit.verdict.status.value}]" if hit.verdict else ""
        if hit.stale and not hit.verdict:
            verdict = "  [stale: file changed since indexing]"
        print(f"{hit.rank:>3}. {where(c)}  "
              f"[{c.start}, {c.end}) code points  score {hit.score:.4f}{verdict}")
        if c.headings:
            print("     " + terminal.line(" › ".join(c.headings)))
        for r in hit.replaced:
            print(terminal.line(f"     in place of: {r.place.path} [{r.status.value}: {r.reason}]"))
        if hit.also_in:
            print(terminal.line(f"     also in: {', '.join(d.path for d in hit.also_in)}"))
        if hit.superseded:
            print(terminal.line(f"     superseded: {hit.superseded}"))
        print("     " + _highlight(snippet(c.text, terms, analyzer, c.furniture), terms,
                                   analyzer, tty))
        if explain:
            for e in hit.explanation:
                if e.retriever == "rerank":
                    print(f"     rerank ({e.detail['method']}): cross-encoder score "
                          f"{e.score:.4f}, rank {e.detail['rank_before']} -> "
                          f"{e.detail['rank_after']}")
                    continue
                fused = (f", adds {e.detail['contribution']:.4f} to the fused score"
                         if "contribution" in e.detail else "")
                print(f"     {e.retriever}: rank {e.rank}, score {e.score:.4f}{fused}")
                for t in e.detail.get("terms", []):
                    print(f"       {t['term']!r}: idf {t['idf']:.4f} × tf {t['tf']} "
                          f"(doc length {t['doc_length']}, norm {t['norm_length']}) "
                          f"= {t['score']:.4f}")
        if hit.file:
            print(terminal.line(f"     open: {open_link(hit.file, c.locator, c.start_line)}"))
        print(terminal.line(f"     view: {views.line(c.chunk_id)}"))


def abstention_line(decision: Decision) -> str:
    return (f"nothing in this collection answers that (p = {decision.p_value:.3g}, "
            f"alpha = {decision.alpha:g}, {decision.mode} calibrated on {decision.n0} "
            "unanswerable questions)")


def print_abstention(decision: Decision) -> None:
    print(abstention_line(decision))
