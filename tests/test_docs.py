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


HARNESS = (Path(__file__).resolve().parent.parent / "docs" / "eval-harness.md").read_text()


def _harness_subparsers() -> dict[str, argparse.ArgumentParser]:
    from evals.__main__ import build_parser as harness_parser

    action = next(a for a in harness_parser()._actions
                  if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("name", sorted(_harness_subparsers()))
def test_every_harness_command_has_a_section(name: str) -> None:
    assert f"### `python -m evals {name}" in HARNESS


@pytest.mark.parametrize(
    ("name", "option"),
    [(name, opt) for name, sub in sorted(_harness_subparsers().items()) for action in sub._actions
     for opt in action.option_strings if opt not in {"--help", "-h"}],
)
def test_every_harness_option_is_documented(name: str, option: str) -> None:
    section = HARNESS.split(f"### `python -m evals {name}")[1].split("\n### ")[0]
    assert f"`{option}" in section


def test_the_python_api_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "python-api.md").read_text()
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    notes = tmp_path / "notes"
    (notes / "ops").mkdir(parents=True)
    (notes / "ops" / "logging.md").write_text("Deployment logs are kept for 30 days.\n")
    monkeypatch.setenv("GROUNDKIT_HOME", str(tmp_path / "home"))
    exec(compile(code.replace("/home/me/notes", str(notes)), "python-api.md", "exec"), {})
    out = capsys.readouterr().out
    assert "ops/logging.md" in out and "verified" in out


def test_every_exception_is_listed_with_its_exit_code_in_the_errors_module() -> None:
    from groundkit import errors

    doc = errors.__doc__ or ""
    for cls in vars(errors).values():
        if isinstance(cls, type) and issubclass(cls, errors.GroundkitError):
            line = next((ln for ln in doc.splitlines() if ln.split()[:1] == [cls.__name__]), "")
            assert line.split()[1:2] == [str(cls.exit_code)], cls.__name__


def test_the_readme_layout_names_every_top_level_folder_and_only_those() -> None:
    root = Path(__file__).resolve().parent.parent
    readme = (root / "README.md").read_text()
    block = readme.split("## Layout", 1)[1].split("```", 2)[1]
    named = {word.rstrip("/") for line in block.splitlines() for word in line.split()[:2]
             if word.endswith("/") and not line.startswith(" ")}
    folders = {p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
               and p.name not in {"__pycache__", "build", "dist"} and not p.name.endswith(
                   ".egg-info")}
    assert named == folders
