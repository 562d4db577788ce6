"""Profiles: what is boilerplate in each HTML flavour, and where the content is."""

from __future__ import annotations

from groundkit.extract.base import ExtractError

from .html2md import Renderer, collapse, heading_tag_level
from .render import finish, normalise_headings, render
from .sections import filter_sections
from .tree import (
    Node,
    adopt,
    by_id,
    find_first,
    has_class,
    is_heading_tag,
    parse_html,
    remove,
    section_of,
    strip_nodes,
)

ADMONITIONS = ("note", "tip", "warning", "caution", "important")
TEXINFO_LEVELS = {"chapter": 1, "appendix": 1, "unnumbered": 1, "top": 1, "settitle": 1,
                  "section": 2, "appendixsec": 2, "unnumberedsec": 2, "heading": 2,
                  "subsection": 3, "appendixsubsec": 3, "unnumberedsubsec": 3, "subheading": 3,
                  "subsubsection": 4, "subsubheading": 4, "node-heading": 4,
                  "appendixsubsubsec": 4, "unnumberedsubsubsec": 4}


def _body(root):
    return find_first(root, lambda n: n.tag == "body") or root


def _select_and_render(body, entry, r):
    ids = by_id(body)
    for d in entry.get("drop", []):
        if d not in ids:
            raise SystemExit(f"{entry['doc']}: no element with id {d!r} in {entry['src']}")
        remove(section_of(ids[d]))
    if entry.get("select"):
        blocks = []
        for s in entry["select"]:
            if s not in ids:
                raise SystemExit(f"{entry['doc']}: no element with id {s!r} in {entry['src']}")
            blocks.extend(r.block(section_of(ids[s])))
    else:
        blocks = r.blocks(body)
    return normalise_headings(blocks)


def _label_paragraph(parent, label):
    p = Node("p", {}, parent)
    p.children.append(label)
    return p


def _sqlite_level(n):
    # pragma.html marks each pragma with a hidden pseudo-heading <h _id=...>
    return 3 if n.tag == "h" else heading_tag_level(n)


def _sqlite_diagrams(root):
    """A syntax diagram (inline SVG, dropped) is announced by "<b>xxx-stmt:</b> [hide]":
    say in words that a diagram was there."""
    def announces_diagram(n):
        return n.tag == "p" and find_first(n, lambda m: m.tag == "button") is not None

    for n in [n for n in root.iter() if announces_diagram(n)]:
        label = collapse("".join(c if isinstance(c, str) else c.text() for c in n.children
                                 if not (isinstance(c, Node) and c.tag == "button"))).rstrip(":")
        n.children = [f"[syntax diagram: {label}]"] if label else []


def profile_sqlite(root, entry):
    title = None
    ft = find_first(root, lambda n: n.tag == "div" and has_class(n, "fancy_title"))
    if ft is not None:
        title = collapse(ft.text())
    strip_nodes(root, lambda n: n.tag == "div" and has_class(
        n, "nosearch", "menu", "searchmenu", "tagline", "imgcontainer"))
    # the page footer
    strip_nodes(root, lambda n: n.tag == "p" and "This page last modified on" in n.text())
    _sqlite_diagrams(root)
    blocks = Renderer(_sqlite_level).blocks(_body(root))
    if title:
        return [("h", 1, title), *normalise_headings(blocks, top=2)]
    return normalise_headings(blocks)


def _admonition_content(adm, title):
    """The content of a DocBook admonition: the text cells of its layout table, or
    everything but its title."""
    table = find_first(adm, lambda n: n.tag == "table")
    if table is None:
        return [c for c in adm.children if c is not title]
    content = []
    for td in [n for n in table.iter() if n.tag == "td"]:
        if find_first(td, lambda m: m.tag == "img") is not None and not collapse(td.text()):
            continue
        content.extend(td.children)
    return content


def rewrite_admonitions(root):
    """DocBook admonitions (<div class="note"> with an <h3 class="title"> or, in the
    graphical style, a layout table with an icon and a <th> label) become a paragraph
    holding the label followed by the content."""
    for adm in [n for n in root.iter() if n.tag == "div" and has_class(n, *ADMONITIONS)]:
        title = find_first(
            adm, lambda n: (n.tag == "h3" and has_class(n, "title")) or n.tag == "th")
        label = collapse(title.text()) if title is not None else ""
        content = _admonition_content(adm, title)
        new = Node("div", {}, adm)
        if label:
            new.children.append(_label_paragraph(new, label))
        adopt(new, content)
        adm.children = [new]


def rewrite_callouts(root):
    """A DocBook callout list is a layout table (mark | text): make it a <dl>."""
    for co in [n for n in root.iter() if n.tag == "div" and has_class(n, "calloutlist")]:
        dl = Node("dl", {}, co)
        for tr in [n for n in co.iter() if n.tag == "tr"]:
            cells = [c for c in tr.children if isinstance(c, Node) and c.tag == "td"]
            if len(cells) != 2:
                continue
            for tag, cell in (("dt", cells[0]), ("dd", cells[1])):
                d = Node(tag, {}, dl)
                d.children = cell.children
                for c in cell.children:
                    if isinstance(c, Node):
                        c.parent = d
                dl.children.append(d)
        co.children = [dl]


def profile_docbook(root, entry):
    strip_nodes(root, lambda n: n.tag == "div" and has_class(
        n, "navheader", "navfooter", "toc", "list-of-tables", "list-of-figures",
        "list-of-examples"))
    strip_nodes(root, lambda n: n.tag == "a" and has_class(n, "indexterm"))
    rewrite_admonitions(root)
    rewrite_callouts(root)
    body = _body(root)
    # reference pages: the name heading is the title, the other headings sit below it
    title_heads = set()
    refentry = find_first(body, lambda n: n.tag == "div" and has_class(n, "refentry")) is not None
    if refentry:
        for nd in body.iter():
            if nd.tag == "div" and has_class(nd, "refnamediv"):
                title_heads.update(id(h) for h in nd.iter() if is_heading_tag(h))

    def level(n):
        if not is_heading_tag(n):
            return None
        return int(n.tag[1]) + (1 if refentry and id(n) not in title_heads else 0)

    return _select_and_render(body, entry, Renderer(level))


def profile_asciidoc(root, entry):
    strip_nodes(root, lambda n: n.tag == "div" and n.attrs.get("id") in (
        "footer", "toc", "footnotes") and not n.text().strip())
    strip_nodes(root, lambda n: n.tag == "div" and n.attrs.get("id") == "footer")
    body = _body(root)
    # asciidoc wraps admonitions in a two-cell table: icon/label + content
    for adm in [n for n in body.iter() if n.tag == "div" and has_class(n, "admonitionblock")]:
        label = find_first(adm, lambda n: n.tag == "td" and has_class(n, "icon"))
        content = find_first(adm, lambda n: n.tag == "td" and has_class(n, "content"))
        if label is not None and content is not None:
            lab = collapse(label.text())
            new = Node("div", {}, adm)
            if lab:
                new.children.append(_label_paragraph(new, lab))
            adopt(new, content.children)
            adm.children = [new]
    return _select_and_render(body, entry, Renderer())


def profile_texinfo(root, entry):
    strip_nodes(root, lambda n: n.tag == "div" and has_class(n, "header"))
    strip_nodes(root, lambda n: n.tag == "ul" and has_class(n, "section-toc", "mini-toc"))
    strip_nodes(root, lambda n: n.tag == "table" and (
        has_class(n, "menu") or any(c.startswith("index-") for c in n.classes)))
    strip_nodes(root, lambda n: n.tag == "a" and has_class(n, "copiable-anchor", "copiable-link"))

    def level(n):
        if is_heading_tag(n):
            for c in n.classes:
                if c in TEXINFO_LEVELS:
                    return TEXINFO_LEVELS[c]
            return int(n.tag[1])
        return None

    return _select_and_render(_body(root), entry, Renderer(level))


def _is_footnote_mark(n):
    return ((n.tag == "a" and has_class(n, "footnote-reference", "fn-backref"))
            or (n.tag == "dt" and has_class(n, "label"))
            or (n.tag == "span" and has_class(n, "label")))


def profile_sphinx(root, entry):
    strip_nodes(root, lambda n: n.tag == "a" and has_class(n, "headerlink"))
    # footnote marks and labels are shown in brackets by the style sheet
    for n in root.iter():
        if _is_footnote_mark(n):
            t = collapse(n.text())
            if t and not t.startswith("["):
                n.children = ["[" + t + "]"]
    body = find_first(root, lambda n: n.tag == "div" and has_class(n, "body")) or _body(root)
    return _select_and_render(body, entry, Renderer())


PROFILES = {"sqlite": profile_sqlite, "docbook": profile_docbook, "asciidoc": profile_asciidoc,
            "texinfo": profile_texinfo, "sphinx": profile_sphinx}


def convert_html(entry, data):
    try:
        root = parse_html(data)
    except ExtractError as exc:
        raise SystemExit(f"{entry['doc']}: {entry['src']}: {exc}") from None
    blocks = PROFILES[entry["profile"]](root, entry)
    blocks = filter_sections(blocks, entry)
    return finish(render(blocks))
