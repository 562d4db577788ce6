"""The documents, references and extractors ``bench_extract.py`` compares.

Documents come from Debian packages (gnuplot-doc, r-doc-pdf, debian-handbook); a missing
one is a reason, not an error. References: poppler's ``pdftotext`` (plain mode, pages
split on form feeds) for PDF, and the text headless Chromium renders for HTML
(``document.body.innerText``, read over the DevTools protocol on a pipe: no websocket
library, one browser for every page). Extractors: groundkit's (through
``groundkit.extract.extract``, as the indexer calls it) and its peers, each a function of
the raw bytes, imported on first use so a missing library is a reason too.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

PDF_DOCS: dict[str, tuple[str, tuple[str, ...]]] = {
    "gnuplot.pdf": ("gnuplot-doc", ("/usr/share/doc/gnuplot-doc/gnuplot.pdf",
                                    "/usr/share/doc/gnuplot/gnuplot.pdf")),
    "R-intro.pdf": ("r-doc-pdf", ("/usr/share/R/doc/manual/R-intro.pdf",
                                  "/usr/share/doc/r-doc-pdf/manual/R-intro.pdf")),
    "R-admin.pdf": ("r-doc-pdf", ("/usr/share/R/doc/manual/R-admin.pdf",
                                  "/usr/share/doc/r-doc-pdf/manual/R-admin.pdf")),
    "R-data.pdf": ("r-doc-pdf", ("/usr/share/R/doc/manual/R-data.pdf",
                                 "/usr/share/doc/r-doc-pdf/manual/R-data.pdf")),
}
"""Name -> (Debian package, where it may be). gnuplot-doc 5.4 puts it under gnuplot/."""
HANDBOOK_DIRS = ("/usr/share/doc/debian-handbook/html/en-US",)
"""The Debian Administrator's Handbook, English HTML (package debian-handbook)."""
DEVTOOLS_TIMEOUT_S = 60
"""Longest wait for Chromium's next DevTools message."""


@dataclass(frozen=True, slots=True)
class Extracted:
    """One extractor's text of one file; ``pages`` when it says where pages break."""

    text: str
    pages: tuple[str, ...] | None = None


def find_pdfs(names: Iterable[str]) -> tuple[dict[str, Path], dict[str, str]]:
    """The PDFs found (name -> path) and, for the others, why not."""
    found: dict[str, Path] = {}
    missing: dict[str, str] = {}
    for name in names:
        if name not in PDF_DOCS:
            missing[name] = f"{name} is not one of the benchmark's PDFs ({', '.join(PDF_DOCS)})"
            continue
        package, paths = PDF_DOCS[name]
        hit = next((Path(p) for p in paths if Path(p).is_file()), None)
        if hit is None:
            missing[name] = f"{name} not found (apt-get install {package}; make bench-docs)"
        else:
            found[name] = hit
    return found, missing


def find_html(limit: int) -> tuple[list[Path], str | None]:
    """Up to ``limit`` handbook pages (0: all), spread evenly over the sorted list."""
    folder = next((Path(d) for d in HANDBOOK_DIRS if Path(d).is_dir()), None)
    pages = sorted(folder.glob("*.html")) if folder else []
    if not pages:
        return [], "debian-handbook HTML not found (apt-get install debian-handbook)"
    if 0 < limit < len(pages):
        step = len(pages) / limit
        pages = [pages[int(i * step)] for i in range(limit)]
    return pages, None


# -- references -----------------------------------------------------------------------

def pdftotext_pages(path: Path) -> list[str]:
    """poppler's plain-mode text of every page (``pdftotext FILE -``, split on ``\\f``)."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], capture_output=True,
                         check=True).stdout.decode("utf-8")
    pages = out.split("\f")
    return pages[:-1] if pages and not pages[-1].strip() else pages


def tool_missing(tool: str, package: str) -> str | None:
    """Why ``tool`` cannot run here, or None."""
    return None if shutil.which(tool) else f"{tool} not installed (apt-get install {package})"


class _Devtools:
    """Chromium's DevTools protocol over ``--remote-debugging-pipe`` (fds 3 and 4,
    messages ended by NUL)."""

    def __init__(self, proc: subprocess.Popen[bytes], out: Any, inp: Any) -> None:
        self.proc, self.out, self.inp = proc, out, inp
        self.buffer, self.last_id = b"", 0

    def call(self, method: str, params: dict[str, Any] | None = None,
             session: str | None = None, until: str | None = None) -> dict[str, Any]:
        self.last_id += 1
        message: dict[str, Any] = {"id": self.last_id, "method": method,
                                   "params": params or {}}
        if session:
            message["sessionId"] = session
        self.out.write(json.dumps(message).encode() + b"\0")
        reply: dict[str, Any] | None = None
        seen = until is None
        while reply is None or not seen:
            got = self._receive()
            if got.get("id") == self.last_id:
                reply = got
            seen = seen or got.get("method") == until
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return dict(reply.get("result", {}))

    def _receive(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            if not select.select([self.inp], [], [], DEVTOOLS_TIMEOUT_S)[0]:
                raise RuntimeError(f"chromium sent nothing for {DEVTOOLS_TIMEOUT_S} s")
            chunk = self.inp.read(1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed the DevTools pipe")
            self.buffer += chunk
        message, _, self.buffer = self.buffer.partition(b"\0")
        return dict(json.loads(message))


def _start_chromium(profile: str) -> _Devtools:
    to_child, from_parent = os.pipe()
    to_parent, from_child = os.pipe()

    def on_fds_3_and_4() -> None:  # in the child: dup first, so dup2 never lands on itself
        read_end, write_end = os.dup(to_child), os.dup(from_child)
        os.dup2(read_end, 3)
        os.dup2(write_end, 4)

    proc = subprocess.Popen(
        ["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--remote-debugging-pipe", f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        preexec_fn=on_fds_3_and_4, close_fds=False)
    os.close(to_child)
    os.close(from_child)
    return _Devtools(proc, os.fdopen(from_parent, "wb", buffering=0),
                     os.fdopen(to_parent, "rb", buffering=0))


def chromium_inner_texts(paths: list[Path]) -> dict[Path, str]:
    """``document.body.innerText`` of each page as headless Chromium renders it
    (``file://`` URL, styles and scripts as the page has them, after its load event)."""
    with tempfile.TemporaryDirectory(prefix="grk-chromium-") as profile:
        tools = _start_chromium(profile)
        try:
            target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.call("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
            tools.call("Page.enable", session=session)
            texts = {}
            for path in paths:
                tools.call("Page.navigate", {"url": path.resolve().as_uri()}, session=session,
                           until="Page.loadEventFired")
                value = tools.call("Runtime.evaluate", {"expression": "document.body.innerText",
                                                        "returnByValue": True},
                                   session=session)["result"]["value"]
                texts[path] = str(value)
            tools.call("Browser.close")
        finally:
            tools.out.close()
            try:
                tools.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                tools.proc.kill()
                tools.proc.wait()
            tools.inp.close()
    return texts


def chromium_version() -> str:
    out = subprocess.run(["chromium", "--version"], capture_output=True, text=True)
    return out.stdout.strip()


def pdftotext_version() -> str:
    out = subprocess.run(["pdftotext", "-v"], capture_output=True, text=True)
    return (out.stderr or out.stdout).splitlines()[0].strip()


# -- extractors -----------------------------------------------------------------------

def _groundkit_pdf(data: bytes) -> Extracted:
    from groundkit.extract import extract

    return _pdf_pages(extract("pdf", data))


def _groundkit_pdf_in_process(data: bytes) -> Extracted:
    from groundkit.extract import DEFAULT_LIMITS, extractor

    return _pdf_pages(extractor("pdf").extract(data, DEFAULT_LIMITS))


def _pdf_pages(view: Any) -> Extracted:
    """The view's text of each page: from its first line's segment to its last's (the
    view keeps pages with text only, joined by a blank line)."""
    spans: dict[int, tuple[int, int]] = {}
    for seg in view.segments:
        start, end = spans.get(seg.page, (seg.start, seg.end))
        spans[seg.page] = (min(start, seg.start), max(end, seg.end))
    count = max(spans, default=0)
    pages = tuple(view.text[spans[p][0]:spans[p][1]] if p in spans else ""
                  for p in range(1, count + 1))
    return Extracted(view.text, pages)


@cache
def _markitdown() -> Any:
    from markitdown import MarkItDown

    return MarkItDown(enable_plugins=False)


def _markitdown_convert(data: bytes, extension: str) -> str:
    from markitdown import StreamInfo

    info = StreamInfo(extension=extension, charset="utf-8" if extension == ".html" else None)
    return str(_markitdown().convert_stream(io.BytesIO(data), stream_info=info).markdown)


def _markitdown_pdf(data: bytes) -> Extracted:
    text = _markitdown_convert(data, ".pdf")
    return Extracted(text, _split_form_feeds(text) if "\f" in text else None)


def _split_form_feeds(text: str) -> tuple[str, ...]:
    pages = text.split("\f")
    return tuple(pages[:-1] if pages and not pages[-1].strip() else pages)


def _pdfminer(data: bytes) -> Extracted:
    from pdfminer.high_level import extract_text

    text = extract_text(io.BytesIO(data))
    return Extracted(text, _split_form_feeds(text))


def _pypdf(data: bytes) -> Extracted:
    from pypdf import PdfReader

    pages = tuple(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)
    return Extracted("\n\n".join(pages), pages)


def _groundkit_html(data: bytes) -> Extracted:
    from groundkit.extract import extract

    return Extracted(extract("html", data).text)


def _markitdown_html(data: bytes) -> Extracted:
    return Extracted(_markitdown_convert(data, ".html"))


def _bs4(data: bytes) -> Extracted:
    from bs4 import BeautifulSoup

    return Extracted(BeautifulSoup(data, "html.parser").get_text())


def _html2text(data: bytes) -> Extracted:
    import html2text

    converter = html2text.HTML2Text()
    converter.body_width = 0
    converter.ignore_images = True
    converter.ignore_links = True
    return Extracted(converter.handle(data.decode("utf-8")))


Extract = Callable[[bytes], Extracted]
PDF_EXTRACTORS: dict[str, tuple[str, Extract]] = {
    "groundkit": ("pypdfium2", _groundkit_pdf),
    "groundkit-in-process": ("pypdfium2", _groundkit_pdf_in_process),
    "markitdown": ("markitdown", _markitdown_pdf),
    "pdfminer.six": ("pdfminer", _pdfminer),
    "pypdf": ("pypdf", _pypdf),
}
"""Name -> (the module it needs, the function). ``groundkit`` is the public
``extract()`` (a forked, limited child per file, as indexing runs it);
``groundkit-in-process`` the same extractor without the child: speed only."""
HTML_EXTRACTORS: dict[str, tuple[str, Extract]] = {
    "groundkit": ("selectolax", _groundkit_html),
    "markitdown": ("markitdown", _markitdown_html),
    "bs4-get_text": ("bs4", _bs4),
    "html2text": ("html2text", _html2text),
}
SPEED_ONLY = frozenset({"groundkit-in-process"})


def missing_module(module: str) -> str | None:
    """Why ``module`` cannot be imported here, or None."""
    try:
        __import__(module)
    except ImportError as exc:
        return f"{module} not importable ({exc.__class__.__name__}: {exc})"
    return None


def versions() -> dict[str, str]:
    """Installed versions of every library measured."""
    from importlib import metadata

    out = {}
    for dist in ("groundkit", "pypdfium2", "selectolax", "markitdown", "pdfminer.six",
                 "pdfplumber", "pypdf", "beautifulsoup4", "html2text", "rapidfuzz"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_LINE_MARK = re.compile(r"(?m)^[ \t]*(?:#{1,6}[ \t]+|[*+-][ \t]+|\d+\.[ \t]+|>[ \t]?|:[ \t]+)")
_TABLE_RULE = re.compile(r"(?m)^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?"
                         r"[ \t]*$")
_EMPHASIS = re.compile(r"\*\*|__|`")
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>])")


def strip_markdown(text: str) -> str:
    """Markdown syntax removed lightly: images dropped, links to their text, heading,
    list, quote and definition markers at line starts, table rules, ``**``/``__``/
    backticks, backslash escapes. Table cell bars and single ``*``/``_`` stay."""
    text = _IMAGE.sub("", text)
    text = _LINK.sub(r"\1", text)
    text = _TABLE_RULE.sub("", text)
    text = _LINE_MARK.sub("", text)
    text = _EMPHASIS.sub("", text)
    return _ESCAPE.sub(r"\1", text)
