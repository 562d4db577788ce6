"""Dense and hybrid search modes (registered into :data:`groundkit.search.MODES`)."""

from __future__ import annotations
