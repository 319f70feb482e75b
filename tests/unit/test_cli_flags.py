"""The CLI's face without a stack: one spelling of the API flags on every command (the old
`--url` / `--key` still accepted, unlisted), the terminal views of a recall at 80 columns, and the
tier headings in the words of the JSON fields."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import typer
from brain_search_client.render import render_list, render_tiered
from typer.testing import CliRunner

from brain_search.commands.cli import app
from brain_search.models import (
    Intent,
    MatchKind,
    MemoryResult,
    NodeRef,
    QueryAnalysis,
    RecallResponse,
    ResultMetadata,
    Scores,
    Tiers,
    Timings,
)

CLOSED_PORT = "http://127.0.0.1:9"  # nothing listens: a command that parsed its flags fails to connect


def _commands(cmd: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command under ``cmd`` (typer's click: groups have ``commands``)."""
    yield path, cmd
    for name, sub in getattr(cmd, "commands", {}).items():
        yield from _commands(sub, (*path, name))


def test_every_command_spells_the_api_flags_the_same() -> None:
    seen = {"--api-url": 0, "--api-key": 0}
    for path, cmd in _commands(typer.main.get_command(app)):
        for p in cmd.params:
            if p.param_type_name != "option":
                continue
            names = set(p.opts) | set(p.secondary_opts)
            assert not names & {"--url", "--key"}, (path, p.opts)
            if p.envvar == "BRAIN_API_URL":
                assert "--api-url" in p.opts, (path, p.opts)
            if p.envvar == "BRAIN_API_KEY":
                assert "--api-key" in p.opts, (path, p.opts)
            for flag in seen:
                seen[flag] += flag in names
    assert seen["--api-url"] >= 15 and seen["--api-key"] >= 15, seen


def test_the_old_spelling_still_works_unlisted() -> None:
    runner = CliRunner()
    env = {"BRAIN_API_URL": "", "BRAIN_API_KEY": ""}
    for args in (
        ["nodes", "list", "--url", CLOSED_PORT, "--key", "bsk_x"],
        ["nodes", "list", f"--url={CLOSED_PORT}", "--key=bsk_x"],
        ["nodes", "list", "--api-url", CLOSED_PORT, "--api-key", "bsk_x"],
        ["recall", "equity", "--url", CLOSED_PORT, "--key", "bsk_x"],
        ["recall", "equity", "--api-url", CLOSED_PORT, "--api-key", "bsk_x"],
        ["remember", "a note", "--api-url", CLOSED_PORT, "--api-key", "bsk_x"],
    ):
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 1 and "did not answer" in r.output, (args, r.exit_code, r.output)
    for command in (["nodes", "list"], ["recall"], ["memories", "get"], ["remember"], ["ingest"]):
        shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "200"}).output
        assert "--api-url" in shown and "--api-key" in shown, (command, shown)
        assert "--url " not in shown and "--key " not in shown, (command, shown)


def _result(i: int, z: float) -> MemoryResult:
    return MemoryResult(
        id=f"memory-with-a-rather-long-id-{i}",
        content=f"Memory {i}: " + "a long sentence about the equity split and the founders " * 4,
        node=NodeRef(id="n1", label="aiConnected/Brain/Architecture/Decisions"),
        scores=Scores(lexical=0.5, semantic=0.61, z_position=z, relevance=0.4321, match=0.5),
        match_kind=MatchKind.meaning,
        metadata=ResultMetadata(timestamp=datetime(2026, 1, 15, 10, tzinfo=UTC)),
    )


def _response() -> RecallResponse:
    results = [_result(i, z) for i, z in enumerate((0.1, 0.4, 0.6, 0.9), 1)]
    qa = QueryAnalysis(detected_intent=Intent.balanced, target_z=0.5, z_tolerance=0.2, confidence=0.7)
    tiers = Tiers(
        exact_matches=[results[0]],
        precise_matches=[results[1]],
        semantic_matches=[results[2]],
        conceptual_matches=[results[3]],
    )
    return RecallResponse(results=results, tiers=tiers, query_analysis=qa, timings=Timings())


def test_the_result_list_fits_80_columns_and_shows_whole_ids() -> None:
    """Issue 55.7: the id is printed whole (what `memories get` takes); a long one gets a line of
    its own, a short one shares the scores' line (two lines a memory)."""
    resp = _response()
    lines = render_list(resp, 80).splitlines()
    assert len(lines) == 3 * len(resp.results), lines
    assert all(len(line) <= 80 for line in lines), [len(line) for line in lines]
    first, scores, text = lines[0], lines[1], lines[2]
    assert first.split() == ["1", "memory-with-a-rather-long-id-1"], first
    assert "Z 0.10" in scores and "0.432" in scores, scores
    assert "Memory 1: a long sentence" in text and text.endswith("..."), lines
    short = resp.model_copy(
        update={"results": [r.model_copy(update={"id": f"m{i}"}) for i, r in enumerate(resp.results)]}
    )
    lines = render_list(short, 80).splitlines()
    assert len(lines) == 2 * len(resp.results) and lines[0].split()[:3] == ["1", "m0", "Z"], lines
    tiered = render_tiered(resp, columns=80)
    assert "memory-with-a-rather-long-id-4" in tiered.split() and all(len(x) <= 80 for x in tiered.splitlines())


def test_help_shows_no_type_after_a_flag_and_cuts_no_word() -> None:
    """Issue 55.7: `--tiered` is a plain flag (no `<bool>` after it) and, at 80 columns, every
    word of the help (the choices of --focus included) stays whole."""
    runner = CliRunner()
    for command in (["recall"], ["remember"], ["memories", "list"], ["forget"]):
        shown = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"}).output
        assert "<bool>" not in shown and all(len(line) <= 80 for line in shown.splitlines()), shown
        assert "Usage:" in shown and "--api-key" in shown, shown
    shown = runner.invoke(app, ["recall", "--help"], env={"COLUMNS": "80"}).output
    words = set(shown.replace("|", " ").replace("<", " ").replace(">", " ").split())
    for word in ("balanced", "conceptual", "--include-superseded", "--expand-related", "--in-process", "8601)"):
        assert word in words, (word, shown)


def test_tier_headings_are_the_json_tier_names_and_fit_80_columns() -> None:
    text = render_tiered(_response(), columns=80)
    for field in ("exact_matches", "precise_matches", "semantic_matches", "conceptual_matches"):
        words = field.replace("_", " ").capitalize()  # "Semantic matches": the JSON field's words
        assert any(line.split(" ", 1)[-1].startswith(words) for line in text.splitlines()), (words, text)
    assert "Broad" not in text
    assert all(len(line) <= 80 for line in text.splitlines()), text
    # heading + two lines per memory, three when its id is too long to share the scores' line (+ blank lines)
    assert len(text.strip().splitlines()) <= 4 * 4 + 3
