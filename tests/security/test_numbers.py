"""NaN and infinite numbers are refused wherever a number is taken (issue 45): every
real-valued CLI option, and the MCP tools' numeric arguments, as a one-line error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from groundkit.cli import main
from groundkit.cli.numbers import finite
from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.server import build_server

sys.path.insert(0, str(Path(__file__).parents[1] / "mcp_server"))
from mcp_helpers import DOCS, call, write_tree


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"])
def test_finite_refuses_what_is_not_a_finite_number(text: str) -> None:
    with pytest.raises(Exception, match="must be a finite number"):
        finite(text)
    assert finite("0.25") == 0.25


@pytest.mark.parametrize("argv", [
    ["search", "wombat", "--collection", "c", "--score-threshold", "nan"],
    ["search", "wombat", "--collection", "c", "--abstain", "--alpha", "inf"],
    ["index", ".", "--collection", "c", "--k1", "nan"],
    ["ask", "wombat", "--collection", "c", "--llm-timeout=-inf"],
    ["watch", ".", "--collection", "c", "--debounce", "nan"],
])
def test_a_cli_option_given_nan_or_inf_is_a_usage_error(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "must be a finite number" in err
    assert err.strip().splitlines()[-1].startswith("grk ")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "NaN", "Infinity"])
def test_an_mcp_number_given_nan_or_inf_is_a_one_line_tool_error(
        tmp_path: Path, value: float | str) -> None:
    root = write_tree(tmp_path / "docs", {"logs.md": DOCS["logs.md"]})
    index("c", IndexConfig(roots=(str(root),)), home=tmp_path / "home")
    result = call(build_server(tmp_path / "home"), "search",
                  {"query": "logs", "collections": ["c"], "top_k": value})
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "invalid argument top_k: must be an integer from 1 to 50" in text
    assert "\n" not in text
