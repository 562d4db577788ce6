"""The language-model boundary of ``grk ask``: a chat model, its prompts, and the check.

A model never produces a citation. It quotes its passages, ``"kept for 30 days" [1]``;
:func:`check_reply` looks each quote up in the passage it names, and only a quote found
there becomes a Citation, via :meth:`Passage.cite` (an exact span of the file). A sentence
is *supported* iff one of its quotes holds. Optional, off by default (SPEC §9). A reply:

- A quote is ``"..."`` or ``“...”`` followed by ``[n]``, ``[n, m]`` or ``[n][m]``
  (spaces and one ``.,;:`` may come between). Unmarked quotes are prose; single
  quotes are apostrophes. Each (quote, number) pair gets a record with a status:
  ``verified``, ``not_in_passage``, ``in_other_passage`` (with ``found_in``; still no
  citation), ``unknown_passage``, ``unverified_passage`` or ``furniture`` (the quote
  lies in page furniture, a running head or a table of contents: never cited).
- Sentences end at ``.!?`` (closing quotes or brackets may follow) before whitespace,
  and at newlines; never inside a marked quote, nor after ``e.g. i.e. cf. vs.``
- Matching normalises both sides: whitespace runs become one space, typographic
  quotes, apostrophes and dashes become ASCII; each normalised character keeps its
  original offset, so the citation is the exact original span, line breaks included.
  Case and all else must match. A quote not found is tried once without leading or
  trailing ellipses and trailing ``.,;:!?`` (the span cited then lacks them too).
- Kind: ``not_in_passages`` if the reply is ``NOT_IN_PASSAGES`` (trimmed, any case,
  punctuation around it ignored) or has that token and no supported sentence; else
  ``llm`` if a sentence is supported, else ``withheld``.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from ..embeddings.base import positive
from ..embeddings.ollama import OLLAMA_DEFAULT_HOST
from ..errors import MissingDependencyError, ProviderError, UsageError
from .model import Citation, Passage, Sentence
from .prompts import ANSWER_RULES, JUDGE_RULES, NOT_IN_PASSAGES, REWRITE_RULES, fence

LLM_PROVIDERS = {  # what --llm errors list
    "ollama": "a local Ollama server (extra `ollama`)",
    "llamacpp": "a pinned GGUF model or a .gguf file run in-process by llama.cpp (`make llm`)",
}
OPTIONS = {"temperature": 0, "seed": 0}  # with every chat request, for repeatable replies

Message = dict[str, str]


class Chat(Protocol):
    """What the boundary needs of a model: :class:`ChatModel`, or a test double."""

    @property
    def identity(self) -> dict[str, str]: ...
    def chat(self, messages: list[Message]) -> str: ...


class ChatModel:
    """A chat model on an Ollama server through the official client, configured as for
    embeddings: explicit ``host`` (never ``OLLAMA_HOST``), no proxies, imported lazily."""

    def __init__(self, model: str, *, host: str = OLLAMA_DEFAULT_HOST,
                 timeout: float = 120.0) -> None:
        positive("timeout", timeout)
        if not model:
            raise UsageError("a chat model needs a name: --llm ollama:MODEL")
        self.model, self.host, self.timeout = model, host, float(timeout)
        self._client: Any = None

    @property
    def identity(self) -> dict[str, str]:
        return {"provider": "ollama", "model": self.model, "host": self.host}

    def chat(self, messages: list[Message]) -> str:
        """The model's reply ("" when it said nothing); failures are ProviderErrors."""
        client = self._ensure_client()
        import httpx
        import ollama

        try:
            response = client.chat(model=self.model, messages=messages, stream=False,
                                   options=dict(OPTIONS))
        except (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise ProviderError(
                f"cannot reach an Ollama server at {self.host}: start it with `ollama serve` "
                f"(or pass --llm-host for a server elsewhere; groundkit does not read "
                f"OLLAMA_HOST)") from exc
        except httpx.TimeoutException as exc:
            raise ProviderError(
                f"the Ollama server at {self.host} did not answer within {self.timeout:g}s "
                f"(model {self.model!r}); raise --llm-timeout (timeout=) for a slower model"
            ) from exc
        except httpx.HTTPError as exc:
            raise ProviderError(f"talking to the Ollama server at {self.host} failed: {exc}") \
                from exc
        except ollama.ResponseError as exc:
            raise ProviderError(self._response_error(exc)) from exc
        except ValueError as exc:  # JSON or pydantic: the body is not a chat response
            raise ProviderError(f"the Ollama server at {self.host} sent a reply that is not "
                                f"a chat response: {exc}") from exc
        # a reasoning model's leading <think>...</think> block is not part of its answer
        return re.sub(r"\A\s*<think>.*?</think>\s*", "", response.message.content or "",
                      flags=re.S)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _ensure_client(self) -> Any:
        if self._client is None:
            try:
                import ollama
            except ImportError as exc:
                raise MissingDependencyError("ollama", "ollama", "An ollama LLM") from exc
            self._client = ollama.Client(host=self.host, timeout=self.timeout, trust_env=False)
        return self._client

    def _response_error(self, exc: Any) -> str:
        status = getattr(exc, "status_code", -1)
        if status == 404:
            return (f"the Ollama server at {self.host} has no model {self.model!r}: "
                    f"run `ollama pull {self.model}` ({exc.error})")
        return f"the Ollama server at {self.host} refused to chat (HTTP {status}): {exc.error}"


def parse_llm(spec: str) -> tuple[str, str]:
    """``ollama:MODEL`` -> ``("ollama", MODEL)``; anything else is a UsageError."""
    provider, _, model = spec.partition(":")
    if provider in LLM_PROVIDERS and model.strip():
        return provider, model.strip()
    valid = "; ".join(f"{name}:MODEL ({what})" for name, what in LLM_PROVIDERS.items())
    raise UsageError(f"unknown --llm {spec!r}: the valid form is {valid}, "
                     f"e.g. --llm ollama:llama3.2")


# ------------------------------------------------------------------ messages

def passage_block(passage: Passage) -> str:
    """``[n] "path", lines a-b`` and the fenced text (the path JSON-quoted: one line)."""
    c = passage.chunk
    head = (f"[{passage.number}] {json.dumps(c.doc_id, ensure_ascii=False)}, "
            f"lines {c.start_line}-{c.end_line}"
            + (", SUPERSEDED" if passage.superseded else ""))  # the label only: the notice's
    return f"{head}\n{fence(passage.text)}"  # own words are document text, kept in fences


def answer_messages(question: str, passages: Sequence[Passage]) -> list[Message]:
    """The system rules and a user message with the question and the verified passages."""
    offered = [p for p in passages if p.verified]
    _by_number(offered)
    blocks = "\n\n".join(passage_block(p) for p in offered)
    user = (f"Question: {question}\n\nPassages:\n\n{blocks}\n\n"
            f"Answer the question from these passages, following the rules.")
    return [{"role": "system", "content": ANSWER_RULES}, {"role": "user", "content": user}]


# ------------------------------------------------------------------ reading a reply

_QUOTE = re.compile(
    r'(?:"(?P<straight>[^"]+)"|“(?P<curly>[^”]+)”)[ \t]*[.,;:]?[ \t]*'
    r"(?P<marker>\[\s*[0-9]+(?:\s*,\s*[0-9]+)*\s*\](?:[ \t]*\[\s*[0-9]+(?:\s*,\s*[0-9]+)*\s*\])*)")
_BOUNDARY = re.compile(r"[.!?][\"”’')\]]*(?P<gap>\s+)|\n")
_ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|cf|vs)\.$", re.I)
_TYPOGRAPHIC = {**dict.fromkeys("“”„‟″", '"'), **dict.fromkeys("‘’‚‛′", "'"),
                **dict.fromkeys("‐‑‒–—―−", "-")}
_ONLY_TOKEN = re.compile(r"\A\W*not[_ ]in[_ ]passages\W*\Z", re.I)
_TOKEN = re.compile(rf"\b{NOT_IN_PASSAGES}\b")


@lru_cache(maxsize=16)  # the passages of one reply, checked quote after quote
def normalised(text: str) -> tuple[str, tuple[int, ...]]:
    """``text`` with whitespace runs collapsed and typography made ASCII, and the offset
    in ``text`` each character came from."""
    chars: list[str] = []
    where: list[int] = []
    for i, ch in enumerate(text):
        if ch.isspace():
            if i and text[i - 1].isspace():
                continue  # the run is one space, at the run's first offset
            chars.append(" ")
        else:
            chars.append(_TYPOGRAPHIC.get(ch, ch))
        where.append(i)
    return "".join(chars), tuple(where)


def find_quote(text: str, quote: str) -> tuple[int, int] | None:
    """The span ``[start, end)`` of ``text`` that ``quote`` matches after normalisation."""
    haystack, where = normalised(text)
    for needle in _candidates(quote):
        at = haystack.find(needle)
        if at >= 0:
            return where[at], where[at + len(needle) - 1] + 1
    return None


def _candidates(quote: str) -> list[str]:
    exact = normalised(quote)[0].strip()
    trimmed = re.sub(r"\A(?:\.\.\.|…)\s*|\s*(?:\.\.\.|…)\Z", "", exact).rstrip(".,;:!?").strip()
    return [q for q in dict.fromkeys((exact, trimmed)) if re.search(r"\w", q)]  # words, not dots


@dataclass(frozen=True, slots=True, kw_only=True)
class LlmResult:
    """One checked reply: ``kind`` as from :func:`check_reply`, or ``empty`` (not asked)."""

    sentences: tuple[Sentence, ...] = ()
    kind: str
    reply: str = ""
    message: str = ""


def check_reply(reply: str, passages: Sequence[Passage]
                ) -> tuple[tuple[Sentence, ...], str]:
    """The reply's sentences, each quote checked, and the kind (see the module doc).
    Give all ``passages``, verified or not: citing an unverified one is not "unknown"."""
    by_number = _by_number(passages)
    if _ONLY_TOKEN.match(reply):
        return (), "not_in_passages"
    sentences = tuple(_sentence(text, quotes, by_number) for text, quotes in _split(reply))
    if any(s.supported for s in sentences):
        return sentences, "llm"
    if _TOKEN.search(reply):
        return (), "not_in_passages"
    return sentences, "withheld"


def _by_number(passages: Sequence[Passage]) -> dict[int, Passage]:
    by_number = {p.number: p for p in passages}
    if len(by_number) != len(passages):
        raise UsageError(f"passage numbers must be unique: {[p.number for p in passages]}")
    return by_number


def _split(reply: str) -> list[tuple[str, list[re.Match[str]]]]:
    """Sentences, each with the quotes-with-marker inside it (never cut through one)."""
    quotes = list(_QUOTE.finditer(reply))
    starts, shield = [q.start() for q in quotes], bytearray(len(reply) + 1)
    for q in quotes:  # no cut strictly inside a quote
        shield[q.start() + 1:q.end()] = b"\x01" * (q.end() - q.start() - 1)
    pieces, start = [], 0
    for cut in _BOUNDARY.finditer(reply):
        at = cut.start("gap") if cut.group("gap") else cut.start()
        if not shield[at] and not _ABBREVIATION.search(reply, max(start, at - 4), at):
            pieces.append((start, at))
            start = cut.end()
    pieces.append((start, len(reply)))
    return [(reply[a:b].strip(), quotes[bisect_left(starts, a):bisect_left(starts, b)])
            for a, b in pieces if reply[a:b].strip()]


def _sentence(text: str, quotes: list[re.Match[str]], by_number: Mapping[int, Passage]
              ) -> Sentence:
    records: list[dict[str, Any]] = []
    citations: list[Citation] = []
    for match in quotes:
        quote = match.group("straight") or match.group("curly") or ""
        for number in dict.fromkeys(int(n) for n in re.findall(r"[0-9]+", match["marker"])):
            record, citation = _check_quote(quote, number, by_number)
            records.append(record)
            if citation is not None:
                citations.append(citation)
    return Sentence(text=text, citations=tuple(citations), supported=bool(citations),
                    quotes=tuple(records))


def _check_quote(quote: str, number: int, by_number: Mapping[int, Passage]
                 ) -> tuple[dict[str, Any], Citation | None]:
    record: dict[str, Any] = {"quote": quote, "passage": number}
    passage = by_number.get(number)
    if passage is None:
        return {**record, "status": "unknown_passage"}, None
    if not passage.verified:
        return {**record, "status": "unverified_passage"}, None
    span = find_quote(passage.text, quote)
    if span is not None and any(a < span[1] and span[0] < b for a, b, _ in passage.chunk.furniture):
        return {**record, "status": "furniture"}, None
    if span is not None:
        return {**record, "status": "verified"}, passage.cite(*span)
    elsewhere = [p.number for p in by_number.values()
                 if p.verified and p.number != number and find_quote(p.text, quote)]
    if elsewhere:
        return {**record, "status": "in_other_passage", "found_in": elsewhere}, None
    return {**record, "status": "not_in_passage"}, None


# ------------------------------------------------------------------ the three uses


def synthesize(question: str, passages: Sequence[Passage], chat: Chat) -> LlmResult:
    """Ask ``chat`` to answer from the verified ``passages`` (only those are sent, whatever
    the caller passed; with none it is not asked: ``empty``), and check every quote."""
    if not any(p.verified for p in passages):
        return LlmResult(kind="empty", message="no verified passage to answer from")
    reply = chat.chat(answer_messages(question, passages))
    sentences, kind = check_reply(reply, passages)
    return LlmResult(sentences=sentences, kind=kind, reply=reply,
                     message=_message(kind, sentences, reply))


def _message(kind: str, sentences: Sequence[Sentence], reply: str) -> str:
    quotes = sum(len(s.quotes) for s in sentences)
    unsupported = sum(not s.supported for s in sentences)
    if kind == "not_in_passages":
        return "the model says the passages do not answer the question"
    if kind == "llm":
        return (f"{unsupported} of {len(sentences)} sentences have no verified quote "
                f"and are marked unsupported") if unsupported else ""
    if not reply.strip():
        return "the model returned an empty reply; withheld"
    if not quotes:
        return "the model's reply quotes no passage, so none of it can be checked; withheld"
    return f"none of the model's {quotes} quotes was found in the passage it cites; withheld"


_LABEL = re.compile(r"\A(?:[^:\n]*\b(?:query|rewrite|rewritten)\b[^:\n]*|search)\s*:\s*", re.I)


def rewrite(question: str, chat: Chat) -> str:
    """One search query for ``question``: the reply's first line that is not a preamble,
    without bullets, labels or quotes (the question itself when nothing is left)."""
    reply = chat.chat([{"role": "system", "content": REWRITE_RULES},
                       {"role": "user", "content": question}])
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    lines = [line for line in lines if not line.rstrip("*").endswith(":")] or lines or [""]
    line = re.sub(r"\A(?:[-*•>#]+\s*|[0-9]+[.)]\s+)", "", lines[0]).replace("**", "")
    line = _LABEL.sub("", line).strip().strip("\"'`“”‘’").strip()
    return " ".join(line.split()) or question


_VERDICT = re.compile(r"\bverdict\W*(unfaithful|not faithful|faithful|unclear)", re.I)
_REASON = re.compile(r"\breason\W*?[:=\-]\s*(.+)", re.I)
REASON_LIMIT = 1000


def judge(question: str, sentences: Sequence[Sentence], passages: Sequence[Passage],
          chat: Chat) -> dict[str, Any]:
    """An advisory faithfulness judgement of the answer; it changes no verdict."""
    model = chat.identity.get("model", "")
    if not sentences:
        return {"advisory": True, "verdict": "unclear", "reason": "no sentences", "model": model}
    answer = "\n".join(s.text for s in sentences)
    blocks = "\n\n".join(passage_block(p) for p in passages if p.verified)
    user = f"Question: {question}\n\nAnswer:\n{fence(answer)}\n\nPassages:\n\n{blocks}"
    reply = chat.chat([{"role": "system", "content": JUDGE_RULES},
                       {"role": "user", "content": user}])
    verdict, reason = parse_judgement(reply)
    return {"advisory": True, "verdict": verdict, "reason": reason, "model": model}


def parse_judgement(reply: str) -> tuple[str, str]:
    """``(verdict, reason)`` from ``VERDICT: ...`` / ``REASON: ...``, read leniently:
    without a label the first line decides; anything else is ``unclear``."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    labelled = _VERDICT.search(reply)
    said = (labelled.group(1) if labelled else lines[0] if lines else "").lower()
    verdict = ("unfaithful" if "unfaithful" in said or "not faithful" in said
               else "faithful" if "faithful" in said else "unclear")
    found = _REASON.search(reply)
    reason = found.group(1) if found else " ".join(lines[1:] or lines)
    reason = reason.replace("**", "").strip()[:REASON_LIMIT]  # a display bound
    return verdict, reason or "the judge gave no reason"
