"""Derived indexes built for each generation, and their consistency checks.

Derived indexes live under ``gen-<N>/`` and are stamped with the collection
and generation they were built from; opening one with another stamp fails
closed (:class:`~groundkit.errors.IndexMismatchError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .indexer import DerivedBuilder

if TYPE_CHECKING:
    from .collection import Collection


def default_builders() -> list[DerivedBuilder]:
    """The derived indexes every generation gets."""
    return []


def check_derived(coll: Collection) -> list[str]:
    """Problems with the current generation's derived indexes."""
    if not coll.generation_dir.is_dir():
        return [f"derived index folder {coll.generation_dir} is missing"]
    return []
