from __future__ import annotations

import io

from groundkit.progress import ProgressBar, duration


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_off_a_terminal_a_quick_phase_says_only_how_much_it_will_do() -> None:
    stream = io.StringIO()
    with ProgressBar("indexing", stream) as bar:
        bar.update(0, 2, "a.md")
        bar.update(1, 2, "b.md")
        bar.update(2, 2, "")
    assert stream.getvalue() == "indexing 2 files\n"


def test_off_a_terminal_a_long_phase_logs_count_rate_and_time_left_then_its_end() -> None:
    stream, clock = io.StringIO(), Clock()
    with ProgressBar("indexing", stream, log_every=10, clock=clock) as bar:
        bar.update(0, 3, "a.md")
        for done in range(1, 3):
            clock.now = 5.0 * done
            bar.update(done, 3, "x.md")
        bar.update(0, 1200, "embedding")  # the next phase: its own clock
        clock.now = 12.0
        bar.update(50, 1200, "embedding")  # the first batch: the first estimate at once
        clock.now = 14.0
        bar.update(100, 1200, "embedding")  # then every log_every seconds
        clock.now = 40.0
        bar.update(300, 1200, "embedding")
        clock.now = 70.0
        bar.update(1200, 1200, "embedding")
        bar.update(0, 0, "")  # nothing to do: nothing said
    assert stream.getvalue().splitlines() == [
        "indexing 3 files",
        "indexing: 2/3 files (66%), 0.2/s, about 5 s left",
        "embedding 1,200 chunks",
        "embedding: 50/1,200 chunks (4%), 25.0/s, about 46 s left",
        "embedding: 300/1,200 chunks (25%), 10.0/s, about 2 min left",
        "embedding: 1,200/1,200 chunks (100%), 20.0/s, done in 60 s",
    ]


def test_the_progress_bar_draws_on_a_terminal_and_ends_with_a_newline() -> None:
    stream, clock = Terminal(), Clock()
    with ProgressBar("indexing", stream, interval=0, clock=clock) as bar:
        bar.update(0, 4, "docs/a.md")
        clock.now = 1.0
        bar.update(1, 4, "docs/a.md")
        bar.update(4, 4, "")
        bar.update(0, 8, "embedding")
        clock.now = 3.0
        bar.update(4, 8, "embedding")
    out = stream.getvalue()
    assert out.startswith("indexing 4 files\n")
    assert "indexing [#######" in out and "1/4 1.0/s, 3 s left docs/a.md" in out and "4/4" in out
    assert "\nembedding 8 chunks\n" in out and "embedding [###############" in out
    assert "embedding embedding" not in out and out.endswith("\n")


def test_durations_read_as_a_person_says_them() -> None:
    assert [duration(s) for s in (4.4, 89, 420, 7300)] == ["4 s", "89 s", "7 min", "2 h 02 min"]


def test_a_phase_counts_what_it_says_it_counts() -> None:
    stream, clock = io.StringIO(), Clock()
    with ProgressBar("answers (bm25)", stream, log_every=10, unit="questions",
                     clock=clock) as bar:
        bar.update(0, 1521)
        clock.now = 10.0
        bar.update(76, 1521)
        clock.now = 20.0
        bar.update(1521, 1521)
    assert stream.getvalue().splitlines() == [
        "answers (bm25) 1,521 questions",
        "answers (bm25): 76/1,521 questions (4%), 7.6/s, about 3 min left",
        "answers (bm25): 1,521/1,521 questions (100%), 76.0/s, done in 20 s",
    ]


def test_a_file_named_like_the_embedding_phase_is_a_file() -> None:
    stream = io.StringIO()
    with ProgressBar("indexing", stream) as bar:
        bar.update(0, 2, "embedding.md")
        bar.update(1, 2, "embedding, about.md")
        bar.update(2, 2, "")
    assert stream.getvalue() == "indexing 2 files\n"
