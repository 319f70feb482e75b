from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.integration.recall_corpus import index_corpus

pytestmark = pytest.mark.integration


def test_cli_recall_tiered_and_json(api, make_tenant, client, stack_settings) -> None:
    make_tenant("alice")
    index_corpus(api.app.state.brain, client, "alice")
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_INDEX_PREFIX": stack_settings.index_prefix,
        "BRAIN_OPENSEARCH_URL": stack_settings.opensearch_url,
        "BRAIN_CACHE_DIR": str(stack_settings.cache_dir),
        "COLUMNS": "200",
    }
    env.pop("BRAIN_API_URL", None)
    cli = [sys.executable, "-m", "brain_search.commands.cli", "recall", "--in-process", "--tenant", "alice"]
    out = subprocess.run([*cli, 'Find where I said "53% for me"', "--tiered"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for heading in ("🎯 Exact matches (Z < 0.3)", "📍 Precise matches", "💭 Semantic matches", "🌐 Conceptual matches"):
        assert heading in text  # the tiers in the JSON's words (semantic_matches, conceptual_matches)
    exact_block = text.split("📍")[0]
    assert "The equity split is 53% for me" in exact_block and "[Jan 15, 2026]" in exact_block

    out = subprocess.run([*cli, "equity", "--json", "--z", "0.2"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["query_analysis"]["target_z"] == 0.2 and data["results"]

    out = subprocess.run([*cli, "equity", "--z", "3"], env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "--z: " in out.stdout and "z_value" not in out.stdout, out.stdout

    # the tiered view says "nothing matched" instead of filling tiers with noise
    out = subprocess.run(
        [*cli, "quantum chromodynamics lattice simulations", "--tiered"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "Nothing matched" in out.stdout and "nothing matched" in out.stdout

    out = subprocess.run([*cli, "equity", "--z-formula", "ratio"], env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "ratio" in (out.stdout + out.stderr)


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The real command in its own process (the terminal width comes from COLUMNS, as in a shell)."""
    return subprocess.run(
        [sys.executable, "-m", "brain_search.commands.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )


def _http_env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", **extra}
    for name in ("BRAIN_API_URL", "BRAIN_API_KEY"):
        env.pop(name, None)
    return env


def test_cli_recall_over_http_reads_at_80_columns(live_api, api, alice) -> None:
    """Issue 42 item 8: an 80-column terminal shows one or two lines per memory (rank, short id, Z,
    relevance, a cut of the text), tier headings in the JSON's words, and --since / --until /
    --reference-time scope a recall (bad input names the flag)."""
    key = alice["Authorization"].split()[1]
    env = _http_env(COLUMNS="80")
    http = ["--api-url", live_api, "--api-key", key]

    data = json.loads(_cli("recall", "equity split for the founders", *http, "--json", env=env).stdout)
    ids = [r["id"] for r in data["results"]]
    out = _cli("recall", "equity split for the founders", *http, env=env)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert all(len(line) <= 80 for line in lines), lines
    assert len(lines) <= 2 * len(ids) + 4, out.stdout  # + the analysis (it may wrap) and the recall id
    for rank, mid in enumerate(ids, 1):
        assert any(line.split()[:2] == [str(rank), mid] for line in lines), (rank, mid, out.stdout)

    out = _cli("recall", 'Find where I said "53% for me"', *http, "--tiered", env=env)
    assert out.returncode == 0, out.stderr
    for words in ("Exact matches", "Precise matches", "Semantic matches", "Conceptual matches"):
        assert words in out.stdout, out.stdout
    assert "Broad" not in out.stdout and all(len(line) <= 80 for line in out.stdout.splitlines()), out.stdout

    # a time scope: explicit, and the time words' reference
    scoped = _cli(
        "recall", "equity", *http, "--json", "--since", "2026-01-11", "--until", "2026-01-20T23:59:59Z", env=env
    )
    assert scoped.returncode == 0, scoped.stdout + scoped.stderr
    data = json.loads(scoped.stdout)
    assert {r["id"] for r in data["results"]} <= {"eq", "cto"} and "eq" in {r["id"] for r in data["results"]}
    tr = data["query_analysis"]["time_range"]
    assert tr["source"] == "request" and tr["since"].startswith("2026-01-11"), tr
    one_day = _cli(
        "recall", "Jacob CTO pay", *http, "--json", "--since", "2026-01-12", "--until", "2026-01-12", env=env
    )
    assert [r["id"] for r in json.loads(one_day.stdout)["results"]] == ["cto"], one_day  # a date: the whole day
    relative = _cli(
        "recall",
        "what did we decide last week about equity",
        *http,
        "--json",
        "--reference-time",
        "2026-01-20",
        "--time-words",
        env=env,
    )
    assert relative.returncode == 0, relative.stdout + relative.stderr
    tr = json.loads(relative.stdout)["query_analysis"]["time_range"]
    assert tr["source"] == "words" and tr["reference_time"].startswith("2026-01-20"), tr
    for flag in ("--since", "--until", "--reference-time"):
        bad = _cli("recall", "equity", *http, flag, "last tuesday-ish", env=env)
        assert bad.returncode == 2 and flag in bad.stdout + bad.stderr and "ISO" in bad.stdout + bad.stderr, bad


def test_cli_remember_is_searchable_on_return(live_api, api, make_tenant) -> None:
    """Issue 42 item 8: `brain-search remember "text"` writes one memory through the API and, by
    default, returns once it is searchable; an unknown node names the flag that creates it."""
    key = make_tenant("rem-co")["Authorization"].split()[1]
    env = _http_env(COLUMNS="100")
    http = ["--api-url", live_api, "--api-key", key]

    out = _cli("remember", "Ilse keeps the spare keys under the blue planter", *http, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "searchable" in out.stdout, out.stdout
    found = json.loads(_cli("recall", "spare keys blue planter", *http, "--json", env=env).stdout)
    assert found["results"] and "spare keys" in found["results"][0]["content"], found
    assert found["results"][0]["id"] in out.stdout  # the id it printed

    unknown = _cli("remember", "Maya wants to see Fushimi Inari", "--node", "Travel/Japan", *http, env=env)
    assert unknown.returncode == 1 and "--create-nodes" in unknown.stdout, unknown.stdout
    assert "create_nodes" not in unknown.stdout and "--node: unknown node 'Travel/Japan'" in unknown.stdout, unknown

    fields = [
        *("--node", "Travel/Japan", "--create-nodes", "--conversation", "trip-1"),
        *("--time", "2026-03-02T10:00:00Z", "--source", "chat", "--id", "maya-1"),
    ]
    out = _cli("remember", "Maya wants to see Fushimi Inari", *fields, *http, env=env)
    assert out.returncode == 0 and "maya-1" in out.stdout, out.stdout + out.stderr
    got = api.get("/v1/memories/maya-1", headers={"Authorization": f"Bearer {key}"}).json()
    assert (got["node_path"], got["conversation_id"], got["source"]) == ("Travel/Japan", "trip-1", "chat"), got
    assert got["timestamp"].startswith("2026-03-02T10:00:00"), got

    queued = _cli("remember", "a note not waited for", "--no-wait", *http, env=env)
    assert queued.returncode == 0 and "queued" in queued.stdout and "not searchable yet" in queued.stdout, queued

    bad = _cli("remember", "a note", "--time", "next-ish", *http, env=env)
    assert bad.returncode == 2 and "--time" in bad.stdout + bad.stderr, bad

    # the same words on the other commands that name a node
    upd = _cli(
        "memories", "update", "maya-1", "-c", "Maya wants to see the shrine", "--node", "Nowhere/Else", *http, env=env
    )
    assert upd.returncode == 1 and "--create-nodes" in upd.stdout and "create_nodes" not in upd.stdout, upd.stdout


def test_cli_recall_shows_the_conversation_at_80_columns(live_api, api, make_tenant, client, embedder) -> None:
    """Issue 42 item 5: "that conversation about X" lists the conversation with the turns around
    its best hit, readable at 80 columns; --context sets how many (0–5), a bad one names the flag's field."""
    from tests.integration.test_conversations import QUESTION, seed_offsite

    key = make_tenant("alice")["Authorization"].split()[1]
    seed_offsite(client, api.app.state.brain.settings, embedder)
    env = _http_env(COLUMNS="80")
    http = ["--api-url", live_api, "--api-key", key]

    out = _cli("recall", QUESTION, *http, env=env)
    assert out.returncode == 0, out.stderr
    assert all(len(line) <= 80 for line in out.stdout.splitlines()), out.stdout
    convs = out.stdout.split("💬 Conversations")[1]
    first = convs.strip().splitlines()
    assert first[0].split()[:2] == ["1", "conv-offsite"] and "[Work/Team]" in first[0], convs
    assert first[1].startswith("   * Maya: Should we hold the team offsite"), convs
    assert "venue by the river" in first[3], convs

    data = json.loads(_cli("recall", "Lisbon offsite", *http, "--context", "5", "--json", env=env).stdout)
    offsite = next(c for c in data["conversations"] if c["conversation_id"] == "conv-offsite")
    assert [t["id"] for t in offsite["turns"]] == ["t1", "t2", "t3", "t4", "t5"]
    plain = _cli("recall", "Lisbon offsite", *http, env=env)
    assert plain.returncode == 0 and "Conversations" not in plain.stdout
    bad = _cli("recall", "Lisbon offsite", *http, "--context", "9", env=env)
    assert bad.returncode == 2 and "context" in bad.stdout + bad.stderr, bad
