"""``python -m evals.golden {lint,manifest} PATH``: lint a golden version or write its manifest."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from groundkit.errors import IntegrityError

from .corpus import MANIFEST_FILE, lint_golden, write_manifest


def main(argv: Sequence[str] | None = None) -> int:
    """Returns the exit status: 0 clean, 1 problems, 4 unreadable."""
    parser = argparse.ArgumentParser(prog="python -m evals.golden", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    lint = sub.add_parser("lint", help="check a golden version; one line per problem")
    lint.add_argument("path", type=Path)
    lint.add_argument("--no-coverage", action="store_true", help="skip corpus-level minimums")
    manifest = sub.add_parser("manifest", help="write MANIFEST.json for a golden version")
    manifest.add_argument("path", type=Path)
    manifest.add_argument("--force", action="store_true", help="rewrite a draft's checksums")
    args = parser.parse_args(argv)
    try:
        if args.command == "manifest":
            counts = write_manifest(args.path, force=args.force)["counts"]
            print(f"wrote {args.path / MANIFEST_FILE}: {json.dumps(counts)}")
            return 0
        problems = lint_golden(args.path, coverage=not args.no_coverage)
    except IntegrityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s) in {args.path}" if problems else f"ok: {args.path} is clean",
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
