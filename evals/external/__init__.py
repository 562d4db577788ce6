"""External benchmark checks: BEIR format, ir_datasets, classic collections, TREC runs.

Formats (:mod:`.beir`, :mod:`.classic`, :mod:`.irds`) read and write test
collections as :class:`~.dataset.Dataset`; :mod:`.registry` names the datasets
groundkit checks itself against and the numbers published for them;
:mod:`.materialise` imports a dataset as a real groundkit collection (one file
per document); :mod:`.runner` ranks every stage of :mod:`.stages` and scores
them in one harness report; ``python -m evals.external`` drives it all. See
``docs/external-benchmarks.md``.
"""

from .dataset import Dataset, Doc

__all__ = ["Dataset", "Doc"]
