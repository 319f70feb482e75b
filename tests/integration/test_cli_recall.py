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
    cli = [sys.executable, "-m", "brain_search.cli", "recall", "--tenant", "alice"]
    out = subprocess.run([*cli, 'Find where I said "53% for me"', "--tiered"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for heading in ("🎯 Exact Matches (Z < 0.3)", "📍 Precise Matches", "💭 Conceptual Matches", "🌐 Broad Matches"):
        assert heading in text
    exact_block = text.split("📍")[0]
    assert "The equity split is 53% for me" in exact_block and "[Jan 15, 2026]" in exact_block

    out = subprocess.run([*cli, "equity", "--json", "--z", "0.2"], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["query_analysis"]["target_z"] == 0.2 and data["results"]

    out = subprocess.run([*cli, "equity", "--z", "3"], env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "z_value" in out.stdout

    # the tiered view says "nothing matched" instead of filling tiers with noise
    out = subprocess.run(
        [*cli, "quantum chromodynamics lattice simulations", "--tiered"], env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert "Nothing matched" in out.stdout and "nothing matched" in out.stdout

    out = subprocess.run([*cli, "equity", "--z-formula", "ratio"], env=env, capture_output=True, text=True)
    assert out.returncode == 2 and "ratio" in (out.stdout + out.stderr)
