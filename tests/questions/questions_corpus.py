"""A small collection for the grk questions tests: prose, a table, boilerplate, a copy."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

LICENSE = ("Licensed under the Apache License, Version 2.0. You may not use this file except "
           "in compliance with the License.")
DOCS: dict[str, str] = {
    "ops/logging.md": "# Logging\n\nDeployment logs are kept for 30 days in the log store. "
                      "Audit logs of admin actions are kept for 400 days.\n\n"
                      "| Log | Store | Retention |\n|---|---|---|\n"
                      "| Application logs | Loki | 30 days |\n| Audit logs | S3 | 400 days |\n\n"
                      + LICENSE + "\n",
    "ops/oncall.md": "# On call\n\nThe on-call engineer acknowledges a page within five "
                     "minutes. Escalation goes to the team lead after fifteen minutes without "
                     "an answer.\n\nHandover happens every Monday at ten.\n\n" + LICENSE + "\n",
    "ops/oncall-copy.md": "# On call\n\nThe on-call engineer acknowledges a page within five "
                          "minutes. Escalation goes to the team lead after fifteen minutes "
                          "without an answer.\n\nHandover happens every Monday at ten.\n\n"
                          + LICENSE + "\n",
    "eng/release.md": "# Releases\n\nA release branch is cut on the first Tuesday of each "
                      "month. Hotfixes are cherry-picked onto the release branch and tagged "
                      "with a patch number.\n\nThe release manager signs the tag with the "
                      "team key.\n\n" + LICENSE + "\n",
    "eng/backups.md": "# Backups\n\nThe database is snapshotted every six hours and the "
                      "snapshots are copied to a second region. A restore drill runs each "
                      "quarter and its timing is written down in the drill log.\n\n" + LICENSE
                      + "\n",
}


def entry(qid: str, question: str, kind: str = "answerable", *, doc: str = "",
          quote: str = "", traits: Iterable[str] = (), **extra: Any) -> dict[str, Any]:
    answers = [{"doc_id": doc, "quote": quote}] if quote else []
    return {"id": qid, "kind": kind, "question": question, "traits": list(traits),
            "answers": answers, **extra}


def write_lines(path: Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    return path


def good_rows() -> list[dict[str, Any]]:
    """A clean file: answerable, a checked paraphrase, a no-answer with a probe."""
    return [
        entry("q0001", "How long are deployment logs kept?", doc="ops/logging.md",
              quote="Deployment logs are kept for 30 days in the log store."),
        entry("q0002", "When is a release branch cut?", doc="eng/release.md",
              quote="A release branch is cut on the first Tuesday of each month."),
        entry("q0003", "How quickly must someone answer an alert?", doc="ops/oncall.md",
              quote="The on-call engineer acknowledges a page within five minutes.",
              traits=["paraphrase"]),
        entry("q0004", "Which cloud provider hosts the backups?", "no_answer",
              probes=["aws", "azure", "gcp"]),
    ]
