"""The one thing pyproject.toml cannot say: groundkit's optional C extension.

``groundkit.retrieval._bm25c`` (document-at-a-time MaxScore for BM25, ADR-0003) is built
when a C compiler and the Python headers are present; ``optional=True`` lets the install
go on without it, and the numpy kernel, which gives the same answers, is used instead.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("groundkit.retrieval._bm25c", ["groundkit/retrieval/_bm25c.c"],
                             optional=True)])
