"""Blocks -> Markdown-style lines -> the final text of a document."""

from __future__ import annotations

import re


def esc_cell(t):
    return t.replace("\\", "\\\\").replace("|", "\\|") if "|" in t else t


def fence_for(text):
    n = 3
    for m in re.finditer(r"`{3,}", text):
        n = max(n, len(m.group()) + 1)
    return "`" * n


def _sep(out):
    """A blank line before the next block (never two, never at the start)."""
    if out and out[-1] != "":
        out.append("")


def _heading(out, b, indent):
    if indent:
        out.append(indent + b[2])
    else:
        out.append("#" * min(b[1], 6) + " " + b[2])


def _paragraph(out, b, indent):
    out.extend(indent + ln for ln in b[1].split("\n"))


def _pre(out, b, indent):
    # inside a list item or a description the fence is indented like the text
    # around it (as Markdown nests it); the code itself is otherwise unchanged
    f = fence_for(b[1])
    out.append(indent + f)
    out.extend((indent + ln) if ln else "" for ln in b[1].split("\n"))
    out.append(indent + f)


def _put_marker(sub, indent, marker):
    """Put a list item's marker on the first line of its rendered lines."""
    first = 0
    while first < len(sub) and sub[first] == "":
        first += 1
    if first < len(sub) and sub[first].startswith(indent + " " * len(marker)):
        sub[first] = indent + marker + sub[first][len(indent) + len(marker):]
    else:
        sub.insert(first, indent + marker.rstrip())


def _list(out, b, indent):
    ordered, start, items = b[1], b[2], b[3]
    tight = all(len(it) == 1 and it[0][0] == "p" for it in items)
    for k, item in enumerate(items):
        marker = f"{start + k}. " if ordered else "- "
        sub = render(item, indent + " " * len(marker))
        _put_marker(sub, indent, marker)
        if not tight and k:
            _sep(out)
        out.extend(sub)


def _dl(out, b, indent):
    for k, (terms, bl) in enumerate(b[1]):
        if k:
            _sep(out)
        for t in terms:
            if t:
                out.extend(indent + ln for ln in t.split("\n"))
        out.extend(render(bl, indent + "    "))


def _quote(out, b, indent):
    out.extend(render(b[1], indent + "    "))


def _table_row(cells, indent):
    return indent + "|" + "|".join((" " + esc_cell(c) + " ") if c else " " for c in cells) + "|"


def _table(out, b, indent):
    header, body = b[1], b[2]
    out.append(_table_row(header, indent))
    out.append(indent + "|" + "|".join("---" for _ in header) + "|")
    out.extend(_table_row(r, indent) for r in body)


_WRITERS = {"h": _heading, "p": _paragraph, "pre": _pre, "list": _list, "dl": _dl,
            "quote": _quote, "table": _table}


def render(blocks, indent=""):
    """Blocks -> list of lines (blank lines between blocks)."""
    out = []
    for b in blocks:
        write = _WRITERS.get(b[0])
        if write is not None:
            _sep(out)
            write(out, b, indent)
    return out


def finish(lines):
    text = "\n".join(ln.rstrip() for ln in lines)
    text = re.sub(r"\n{3,}", "\n\n", text) if "```" not in text else _squeeze_outside_fences(text)
    return text.strip("\n") + "\n"


def _squeeze_outside_fences(text):
    out, blank, fence = [], 0, None
    for ln in text.split("\n"):
        if fence is None:
            m = re.match(r"\s*(`{3,})$", ln)
            if m:
                fence = m.group(1)
            if ln == "":
                blank += 1
                if blank > 1:
                    continue
            else:
                blank = 0
            out.append(ln)
        else:
            out.append(ln)
            if ln.strip() == fence:
                fence = None
                blank = 0
    return "\n".join(out)


def normalise_headings(blocks, top=1):
    levels = [b[1] for b in blocks if b[0] == "h"]
    if not levels:
        return blocks
    shift = top - min(levels)
    return [("h", max(1, min(6, b[1] + shift)), b[2]) if b[0] == "h" else b for b in blocks]
