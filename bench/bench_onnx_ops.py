"""ONNX Runtime's own speed on the ops the int8 MiniLM graph spends its time in.

Times, on one intra-op thread, one-node graphs of the ops whose kernels differ between
onnxruntime releases (``SkipLayerNormalization`` and ``Add`` + ``LayerNormalization`` on
a 256 x 384 input, ``BiasGelu`` on 256 x 1536), a feed-forward matrix product in int8
and in float32 (what decides int8's speed-up on a CPU: with AVX-512 VNNI or without),
and, given ``--model``, the whole model on one text of 64, 128 and 256 word pieces.
Needs only onnxruntime, onnx and numpy, so it runs in a bare venv per release
(docs/embeddings.md, "The runtime version"):

    python -m venv /tmp/ort && /tmp/ort/bin/pip install onnxruntime==1.29.0 onnx numpy
    MODEL=~/.local/share/groundkit/models/onnx/all-MiniLM-L6-v2-int8/*/model.onnx
    /tmp/ort/bin/python bench/bench_onnx_ops.py --model $MODEL
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROWS, HIDDEN, INNER = 256, 384, 1536


def session(model: bytes | str) -> Any:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def one_graph(nodes: list[Any], inputs: dict[str, int], inits: list[Any]) -> Any:
    """A session over ``nodes`` with float inputs of shape (1, ROWS, width) and output o."""
    def value(name: str, width: int) -> Any:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, ROWS, width])
    width = next(iter(inputs.values()))
    graph = helper.make_graph(nodes, "g", [value(n, w) for n, w in inputs.items()],
                              [value("o", width)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    return session(model.SerializeToString())


def mean_ms(run: Any, feed: dict[str, Any], repeat: int) -> float:
    """Mean ms a run over ``repeat`` runs after 20 warm-ups."""
    for _ in range(20):
        run(None, feed)
    start = time.perf_counter()
    for _ in range(repeat):
        run(None, feed)
    return (time.perf_counter() - start) / repeat * 1e3


def op_timings(repeat: int) -> dict[str, float]:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal((1, ROWS, HIDDEN)).astype(np.float32) for _ in range(2))
    ones, zeros = np.ones(HIDDEN, np.float32), np.zeros(HIDDEN, np.float32)
    norm = [numpy_helper.from_array(ones, "g"), numpy_helper.from_array(zeros, "b")]
    skip = one_graph([helper.make_node("SkipLayerNormalization", ["x", "y", "g", "b"], ["o"],
                                       domain="com.microsoft", epsilon=1e-12)],
                     {"x": HIDDEN, "y": HIDDEN}, norm)
    add_ln = one_graph([helper.make_node("Add", ["x", "y"], ["a"]),
                        helper.make_node("LayerNormalization", ["a", "g", "b"], ["o"],
                                         axis=-1, epsilon=1e-12)],
                       {"x": HIDDEN, "y": HIDDEN}, norm)
    gelu = one_graph([helper.make_node("BiasGelu", ["x", "c"], ["o"], domain="com.microsoft")],
                     {"x": INNER}, [numpy_helper.from_array(np.zeros(INNER, np.float32), "c")])
    wide = rng.standard_normal((1, ROWS, INNER)).astype(np.float32)
    return {"SkipLayerNormalization": mean_ms(skip.run, {"x": x, "y": y}, repeat),
            "Add+LayerNormalization": mean_ms(add_ln.run, {"x": x, "y": y}, repeat),
            "BiasGelu": mean_ms(gelu.run, {"x": wide}, repeat),
            **matmul_timings(rng, repeat)}


def matmul_timings(rng: np.random.Generator, repeat: int) -> dict[str, float]:
    """A feed-forward product, 256 x 384 by 384 x 1536: uint8 x int8 and float32."""
    weights = rng.integers(-127, 128, (HIDDEN, INNER), dtype=np.int8)
    out = {}
    for name, op, kind, data, w in (
        ("MatMulInteger u8 x s8", "MatMulInteger", TensorProto.UINT8,
         rng.integers(0, 256, (ROWS, HIDDEN), dtype=np.uint8), weights),
        ("MatMul float32", "MatMul", TensorProto.FLOAT,
         rng.standard_normal((ROWS, HIDDEN)).astype(np.float32), weights.astype(np.float32)),
    ):
        result = TensorProto.INT32 if kind == TensorProto.UINT8 else TensorProto.FLOAT
        graph = helper.make_graph(
            [helper.make_node(op, ["a", "w"], ["o"])], "g",
            [helper.make_tensor_value_info("a", kind, [ROWS, HIDDEN])],
            [helper.make_tensor_value_info("o", result, [ROWS, INNER])],
            [numpy_helper.from_array(w, "w")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        out[name] = mean_ms(session(model.SerializeToString()).run, {"a": data}, repeat)
    return out


def model_timings(path: str, repeat: int) -> dict[int, float]:
    model = session(path)
    names = [i.name for i in model.get_inputs()]
    out = {}
    for length in (64, 128, 256):
        ids = np.random.default_rng(0).integers(1000, 20000, (1, length)).astype(np.int64)
        feed = {names[0]: ids, names[1]: np.ones_like(ids)}
        out[length] = mean_ms(model.run, feed, repeat)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="an ONNX file taking input_ids/attention_mask")
    parser.add_argument("--repeat", type=int, default=300, help="runs per op (model: /20)")
    parser.add_argument("--out", type=Path, default=Path(".bench") / "onnx_ops.json",
                        help="JSON of the figures (default .bench/onnx_ops.json)")
    args = parser.parse_args()
    print(f"onnxruntime {ort.__version__}, one thread, ms a run")
    ops = op_timings(args.repeat)
    for name, ms in ops.items():
        rate = f"  ({ROWS * HIDDEN * INNER / ms / 1e6:.0f} GMAC/s)" if "MatMul" in name else ""
        print(f"  {name:24} {ms:7.3f}{rate}")
    model = model_timings(args.model, max(1, args.repeat // 20)) if args.model else {}
    for length, ms in model.items():
        print(f"  model, {length:3} word pieces  {ms:7.2f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"onnxruntime": ort.__version__, "ops_ms": ops,
                                    "model": args.model, "model_ms_by_length": model},
                                   indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
