"""Where collections live: the home directory and one folder per collection.

The home is the ``home`` argument, else ``$GROUNDKIT_HOME``, else
``$XDG_DATA_HOME/groundkit``, else ``~/.local/share/groundkit``; collection
``NAME`` is the folder ``<home>/collections/NAME/``. The home chooses *where*
collections are, never how they are searched (SPEC §5).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .. import store
from ..errors import CollectionNotFoundError, UsageError
from ..model import COLLECTION_NAME

Home = str | os.PathLike[str] | None


def resolve_home(home: Home = None) -> Path:
    """The directory holding all collections (see the module docstring)."""
    if home is not None:
        return Path(home).expanduser()
    if env := os.environ.get("GROUNDKIT_HOME"):
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(Path.home(), ".local", "share")
    return Path(data) / "groundkit"


def check_name(name: str) -> str:
    if not COLLECTION_NAME.fullmatch(name):
        raise UsageError(
            f"invalid collection name {name!r}: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


def collection_dir(name: str, home: Home = None) -> Path:
    return resolve_home(home) / "collections" / check_name(name)


def list_collections(home: Home = None) -> list[str]:
    """The names of the collections in ``home`` that have a store, sorted."""
    base = resolve_home(home) / "collections"
    if not base.is_dir():
        return []
    return sorted(
        p.name for p in base.iterdir()
        if COLLECTION_NAME.fullmatch(p.name) and (p / store.STORE_FILE).is_file()
    )


def drop_collection(name: str, home: Home = None) -> Path:
    """Delete collection ``name``: its store, every generation and its settings.

    Refused (:class:`~groundkit.errors.CollectionBusyError`) while an indexer holds the
    collection's lock; readers that have it open keep reading what they opened. Returns the
    folder removed. The documents indexed are never touched.
    """
    from .indexer import exclusive  # here: the query path importing this module never needs it

    directory = collection_dir(name, home)
    if not (directory / store.STORE_FILE).is_file():
        raise CollectionNotFoundError(f"no collection named {name!r} in {resolve_home(home)}")
    with exclusive(directory):
        shutil.rmtree(directory)
    return directory
