"""A small deterministic dataset with BEIR's shape, for tests and examples.

Documents are sentences drawn (seeded) from a fixed vocabulary, some with
titles, ids chosen to exercise file naming (plain, unsafe characters, case
clashes); each query is built from words of its relevant documents, so BM25
finds them and the metrics are neither 0 nor 1.
"""

from __future__ import annotations

import random

from .dataset import Dataset, Doc

WORDS = (
    "river", "stone", "bridge", "lantern", "harbour", "orchard", "copper", "glacier", "meadow",
    "thunder", "signal", "archive", "ledger", "compass", "window", "garden", "engine",
    "valley", "summit", "forest", "anchor", "beacon", "canyon", "delta", "ember", "falcon",
    "granite", "harvest", "island", "jasmine", "kettle", "lagoon", "marble", "nectar", "oasis",
    "pepper", "quartz", "raven", "saffron", "timber", "umber", "velvet", "willow", "yarrow",
    "zephyr",
)


def make_dataset(seed: int = 0, n_docs: int = 40, n_queries: int = 8,
                 name: str = "synthetic") -> Dataset:
    rng = random.Random(seed)
    docs = []
    for i in range(n_docs):
        doc_id = f"Doc/{i}" if i % 7 == 3 else f"d{i}é" if i % 13 == 6 else f"d{i}"
        doc_id = {10: "Case", 11: "case"}.get(i, doc_id)
        words = [rng.choice(WORDS) for _ in range(rng.randint(8, 60))]
        title = " ".join(rng.choice(WORDS) for _ in range(3)).title() if i % 3 else ""
        docs.append(Doc(doc_id=doc_id, title=title, text=" ".join(words) + "."))
    queries, qrels = {}, {}
    for q in range(n_queries):
        relevant = rng.sample(docs, 2)
        words = rng.sample(relevant[0].text.rstrip(".").split(), 2)
        words += rng.sample(relevant[1].text.rstrip(".").split(), 1)
        query_id = f"q{q}"
        queries[query_id] = " ".join(words)
        qrels[query_id] = {relevant[0].doc_id: 2, relevant[1].doc_id: 1}
    queries["q-unjudged"] = "lantern orchard"
    return Dataset(name=name, docs=tuple(docs), queries=queries, qrels=qrels,
                   source={"format": "synthetic", "seed": seed})
