"""The user-memory set's quality report (issue 55), on the real engine with the default encoder
(all-MiniLM-L6-v2): the figures are printed into the test log and written to
out/quality/user_memory.md. The issue's goals are reported MET or MISSED; the floors asserted here
are what today's code reaches (a little below what was measured), so a change that loses ground
fails."""

from __future__ import annotations

from pathlib import Path

import pytest
from brain_lab.eval.user_memory import report, run_user_memory, summary

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

OUT = Path("out/quality")


def test_the_user_memory_set(client, stack_settings, capsys) -> None:  # type: ignore[no-untyped-def]
    s = stack_settings.model_copy(
        update={"index_prefix": f"{stack_settings.index_prefix}-um", "embedding_model": "all-MiniLM-L6-v2"}
    )
    outcomes = run_user_memory(client, s)
    text = report("all-MiniLM-L6-v2", outcomes)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "user_memory.md").write_text("# The user-memory set\n\n" + text)
    with capsys.disabled():
        print("\n" + text)
    figures = summary(outcomes)
    answerable, unanswerable = figures["answerable"], figures["unanswerable"]
    # floors a little below what was measured on 2026-12-06 with strict mode, successors that take
    # their old version's place, themes and the floor-first slider (right first 0.887, R@5 0.981,
    # strict: 0.925 of the answerable keep their answer, 0.389 of the unanswerable return nothing;
    # the 5 spec phrasings behave; before them: 0.792 / 0.981 / 0.830 / 0.500, 4 of 5); the issue's
    # goals are above them, reported MET / MISSED
    assert answerable["right_first"] >= 0.85, text
    assert answerable["R@5"] >= 0.95, text
    assert answerable["strict_kept"] >= 0.88, text
    assert answerable["nothing_matched"] <= 0.08, text
    # a match in other words needs its cosine too (third session): 0.611 of the unanswerable
    # return nothing, 0.906 of the answerable keep their answer
    # a memory must be able to answer what is asked (sixth session, ``retrieval/score/answer_check.py``:
    # the names, the person by role, money or an identifying number): 0.833 return nothing
    assert unanswerable["strict_empty"] >= 0.78, text
    assert unanswerable["nothing_matched"] >= 0.78, text
    assert figures["spec phrasings"]["behave"] >= 0.8, text
    # a question that names a conversation is answered with conversations (fourth session: 0.571
    # right first, 0.429 before; all answerable 0.906)
    assert figures["conversation"]["right_first"] >= 0.55, text
    assert figures["changing-fact"]["right_first"] >= 0.85, text  # the current version first (item 3)
    assert figures["broad-theme"]["right_first"] >= 0.85, text  # the theme (item 2)
    # a quote or a number is found by its words: at most one miss each
    assert figures["quote"]["right_first"] >= 0.85, text
    assert figures["number-date"]["right_first"] >= 0.9, text
