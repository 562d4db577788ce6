"""The citation viewer: one self-contained HTML page per citation, its verdict on top.

:mod:`.citation` decides what a page shows (the verdict, checked when the page is made,
and where the cited words stand now), :mod:`.pdf_pages` draws a PDF's pages with the
quote's exact boxes, :mod:`.page` writes the HTML (no script, no fetch, everything
escaped) and :mod:`.serve` serves it: ``grk open``'s one-shot loopback server and the
``/view/ID`` route of ``grk serve --transport http``.
"""
