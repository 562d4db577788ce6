"""What kind of answer a question asks for, and whether a sentence has one.

A question that asks *how long* wants a duration, *how often* a frequency, *how many*
a number, *when* a date or a condition in time, *who* a person or a role, *which
command* something a person types. A sentence that holds such a thing is more likely
to be the answer than one that only shares the question's words: "This creates a
channel and pages the incident commander for SEV2" shares SEV2 with "How quickly must
a SEV2 page be acknowledged?", but only "| SEV2 | … | 15 minutes |" says how quickly.

The patterns are English (the golden corpus's questions, where this was measured, are
mostly English); a question of no known kind, or in another language, gets no bonus,
never a penalty. Extractive answers add :attr:`~groundkit.answer.extractive.Choice.answer_type`
to the score of a unit that matches (docs/answers.md has the measurement).
"""

from __future__ import annotations

import re

_UNIT = (r"(?:milli)?seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?"
         r"|ms|[smhdw]")
_NUMBER_WORD = (r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen"
                r"|twenty|thirty|forty|fifty|sixty|ninety|hundred")
_DURATION = re.compile(rf"\b(?:\d+(?:[.,]\d+)?|{_NUMBER_WORD})[\s-]*(?:{_UNIT})\b", re.I)
_FREQUENCY = re.compile(r"\b(?:every|each|per|daily|weekly|monthly|yearly|annually|hourly"
                        r"|nightly|once|twice|times)\b", re.I)
_DIGIT = re.compile(r"\d")
_TIME = re.compile(r"\b(?:1[89]|20)\d\d\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov"
                   r"|dec)[a-z]*\b|\b(?:before|after|until|within|by|during|when)\b", re.I)
_TYPED = re.compile(r"`|(?:^|\s)--?\w|\w/\w|\$\s")

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("duration", re.compile(r"\bhow (?:long|quickly|soon|fast)\b|\bhow many (?:seconds|minutes"
                            r"|hours|days|weeks|months|years)\b", re.I)),
    ("frequency", re.compile(r"\bhow often\b", re.I)),
    ("number", re.compile(r"\bhow (?:many|much|big|large|high|low)\b|\bwhat (?:is|are) the "
                          r"(?:maximum|minimum|limit|default|size|number)\b", re.I)),
    ("time", re.compile(r"\bwhen\b|\bwhat (?:date|day|time)\b", re.I)),
    ("typed", re.compile(r"\b(?:what|which) (?:command|option|flag|setting|file|variable"
                         r"|package|directive|keyword)\b", re.I)),
)


def asked_for(question: str) -> str | None:
    """The kind of answer ``question`` asks for (``duration``, ``frequency``, ``number``,
    ``time``, ``typed``), or ``None``."""
    return next((kind for kind, pattern in _KINDS if pattern.search(question)), None)


def holds(kind: str | None, text: str) -> bool:
    """Whether ``text`` holds an answer of ``kind`` (never, for ``None``)."""
    if kind == "duration":
        return bool(_DURATION.search(text))
    if kind == "frequency":
        return bool(_FREQUENCY.search(text) or _DURATION.search(text))
    if kind == "number":
        return bool(_DIGIT.search(text))
    if kind == "time":
        return bool(_TIME.search(text))
    if kind == "typed":
        return bool(_TYPED.search(text))
    return False
