"""The shared entry point of the harness's command-line modules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from groundkit.errors import GroundkitError


def dispatch(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv`` and run the chosen subcommand's ``handler``.

    A :class:`GroundkitError` becomes one line on stderr and its exit code,
    never a traceback.
    """
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args))
    except GroundkitError as exc:
        print(f"{parser.prog} {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
