"""Issue 55: what the floor's answer check (``retrieval/score/answer_check.py``) does on LoCoMo and
RealMem, with each question's evidence present and with it left out of the search.

A question that names someone or something, a person by role, or asks for money or an
identifying number, is answered only by a memory that can answer it; a memory that cannot does not
clear the floor. This asks every question of a split (LoCoMo without its adversarial category;
RealMem over the sessions before each question) with the check off and on, and prints:

- how many questions the check reads anything in;
- of the evidence memories in the top 10, the share that clears the floor (what strict mode
  keeps): the check's cost;
- the questions that keep at least one evidence memory in strict mode;
- the results that clear the floor per question with the evidence present (not evidence) and
  removed: the noise strict mode passes on;
- how often ``nothing_matched`` says so, evidence present and removed.

The ranking does not read the check, so R@10 is the same both ways. Needs the eval indices
(`brain-search eval` builds them) and a running engine.

    PYTHONPATH=. .venv/bin/python lab/scripts/answer_check_screen.py --split dev [--datasets locomo,realmem]
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from brain_lab.eval.datasets import ADVERSARIAL
from brain_lab.eval.runner import EvalOptions, EvalRunner

from brain_search.config import load_settings
from brain_search.encoders.queries import QueryCache
from brain_search.models import RecallRequest
from brain_search.retrieval.pipeline import Retriever
from brain_search.retrieval.score import scoring
from brain_search.retrieval.score.answer_check import asked
from brain_search.store.client import make_client


@contextmanager
def check(on: bool) -> Iterator[None]:
    real = scoring.answer_checked
    if not on:
        scoring.answer_checked = lambda *a, **k: None
    try:
        yield
    finally:
        scoring.answer_checked = real


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", default="dev")
    ap.add_argument("--datasets", default="locomo,realmem")
    a = ap.parse_args()
    names = tuple(a.datasets.split(","))
    settings = load_settings(index_prefix="bt-evalrun")
    client = make_client(settings)
    runner = EvalRunner(client, settings, EvalOptions(parts=("retrieval",), datasets=names), log=print)
    for name in names:
        ds = runner.split_of(name, a.split)
        retriever = Retriever(client, runner.indexed[name].settings, QueryCache(runner.embedder, 16384))
        questions = [q for q in ds.queries if q.category != ADVERSARIAL]
        runner.embedder.encode([q.text for q in questions])
        read = sum(1 for q in questions if asked(q.text).checks)
        print(f"\n{name} {a.split}: {len(questions)} questions, the check reads something in {read}")
        print(
            "check | evidence in top 10 kept | questions keeping evidence | noise kept/q present | "
            "kept/q removed | nothing_matched present | nothing_matched removed"
        )
        for on in (False, True):
            ev = kept = q_kept = 0
            noise = noise_gone = said = said_gone = 0
            with check(on):
                for q in questions:
                    req = RecallRequest(query=q.text, limit=10, time_words=False, until=q.until)
                    full = retriever.recall(q.tenant_id, req)
                    gone = retriever.recall(q.tenant_id, req, exclude=list(q.relevant))
                    rel = [r for r in full.results if r.id in q.relevant]
                    ev += len(rel)
                    kept += sum(r.scores.clears_floor for r in rel)
                    q_kept += any(r.scores.clears_floor for r in rel)
                    noise += sum(r.scores.clears_floor for r in full.results if r.id not in q.relevant)
                    noise_gone += sum(r.scores.clears_floor for r in gone.results)
                    said += full.query_analysis.nothing_matched
                    said_gone += gone.query_analysis.nothing_matched
            n = max(len(questions), 1)
            print(
                f"{'on' if on else 'off'} | {kept / max(ev, 1):.3f} ({kept}/{ev}) | {q_kept / n:.3f} | "
                f"{noise / n:.2f} | {noise_gone / n:.2f} | {said / n:.3f} | {said_gone / n:.3f}"
            )


if __name__ == "__main__":
    main()
