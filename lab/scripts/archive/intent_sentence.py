"""Reading the intent (the Z target's cues) from the asking sentence of a message of several
sentences only, as time words are (lab/README.md, "Time in words in chat messages"): the defaults'
recall on a split with the regex detector's ``analyze`` replaced in this process.

Modes: ``base`` (today), ``A`` (a message whose sentences ask: the cues of those; none asks: the
whole message), ``B`` (none asks: no cues, balanced). The lexical query is always the whole
message's.

    BRAIN_DATA_DIR=../shared/data PYTHONPATH=.:lab .venv/bin/python lab/scripts/intent_sentence.py \
        dev realmem,locomo base,A,B
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from dataclasses import replace

from brain_lab.eval.brain_systems import Z_AWARE, Z_AWARE_NO_TIME, Z_NAIVE, brain_systems
from brain_lab.eval.retrieval_eval import LIMIT_OF, METRICS_OF, evaluate_systems
from brain_lab.eval.runner import EvalOptions, EvalRunner

import brain_search.retrieval.intent.detect as det
import brain_search.retrieval.intent.model as intent_model
from brain_search.config import load_settings
from brain_search.retrieval.question import timewords
from brain_search.store.client import make_client

orig = det.analyze


def variant(mode):
    def analyze(query, max_chars=det.MAX_QUERY_CHARS):
        whole = orig(query, max_chars)
        parts = timewords.sentences(query)
        if len(parts) < 2:
            return whole
        asking = [p.text for p in parts if p.asks]
        if not asking:
            if mode == "A":
                return whole
            sub = None
        else:
            sub = orig(" ".join(a.strip() for a in asking), max_chars)
        if sub is None:
            return replace(
                whole,
                detected_intent=det.Intent.balanced,
                target_z=0.5,
                z_tolerance=0.3,
                confidence=0.5,
                cues=(),
                phrases=(),
            )
        return replace(sub, lexical_query=whole.lexical_query)

    return analyze


split, names, modes = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
settings = load_settings(index_prefix="bt-evalrun")
client = make_client(settings)
runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=tuple(names)), log=lambda *a: None)
for name in names:
    ds = runner.split_of(name, split)
    runner.embedder.encode([q.text for q in ds.queries])
    s = runner.indexed[name].settings
    for mode in modes:
        det.analyze = intent_model.analyze = orig if mode == "base" else variant(mode)
        systems = {x.name: x for x in brain_systems(client, s, runner.embedder, reference_times=ds.reference_times)}
        chosen = [systems.get(Z_AWARE_NO_TIME) or systems[Z_AWARE]]
        if mode == "base" and Z_NAIVE in systems:
            chosen.append(systems[Z_NAIVE])
        res = evaluate_systems(ds, chosen, METRICS_OF[name], LIMIT_OF[name])
        for sysname, row in res.table().items():
            print(name, split, mode, sysname, {m: round(float(v), 4) for m, v in row.items()}, flush=True)
