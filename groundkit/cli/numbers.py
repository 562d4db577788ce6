"""Numbers taken on the command line: finite ones only.

``float("nan")`` and ``float("inf")`` parse, and then compare false (or true) with
everything: ``--score-threshold nan`` kept no hit and said nothing. Every real-valued
option is parsed by :func:`finite`, which refuses them with argparse's one-line usage
error (exit 2).
"""

from __future__ import annotations

import argparse
import math


def finite(text: str) -> float:
    """``text`` as a finite float, else :class:`argparse.ArgumentTypeError`."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text[:40]!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text[:40]!r}")
    return value
