"""Options several commands share (``search``, ``ask``), generated from the registries."""

from __future__ import annotations

import argparse
from typing import Any

from ..retrieval.fusion import FUSIONS
from ..retrieval.gate import ALPHA
from ..retrieval.modes import DEFAULT_MODE, MODES
from .numbers import finite


def mode_arguments(p: argparse.ArgumentParser) -> None:
    """``--mode`` and the options of the modes that take any."""
    hybrid = MODES["hybrid"].defaults()
    p.add_argument("--mode", default=DEFAULT_MODE, choices=tuple(MODES),
                   help="; ".join(f"{m.name}: {m.description}" for m in MODES.values()))
    p.add_argument("--embed-model", metavar="PROVIDER:MODEL",
                   help="embedding model for modes that need one (must match the index)")
    p.add_argument("--fusion", choices=tuple(FUSIONS), default=hybrid["fusion"],
                   help="hybrid: " + "; ".join(f"{f.name}: {f.description}"
                                               for f in FUSIONS.values()))
    p.add_argument("--rrf-k", type=int, default=hybrid["rrf_k"], metavar="K",
                   help=f"hybrid: Reciprocal Rank Fusion constant (default {hybrid['rrf_k']})")
    p.add_argument("--exact", action="store_true",
                   help="dense, hybrid: exact cosine over every vector even where the "
                   "generation has an approximate index (built above a size: grk index --ann)")


def abstain_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--abstain", action="store_true", help="say 'nothing in this collection "
                   "answers that' instead of hits when the calibrated gate abstains (needs "
                   "grk calibrate first)")
    p.add_argument("--alpha", type=finite, metavar="A", help="with --abstain: the highest "
                   "acceptable rate of answering an unanswerable question (default: the "
                   f"calibration's, {ALPHA})")


def mode_options(args: argparse.Namespace) -> dict[str, Any]:
    """The chosen mode's options, from the flags that carry them."""
    flags = {"embed_model": args.embed_model, "fusion": args.fusion, "rrf_k": args.rrf_k,
             "exact": args.exact}
    return {o.name: flags[o.name] for o in MODES[args.mode].options if o.name in flags}
