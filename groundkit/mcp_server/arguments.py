"""Tool-argument validation failures as one clear line.

Pydantic's own message spans several lines, names the argument model and links
to its documentation; :func:`argument_error` says instead which argument is
wrong, what it must be, and (briefly, escaped) what came::

    invalid argument top_k: must be an integer from 1 to 50, got 1000
    unknown argument 'bogus'; valid arguments: query, collections, top_k, mode, verify, abstain,
    rerank

Caller-supplied text is shown through :func:`ascii` (control characters,
confusables and bidirectional overrides appear as escapes, never raw) and
cut short, so a message is one line of at most :data:`MAX_MESSAGE_CHARS`.
Pydantic only: the SDK is imported by :mod:`.server` alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from ..retrieval.modes import MODES
from ..text.analysis import MAX_QUERY_CHARS
from .schema import MAX_SEARCH_COLLECTIONS, MAX_TOP_K

MAX_MESSAGE_CHARS = 260
_SHOWN_CHARS = 40
_NAME_RULE = ("a collection name: 1 to 64 ASCII letters, digits, '.', '_' or '-', starting "
              "with a letter or digit")
_BOOLEAN = "must be true or false"
REQUIREMENTS: dict[str, str] = {
    "query": f"must be a string of 1 to {MAX_QUERY_CHARS} characters",
    "collections": f"must be a list of 1 to {MAX_SEARCH_COLLECTIONS} collection names, or "
                   "omitted for every served collection",
    "collections[]": f"must be {_NAME_RULE}",
    "collection": f"must be {_NAME_RULE}",
    "top_k": f"must be an integer from 1 to {MAX_TOP_K}",
    "mode": "must be one of " + ", ".join(MODES),
    "verify": _BOOLEAN,
    "abstain": _BOOLEAN,
    "check_changes": _BOOLEAN,
    "rerank": "must be the name of a reranker registered for the collection (1 to 64 ASCII "
              "letters, digits, '.', '_' or '-'), or omitted",
    "chunk_id": "must be a chunk id as returned by search: COLLECTION:<20 lowercase hex "
                "digits>",
}


_DECIMAL = re.compile(r"-?[0-9]{1,9}")


def unstringify(arguments: Mapping[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """``arguments`` with ``"5"`` for an integer and ``"true"``/``"false"`` for a boolean
    taken as such: some clients send every value as a string. Nothing else is coerced
    (the argument models are strict), so ``true`` is no ``top_k`` and ``1`` no ``verify``."""
    out = dict(arguments)
    for key, value in arguments.items():
        field = model.model_fields.get(key)
        if field is None or not isinstance(value, str):
            continue
        if field.annotation is int and _DECIMAL.fullmatch(value):
            out[key] = int(value)
        elif field.annotation is bool and value in ("true", "false"):
            out[key] = value == "true"
    return out


def argument_error(exc: ValidationError, arguments: Sequence[str]) -> str:
    """One line for the first problem in ``exc``; ``arguments`` are the tool's valid ones."""
    problems = exc.errors(include_url=False, include_context=False)
    if not problems:
        return _clip("invalid arguments; valid arguments: " + _listed(arguments))
    first = problems[0]
    loc = tuple(first.get("loc", ()))
    name = str(loc[0]) if loc else ""
    if first["type"] == "extra_forbidden":
        message = f"unknown argument {shown(name)}; valid arguments: {_listed(arguments)}"
    elif first["type"] == "missing" and len(loc) == 1:
        message = f"missing argument {name} (required); valid arguments: {_listed(arguments)}"
    else:
        where = name + "".join(f"[{part}]" if isinstance(part, int) else "" for part in loc[1:])
        rule = REQUIREMENTS.get(f"{name}[]" if len(loc) > 1 else name) or "is not valid"
        message = f"invalid argument {where}: {rule}, got {_got(first.get('input'))}"
    if len(problems) > 1:
        message += f" (and {len(problems) - 1} more)"
    return _clip(message)


def _listed(arguments: Sequence[str]) -> str:
    return ", ".join(arguments) or "none (this tool takes no arguments)"


def shown(text: str) -> str:
    """``text`` as an escaped, quoted literal, cut to a few dozen characters."""
    if len(text) > _SHOWN_CHARS:
        return ascii(text[:_SHOWN_CHARS])[:-1] + "...'"
    return ascii(text)


def _got(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        bits = value.bit_length()
        digits = bits * 30103 // 100000 + 1
        return str(value) if bits <= 64 else f"an integer of about {digits} digits"
    if isinstance(value, float):
        return repr(value)[:_SHOWN_CHARS]
    if isinstance(value, str):
        # Long strings, and anything path-like however short, are described, not echoed:
        # an error never repeats a file path (the client's own included).
        if len(value) > _SHOWN_CHARS or "/" in value or "\\" in value:
            return f"a string of {len(value)} characters"
        return shown(value)
    if isinstance(value, list | tuple):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    return f"a value of type {type(value).__name__}"


def _clip(message: str) -> str:
    line = " ".join(message.split())
    return line if len(line) <= MAX_MESSAGE_CHARS else line[:MAX_MESSAGE_CHARS - 3] + "..."
