"""The report on disk: canonical JSON, the schema, files, and provenance helpers (I/O)."""

from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson

from .model import ReportError

SCHEMA_VERSION = 2
DECIMALS = 6
SCHEMA_PATH = Path(__file__).with_name("schema") / "report.schema.json"
LIBRARIES = ("groundkit", "numpy", "scipy", "ir-measures", "pytrec-eval-terrier",
             "jsonschema-rs")


def canonical(value: Any) -> Any:
    """``value`` with floats rounded to :data:`DECIMALS` and tuples as lists."""
    kind = type(value)  # exact types first: a report holds millions of values
    if kind is float:
        return _rounded(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        return {k if type(k) is str else str(k): canonical(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [canonical(v) for v in value]
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return _rounded(value)
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return canonical(value.item())
    raise ReportError(f"a report cannot hold a {type(value).__name__}: {value!r}")


def _rounded(value: float) -> float:
    if value != value or value in (_INF, -_INF):
        raise ReportError(f"a report cannot hold the non-finite number {value}")
    return float(round(value, DECIMALS)) + 0.0


_INF = float("inf")


def dumps(report: Mapping[str, Any]) -> str:
    """The canonical JSON text: sorted keys, rounded floats, two-space indent."""
    return _encode(canonical(report))


def _encode(value: Any) -> str:
    """Canonical values as JSON text with orjson (25x the standard library's indented
    encoder here); byte for byte the same as ``json.dumps(..., indent=2, sort_keys=True,
    ensure_ascii=False)`` except that numbers below 1e-4 are spelt like ``1e-6``."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n"


def schema() -> dict[str, Any]:
    """The report JSON Schema."""
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator() -> Any:
    return jsonschema_rs.validator_for(schema())


def validate(report: Mapping[str, Any]) -> None:
    """Raise :class:`ReportError` naming the first problems if ``report`` is invalid."""
    # jsonschema-rs (a compiled validator): golden v2's report takes 0.06 s, not 10 s.
    errors = sorted(_validator().iter_errors(report), key=lambda e: list(map(str, e.instance_path)))
    if errors:
        details = "; ".join(
            f"at /{'/'.join(map(str, e.instance_path))}: {e.message}" for e in errors[:5]
        )
        raise ReportError(f"report does not match schema v{SCHEMA_VERSION}: {details}")
    stage_names = {s["name"] for s in report["stages"]}
    if report["baseline"] not in stage_names:
        raise ReportError(f"baseline {report['baseline']!r} is not one of the stages")


def write_json(report: Mapping[str, Any], path: str | Path) -> Path:
    """Validate ``report`` and write its canonical JSON atomically; returns the path."""
    return write_canonical(canonical(report), path)


def write_canonical(value: Mapping[str, Any], path: str | Path) -> Path:
    """:func:`write_json` for a report that is canonical already (:func:`canonical` of it
    is equal to it, as :func:`evals.harness.evaluate` returns it): one walk over golden
    v2's 750,000 values fewer (0.5 s)."""
    validate(value)
    text = _encode(value)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def load_json(path: str | Path) -> dict[str, Any]:
    """Read and validate a saved report."""
    try:
        report: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ReportError(f"cannot read report {str(path)!r}: {exc}") from exc
    validate(report)
    return report


# --- provenance helpers (I/O; the builder itself stays pure) ----------------


def run_metadata() -> dict[str, Any]:
    """The ``run`` block: when and where this report was produced."""
    return {
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "platform": platform.platform(),
    }


def environment(libraries: Sequence[str] = LIBRARIES) -> tuple[str, dict[str, str]]:
    """The Python version and the installed versions of ``libraries``."""
    versions = {}
    for name in libraries:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return platform.python_version(), versions


def git_commit(repo: str | Path = ".") -> str | None:
    """``HEAD``'s commit of ``repo`` (suffixed ``-dirty`` with local changes), or None."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=repo,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{head}-dirty" if dirty else head
