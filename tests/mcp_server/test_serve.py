"""``grk serve``: its options, their validation, the HTTP guard, and the lazy SDK import."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.cli import main
from groundkit.collection import IndexConfig, index
from groundkit.mcp_server.http import HttpGuard, HttpOptions, bind

REPO = Path(__file__).resolve().parents[2]
TOKEN = "a-token-of-enough-length"


def test_serve_help_explains_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for option, words in {
        "--transport": "stdio (default", "--host": "loopback address",
        "--port": "0 picks a free port", "--allow-origin": "Origin header is exactly",
        "--allow-host": "also accept this Host header", "--token-env": "environment variable",
        "--collection": "serve only this collection",
    }.items():
        assert option in text and words in text


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)


def test_grk_search_never_imports_the_mcp_sdk(make_tree: TreeMaker, home: Path) -> None:
    index("k", IndexConfig(roots=(str(make_tree({"a.md": "deployment logs"})),)), home=home)
    done = _python(
        "import sys; from groundkit.cli import main; code = main(sys.argv[1:]); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in "
        "('mcp', 'mcp_types', 'uvicorn', 'starlette')); print(code, loaded)",
        "search", "logs", "-c", "k", "--home", str(home), "--json")
    assert done.stdout.strip().splitlines()[-1] == "0 []", done.stderr


def test_a_missing_sdk_is_a_missing_dependency_error_naming_the_extra(home: Path) -> None:
    done = _python("import sys; sys.modules['mcp'] = None; from groundkit.cli import main; "
                   "sys.exit(main(['serve', '--home', sys.argv[1]]))", str(home))
    assert done.returncode == 5 and done.stdout == ""
    assert "grk serve needs the optional package 'mcp'" in done.stderr
    assert "pip install 'groundkit[mcp]'" in done.stderr and "Traceback" not in done.stderr


@pytest.mark.parametrize("option", [["--port", "9"], ["--host", "127.0.0.1"],
                                    ["--allow-origin", "http://localhost:1"],
                                    ["--allow-host", "example.test"], ["--token-env", "X"]])
def test_http_options_are_refused_with_stdio(option: list[str], home: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--home", str(home), *option]) == 2
    assert f"{option[0]} applies to --transport http only" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "message"), [
    (["--host", "0.0.0.0"], "loopback addresses only"),
    (["--host", "192.168.1.10"], "loopback addresses only"),
    (["--host", "example.com"], "loopback addresses only"),
    (["--allow-origin", "*"], "exact origin"),
    (["--allow-origin", "http://localhost:*"], "exact origin"),
    (["--allow-origin", "http://localhost:6274/app"], "exact origin"),
    (["--token-env", "GRK_UNSET_VARIABLE"], "unset or shorter than 16"),
    (["--token-env", "GRK_SHORT_TOKEN"], "unset or shorter than 16"),
    (["--port", "70000"], "0 to 65535"),
])
def test_unsafe_http_settings_are_refused_before_anything_listens(
        args: list[str], message: str, home: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRK_SHORT_TOKEN", "short")
    monkeypatch.delenv("GRK_UNSET_VARIABLE", raising=False)
    assert main(["serve", "--home", str(home), "--transport", "http", *args]) == 2
    assert message in capsys.readouterr().err


def test_serving_an_unknown_collection_fails_at_startup(
        home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--home", str(home), "--collection", "nope"]) == 3
    assert "no collection named 'nope'" in capsys.readouterr().err


def test_the_host_allow_list_is_this_port_only_plus_what_is_asked_for() -> None:
    options = HttpOptions(allow_hosts=("Example.test", "other.test:81"))
    assert options.allowed_hosts(8765) == ["127.0.0.1:8765", "localhost:8765",
                                           "example.test:8765", "other.test:81"]
    assert HttpOptions(host="::1").allowed_hosts(5) == ["[::1]:5", "localhost:5"]


def test_the_listening_socket_is_tcp_so_responses_are_not_delayed_by_nagle() -> None:
    with bind("127.0.0.1", 0) as sock:
        assert sock.proto == socket.IPPROTO_TCP and sock.getsockname()[1] > 0


async def _app(scope: object, receive: object, send: object) -> None:
    raise AssertionError("the guard let a request through")


def _check(guard: HttpGuard, **headers: str) -> int | None:
    refusal = guard.check([(k.replace("_", "-").encode(), v.encode())
                           for k, v in headers.items()])
    return None if refusal is None else refusal[0]


def test_the_guard_checks_origin_then_host_then_token() -> None:
    guard = HttpGuard(_app, hosts=["127.0.0.1:8765"], origins=["http://localhost:6274"],
                      token=TOKEN)
    good = {"host": "127.0.0.1:8765", "authorization": f"Bearer {TOKEN}"}
    assert _check(guard, **good) is None
    assert _check(guard, **{**good, "origin": "http://LOCALHOST:6274"}) is None
    assert _check(guard, **{**good, "host": "127.0.0.1:8766"}) == 421
    assert _check(guard, **{**good, "host": "127.0.0.1"}) == 421
    assert _check(guard, authorization=f"Bearer {TOKEN}") == 421
    assert _check(guard, **{**good, "origin": "http://localhost:6274.evil.test"}) == 403
    # a present, invalid Origin is 403 whatever the Host; a good Origin with a bad Host: 421
    assert _check(guard, **{**good, "host": "evil.test", "origin": "http://evil.test"}) == 403
    assert _check(guard, host="evil.test", origin="http://evil.test") == 403
    assert _check(guard, **{**good, "host": "evil.test", "origin": "http://localhost:6274"}) == 421
    assert _check(guard, **{**good, "authorization": f"Bearer {TOKEN}x"}) == 401
    assert _check(guard, **{**good, "authorization": TOKEN}) == 401
    assert _check(guard, host="127.0.0.1:8765") == 401
    assert guard.check([(b"host", b"127.0.0.1:8765"), (b"host", b"evil.test")])[0] == 400  # type: ignore[index]


def test_without_a_token_the_guard_still_checks_host_and_origin() -> None:
    guard = HttpGuard(_app, hosts=["localhost:1"], origins=[], token=None)
    assert _check(guard, host="localhost:1") is None
    assert _check(guard, host="localhost:1", origin="http://localhost:1") == 403
