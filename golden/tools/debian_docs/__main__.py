"""Command line: python golden/tools/debian_docs [--check | --list | --out DIR]."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

# `python golden/tools/debian_docs` puts this folder first on sys.path: import the
# package from its parent folder instead, so that its modules are never top-level names,
# and groundkit (whose HTML parser and decoder the converter uses) from this checkout
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path[:0] = [str(_HERE.parent), str(_HERE.parents[2])]

from debian_docs.build import V2, build, compare, print_summary  # noqa: E402
from debian_docs.selection import entries  # noqa: E402


def _parser():
    ap = argparse.ArgumentParser(
        prog="python golden/tools/debian_docs",
        description="Convert the selected Debian documentation pages into golden/v2/docs "
                    "and write golden/v2/PROVENANCE.json (deterministic).")
    ap.add_argument("--check", action="store_true",
                    help="convert into a temporary folder and compare with the committed "
                         "files; exit 1 on any difference")
    ap.add_argument("--out", type=Path, default=V2,
                    help="folder that receives docs/ and PROVENANCE.json (default: golden/v2)")
    ap.add_argument("--list", action="store_true", help="print the selection and exit")
    return ap


def print_selection():
    for e in entries():
        extra = f"  [{', '.join(e['select'])}]" if e.get("select") else ""
        print(f"{e['doc']:<52} {e['pkg']:<20} {e['src']}{extra}")


def check(out: Path):
    with tempfile.TemporaryDirectory() as tmp:
        rows = build(Path(tmp))
        diffs = compare(out, Path(tmp))
    print_summary(rows)
    if diffs:
        print(f"\n{len(diffs)} difference(s) with {out}:")
        for d in diffs:
            print("  " + d)
        return 1
    print(f"\nno difference with {out}")
    return 0


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.list:
        print_selection()
        return 0
    if args.check:
        return check(args.out)
    print_summary(build(args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
