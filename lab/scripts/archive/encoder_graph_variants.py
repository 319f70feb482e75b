"""The query encoder's CPU per question on a load workload's questions, for the int8 graph the
service builds and for variants with onnxruntime's fused operators (issue 56, seventh session).

Variants, each on one intra-op thread, one question per call (as the API encodes):

- ``fp32`` and ``int8 as built``: the graph the service builds (``onnx_graph.bert_graph``) and its
  ``quantized_export``;
- ``int8, SkipLayerNorm + BiasGelu``: ``onnxruntime.transformers.optimizer`` on that graph (its
  attention patterns do not match: the attention stays as it is), then quantised;
- ``int8, Attention``: the graph with each layer's attention written as the contrib ``Attention``
  op (Q, K and V packed in one weight), quantised (``QAttention``);
- ``int8, Attention + SkipLayerNorm + BiasGelu``: that graph through the optimizer, quantised.

Printed: CPU per question over the workload's distinct questions (and over those of ≤ 16 word
pieces), and the mean cosine of each variant's vector to fp32's.

    PYTHONPATH=. .venv/bin/python lab/scripts/archive/encoder_graph_variants.py out/bench/<knee run>/workload.json
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from brain_search.config import Settings
from brain_search.encoders.onnx_graph import (
    bundled_model_path,
    encoder_dir,
    quantized_export,
    read_safetensors,
)
from brain_search.encoders.sessions import session_options


def attention_graph(weights: dict[str, np.ndarray], config: dict[str, Any]) -> Any:
    """``bert_graph`` with the attention of each layer as onnxruntime's contrib ``Attention``."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.array(value, order="C"), name))
        return name

    def w(name: str) -> str:
        return const(name, weights[prefix + name].astype(np.float32))

    def op(kind: str, inputs: list[str], out: str, domain: str | None = None, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def dense(x: str, layer: str, out: str) -> str:
        weight_t = const(f"{layer}.weight.T", weights[f"{prefix}{layer}.weight"].astype(np.float32).T)
        return op("Add", [w(f"{layer}.bias"), op("MatMul", [x, weight_t], f"{out}/matmul")], out)

    def layer_norm(x: str, ln: str, out: str) -> str:
        return op("LayerNormalization", [x, w(f"{ln}.weight"), w(f"{ln}.bias")], out, axis=-1, epsilon=eps)

    seq = op("Shape", ["input_ids"], "seq_len", start=1, end=2)
    table = const("position_table", np.arange(int(config["max_position_embeddings"]), dtype=np.int64))
    positions = op("Slice", [table, const("i_zero", np.array([0])), seq], "position_ids")
    words = op("Gather", [w("embeddings.word_embeddings.weight"), "input_ids"], "emb/words")
    types = op("Gather", [w("embeddings.token_type_embeddings.weight"), "token_type_ids"], "emb/types")
    summed = op(
        "Add",
        [
            op("Add", [words, types], "emb/wt"),
            op("Gather", [w("embeddings.position_embeddings.weight"), positions], "emb/pos"),
        ],
        "emb/sum",
    )
    x = layer_norm(summed, "embeddings.LayerNorm", "emb/out")
    mask = op("Cast", ["attention_mask"], "mask/i32", to=TensorProto.INT32)
    one = const("f_one", np.array(1.0, np.float32))
    half = const("f_half", np.array(0.5, np.float32))
    sqrt2 = const("f_sqrt2", np.array(math.sqrt(2.0), np.float32))
    for i in range(int(config["num_hidden_layers"])):
        p, a = f"encoder.layer.{i}", f"L{i}"
        s = f"{prefix}{p}.attention.self."
        qkv_w = np.concatenate([weights[s + n + ".weight"].astype(np.float32).T for n in ("query", "key", "value")], 1)
        qkv_b = np.concatenate([weights[s + n + ".bias"].astype(np.float32) for n in ("query", "key", "value")])
        qkv = [x, const(f"{a}/qkv_w", qkv_w), const(f"{a}/qkv_b", qkv_b), mask]
        context = op("Attention", qkv, f"{a}/attn", domain="com.microsoft", num_heads=heads)
        attended = dense(context, f"{p}.attention.output.dense", f"{a}/attn_out")
        x1 = layer_norm(op("Add", [attended, x], f"{a}/attn_res"), f"{p}.attention.output.LayerNorm", f"{a}/attn_ln")
        h = dense(x1, f"{p}.intermediate.dense", f"{a}/inter")
        erf = op("Erf", [op("Div", [h, sqrt2], f"{a}/gelu/scaled")], f"{a}/gelu/erf")
        gelu = op("Mul", [op("Mul", [h, op("Add", [erf, one], f"{a}/gelu/1p")], f"{a}/gelu/h"), half], f"{a}/gelu")
        x = layer_norm(
            op("Add", [dense(gelu, f"{p}.output.dense", f"{a}/out"), x1], f"{a}/out_res"),
            f"{p}.output.LayerNorm",
            f"{a}/out_ln",
        )
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))
    dims: list[str | int] = ["batch_size", "sequence_length"]
    inputs = [
        helper.make_tensor_value_info(n, TensorProto.INT64, dims)
        for n in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])
    graph = helper.make_graph(nodes, "bert-encoder-attention", inputs, [output], initializer=inits)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, producer_name="brain-search-lab", ir_version=8)


def variants(work: Path) -> dict[str, Path]:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    built = encoder_dir(Settings().models_dir)
    fp32 = built / "onnx" / "model.onnx"
    src = bundled_model_path()
    config = json.loads((src / "config.json").read_text())
    weights = read_safetensors(src / "model.safetensors")

    def quantised(path: Path) -> Path:
        out = path.with_name(path.stem + "-q.onnx")
        quantize_dynamic(
            path,
            out,
            weight_type=QuantType.QInt8,
            per_channel=True,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
        )
        return out

    def optimised(path: Path) -> Path:
        out = path.with_name(path.stem + "-opt.onnx")
        optimize_model(
            str(path),
            model_type="bert",
            num_heads=int(config["num_attention_heads"]),
            hidden_size=int(config["hidden_size"]),
            opt_level=1,
        ).save_model_to_file(str(out))
        return out

    attention = work / "attention.onnx"
    onnx.save_model(attention_graph(weights, config), str(attention))
    plain = work / "plain.onnx"  # a copy: the optimiser writes beside its input, not in the models cache
    shutil.copyfile(fp32, plain)
    return {
        "fp32": fp32,
        "int8 as built": quantized_export(built),
        "int8, SkipLayerNorm + BiasGelu": quantised(optimised(plain)),
        "int8, Attention": quantised(attention),
        "int8, Attention + SkipLayerNorm + BiasGelu": quantised(optimised(attention)),
    }


def main() -> None:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    items = json.loads(Path(sys.argv[1]).read_text())["items"]
    questions = list(dict.fromkeys((it.get("body") or {}).get("query") for it in items if it.get("kind") != "write"))
    questions = [q for q in questions if q][:300]
    built = encoder_dir(Settings().models_dir)
    tok = Tokenizer.from_file(str(built / "tokenizer.json"))
    tok.enable_truncation(256)
    tok.no_padding()
    rows = [e.ids for e in tok.encode_batch(questions)]
    short = [r for r in rows if len(r) <= 16]
    lengths = [len(r) for r in rows]
    print(
        f"{len(rows)} questions: word pieces mean {np.mean(lengths):.1f}, median {np.median(lengths):.0f};",
        f"{len(short)} of ≤ 16",
    )

    def encode(session: Any, row: list[int]) -> np.ndarray:
        ids = np.array([row], dtype=np.int64)
        names = {i.name for i in session.get_inputs()}
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        v = session.run(None, {k: x for k, x in feed.items() if k in names})[0][0].mean(0)
        return np.asarray(v / np.linalg.norm(v))

    def cpu(session: Any, batch: list[list[int]]) -> float:
        c0 = time.process_time()
        for row in batch:
            encode(session, row)
        return (time.process_time() - c0) * 1000.0 / len(batch)

    with tempfile.TemporaryDirectory() as tmp:
        paths = variants(Path(tmp))
        sessions = {
            k: ort.InferenceSession(str(p), session_options(1), providers=["CPUExecutionProvider"])
            for k, p in paths.items()
        }
        reference = [encode(sessions["fp32"], r) for r in rows]
        for name, session in sessions.items():
            cosine = float(np.mean([encode(session, r) @ v for r, v in zip(rows, reference, strict=True)]))
            per_question, at_short = cpu(session, rows), cpu(session, short)
            print(f"{name}: {per_question:.2f} ms per question, {at_short:.2f} ms at ≤ 16 pieces; cosine {cosine:.4f}")


if __name__ == "__main__":
    main()
