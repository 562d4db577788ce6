"""A tiny golden corpus for harness tests: three documents, six questions."""

from __future__ import annotations

import json
from pathlib import Path

from evals.golden import write_manifest

DOCS = {
    "retention.md": "# Retention\n\nDeployment logs are kept for 30 days.\n\n"
                    "Audit logs are kept for seven years.\n",
    "oncall.md": "# On-call\n\nPages go to the primary on-call engineer first.\n",
    "errors.txt": "E4012: upload quota exceeded.\nE5003: storage backend unavailable.\n",
}
QUESTIONS = [
    {"id": "q0001", "kind": "answerable", "question": "how long are deployment logs kept",
     "traits": [], "answers": [{"doc_id": "retention.md",
                                "quote": "Deployment logs are kept for 30 days."}]},
    {"id": "q0002", "kind": "answerable", "question": "what does E5003 mean", "traits": [],
     "answers": [{"doc_id": "errors.txt", "quote": "E5003: storage backend unavailable."}]},
    {"id": "q0003", "kind": "answerable", "question": "who receives pages first",
     "traits": ["paraphrase"],
     "answers": [{"doc_id": "oncall.md", "quote": "Pages go to the primary on-call engineer"}]},
    {"id": "q0004", "kind": "ambiguous", "question": "how long are logs kept", "traits": [],
     "answers": [{"doc_id": "retention.md", "quote": "kept for 30 days"},
                 {"doc_id": "retention.md", "quote": "kept for seven years"}]},
    {"id": "q0005", "kind": "no_answer", "question": "what is the parental leave policy",
     "traits": [], "answers": []},
    {"id": "q0006", "kind": "no_answer", "question": "zebra xylophone", "traits": [],
     "answers": []},
]




def tiny_golden(root: Path) -> Path:
    """Write the tiny corpus (with its manifest) at ``root`` (a ``vN`` folder)."""
    (root / "docs").mkdir(parents=True, exist_ok=True)
    for name, text in DOCS.items():
        (root / "docs" / name).write_text(text)
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    write_manifest(root)
    return root
