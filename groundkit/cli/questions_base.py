"""What every ``grk questions`` action shares: the action registry and common options."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

EXIT_LINT_ERRORS = 4
"""``grk questions lint`` found errors (the file fails its check, as ``grk check`` does)."""
Action = Callable[[argparse.Namespace], int]
ACTIONS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], Action]]] = {}


def action(name: str, help: str) -> Callable[[Callable[[argparse.ArgumentParser], Action]],
                                             Callable[[argparse.ArgumentParser], Action]]:
    def wrap(configure: Callable[[argparse.ArgumentParser], Action]
             ) -> Callable[[argparse.ArgumentParser], Action]:
        ACTIONS[name] = (help, configure)
        return configure

    return wrap


def collection_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collection", "-c", required=True, metavar="NAME",
                   help="the collection the quotes are spans of (as indexed now)")


def write_rows(path: str, rows: list[dict[str, Any]], *, force: bool = False) -> None:
    """Question lines to ``path``, refusing to replace a file unless ``force``."""
    from ..questions.files import write_rows as write

    write(path, rows, replace=force)
