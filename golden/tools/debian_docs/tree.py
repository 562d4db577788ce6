"""A small HTML tree builder on top of html.parser (implied end tags included)."""

from __future__ import annotations

import html.parser
import re

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "param", "source", "track", "wbr", "basefont", "frame", "keygen"}
P_CLOSERS = {"address", "article", "aside", "blockquote", "center", "details", "dialog",
             "dir", "div", "dl", "fieldset", "figcaption", "figure", "footer", "form",
             "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "main", "menu", "nav",
             "ol", "p", "pre", "section", "table", "ul", "li", "dd", "dt"}
SCOPE = {"html", "body", "table", "td", "th", "caption", "button", "object"}
# the end tag of a table part closes up to its table; any other end tag stops at a
# table, row or cell (CELL_BOUNDARIES)
TABLE_PARTS = {"td", "th", "tr", "table", "thead", "tbody", "tfoot"}
CELL_BOUNDARIES = {"td", "th", "table", "tr"}
HEADING_TAG = re.compile(r"h[1-6]")


class Node:
    __slots__ = ("attrs", "children", "parent", "tag")

    def __init__(self, tag, attrs=None, parent=None):
        self.tag = tag
        self.attrs = attrs or {}
        self.children = []
        self.parent = parent

    @property
    def classes(self):
        return self.attrs.get("class", "").split()

    def iter(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.iter()

    def text(self):
        parts = []
        for c in self.children:
            parts.append(c if isinstance(c, str) else c.text())
        return "".join(parts)

    def element_children(self):
        return [c for c in self.children if isinstance(c, Node)]


class TreeBuilder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#root")
        self.stack = [self.root]

    def _close_in_scope(self, names, boundaries):
        for i in range(len(self.stack) - 1, 0, -1):
            tag = self.stack[i].tag
            if tag in names:
                del self.stack[i:]
                return
            if tag in boundaries:
                return

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs, selfclosing=False)

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs, selfclosing=True)

    def _close_implied(self, tag):
        """Close the elements a start tag ends implicitly (<p>, <li>, <td>, ...)."""
        if tag in P_CLOSERS:
            self._close_in_scope({"p"}, SCOPE | {"li", "dd", "dt", "div"})
        if tag == "li":
            self._close_in_scope({"li"}, SCOPE | {"ul", "ol", "menu", "dir"})
        elif tag in ("dt", "dd"):
            self._close_in_scope({"dt", "dd"}, SCOPE | {"dl"})
        elif tag == "tr":
            self._close_in_scope({"tr"}, {"table", "thead", "tbody", "tfoot"})
        elif tag in ("td", "th"):
            self._close_in_scope({"td", "th"}, {"tr", "table"})
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_in_scope({"thead", "tbody", "tfoot"}, {"table"})
        elif tag == "option":
            self._close_in_scope({"option"}, {"select"})

    def _start(self, tag, attrs, selfclosing):
        self._close_implied(tag)
        parent = self.stack[-1]
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, parent)
        parent.children.append(node)
        if not selfclosing and tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag):
        hard = {"table"} - {tag} if tag in TABLE_PARTS else CELL_BOUNDARIES
        for i in range(len(self.stack) - 1, 0, -1):
            t = self.stack[i].tag
            if t == tag:
                del self.stack[i:]
                return
            if t in hard:
                return

    def handle_data(self, data):
        parent = self.stack[-1]
        if parent.children and isinstance(parent.children[-1], str):
            parent.children[-1] += data
        else:
            parent.children.append(data)


def parse_html(text):
    b = TreeBuilder()
    b.feed(text)
    b.close()
    return b.root


def find_first(root, pred):
    for n in root.iter():
        if pred(n):
            return n
    return None


def remove(node):
    if node.parent is not None:
        node.parent.children = [c for c in node.parent.children if c is not node]
        node.parent = None


def has_class(node, *names):
    cl = node.classes
    return any(n in cl for n in names)


def is_heading_tag(node):
    return HEADING_TAG.fullmatch(node.tag) is not None


def strip_nodes(root, pred):
    for n in [n for n in root.iter() if pred(n)]:
        remove(n)


def by_id(root):
    ids = {}
    for n in root.iter():
        i = n.attrs.get("id")
        if i and i not in ids:
            ids[i] = n
        nm = n.attrs.get("name") if n.tag == "a" else None
        if nm and nm not in ids:
            ids[nm] = n
    return ids


SECTION_CLASSES = {"section", "sect1", "sect2", "sect3", "sect4", "refsect1", "refsect2",
                   "chapter", "subsection", "subsubsection", "appendix", "unnumbered",
                   "refentry", "simplesect"}


def section_of(node):
    """The section element an id designates (climb from an anchor or heading)."""
    n = node
    while n is not None:
        if n.tag == "section" or (set(n.classes) & SECTION_CLASSES and n.tag == "div"):
            return n
        n = n.parent
    return node


def adopt(new, children):
    """Append children to new and make it their parent."""
    for c in children:
        if isinstance(c, Node):
            c.parent = new
        new.children.append(c)
