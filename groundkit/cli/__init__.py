"""``grk``: the command line.

Data goes to stdout (``--json`` for scripts), progress and errors to stderr.
A :class:`~groundkit.errors.GroundkitError` becomes one line on stderr and its
documented exit code (:data:`.registry.EXIT_CODES`, listed by ``grk --help``), never a
traceback. Commands live in
:mod:`.commands` and beside it, registered in :mod:`.registry`; ``grk COMMAND`` imports
only the module of that command (:data:`.registry.MODULES`), so ``grk search`` does not
pay for the MCP server, the answer builder or the viewer at start-up.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import textwrap
from collections.abc import Iterable, Sequence

from .. import __version__
from ..errors import GroundkitError
from ..text import terminal
from .registry import (
    COMMANDS,
    EXIT_CODES,
    EXIT_DRIFTED,
    EXIT_INTERRUPTED,
    EXIT_UNRESOLVABLE,
    MODULES,
    Handler,
)

ORDER = ("commands", "ask", "maintenance", "questions", "rerank", "serve", "watch", "open")
"""The order the command modules load in when all do (``grk --help`` lists them so)."""


def _load(modules: Iterable[str]) -> None:
    """Import the command modules named: importing one registers its commands."""
    for module in sorted(set(modules), key=ORDER.index):
        importlib.import_module(f"{__name__}.{module}")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``grk`` parser; each subcommand's parser carries its handler (``args.handler``).

    With ``only`` (a command's name) just that command's module is imported and parsed
    (start-up time); otherwise every command is."""
    chosen = only if only in MODULES else None
    _load([MODULES[chosen]] if chosen else MODULES.values())
    parser = argparse.ArgumentParser(
        prog="grk",
        description="Grounded, citation-verifiable retrieval over your own documents.\n\n"
        "  grk index ~/notes -c notes          index a folder (again: incremental, same "
        "settings)\n"
        "  grk search 'log retention' -c notes  search it; grk fetch ID re-checks a citation\n"
        "  grk COMMAND --help                   every command's options",
        epilog=textwrap.fill("Collections live in --home, else $GROUNDKIT_HOME, else "
                             "$XDG_DATA_HOME/groundkit, else ~/.local/share/groundkit. --home "
                             "and --json go before or after the command.", 79)
        + "\n\nexit codes:\n"
        + "\n".join(f"  {code:>3}  {meaning}" for code, meaning in EXIT_CODES.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="show the version and which BM25 kernel answers, then exit")
    _global_options(parser, None)
    common = argparse.ArgumentParser(add_help=False)
    _global_options(common, argparse.SUPPRESS)  # after the command too; never overrides
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, configure) in COMMANDS.items():
        if chosen is not None and name != chosen:
            continue
        sub_parser = sub.add_parser(name, help=help_text, description=help_text,
                                    parents=[common])
        sub_parser.set_defaults(handler=configure(sub_parser))
    return parser


def _global_options(parser: argparse.ArgumentParser, default: object) -> None:
    """``--home`` and ``--json``, accepted before the command and after it."""
    parser.add_argument("--home", metavar="DIR", default=default,
                        help="where collections live (overrides $GROUNDKIT_HOME)")
    parser.add_argument("--json", action="store_true",
                        default=False if default is None else default,
                        help="machine-readable JSON on stdout")


class _Version(argparse.Action):
    """``grk --version``: the version, and whether the compiled BM25 parts are built: the
    query kernel and the index build's chunk table (each gives the answers of its numpy or
    Python counterpart, faster; ADR-0003). Imported only when asked."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(version_line())
        parser.exit()


def version_line() -> str:
    """``grk X (BM25 kernel: …; index build: …)``: which compiled parts answer."""
    from ..retrieval.bm25_query import compiled_kernel
    from ..retrieval.bm25_tokens import compiled_table

    kernel = "numpy" if compiled_kernel() is None else "compiled (C)"
    build = "Python" if compiled_table() is None else "compiled (C)"
    return f"grk {__version__} (BM25 kernel: {kernel}; index build: {build})"


def main(argv: Sequence[str] | None = None) -> int:
    argv = _eval_first(list(sys.argv[1:] if argv is None else argv))
    if argv[:1] == ["eval"]:  # the harness's own parser takes every option (grk eval --help)
        from .commands import run_eval

        try:
            return run_eval(argv[1:])
        except GroundkitError as exc:
            print(f"grk eval: error: {exc}", file=sys.stderr)
            return exc.exit_code
    args = build_parser(only=_command(argv)).parse_args(argv)
    handler: Handler = args.handler
    try:
        return handler(args)
    except GroundkitError as exc:
        print(f"grk {args.command}: error: {terminal.message(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"grk {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


def _eval_first(argv: list[str]) -> list[str]:
    """``grk --home DIR eval …`` as ``grk eval --home DIR …`` (the harness parses eval)."""
    if argv[:1] == ["--home"] and len(argv) > 2 and argv[2] == "eval":
        return ["eval", *argv[:2], *argv[3:]]
    if argv[:1] and argv[0].startswith("--home=") and argv[1:2] == ["eval"]:
        return ["eval", argv[0], *argv[2:]]
    return argv


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (the first word that is not a global option), if any."""
    words = iter(argv)
    for word in words:
        if word == "--home":
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def run() -> None:
    sys.exit(main())


__all__ = ["EXIT_DRIFTED", "EXIT_INTERRUPTED", "EXIT_UNRESOLVABLE", "build_parser", "main", "run"]
