"""The BM25 engines ``bench_bm25.py`` compares: how each one builds, saves, opens, searches.

Every engine gets the same parameters (k1, b, top 10) and one thread; a worker
subprocess of ``bench_bm25.py`` calls :func:`build_engine` or :func:`open_engine`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

K1, B, TOP_K = 0.9, 0.4, 10


def _bm25s_stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def available(engine: str) -> str | None:
    """Why ``engine`` cannot run here (its module is missing), or None."""
    module = {"groundkit": "numpy", "groundkit-numpy": "numpy", "bm25s": "bm25s",
              "bm25s-numba": "numba",
              "rank-bm25": "rank_bm25", "tantivy": "tantivy"}[engine]
    try:
        __import__(module)
    except ImportError:
        return f"{module} is not installed"
    return None


def engine_env(engine: str) -> dict[str, str]:
    """Environment for ``engine``'s worker: ``groundkit-numpy`` turns the compiled parts
    off (the query kernel and the build's chunk table)."""
    if engine == "groundkit-numpy":
        return {"GROUNDKIT_BM25_KERNEL": "numpy", "GROUNDKIT_BM25_BUILD": "python"}
    return {}


def engine_facts(engine: str) -> dict[str, Any]:
    """What a result row records about the engine itself (groundkit: which kernel and
    which build table)."""
    if not engine.startswith("groundkit"):
        return {}
    from groundkit.retrieval.bm25_query import compiled_kernel
    from groundkit.retrieval.bm25_tokens import compiled_table

    return {"kernel": "numpy" if compiled_kernel() is None else "compiled",
            "build_table": "python" if compiled_table() is None else "compiled"}


def build_engine(engine: str, texts: list[str], out: Path) -> None:
    if engine.startswith("groundkit"):
        from groundkit.retrieval.bm25 import BM25Index, BM25Params

        BM25Index.build_from_texts(texts, params=BM25Params(k1=K1, b=B)).save(out, {"bench": 1})
    elif engine.startswith("bm25s"):
        import bm25s

        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=_bm25s_stemmer(),
                                show_progress=False)
        model = bm25s.BM25(k1=K1, b=B, method="lucene")
        model.index(tokens, show_progress=False)
        model.save(str(out))
    elif engine == "tantivy":
        import tantivy

        builder = tantivy.SchemaBuilder()
        builder.add_integer_field("id", stored=True)
        builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
        out.mkdir(parents=True, exist_ok=True)
        index = tantivy.Index(builder.build(), path=str(out))
        writer = index.writer(heap_size=100_000_000, num_threads=1)
        for i, text in enumerate(texts):
            writer.add_document(tantivy.Document(id=i, body=text))
        writer.commit()
        writer.wait_merging_threads()
    elif engine == "rank-bm25":
        from rank_bm25 import BM25Okapi

        from groundkit.text.analysis import Analyzer

        analyzer = Analyzer()
        BM25Okapi([analyzer.analyze(t) for t in texts], k1=K1, b=B)  # in memory only
    else:
        raise SystemExit(f"no build step for {engine}")


def open_engine(engine: str, out: Path, texts: list[str]) -> Any:
    """A function ``raw query -> list of (doc, score)`` over the saved (or rebuilt) index.

    ``groundkit`` answers several-term queries with its compiled kernel when it is built,
    ``groundkit-numpy`` always with the numpy one (the same answers; ADR-0003)."""
    if engine.startswith("groundkit"):
        from groundkit.retrieval.bm25 import BM25Index

        index = BM25Index.load(out, {"bench": 1})
        return lambda q: index.search(q, TOP_K)
    if engine.startswith("bm25s"):
        import bm25s

        model = bm25s.BM25.load(str(out), show_progress=False)
        if engine == "bm25s-numba":
            model.backend = "numba"
            model.activate_numba_scorer()
        stem = _bm25s_stemmer()
        backend = "numba" if engine == "bm25s-numba" else "numpy"

        def search(q: str) -> Any:
            toks = bm25s.tokenize([q], stopwords="en", stemmer=stem, return_ids=False,
                                  show_progress=False)
            if not toks[0]:
                return []
            return model.retrieve(toks, k=TOP_K, show_progress=False, n_threads=1,
                                  backend_selection=backend)
        return search
    if engine == "tantivy":
        import tantivy

        tindex = tantivy.Index.open(str(out))
        searcher = tindex.searcher()

        def tsearch(q: str) -> Any:
            query, _errors = tindex.parse_query_lenient(q, ["body"])
            return searcher.search(query, TOP_K).hits
        return tsearch
    if engine == "rank-bm25":
        from rank_bm25 import BM25Okapi

        from groundkit.text.analysis import Analyzer

        analyzer = Analyzer()
        model = BM25Okapi([analyzer.analyze(t) for t in texts], k1=K1, b=B)
        return lambda q: model.get_top_n(analyzer.analyze(q), list(range(len(texts))), TOP_K)
    raise SystemExit(f"unknown engine {engine}")

