"""Reading and writing question files: UTF-8 JSON lines, replaced atomically."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..errors import UsageError


def read_text(path: str | Path) -> str:
    """The file's text, exactly (no newline translation); ``UsageError`` if unreadable."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the questions file {path}: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 (byte {exc.start})") from None


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a question file, one a line (blank lines skipped)."""
    rows = []
    for number, line in enumerate(read_text(path).split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UsageError(f"{path}:{number}: invalid JSON: {exc.msg}") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("id"), str):
            raise UsageError(f"{path}:{number}: a question must be a JSON object with an id")
        rows.append(obj)
    return rows


def write_rows(path: str | Path, rows: Iterable[Mapping[str, Any]], *,
               replace: bool = True) -> None:
    """Write ``rows`` to ``path``, one JSON object a line, atomically; an existing file is
    replaced only with ``replace``."""
    target = Path(path)
    if target.exists() and not replace:
        raise UsageError(f"{path} exists; choose another --out or pass --force to replace it")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as out:
            out.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
