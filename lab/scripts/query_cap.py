"""What a shorter query cap for the encoder (``BRAIN_QUERY_MAX_TOKENS``, 256 today) costs in
quality: the defaults' recall on a split with each query's *vector* made from its first N word
pieces only (the lexical query keeps every word), against N = 256, in one process.

A long question is the API's largest CPU cost under load (lab/reports/performance.md): 256 word
pieces take ~40 ms of one core to encode, 128 about half. RealMem's questions are the long ones.

    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/query_cap.py \
        --split dev --datasets realmem,locomo,scifact --caps 256,128,64
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME, brain_systems
from brain_lab.eval.retrieval_eval import LIMIT_OF, METRICS_OF, evaluate_systems
from brain_lab.eval.runner import EvalOptions, EvalRunner
from tokenizers import Tokenizer

from brain_search.config import load_settings
from brain_search.embedding import Embedder
from brain_search.store.client import make_client


class CappedQueries:
    """``inner`` over each text cut after its first ``cap`` word pieces ([CLS] and [SEP] included)."""

    def __init__(self, inner: Embedder, tokenizer: Tokenizer, cap: int) -> None:
        self.inner, self.tokenizer, self.cap = inner, tokenizer, cap
        self.name, self.dimension = inner.name, inner.dimension  # type: ignore[attr-defined]
        self.cut = 0

    def _cut(self, text: str) -> str:
        offsets = self.tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= self.cap - 2:
            return text
        self.cut += 1
        return text[: offsets[self.cap - 3][1]]

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return self.inner.encode([self._cut(t) for t in texts])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="realmem,locomo,scifact")
    ap.add_argument("--caps", default="256,128,64")
    a = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    names = tuple(a.datasets.split(","))
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=names), log=lambda *_: None)
    tokenizer = Tokenizer.from_file(str(settings.models_dir / f"{settings.embedding_model}-onnx" / "tokenizer.json"))
    tokenizer.no_padding()  # the export's file pads (and truncates) to 128
    tokenizer.no_truncation()
    for name in names:
        ds = runner.split_of(name, a.split)  # type: ignore[arg-type]
        s = runner.indexed[name].settings
        for cap in (int(c) for c in a.caps.split(",")):
            capped = CappedQueries(runner.embedder, tokenizer, cap)
            capped.encode([q.text for q in ds.queries])
            cut, capped.cut = capped.cut, 0
            systems = {x.name: x for x in brain_systems(client, s, capped, reference_times=ds.reference_times)}
            system = systems.get(Z_AWARE_NO_TIME) or systems[Z_AWARE]
            row = evaluate_systems(ds, [system], METRICS_OF[name], LIMIT_OF[name]).table()[system.name]
            shown = "  ".join(f"{m} {float(v):.4f}" for m, v in row.items())
            print(f"{name} {a.split} cap {cap}: {cut} of {len(ds.queries)} queries cut; {shown}", flush=True)


if __name__ == "__main__":
    main()
