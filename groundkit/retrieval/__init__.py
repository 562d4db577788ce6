"""Retrieval: the :class:`Retriever` protocol, its implementations and the mode registry.

Layout: :mod:`.base` (the protocol and what a generation offers), :mod:`.bm25`
and its kernels (the lexical index), :mod:`.lexical` (its retriever),
:mod:`.vectors` and :mod:`.vector_files` (the vector store), :mod:`.dense` (its
retriever), :mod:`.fusion` (RRF, convex, the fusion registry), :mod:`.modes`
(the search modes, by name).
"""
