from __future__ import annotations

import io

from groundkit.progress import ProgressBar


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_draws_nothing_when_stderr_is_not_a_terminal() -> None:
    stream = io.StringIO()
    with ProgressBar("indexing", stream) as bar:
        bar.update(1, 2, "a.md")
        bar.update(2, 2, "")
    assert stream.getvalue() == ""


def test_the_progress_bar_draws_on_a_terminal_and_ends_with_a_newline() -> None:
    stream = Terminal()
    with ProgressBar("indexing", stream, interval=0) as bar:
        bar.update(1, 4, "docs/a.md")
        bar.update(4, 4, "")
    out = stream.getvalue()
    assert "indexing [#######" in out and "1/4 docs/a.md" in out and "4/4" in out
    assert out.endswith("\n")
