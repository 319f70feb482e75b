"""The multilingual set's quality report (issues 53, 68), on the real engine, for the four encoders: the
figures are printed into the test log and written to out/quality/multilingual.md; the goals hold
for multilingual-e5-small (every quoted phrase in Exact, cross-lingual R@5 ≥ 0.8)."""

from __future__ import annotations

from pathlib import Path

import pytest
from brain_lab.eval.multilingual import report, run_multilingual, summary

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(600)]

OUT = Path("out/quality")


@pytest.fixture(scope="module")
def reports() -> dict[str, str]:
    return {}


SHORT = {"multilingual-e5-small": "e5", "all-MiniLM-L6-v2": "minilm", "bge-small-en-v1.5": "bge", "e5-small-v2": "e5v2"}


@pytest.mark.parametrize("encoder", list(SHORT))
def test_the_multilingual_set(client, stack_settings, encoder, reports, capsys) -> None:  # type: ignore[no-untyped-def]
    short = SHORT[encoder]
    s = stack_settings.model_copy(
        update={"index_prefix": f"{stack_settings.index_prefix}-ml-{short}", "embedding_model": encoder}
    )
    outcomes = run_multilingual(client, s)
    text = report(encoder, outcomes)
    reports[encoder] = text
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "multilingual.md").write_text("# The multilingual set\n\n" + "\n".join(reports.values()))
    with capsys.disabled():
        print("\n" + text)
    figures = summary(outcomes)
    if encoder == "multilingual-e5-small":
        assert figures["quoted phrases"]["Exact"] == 1.0, text
        assert figures["cross-lingual"]["R@5"] >= 0.8, text
    # a quoted phrase is found by its words whatever the encoder
    assert figures["quoted phrases"]["P@1"] >= 0.9, text
