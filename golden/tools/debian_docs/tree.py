"""The converter's HTML tree: lexbor's (selectolax, an HTML5 parser), as small Node objects.

The bytes are decoded as groundkit's HTML extractor decodes them
(:func:`groundkit.extract.html_encoding.decode_html`: a byte-order mark, else the page's
``<meta charset>``, else UTF-8), and parsed by the same parser, so implied end tags,
misnested markup, tables and character references follow the HTML standard's tree
construction. The tree is then copied into :class:`Node` objects, which the profiles
edit freely (remove, re-parent, relabel).

One deliberate step before parsing: in an XHTML page (an ``<html>`` in the XHTML
namespace, as DocBook's and AsciiDoc's XSL write them) ``<a id="x"/>`` is an empty
element, as the tools that wrote it meant. The HTML standard ignores the ``/`` of a
non-void element, so the ``<a>`` would stay open and be re-opened around the list items
and paragraphs that follow it (its "active formatting" reconstruction), splitting and
merging them; such tags are written as ``<a id="x"></a>`` first.
"""

from __future__ import annotations

import re

from groundkit.extract.html_encoding import decode_html

HEADING_TAG = re.compile(r"h[1-6]")
_SPACE = r"[\t\n\f\r ]"
_QUOTED = r"\"[^\"]*\"|'[^']*'"
_XHTML_ROOT = re.compile(rf"<html\b(?:[^>\"']|{_QUOTED})*?\bxmlns{_SPACE}*={_SPACE}*"
                         r"[\"']http://www\.w3\.org/1999/xhtml[\"']", re.I)
_XHTML_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)"
    rf"|<(?P<name>[A-Za-z][^\t\n\f\r />]*)(?P<attrs>(?:{_SPACE}+[^\t\n\f\r />=]+"
    rf"(?:{_SPACE}*={_SPACE}*(?:{_QUOTED}|[^\t\n\f\r \"'>]++))?)*){_SPACE}*/>"
    rf"|<(?P<raw>script|style)\b(?:[^>\"']|{_QUOTED})*>.*?(?:</(?P=raw)[^>]*>|\Z)"
    rf"|</?[A-Za-z](?:[^>\"']|{_QUOTED})*>",
    re.S | re.I)
"""What the XHTML rewrite reads token by token: comments, CDATA, a self-closing tag,
script and style with their text, any other tag (so nothing inside them is read as a tag)."""
_VOID = frozenset(("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "param", "source", "track", "wbr", "basefont", "bgsound", "frame",
                   "keygen"))


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


def parse_html(data: bytes) -> Node:
    """The tree of an HTML page given as bytes: a ``#root`` node holding ``<html>``.

    Text nodes are strings (adjacent ones joined); comments and the doctype are left
    out; an attribute without a value is ``""``. Raises
    :class:`groundkit.extract.base.ExtractError` when the bytes are not valid in the
    encoding the page declares."""
    try:
        from selectolax.lexbor import LexborDocumentOptions, LexborHTMLParser
    except ImportError:
        raise SystemExit("the converter parses HTML with selectolax: run it with the "
                         "project's .venv/bin/python, or pip install 'groundkit[html]'"
                         ) from None
    text = decode_html(data).text
    if _XHTML_ROOT.search(text):
        text = close_empty_elements(text)
    parser = LexborHTMLParser(text, options=LexborDocumentOptions.WO_EVENTS)
    document = parser.root.parent if parser.root is not None else None
    root = Node("#root")
    if document is not None:
        _copy_children(document, root)
    return root


def close_empty_elements(text):
    """An XHTML page with each self-closing non-void element (``<a id="x"/>``) written
    as a start and an end tag (``<a id="x"></a>``); nothing else changes."""
    def rewrite(m):
        name = m.group("name")
        if name is None or name.lower() in _VOID:
            return m.group()
        return f"<{name}{m.group('attrs')}></{name}>"

    return _XHTML_TOKEN.sub(rewrite, text)


def _copy_children(element, into):
    """Copy lexbor's subtree below ``element`` into ``into`` (iteratively: any depth)."""
    pending = [(element.first_child, into)]  # the next sibling to copy, and its parent
    while pending:
        node, parent = pending.pop()
        while node is not None:
            if node.is_text_node:
                _append_text(parent, node.text_content or "")
            elif node.is_element_node:
                attrs = {k: v if v is not None else "" for k, v in node.attributes.items()}
                el = Node(node.tag, attrs, parent)
                parent.children.append(el)
                if node.first_child is not None:
                    pending.append((node.next, parent))
                    node, parent = node.first_child, el
                    continue
            node = node.next


def _append_text(parent, data):
    if not data:
        return
    if parent.children and isinstance(parent.children[-1], str):
        parent.children[-1] += data
    else:
        parent.children.append(data)


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
