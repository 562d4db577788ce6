"""The house rules: layers that import only downwards, no import circles, modules of one concept.

Imports are read from the source (module level and inside functions, ``TYPE_CHECKING``
blocks and ``importlib.import_module("...")`` calls included), as
``../shared/tools/import_cycles.py`` reads them. A module importing its own
package's face (``from .. import __version__``) is not an edge.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 700
"""A loose guard against a module that holds several concepts; split by concept, never
trim to meet it (a tight cap made files end at 399-400 lines by squeezing)."""
MAX_FUNCTION_LINES = 50
LONG_MARK = "# long:"
"""A function over the limit needs this one-line comment right above it saying why."""

LAYERS: dict[str, int] = {
    "groundkit.errors": 0, "groundkit.model": 0, "groundkit.progress": 0, "groundkit.faults": 0,
    "groundkit.text": 1, "groundkit.sources": 1, "groundkit.extract": 1,
    "groundkit.store": 2,
    "groundkit.embeddings": 3,
    "groundkit.retrieval": 4, "groundkit.verify": 4,
    "groundkit.collection": 5,
    "groundkit.answer": 6, "groundkit.questions": 6,
    "groundkit.cli": 7, "groundkit.mcp_server": 7, "groundkit.testing": 7,
    "groundkit.viewer": 7,
    "groundkit.__main__": 8, "groundkit": 8,
}
"""kernel -> text, sources -> store -> embeddings -> retrieval, verify -> collection -> answer
-> faces."""


def modules(package: str) -> dict[str, Path]:
    found = {}
    for path in sorted((REPO / package).rglob("*.py")):
        parts = path.relative_to(REPO).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules ``name`` imports (package faces of its own ancestors excluded)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    raw: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            raw.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            stem = base[: len(base) - node.level + 1] if node.level else []
            module = ".".join([*stem, *([node.module] if node.module else [])])
            raw.add(module)
            raw.update(f"{module}.{a.name}" for a in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            raw.add(str(node.args[0].value))
    out = set()
    for target in raw:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != name and not name.startswith(target + "."):
            out.add(target)
    return out


def cycles(package: str) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    known = modules(package)
    graph = {n: imported(n, p, known) for n, p in known.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while (w := stack.pop()) != v:
                component.append(w)
            if component:
                found.append(sorted([v, *component]))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int:
    while name not in LAYERS:
        name = name.rpartition(".")[0]
    return LAYERS[name]


@pytest.mark.parametrize("package", ["groundkit", "evals"])
def test_there_are_no_import_circles(package: str) -> None:
    assert cycles(package) == []


def test_groundkit_layers_import_only_downwards() -> None:
    known = modules("groundkit")
    upward = [f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})"
              for name, path in known.items() for target in sorted(imported(name, path, known))
              if layer(target) > layer(name)]
    assert upward == []


def test_groundkit_never_imports_the_harness_but_for_grk_eval() -> None:
    for name, path in modules("groundkit").items():
        text = path.read_text(encoding="utf-8")
        if "evals" in text and name != "groundkit.cli.commands":
            assert not any(isinstance(n, ast.ImportFrom | ast.Import) and "evals" in ast.dump(n)
                           for n in ast.walk(ast.parse(text))), name


def test_a_cycle_is_found_when_two_modules_import_each_other(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from . import b\n")
    (pkg / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from .a import f\n")
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    assert cycles("pkg") == [["pkg.a", "pkg.b"]]


def python_files() -> Iterator[Path]:
    for folder in ("groundkit", "evals", "bench", "tests", "golden/tools"):
        yield from sorted((REPO / folder).rglob("*.py"))


@pytest.mark.parametrize("path", list(python_files()), ids=lambda p: str(p.relative_to(REPO)))
def test_modules_are_small_and_long_functions_say_why(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_MODULE_LINES, f"{len(lines)} lines"
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first >= 2 else ""
            assert length <= MAX_FUNCTION_LINES or above.startswith(LONG_MARK), (
                f"{node.name} at line {node.lineno} has {length} lines and no '{LONG_MARK}' "
                "comment above it")
