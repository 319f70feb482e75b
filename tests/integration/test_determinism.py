"""Same request, same stored memories: same answer. A recall depends on the request and the
tenant's memories only, never on what the API process answered before (issue 41): the same 50
questions give identical responses before and after 500 other queries, and after the API process
restarts, through a real ``brain-search serve``."""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import ADMIN_KEY
from tests.seed import Mem, seed_memories

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TENANT = "det-co"
TOPICS = (
    "budget invoice pricing revenue margin forecast quarter equity vesting salary hiring recruiter "
    "kubernetes deploy cluster latency index shard replica backup snapshot migration schema "
    "garden tomatoes compost seedlings watering frost greenhouse basil pruning harvest "
    "marathon knee physio intervals tempo stretching hydration sneakers trail recovery"
).split()
FILLER = "the a we it was and then so I think maybe really about with for on again later".split()


def _corpus(rng: random.Random) -> list[Mem]:
    """300 memories of different lengths over shared words: common and rare terms, repeats."""
    mems = []
    for i in range(300):
        n = rng.choice([6, 10, 18, 40, 90])
        words = [
            rng.choice(TOPICS[: 10 + (i % 4) * 10]) if rng.random() < 0.45 else rng.choice(FILLER) for _ in range(n)
        ]
        mems.append(
            Mem(
                TENANT,
                f"m{i}",
                " ".join(words).capitalize() + ".",
                node_path=f"Det/s{i % 12}",
                node_id=f"Det/s{i % 12}",
            )
        )
    return mems


def _questions(rng: random.Random, n: int, vocabulary: list[str]) -> list[str]:
    forms = ["what did we say about {}", "{}", "find exactly where I said {}", 'the "{}" notes', "ideas related to {}"]
    out = []
    for _ in range(n):
        words = " ".join(rng.sample(vocabulary, rng.randint(1, 4)))
        out.append(rng.choice(forms).format(words))
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serve(stack_settings: Any, role_env: Any, log_path: Path) -> Iterator[str]:
    port = _free_port()
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "BRAIN_OPENSEARCH_URL": stack_settings.opensearch_url,
        "BRAIN_INDEX_PREFIX": stack_settings.index_prefix,
        "BRAIN_CACHE_DIR": str(stack_settings.cache_dir),
        "BRAIN_ADMIN_KEY": ADMIN_KEY,
        "BRAIN_API_HOST": "127.0.0.1",
        "BRAIN_API_PORT": str(port),
        "BRAIN_RATE_LIMIT_PER_S": "10000",
        "BRAIN_RATE_LIMIT_BURST": "100000",
        **role_env("api"),
    }
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "brain_search.commands.cli", "serve"], env=env, stdout=log, stderr=log
        )
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                try:
                    if httpx.get(f"{url}/readyz", timeout=2).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                assert proc.poll() is None and time.monotonic() < deadline, log_path.read_text()[-2000:]
                time.sleep(0.5)
            yield url
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def _answers(url: str, headers: dict[str, str], questions: list[str]) -> list[dict[str, Any]]:
    out = []
    with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
        for q in questions:
            r = http.post("/v1/recall", json={"query": q, "limit": 10, "tiered": True})
            assert r.status_code == 200, r.text
            body = r.json()
            body.pop("timings")
            assert body.pop("recall_id")  # this recall's own id (feedback), new each time
            out.append(body)
    return out


def test_the_same_questions_get_the_same_answers_whatever_came_before(
    api, make_tenant, client, stack_settings, embedder, role_env, tmp_path
) -> None:
    rng = random.Random(41)
    headers = make_tenant(TENANT)
    seed_memories(client, stack_settings, embedder, _corpus(rng))
    questions = _questions(rng, 50, TOPICS)
    # other queries: the same words and 200 the tenant never stored (counted once each, first seen)
    others = _questions(rng, 500, TOPICS + [f"zq{i}x" for i in range(200)])
    log = tmp_path / "serve.log"

    with _serve(stack_settings, role_env, log) as url:
        first = _answers(url, headers, questions)
        _answers(url, headers, others)
        again = _answers(url, headers, questions)
    with _serve(stack_settings, role_env, log) as url:  # a restarted API: nothing counted yet
        restarted = _answers(url, headers, questions)

    assert sum(1 for a in first if a["results"]) >= 45, "the questions must find memories to compare"
    for q, a, b, c in zip(questions, first, again, restarted, strict=True):
        assert a == b, f"after 500 other queries: {q!r}"
        assert a == c, f"after a restart: {q!r}"
