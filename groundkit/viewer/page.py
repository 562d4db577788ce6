"""A citation's page as one self-contained HTML document, with no script and no fetch.

Every string from a document, a store or a verdict is escaped (:func:`html.escape`,
quotes included) before it is written; the only markup of a file's it holds is an HTML
or EPUB page's as :mod:`.original` sanitised it (an allowlist: no script, style, URL,
image, frame or form, no attribute but a few of layout), inside ``div.original``. The
page loads nothing: its images are ``data:`` URIs, its style is inline, and its policy
(:data:`POLICY`, also sent as a header by the servers) forbids scripts, frames, forms,
fonts and every fetch but ``data:`` images. The quote's first highlight carries the id
``quote``, so a URL ending in ``#quote`` scrolls it into view without a script.
"""

from __future__ import annotations

import difflib
from html import escape

from ..model import Status
from .citation import OriginalBody, PdfBody, Shown, TextBody

POLICY = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; "
          "form-action 'none'")
"""The page's Content-Security-Policy, in its ``<meta>``."""
HEADER_POLICY = POLICY + "; frame-ancestors 'none'"
"""The policy the servers send as a header (``frame-ancestors`` works only there)."""

_STYLE = """
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1b1b1b;background:#f4f4f2}
body>header{padding:12px 20px;border-bottom:1px solid #ccc;background:#fff}
body>header h1{font-size:17px;margin:0 0 4px}
.verdict{display:inline-block;padding:2px 8px;border-radius:4px;font-weight:600;color:#fff}
.verified{background:#1d7a35}.drifted{background:#a65f00}.unresolvable{background:#a31621}
body>main{padding:16px 20px}
.original{background:#fff;padding:12px 20px;box-shadow:0 1px 4px #0003;overflow-wrap:anywhere}
.original table{border-collapse:collapse}.original td,.original th{border:1px solid #ccc;
  padding:2px 6px}
.meta{color:#555;font-size:13px;margin:2px 0}
.note{background:#fff3cd;border:1px solid #e0c36c;padding:6px 10px;margin:8px 0}
.page{position:relative;margin:0 0 18px;background:#fff;box-shadow:0 1px 4px #0003}
.page img{display:block;width:100%;height:auto}
.page .hl{position:absolute;background:rgb(255 214 0 / 40%);outline:2px solid #e0a800}
.caption{font-size:13px;color:#444;margin:0 0 4px}
ol.lines{font:13px/1.45 ui-monospace,monospace;background:#fff;padding:8px 8px 8px 64px;
  margin:0;white-space:pre-wrap;word-break:break-word}
ol.lines li::marker{color:#999}
ol.lines li.h1,ol.lines li.h2{font-weight:700;font-size:15px}
ol.lines li.h3,ol.lines li.h4,ol.lines li.h5,ol.lines li.h6{font-weight:700}
mark.hl{background:#ffd600;outline:1px solid #e0a800}
.diff{font:13px/1.45 ui-monospace,monospace;white-space:pre-wrap;background:#fff;padding:8px}
.diff del{background:#ffd7d5}.diff ins{background:#ccf0d4;text-decoration:none}
.cited{white-space:pre-wrap;background:#fff;padding:8px;border-left:4px solid #999}
"""


def render_html(shown: Shown) -> str:
    """The page of ``shown`` (see the module)."""
    verdict = shown.verdict
    doc = verdict.doc_id or "(unknown document)"
    parts = [
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">",
        f'<meta http-equiv="Content-Security-Policy" content="{escape(POLICY)}">',
        '<meta name="referrer" content="no-referrer">',
        '<link rel="icon" href="data:,">',
        f"<title>{escape(doc)} — {verdict.status.value}</title>",
        f"<style>{_STYLE}</style></head><body>",
        "<header>",
        f"<h1>{escape(doc)}</h1>",
        f'<p><span class="verdict {verdict.status.value}">{verdict.status.value}</span> '
        f"{escape(verdict.reason)} <span class=\"meta\">(checked when this page was made)"
        "</span></p>",
        f'<p class="meta">{_where(shown)}</p>',
        "</header><main>",
    ]
    if shown.note:
        parts.append(f'<p class="note">No highlight: {escape(shown.note)}</p>')
    if verdict.status is Status.DRIFTED:
        parts.append(_drift(shown))
    if shown.body is None and shown.cited is not None:
        parts.append("<h2>The cited text, as stored</h2>"
                     f'<div class="cited">{escape(shown.cited)}</div>')
    if isinstance(shown.body, PdfBody):
        parts.append(_pdf(shown.body))
    elif isinstance(shown.body, OriginalBody):
        parts.append(_original(shown.body))
    elif isinstance(shown.body, TextBody):
        parts.append(_text(shown.body))
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _where(shown: Shown) -> str:
    verdict = shown.verdict
    bits = [f"collection {escape(shown.collection)}" if shown.collection else "",
            f"chunk {escape(verdict.chunk_id)}", f"format {escape(shown.format)}"]
    if shown.quote:
        bits.append(f"characters {shown.quote[0]:,}–{shown.quote[1]:,} as cited")
    if shown.now_at and shown.now_at != shown.quote:
        bits.append(f"now at {shown.now_at[0]:,}–{shown.now_at[1]:,}")
    if verdict.headings:
        bits.append("under " + escape(" › ".join(verdict.headings)))
    return " · ".join(b for b in bits if b)


def _drift(shown: Shown) -> str:
    """The stored text beside the text now at its offsets, word by word."""
    stored, current = shown.verdict.stored_text or "", shown.verdict.current_text or ""
    old, new = stored.split(" "), current.split(" ")
    out = []
    for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, old, new,
                                                       autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape(" ".join(old[a0:a1])))
            continue
        if a1 > a0:
            out.append(f"<del>{escape(' '.join(old[a0:a1]))}</del>")
        if b1 > b0:
            out.append(f"<ins>{escape(' '.join(new[b0:b1]))}</ins>")
    where = "relocated: highlighted below" if shown.now_at else "not found once in the file"
    return ("<h2>What changed at the cited offsets</h2>"
            f'<p class="meta">Deleted: as cited; inserted: the file now. The cited text is '
            f"{where}.</p>"
            f'<div class="diff">{" ".join(out)}</div>')


def _pdf(body: PdfBody) -> str:
    out = []
    first = True
    for page in body.pages:
        label = f" (printed page {escape(page.label)})" if page.label else ""
        out.append(f'<p class="caption">Page {page.page} of the file{label}</p>')
        out.append(f'<div class="page" data-page="{page.page}">'
                   f'<img alt="page {page.page}" width="{page.width}" height="{page.height}" '
                   f'src="data:image/png;base64,{page.png_base64}">')
        for left, top, right, bottom in page.boxes:
            anchor = ' id="quote"' if first else ""
            first = False
            out.append(f'<div class="hl"{anchor} style="left:{100 * left / page.width:.4f}%;'
                       f"top:{100 * top / page.height:.4f}%;"
                       f"width:{100 * (right - left) / page.width:.4f}%;"
                       f'height:{100 * (bottom - top) / page.height:.4f}%"></div>')
        out.append("</div>")
    return "\n".join(out)


def _original(body: OriginalBody) -> str:
    """The sanitised page, as :mod:`.original` made it (its markup is the allowlist's)."""
    part = f" (part {escape(', '.join(body.parts))} of the file)" if body.parts else ""
    return (f'<p class="meta">The original page{part}, sanitised: no script, style, '
            "image, link target or form; the cited words highlighted where its bytes hold "
            f'them.</p><div class="original">{body.markup}</div>')


def _text(body: TextBody) -> str:
    """The window's lines, numbered as in the whole text, the quote marked."""
    lo, hi = body.highlight or (0, 0)
    headings = dict(body.headings)
    out = []
    if body.no_original:
        out.append(f'<p class="note">The text view: {escape(body.no_original)}</p>')
    if body.parts:
        out.append(f'<p class="meta">From part {escape(", ".join(body.parts))} of the file</p>')
    last = body.first_line + body.text.count("\n")
    out.append(f'<p class="meta">Lines {body.first_line:,}–{last:,} of {body.total_lines:,}</p>'
               f'<ol class="lines" start="{body.first_line}">')
    offset = 0
    first = True
    for line in body.text.split("\n"):
        end = offset + len(line)
        a, b = max(lo, offset), min(hi, end)
        level = headings.get(offset)
        cls = f' class="h{level}"' if level else ""
        if a < b:
            anchor = ' id="quote"' if first else ""
            first = False
            shown = (escape(line[:a - offset]) + f'<mark class="hl"{anchor}>'
                     + escape(line[a - offset:b - offset]) + "</mark>"
                     + escape(line[b - offset:]))
        else:
            shown = escape(line)
        out.append(f"<li{cls}>{shown}</li>")
        offset = end + 1
    out.append("</ol>")
    return "".join(out)
