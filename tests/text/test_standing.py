"""Which documents say they are superseded, and with what evidence."""

from __future__ import annotations

import pytest

from groundkit.text.standing import superseded


@pytest.mark.parametrize(("path", "head", "evidence"), [
    ("policies/archive/retention.md", "# Retention\n", "in a folder named archive/"),
    ("Old/notes.txt", "anything", "in a folder named Old/"),
    ("a.md", "---\ntitle: x\nstatus: Deprecated\n---\n# T\n", "front matter: status deprecated"),
    ("a.md", "# T\n\n> **SUPERSEDED.** This is version 2.1.\n",
     "notice: **SUPERSEDED.** This is version 2.1."),
    ("a.md", "# T\n\n> **Note:** This page has been superseded by b.md\n",
     "notice: **Note:** This page has been superseded by b.md"),
    ("a.md", "# T\n\nARCHIVED: see new.md\n", "notice: ARCHIVED: see new.md"),
])
def test_a_document_that_says_it_is_superseded_is_marked_with_the_evidence(
        path: str, head: str, evidence: str) -> None:
    assert superseded(path, head) == evidence


@pytest.mark.parametrize("head", [
    "# API\n\nVersion 1 of the API is deprecated.\n",       # a word in passing
    "# Retention\n\nThe archived 2022 version is in archive/.\n",
    "Deprecated options are listed below.\n",              # a heading-like line, no notice
    "",
])
def test_a_word_in_passing_is_not_a_notice(head: str) -> None:
    assert superseded("docs/a.md", head) is None



def test_the_file_metadata_counts_after_the_path_and_before_the_text() -> None:
    declared = 'HTML <meta name="status">: archived'
    assert superseded("docs/a.html", "# T\n", declared) == declared
    assert superseded("archive/a.html", "# T\n", declared) == "in a folder named archive/"
    assert superseded("a.md", "---\nstatus: obsolete\n---\n", "PDF Keywords: archived") == (
        "PDF Keywords: archived")
