"""Peers that run beside groundkit in the same measurement: Lucene (``lucene``) and qmd."""
