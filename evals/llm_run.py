"""``python -m evals llm``: run the local reader's stages (:mod:`evals.llm_stage`) on a golden
version and write their report (JSON, and an HTML page when asked).

The BM25 ranking is the harness's own (the suite's baseline stage, its collection kept in
``--cache`` between runs); the model is ``llamacpp:MODEL`` (:mod:`groundkit.embeddings.llamacpp`).
Without the runtime or the model file the report is written anyway, saying *not measured*
and why.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from evals import llm_stage as st
from evals.harness import Log
from evals.report import model as rpt
from evals.report.files import canonical
from groundkit.embeddings.gguf import READER
from groundkit.errors import GroundkitError

DEFAULT_OUT = Path("evals/results/llm.json")


def unavailable(model: str) -> str | None:
    """Why the reader cannot run here, or None (the model file is resolved, not hashed)."""
    from groundkit.embeddings import gguf
    from groundkit.embeddings.llamacpp import RUNTIME_VERSION

    try:
        import llama_cpp
    except ImportError:
        return "not measured: llama-cpp-python is not installed (run `make llm`)"
    if llama_cpp.__version__ != RUNTIME_VERSION:
        return (f"not measured: llama-cpp-python {llama_cpp.__version__} is installed, the "
                f"stages are pinned to {RUNTIME_VERSION} (run `make llm`)")
    try:
        gguf.resolve(model)
    except GroundkitError as exc:
        return f"not measured: {exc}"
    return None


ROLES = ("judge", "answers", "rewrite")
"""What a run measures: the judge (with the rerank and gate stages it feeds), checked
answers, query rewrites (:mod:`.llm_answers`)."""
MODES = ("bm25", "hybrid")
"""The modes whose gate the judge's signal is measured with (BM25 is always measured)."""
HYBRID_STAGE = "hybrid-rrf60"


def measure(golden: Path, cache: Path, model: str, settings: rpt.Settings, log: Log, *,
            roles: Sequence[str] = ROLES, sizes: Mapping[str, int] | None = None,
            store: Path | None = None, modes: Sequence[str] = MODES) -> dict[str, Any]:
    """The stages' block for ``golden`` with the reader ``model`` (see :mod:`.llm_stage`;
    ``sizes``: :func:`~evals.llm_stage.sample`'s, for a smaller sample than the default;
    ``store``: the judgements' JSON Lines store, reused and appended to; ``modes``: the
    gates measured with the judge's signal)."""
    from evals.golden.suite import golden_suite
    from evals.llm_answers import answers_block, rewrite_block
    from evals.stages import BASELINE, STAGES
    from groundkit.collection import Collection
    from groundkit.embeddings.llamacpp import LlamaCppModel

    started = time.process_time()
    reader = LlamaCppModel(model)
    hashing = time.process_time() - started
    reader.load()
    suite = golden_suite(golden, cache / "golden", embedding_cache=cache / "embeddings")
    try:
        run: Any = suite.open(STAGES[BASELINE], log)  # the baseline's _CollectionRun
        chosen = st.sample(suite.questions, **(sizes or {}))
        block: dict[str, Any] = {
            "measured": True, "model": reader.identity, "golden": str(golden),
            "roles": list(roles), "sample": {**chosen.sizes(), "seed": st.SEED},
            "load": {"model_sha256_cpu_s": hashing,
                     "model_load_cpu_s": time.process_time() - started - hashing}}
        if "judge" in roles:
            block.update(_judge_stages(suite, run, chosen, reader, settings, log, store,
                                       modes))
        if "answers" in roles:
            with Collection.open(run.snapshot.name, cache / "golden") as coll:
                block["answers"] = answers_block(coll, chosen, reader)
            log(f"llm: answers {block['answers']['cost']}")
        if "rewrite" in roles:
            block["rewrite"] = rewrite_block(run, suite.questions, run.qrels or {}, reader,
                                             settings)
            log(f"llm: rewrites {block['rewrite']['cost']}")
    finally:
        suite.close()
        reader.close()
    return block


def _judge_stages(suite: Any, run: Any, chosen: st.Sample, reader: Any,
                  settings: rpt.Settings, log: Log, store: Path | None,
                  modes: Sequence[str]) -> dict[str, Any]:
    """The judge against the labels, the rerank and the gates, from one set of judgements."""
    from groundkit.retrieval.relevance import ReaderReranker

    qrels = run.qrels or {}
    questions = chosen.questions()
    log(f"llm: {len(questions)} sampled questions ({chosen.sizes()})")
    ranked = [_ranked(run, q) for q in questions]
    extra, near = _extra_passages(suite, chosen, ranked, run.snapshot.chunks(), qrels)
    judgements = st.Judgements(reader, store)

    def part(q: Any) -> str:
        return str(q.split)

    judging = time.process_time()
    rows = st.judged_rows(ranked, extra, judgements, qrels, part, near)
    log(f"llm: {len(judgements.cpu)} judgements, {sum(judgements.cpu):.0f} CPU-s")
    gates = {"bm25": st.gate_block(st.gate_items(ranked, judgements, qrels, part), "bm25")}
    if "hybrid" in modes:
        gates["hybrid"] = _hybrid_gate(suite, questions, judgements, part, log)
        log(f"llm: {len(judgements.cpu)} judgements with hybrid's passages")
    identity = ReaderReranker(reader).identity
    answerable = [r for r in ranked if r.question.gold and r.question.split == "test"]
    return {
        "reranker_identity": identity.to_dict(),
        "judge_sample": {"depth": st.DEPTH, "gate_depth": st.GATE_DEPTH, "pairs": len(rows)},
        "cost": {**judgements.cost(), "cpu_s_all": time.process_time() - judging},
        "judge": st.judge_block(rows),
        "rerank": st.rerank_block(answerable, judgements, identity, qrels, settings),
        "gate": gates,
        "pairs": rows,
    }


def _hybrid_gate(suite: Any, questions: Sequence[rpt.Question], judgements: st.Judgements,
                 part: Any, log: Log) -> dict[str, Any]:
    """The hybrid gate with the judge's signal over hybrid's own top passages."""
    from evals.stages import STAGES

    stage = STAGES[HYBRID_STAGE]
    missing = [m for m in stage.needs if importlib.util.find_spec(m) is None]
    if missing:
        return {"measured": False, "reason": f"not measured: {HYBRID_STAGE} needs "
                f"{', '.join(missing)} (pip install -e '.[dense]')"}
    hybrid: Any = suite.open(stage, log)
    ranked = [_ranked(hybrid, q) for q in questions]
    return {"measured": True, "stage": HYBRID_STAGE,
            **st.gate_block(st.gate_items(ranked, judgements, hybrid.qrels or {}, part),
                            "hybrid")}


def _ranked(run: Any, q: rpt.Question) -> st.Ranked:
    records = run.rank(q, st.FIRST_STAGE, st.DEPTH)
    return st.Ranked(question=q, ids=[r.chunk_id for r in records],
                     texts=[r.text for r in records[:st.DEPTH]],
                     signals=dict(run.signals[q.query_id]))


def _extra_passages(suite: Any, chosen: st.Sample, ranked: list[st.Ranked],
                    chunks: Sequence[Any], qrels: Mapping[str, Mapping[str, int]]
                    ) -> tuple[dict[str, list[tuple[str, str]]], dict[str, str]]:
    """A gold passage BM25 left out of the judged top (answerable test questions), and the
    near-miss passage of each sampled no-answer test question (judged even if not ranked):
    the chunk that overlaps its near-miss quote most."""
    texts = {c.chunk_id: c.text for c in chunks}
    spans = {c.chunk_id: (c.doc_id, c.start, c.end) for c in chunks}
    extra: dict[str, list[tuple[str, str]]] = {}
    by_id = {r.question.query_id: r for r in ranked}
    for q in chosen.answerable:
        gold = qrels.get(q.query_id) or {}
        if gold and not any(gold.get(c, 0) > 0 for c in by_id[q.query_id].ids[:st.DEPTH]):
            best = max(sorted(gold), key=lambda c: gold[c])
            extra[q.query_id] = [(best, texts[best])]
    near: dict[str, str] = {}
    golden = {q.id: q for q in suite.golden.questions}
    for q in chosen.no_answer:
        miss = golden[q.query_id].near_miss
        overlaps = {cid: min(end, miss.end) - max(start, miss.start)
                    for cid, (doc, start, end) in spans.items() if doc == miss.doc_id} \
            if miss is not None else {}
        nearest = max(sorted(overlaps), key=lambda c: overlaps[c], default=None)
        if nearest is not None and overlaps[nearest] > 0:
            near[q.query_id] = nearest
            extra.setdefault(q.query_id, []).append((nearest, texts[nearest]))
    return extra, near


def not_measured(reason: str, model: str) -> dict[str, Any]:
    return {"measured": False, "reason": reason, "model": {"provider": "llamacpp",
                                                             "model": model}}


def cmd_llm(args: argparse.Namespace) -> int:
    """Run the reader's stages on a golden version's fixed sample; write JSON (and HTML).
    Without llama-cpp-python or the model the report says not measured (exit 0)."""
    out = Path(args.out)
    settings = rpt.Settings(resamples=args.resamples, permutations=args.permutations,
                            seed=args.seed)

    def log(message: str) -> None:
        print(message, flush=True)

    reason = unavailable(args.model)
    block = not_measured(reason, args.model) if reason else measure(
        Path(args.golden), Path(args.cache), args.model, settings, log, roles=args.roles,
        store=Path(args.judgements) if args.judgements else out.with_suffix(".judgements.jsonl"),
        modes=args.modes)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(canonical(block), indent=1, sort_keys=True, ensure_ascii=False)
                   + "\n", encoding="utf-8")
    log(f"llm: wrote {out}" + ("" if block["measured"] else f" ({block['reason']})"))
    if args.html:
        Path(args.html).parent.mkdir(parents=True, exist_ok=True)
        Path(args.html).write_text(render(block), encoding="utf-8")
        log(f"llm: wrote {args.html}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from evals import cli

    p = sub.add_parser("llm", help="the local reader as judge, reranker and gate signal on a "
                       "fixed golden sample", description=cmd_llm.__doc__)
    p.add_argument("--golden", default=str(cli.DEFAULT_GOLDEN), help="the golden version")
    p.add_argument("--model", default=READER, help=f"the llamacpp model: a pinned name or a "
                   f".gguf path (default {READER})")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="the JSON report")
    p.add_argument("--html", help="also write an HTML page here")
    p.add_argument("--cache", default=str(cli.DEFAULT_CACHE), help="where the golden "
                   "collection is kept between runs")
    p.add_argument("--roles", nargs="+", choices=ROLES, default=list(ROLES),
                   help="what to measure (default all): judge (with the rerank and gate "
                   "stages it feeds), answers, rewrite")
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                   help="the gates the judge's signal is measured with (default both; bm25 "
                   "is always measured, hybrid needs the dense extra)")
    p.add_argument("--judgements", metavar="FILE", help="the judgements' store (JSON Lines; "
                   "default beside --out): reused for the same model file and prompt, appended "
                   "to as the run goes, so an interrupted run resumes")
    p.add_argument("--seed", type=int, default=0, help="the statistics' seed")
    p.add_argument("--resamples", type=int, default=10_000, help="bootstrap resamples")
    p.add_argument("--permutations", type=int, default=10_000, help="randomisation draws")
    p.set_defaults(handler=cmd_llm)


# ---------------------------------------------------------------------- HTML


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def render(block: Mapping[str, Any]) -> str:
    """A self-contained HTML page of the block (no script, no external resource)."""
    parts = ["<!doctype html><meta charset='utf-8'><title>groundkit: the local reader</title>",
             "<h1>The local reader: judge, reranker, gate signal, answers</h1>"]
    if not block.get("measured"):
        parts.append(f"<p><strong>{html.escape(str(block.get('reason')))}</strong></p>")
        return "\n".join(parts) + "\n"
    model = block["model"]
    parts.append("<p>Model " + html.escape(f"{model['model']} (sha256 {model['sha256']}), "
                 f"{model['runtime']}, options {model['options']}; sample "
                 f"{json.dumps(block['sample'])}") + "</p>")
    if "judge" in block:
        parts += _judge_tables(block)
    if "answers" in block:
        a = block["answers"]
        parts.append(_table(f"Checked answers ({a['answerable']} answerable, {a['no_answer']} "
                            f"no-answer questions; {_num(a['cost']['cpu_s_per_call'])} CPU-s "
                            "per answer)", ["answer success", "citation precision",
                                            "unsupported sentences", "withheld",
                                            "no-answer answered", "ALCE citation recall",
                                            "ALCE citation precision"],
                            [[a["answer_success"], a["citation_precision"],
                              a["unsupported_sentence_rate"], a["withheld"],
                              a["no_answer_answered"], a["alce"]["citation_recall"],
                              a["alce"]["citation_precision"]]]))
    if "rewrite" in block:
        r, m = block["rewrite"], block["rewrite"]["nDCG@10"]
        parts.append(_table(f"Query rewrite on {r['questions']} paraphrase questions (BM25 "
                            "nDCG@10)", ["question", "rewrite", "Δ", "95% interval", "p"],
                            [[m["question"], m["rewrite"], m["delta"],
                              f"[{_num(m['ci'][0])}, {_num(m['ci'][1])}]", m["p_value"]]]))
    return "\n".join(parts) + "\n"


def _judge_tables(block: Mapping[str, Any]) -> list[str]:
    cost, judge = block["cost"], block["judge"]
    rows = [("test and calibration parts", judge["all"]), ("test part", judge["test"]),
            ("train part", judge["train"]),
            *((f"trait: {t}", v) for t, v in judge["by_trait"].items()),
            ("no-answer questions", judge["no_answer_questions"])]
    chosen = judge["train_threshold"]
    if judge["test_at_train_threshold"] is not None:
        rows.append((f"test part, P(yes) ≥ {chosen:.3f} (chosen on train)",
                     judge["test_at_train_threshold"]))
    out = [f"<p>{cost['calls']} judgements, {_num(cost['cpu_s_per_call'])} CPU-s per call "
           f"({_num(cost['wall_s_per_call'])} s wall).</p>",
           _table("Judge against the quote-anchored labels (P(yes) ≥ 0.5 unless said)",
                  ["", "pairs", "relevant", "agreement", "κ", "AUROC"],
                  [[name, v["n"], v["relevant"], v["agreement"], v["kappa"], v["auroc"]]
                   for name, v in rows])]
    rr = block["rerank"]
    out.append(_table(f"Rerank: BM25's top {rr['depth']} reordered by the judge "
                      f"({rr['questions']} questions)",
                      ["measure", "BM25", "reranked", "Δ", "95% interval", "p"],
                      [[m, v["bm25"], v["reranked"], v["delta"],
                        f"[{_num(v['ci'][0])}, {_num(v['ci'][1])}]", v["p_value"]]
                       for m, v in rr["measures"].items()]))
    for mode, g in block["gate"].items():
        if not g.get("measured", True):
            out.append(f"<p>{html.escape(mode)} gate: {html.escape(str(g['reason']))}</p>")
            continue
        gate_rows = []
        for name, s in g["scorers"].items():
            at = next(a for a in s["at_alpha"] if a["alpha"] == 0.1)
            gate_rows.append([name, s["auroc"], s["auroc_near_miss"],
                              at["coverage_answerable"], at["false_answer_rate"],
                              at["crag_score"], s["aurc"]])
        out.append(_table(f"{mode} gate (conformal, α = 0.1, calibrated on the sample's "
                          "calibration no-answer questions; logistic weights fitted on the "
                          "train sample)", ["signal", "AUROC", "AUROC near miss",
                                            "coverage (answerable)", "false answers",
                                            "CRAG score", "AURC"], gate_rows))
    return out


def _table(caption: str, head: list[str], rows: list[list[Any]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_num(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><caption>{html.escape(caption)}</caption><tr>{cells}</tr>{body}</table>"
