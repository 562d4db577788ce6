"""Evidence across collections: ``python -m evals meta REPORT...``.

A stage's difference from the baseline on one question set says little about the next
collection when collections disagree (Soboroff, "Meta-Analysis for Retrieval Experiments
Involving Multiple Test Collections", CIKM 2018). This package reads saved reports as
suites (:mod:`.suites`: a golden report by domain, an external dataset, a person's own
collection; overlapping suites left out), takes each suite's mean paired difference and its
variance, pools them with a random-effects model and gives the prediction interval for a
new collection and a verdict word (:mod:`.pooling`), per stage (:mod:`.analysis`), as text
(:mod:`.text`), HTML with a forest plot per comparison (:mod:`.html`) and gates
(:mod:`.gates`).
"""

from .analysis import DEFAULT_MEASURE, meta_analysis
from .pooling import METHODS, VERDICTS, pool, suite_effect, verdict

__all__ = ["DEFAULT_MEASURE", "METHODS", "VERDICTS", "meta_analysis", "pool", "suite_effect",
           "verdict"]
