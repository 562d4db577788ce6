"""Every CLI command and option is documented (like sqlite-utils' tests/test_docs.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from groundkit.cli import build_parser

DOC = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
COMMON = {"--help", "-h", "--json", "--home"}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(_subparsers()))
def test_every_command_has_a_section_in_the_cli_docs(name: str) -> None:
    assert f"### `grk {name}" in DOC


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, opt) for name, sub in sorted(_subparsers().items()) for action in sub._actions
     for opt in action.option_strings if opt not in COMMON],
)
def test_every_option_is_documented(name: str, option: str) -> None:
    section = DOC.split(f"### `grk {name}")[1].split("\n### ")[0]
    assert f"`{option}" in section or f"{option}`" in section or f", `{option}" in section


def test_every_exit_code_the_code_uses_is_documented() -> None:
    from groundkit import cli, errors

    codes = {cls.exit_code for cls in vars(errors).values()
             if isinstance(cls, type) and issubclass(cls, errors.GroundkitError)}
    codes |= {cli.EXIT_DRIFTED, cli.EXIT_UNRESOLVABLE, cli.EXIT_INTERRUPTED, 7}
    for code in codes:
        assert f"\n| {code} |" in DOC
