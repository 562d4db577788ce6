"""``grk questions draft --llm``: a chat model proposes question text for drafted passages.

For each drafted passage the model is asked for three things: the question the
passage answers, a paraphrase of it that shares no content word with the passage,
and a near miss (a question the passage seems to answer but does not). Each
proposal becomes, or adds, an entry whose ``status`` stays ``draft``: a person
accepts it (``grk questions review``), and the lint checks it like any other (a
"paraphrase" that shares a stem with its quote is an error). A reply that is not
the JSON asked for leaves the entry's question empty, noted, never invented.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ..answer.llm import Chat
from ..answer.prompts import fence

PROPOSE_RULES = (
    "You help a person write evaluation questions for a search engine over their own "
    "documents. You are shown one passage. Reply with one JSON object and nothing else, "
    'with three strings: "question": a question a reader would ask that this passage '
    'answers; "paraphrase": the same question in other words, sharing no content word with '
    'the passage; "near_miss": a question on the same topic that the passage seems to '
    "answer but does not (what it asks is not in the passage). Write in the passage's "
    "language.")
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
KEYS = ("question", "paraphrase", "near_miss")


def messages(quote: str, doc_id: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": PROPOSE_RULES},
            {"role": "user", "content": f"Passage from {json.dumps(doc_id)}:\n{fence(quote)}"}]


def parse_reply(reply: str) -> dict[str, str] | None:
    """The three proposals of a reply, or ``None`` if it is not the JSON object asked for."""
    found = _OBJECT.search(reply)
    if found is None:
        return None
    try:
        data = json.loads(found.group())
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    out = {k: " ".join(data[k].split()) for k in KEYS if isinstance(data.get(k), str)}
    return out if out.get("question") else None


def propose(rows: Sequence[dict[str, Any]], chat: Chat, spec: str) -> list[dict[str, Any]]:
    """``rows`` with proposals: the question filled in, plus a paraphrase and a near-miss
    entry per passage (ids continue after the last), every one still a draft."""
    out = [dict(r) for r in rows]
    next_id = 1 + max((int(r["id"][1:]) for r in rows), default=0)
    extra: list[dict[str, Any]] = []
    for row in out:
        if row["kind"] != "answerable" or row["question"]:
            continue
        answer = row["answers"][0]
        got = parse_reply(chat.chat(messages(answer["quote"], answer["doc_id"])))
        if got is None:
            row["notes"] += f"; {spec} gave no usable proposal"
            continue
        row["question"] = got["question"]
        row["notes"] += f"; question proposed by {spec}"
        if got.get("paraphrase"):
            extra.append({**row, "id": f"q{next_id:04d}", "question": got["paraphrase"],
                          "traits": ["paraphrase"],
                          "notes": f"paraphrase of {row['id']} proposed by {spec}"})
            next_id += 1
        if got.get("near_miss"):
            extra.append({"id": f"q{next_id:04d}", "kind": "no_answer",
                          "question": got["near_miss"], "traits": [], "answers": [],
                          "near_miss": dict(answer), "status": "draft",
                          "notes": f"near miss of {row['id']} proposed by {spec}: check the "
                                   "collection does not answer it, and add probes"})
            next_id += 1
    return out + extra
