"""The one thing pyproject.toml cannot say: groundkit's optional C extensions.

``groundkit.retrieval._bm25c`` (document-at-a-time MaxScore for BM25, ADR-0003) and
``groundkit.retrieval._chunkc`` (the chunk table of BM25 index builds) are built when a C
compiler and the Python headers are present; ``optional=True`` lets the install go on
without them, and the numpy kernel and the Python tables, which give the same answers,
are used instead.
"""

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("groundkit.retrieval._bm25c", ["groundkit/retrieval/_bm25c.c"], optional=True),
    Extension("groundkit.retrieval._chunkc", ["groundkit/retrieval/_chunkc.c"], optional=True),
])
