"""Scoring: metrics (:mod:`.metrics`), paired statistics (:mod:`.stats`) and expected-value
gates (:mod:`.gates`)."""
