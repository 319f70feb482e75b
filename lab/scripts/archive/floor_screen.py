"""Issue 22, "nothing matched": what the relevance floor does per *query*, screened on LoCoMo dev.

The floor (``z_floor``) is fitted on pairs: a relevant (question, evidence) pair against one
random unrelated pair. But a query meets a whole conversation, and the strongest of its ~600
unrelated turns is what decides whether a conversation that never discussed the topic says
"nothing matched". This asks every dev question (categories 1–4) of its own conversation and of
another one (limit 30, flat) and prints, for a grid of floors: how often the other conversation
says nothing and how many of its turns a tier would show, how many turns the own conversation
shows, and the share of the evidence turns among its top 30 that clears the floor.

Dev only, a screen: nothing here is reported as a result. Needs the eval index
(`brain-search eval` builds it) and a running engine.

    PYTHONPATH=. .venv/bin/python lab/scripts/floor_screen.py [--split dev]
"""

from __future__ import annotations

import argparse
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.store.client import make_client

FLOORS = (0.266, 0.3, 0.33, 0.36, 0.4, 0.45, 0.5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    a = ap.parse_args()
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=("locomo",)), log=print)
    ds = runner.split_of("locomo", a.split)
    retriever = Retriever(client, runner.indexed["locomo"].settings, QueryCache(runner.embedder, 8192))
    questions = [q for q in ds.queries if q.category != ADVERSARIAL]
    tenants = sorted(ds.memories)
    runner.embedder.encode([q.text for q in questions])
    own: list[list[tuple[float, bool, bool]]] = []  # per question: (strength, evidence, exact)
    far: list[list[tuple[float, bool]]] = []
    for q in questions:
        other = tenants[(tenants.index(q.tenant_id) + 1) % len(tenants)]
        req = RecallRequest(query=q.text, limit=30, time_words=False)
        mine, theirs = retriever.recall(q.tenant_id, req), retriever.recall(other, req)
        own.append([(r.scores.match, r.id in q.relevant, r.scores.match >= 1.0) for r in mine.results])
        far.append([(r.scores.match, r.scores.match >= 1.0) for r in theirs.results])
    n = len(questions)
    evidence = sum(1 for rows in own for _, rel, _ in rows if rel)
    print(f"LoCoMo {a.split}: {n} questions, {evidence} evidence turns in their own top 30")
    print("floor | other conv. says nothing | other conv. shown/q | own shown/q | evidence kept")
    for f in FLOORS:
        far_nothing = sum(1 for rows in far if not any(s >= f or ex for s, ex in rows)) / n
        far_shown = sum(1 for rows in far for s, ex in rows if s >= f or ex) / n
        own_shown = sum(1 for rows in own for s, _, ex in rows if s >= f or ex) / n
        kept = sum(1 for rows in own for s, rel, ex in rows if rel and (s >= f or ex)) / max(evidence, 1)
        print(f"{f:.3f} | {far_nothing:.3f} | {far_shown:.1f} | {own_shown:.1f} | {kept:.3f}")


if __name__ == "__main__":
    main()
