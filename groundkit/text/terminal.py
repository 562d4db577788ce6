"""Untrusted text made safe to show on a terminal: control characters as escapes.

File names and document text come from the files being indexed. Written to a terminal
raw, an ESC starts a control sequence (clear the screen, set the window title with an
OSC, hide what follows), a carriage return overwrites the line, and a newline in a file
name splits a one-line list, so a name could forge a ``skipped …`` line of its own.
Every human face of the CLI shows such text through these functions:

* :func:`line` for a value that must stay on one line (a path, a reason, a heading):
  every C0 control (tab and newline included), DEL, every C1 control, the Unicode line
  and paragraph separators and the bidirectional controls (which reorder what a
  reader sees) become ``\\xNN`` / ``\\uNNNN`` escapes;
* :func:`block` for text shown over several lines (a passage): the same, but newline
  and tab are kept;
* :func:`message` for an error message: :func:`line`, cut to :data:`MESSAGE_CHARS` (a
  malformed 120 KB chunk id is named by its start and length, not echoed whole).

Machine-readable output (``--json``) is left alone: JSON escapes control characters
itself, and a script needs the exact value.
"""

from __future__ import annotations

import re

MESSAGE_CHARS = 1000
"""The longest error message the CLI writes, in characters (escapes included): room for
any message groundkit composes (paths and advice), none for a 120 KB value echoed."""

_BIDI_AND_SEPARATORS = "\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")
_UNSAFE_BLOCK = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_SEPARATORS}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def line(text: str) -> str:
    """``text`` on one line, with no character a terminal would act on."""
    return _UNSAFE_LINE.sub(_escape, text)


def block(text: str) -> str:
    """``text`` with no character a terminal would act on, its newlines and tabs kept."""
    return _UNSAFE_BLOCK.sub(_escape, text)


def message(text: str, limit: int = MESSAGE_CHARS) -> str:
    """An error message as :func:`line` shows it, cut to ``limit`` characters."""
    shown = line(text)
    if len(shown) <= limit:
        return shown
    note = f"… ({len(text)} characters)"
    return shown[: limit - len(note)] + note
