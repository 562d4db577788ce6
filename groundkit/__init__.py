"""groundkit: grounded, citation-verifiable retrieval over your own documents."""

from __future__ import annotations

__version__ = "0.1.0"
