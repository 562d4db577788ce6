"""Build the documents of golden corpus v2 from Debian documentation packages.

The converter is deterministic: the same installed packages give byte-identical
files.  It reads HTML (and a few plain-text files) that Debian packages install,
turns each selected page or section into Markdown-ish plain text and writes

    golden/v2/docs/<domain>/...          the converted documents
    golden/v2/docs/birchline/...         golden/v1/docs copied byte for byte
    golden/v2/PROVENANCE.json            package, version, source, licence, checksums

HTML is decoded and parsed as groundkit's HTML extractor does it: groundkit's encoding
detection (groundkit.extract.html_encoding) and selectolax's lexbor parser (HTML5 tree
construction). Golden v2's committed documents were built by an earlier tree builder on
the standard library's html.parser; this one rebuilds them byte for byte.

Usage (from the repository root, with the project's venv: selectolax is needed):
    .venv/bin/python golden/tools/debian_docs           # (re)build docs and PROVENANCE.json
    .venv/bin/python golden/tools/debian_docs --check   # rebuild in a temp folder, compare
    .venv/bin/python golden/tools/debian_docs --list    # print the selection

The packages must be installed first:
    apt-get install -y sqlite3-doc postgresql-doc-15 nginx-doc git-doc bash-doc debian-policy \\
        debian-reference-en debian-reference-fr debian-reference-de debian-reference-ja

Modules:
    selection   the hand-reviewed table of documents (what to convert, from where)
    tree        the HTML tree: lexbor's (selectolax), copied into small editable nodes
    html2md     HTML tree -> blocks (paragraphs, lists, tables, code, ...)
    render      blocks -> Markdown-style text
    sections    keep or drop whole sections by heading name
    profiles    per-flavour boilerplate removal (sqlite, docbook, asciidoc, texinfo, sphinx)
    text        plain-text sources (nginx CHANGES, verbatim example files)
    packages    installed package versions and DEP-5 licences
    build       writing docs/ and PROVENANCE.json, the summary and the comparison
"""
