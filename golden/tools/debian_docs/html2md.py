"""HTML tree -> blocks.

A block is a tuple:
    ("h", level, text)                 a heading
    ("p", text)                        a paragraph (lines separated by "\\n")
    ("pre", text)                      preformatted text, kept as it is
    ("list", ordered, start, items)    items: a list of block lists
    ("dl", entries)                    entries: [terms, blocks]
    ("quote", blocks)
    ("table", header, body)            header: cells; body: rows of cells
"""

from __future__ import annotations

import re

from .tree import Node, find_first, has_class, is_heading_tag

BLOCK_TAGS = {"address", "article", "aside", "blockquote", "body", "center", "dd", "details",
              "dialog", "dir", "div", "dl", "dt", "fieldset", "figcaption", "figure", "footer",
              "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "html", "li", "main",
              "menu", "nav", "ol", "p", "pre", "section", "table", "tbody", "thead", "tfoot",
              "tr", "td", "th", "caption", "ul", "summary", "#root", "noscript"}
ALWAYS_DROP = {"script", "style", "svg", "button", "form", "img", "head", "title", "meta",
               "link", "colgroup", "col", "input", "select", "option", "map", "area", "object",
               "iframe", "noscript", "math", "canvas"}
LIST_TAGS = ("ul", "ol", "menu", "dir")
BR = "\x00"
WS = re.compile(r"[ \t\n\r\f\v]+")


def collapse(text):
    text = WS.sub(" ", text)
    text = text.replace(" " + BR, BR).replace(BR + " ", BR)
    return text.strip(" ").strip(BR).replace(BR, "\n").strip()


def heading_tag_level(node):
    """<h1> .. <h6> -> 1 .. 6; anything else is not a heading (None)."""
    return int(node.tag[1]) if is_heading_tag(node) else None


class Renderer:
    def __init__(self, heading_level=None):
        # heading_level(node) -> int or None (None: not a heading)
        self.heading_level = heading_level or heading_tag_level
        self._blockish = {}

    def is_blockish(self, node):
        key = id(node)
        if key not in self._blockish:
            if node.tag in BLOCK_TAGS:
                r = True
            else:
                r = any(isinstance(c, Node) and c.tag not in ALWAYS_DROP and self.is_blockish(c)
                        for c in node.children)
            self._blockish[key] = r
        return self._blockish[key]

    def has_block_child(self, node):
        return any(isinstance(c, Node) and c.tag not in ALWAYS_DROP and self.is_blockish(c)
                   for c in node.children)

    # -- inline text
    def inline(self, nodes, out):
        for n in nodes:
            if isinstance(n, str):
                out.append(n)
            elif n.tag in ALWAYS_DROP:
                continue
            elif n.tag == "br":
                out.append(BR)
            elif n.tag == "sup":
                # 2<sup>31</sup> -> 2^31; footnote marks ([1]) stay as they are
                t = collapse("".join(self.inline(n.children, [])))
                out.append(t if not t or t.startswith("[") or not t[0].isalnum() else "^" + t)
            else:
                self.inline(n.children, out)
        return out

    def inline_text(self, nodes):
        return collapse("".join(self.inline(nodes, [])))

    # -- blocks
    def blocks(self, node):
        out, run = [], []

        def flush():
            if run:
                t = self.inline_text(run)
                if t:
                    out.append(("p", t))
                run.clear()

        for c in node.children:
            if isinstance(c, str):
                run.append(c)
            elif c.tag in ALWAYS_DROP:
                continue
            elif c.tag == "br":
                run.append(c)
            elif self.heading_level(c) is not None:
                flush()
                t = self.inline_text(c.children)
                if t:
                    out.append(("h", self.heading_level(c), t))
            elif self.is_blockish(c):
                flush()
                out.extend(self.block(c))
            else:
                run.append(c)
        flush()
        return out

    def block(self, el):
        tag = el.tag
        if tag == "pre":
            text = pre_text(el)
            return [("pre", text)] if text.strip() else []
        if tag in LIST_TAGS:
            return self.list_block(el)
        if tag == "dl":
            return self.dl_block(el)
        if tag == "table":
            return self.table(el)
        if tag == "hr":
            return []
        if tag == "blockquote":
            inner = self.blocks(el)
            if all(b[0] == "pre" for b in inner):
                return inner  # a quoted code block is just a code block
            return [("quote", inner)]
        if tag == "div" and has_class(el, "line-block"):
            return self.line_block(el)
        return self.blocks(el)

    def list_block(self, el):
        items = []
        for c in el.children:
            if isinstance(c, Node) and c.tag == "li":
                b = self.blocks(c)
                if b:
                    items.append(b)
            elif isinstance(c, Node) and c.tag not in ALWAYS_DROP:
                # stray content in a list (e.g. a nested list without <li>)
                b = self.blocks(c) if c.tag != "ul" and c.tag != "ol" else self.block(c)
                if b and items:
                    items[-1].extend(b)
                elif b:
                    items.append(b)
        if not items:
            return []
        start = 1
        if el.tag == "ol":
            try:
                start = int(el.attrs.get("start", "1"))
            except ValueError:
                start = 1
        return [("list", el.tag == "ol", start, items)]

    def dl_block(self, el):
        entries = []  # [terms, blocks]
        for c in el.children:
            if not isinstance(c, Node) or c.tag in ALWAYS_DROP:
                continue
            if c.tag == "dt":
                t = self.inline_text(c.children) if not self.has_block_child(c) else \
                    " ".join(b[1] for b in self.blocks(c) if b[0] == "p")
                if entries and not entries[-1][1]:
                    entries[-1][0].append(t)
                else:
                    entries.append([[t], []])
            elif c.tag == "dd":
                b = self.blocks(c)
                if not entries:
                    entries.append([[], []])
                entries[-1][1].extend(b)
            else:
                b = self.blocks(c) if c.tag != "dl" else self.block(c)
                if entries:
                    entries[-1][1].extend(b)
        entries = [e for e in entries if any(e[0]) or e[1]]
        return [("dl", entries)] if entries else []

    def line_block(self, el):
        """reStructuredText line block: one line per <div class="line">."""
        lines = [self.inline_text(c.children) for c in el.children
                 if isinstance(c, Node) and has_class(c, "line")]
        lines = [ln for ln in lines if ln]
        return [("p", "\n".join(lines))] if lines else []

    # -- tables
    def table(self, el):
        rows, head_rows = table_rows(el)
        pre = self.caption(el)
        if not rows:
            return pre
        grid = self.grid(rows)
        ncols = max(len(r) for r in grid)
        if ncols <= 1 and len(rows) > 1:
            # a one-column table (DocBook "simplelist"): a list of its cells
            items = self.simple_list(rows)
            if items:
                return [*pre, ("list", False, 1, items)]
        if ncols <= 1 or (len(grid) == 1 and not head_rows):
            # layout table: render the cells as blocks
            return pre + self.cell_blocks(rows)
        header, body = pipe_grid(grid, ncols)
        return [*pre, ("table", header, body)]

    def caption(self, el):
        caption = find_first(el, lambda n: n.tag == "caption")
        if caption is not None:
            t = self.inline_text(caption.children)
            if t:
                return [("p", t)]
        return []

    def cell_text(self, cell):
        parts = []
        for b in self.blocks(cell):
            parts.append(flatten_block(b))
        return WS.sub(" ", " ".join(p for p in parts if p)).strip()

    def cell_blocks(self, rows):
        out = []
        for cells in rows:
            for cell in cells:
                out.extend(self.blocks(cell))
        return out

    def simple_list(self, rows):
        """The cells as list items if each is a single paragraph, else None."""
        items = [self.blocks(cell) for cells in rows for cell in cells]
        items = [b for b in items if b]
        if items and all(len(b) == 1 and b[0][0] == "p" for b in items):
            return items
        return None

    def grid(self, rows):
        """Rows of cell texts, with colspan / rowspan cells spread as empty cells."""
        grid, pending = [], {}  # pending[col] = rows still covered by a rowspan
        for cells in rows:
            line, col = [], 0
            for cell in cells:
                col = _skip_spanned(line, col, pending)
                text = self.cell_text(cell)
                span = _int(cell.attrs.get("colspan"), 1)
                rspan = _int(cell.attrs.get("rowspan"), 1)
                for k in range(span):
                    line.append(text if k == 0 else "")
                    if rspan > 1:
                        pending[col] = rspan - 1
                    col += 1
            _skip_spanned(line, col, pending)
            grid.append(line)
        return grid


def _skip_spanned(line, col, pending):
    """Put an empty cell in each column a rowspan from above covers; the next column."""
    while col in pending:
        left = pending[col]
        line.append("")
        if left <= 1:
            del pending[col]
        else:
            pending[col] = left - 1
        col += 1
    return col


def table_rows(el):
    """The rows (lists of <td>/<th>) of a table, and the indexes of its header rows."""
    rows = []
    head_rows = set()

    def collect(node, in_head):
        for c in node.children:
            if not isinstance(c, Node):
                continue
            if c.tag == "tr":
                cells = [x for x in c.children if isinstance(x, Node) and x.tag in ("td", "th")]
                if in_head or (cells and all(x.tag == "th" for x in cells)):
                    head_rows.add(len(rows))
                rows.append(cells)
            elif c.tag in ("thead",):
                collect(c, True)
            elif c.tag in ("tbody", "tfoot"):
                collect(c, False)

    collect(el, False)
    return rows, head_rows


def pipe_grid(grid, ncols):
    """Pad the rows to ncols, drop the columns empty everywhere (layout spacers) and
    split off the first row as the header."""
    grid = [r + [""] * (ncols - len(r)) for r in grid]
    keep = [j for j in range(ncols) if any(r[j] for r in grid)]
    grid = [[r[j] for j in keep] for r in grid]
    return grid[0], grid[1:]


def _int(v, default):
    try:
        return max(1, int(v))
    except (TypeError, ValueError):
        return default


def pre_text(el):
    parts = []

    def walk(n):
        for c in n.children:
            if isinstance(c, str):
                parts.append(c)
            elif c.tag == "br":
                parts.append("\n")
            elif c.tag in ("script", "style"):
                continue
            else:
                walk(c)

    walk(el)
    text = "".join(parts).replace("\r\n", "\n").replace("\r", "\n")
    lines = [ln.rstrip() for ln in text.split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def flatten_block(b):
    kind = b[0]
    if kind in ("p", "h"):
        return b[-1]
    if kind == "pre":
        return b[1]
    if kind == "list":
        return " ".join(flatten_block(x) for item in b[3] for x in item)
    if kind == "dl":
        return " ".join(" ".join(t for t in terms) + " " + " ".join(flatten_block(x) for x in bl)
                        for terms, bl in b[1])
    if kind == "table":
        return " ".join(" ".join(r) for r in [b[1], *b[2]])
    if kind == "quote":
        return " ".join(flatten_block(x) for x in b[1])
    return ""
