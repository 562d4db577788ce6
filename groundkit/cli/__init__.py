"""``grk``: the command line.

Data goes to stdout (``--json`` for scripts), progress and errors to stderr.
A :class:`~groundkit.errors.GroundkitError` becomes one line on stderr and its
documented exit code (``docs/cli.md``), never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from . import __version__
from .errors import GroundkitError

EXIT_DRIFTED = 10
EXIT_UNRESOLVABLE = 11
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(name: str, help: str) -> Callable[[Any], Any]:
    """Register a subcommand: ``configure(parser)`` adds options; the handler runs it."""

    def wrap(configure: Callable[[argparse.ArgumentParser], Handler]) -> Any:
        handler: list[Handler] = []

        def setup(parser: argparse.ArgumentParser) -> None:
            handler.append(configure(parser))

        COMMANDS[name] = (help, setup, lambda args: handler[0](args))
        return configure

    return wrap


def emit(args: argparse.Namespace, data: Any, human: Callable[[], None]) -> None:
    """Print ``data`` as JSON with ``--json``, else run the human renderer."""
    if args.json:
        json.dump(data, sys.stdout, ensure_ascii=False, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        human()


def build_parser() -> argparse.ArgumentParser:
    from . import cli_serve, commands  # noqa: F401 - register the subcommands

    parser = argparse.ArgumentParser(
        prog="grk",
        description="Grounded, citation-verifiable retrieval over your own documents.",
        epilog="Collections live in --home, else $GROUNDKIT_HOME, else "
        "$XDG_DATA_HOME/groundkit, else ~/.local/share/groundkit. "
        "Exit codes: see docs/cli.md.",
    )
    parser.add_argument("--version", action="version", version=f"grk {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", metavar="DIR", help="where collections live (overrides "
                        "$GROUNDKIT_HOME)")
    common.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, setup, _) in COMMANDS.items():
        sub_parser = sub.add_parser(name, help=help_text, description=help_text,
                                    parents=[common])
        setup(sub_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return COMMANDS[args.command][2](args)
    except GroundkitError as exc:
        print(f"grk {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"grk {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


def run() -> None:
    sys.exit(main())
