"""Issue 54, "Done when": random interleavings of POST / PUT / PATCH / DELETE / forget / cascading
node delete / export → import on a few ids, on the real stack, for a bounded time
(``BRAIN_PROPERTY_BUDGET_S``, 60 s by default; the seed of each run is in the failure message).

A forget runs while the next operations are made (they are accepted after it began); writes are
not waited for, except before a forget, a node delete and an export, whose coverage is defined by
what is stored when they begin. After each run, with every task ended:
- nothing deleted or forgotten is readable (GET, the listing, the history) or searchable (recall);
- nothing accepted and not deleted is missing: the listing is exactly the model's ids, each with
  the text of its last accepted write;
- no id shows another's content (every text carries a token of its own), in GET, the listing,
  the history, recall, and an import of the export.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.integration.ingest_support import tenant_headers, wait_task

pytestmark = pytest.mark.integration
IDS = ("a", "b", "c")
CONVERSATIONS = ("c1", "c2")
# "settle": wait for the writes so far (an edit while a write of its memory is queued is a 409)
OPS = ("post", "post", "put", "put", "patch", "patch", "settle", "settle", "delete", "forget", "node_delete", "export")
BUDGET_S = float(os.environ.get("BRAIN_PROPERTY_BUDGET_S", "60"))


@dataclass
class Stored:
    content: str
    conversation: str
    node: str | None


@dataclass
class Model:
    present: dict[str, Stored] = field(default_factory=dict)
    owner: dict[str, str] = field(default_factory=dict)  # token → the id it was written to
    since_delete: dict[str, set[str]] = field(default_factory=dict)  # id → texts written since it was last deleted
    tasks: list[str] = field(default_factory=list)
    forgets: list[str] = field(default_factory=list)
    n: int = 0

    def text(self, memory_id: str) -> str:
        self.n += 1
        token = f"zq{self.n}x"
        self.owner[token] = memory_id
        return f"{memory_id} notes {token}"

    def wrote(self, memory_id: str, stored: Stored) -> None:
        self.present[memory_id] = stored
        self.since_delete.setdefault(memory_id, set()).add(stored.content)

    def deleted(self, memory_id: str) -> None:
        self.present.pop(memory_id, None)
        self.since_delete[memory_id] = set()


def _token(content: str) -> str:
    return next(w for w in content.split() if w.startswith("zq"))


class Run:
    def __init__(self, api: Any, headers: dict[str, str], rng: random.Random, log: list[str]) -> None:
        self.api, self.h, self.rng, self.log = api, headers, rng, log
        self.m = Model()
        self.with_history = 0  # memories forgotten with a history (how often the run tried that)

    def quiesce(self) -> None:
        for t in self.m.tasks:
            done = wait_task(self.api, self.h, t)
            self.log.append(f"task {done['state']} indexed {done['indexed']} superseded {done.get('superseded')}")
        self.m.tasks.clear()
        for f in self.m.forgets:
            deadline = time.monotonic() + 60
            while (s := self.api.get(f"/v1/forget/{f}", headers=self.h).json())["state"] == "running":
                assert time.monotonic() < deadline, s
                time.sleep(0.1)
            assert s["state"] == "succeeded", s
        self.m.forgets.clear()

    def body(self, memory_id: str) -> tuple[dict[str, Any], Stored]:
        stored = Stored(self.m.text(memory_id), self.rng.choice(CONVERSATIONS), self.rng.choice(["Proj", None]))
        body: dict[str, Any] = {"content": stored.content, "conversation_id": stored.conversation, "refresh": True}
        if stored.node:
            body.update(node_id=stored.node, create_nodes=True)
        return body, stored

    def step(self) -> None:
        op, mid = self.rng.choice(OPS), self.rng.choice(IDS)
        api, h = self.api, self.h
        if op == "post":
            body, stored = self.body(mid)
            r = api.post("/v1/memories", json={**body, "memory_id": mid}, headers=h)
            assert r.status_code == 202, r.text
            self.m.tasks.append(r.json()["task_id"])
            self.m.wrote(mid, stored)
        elif op == "put":
            body, stored = self.body(mid)
            r = api.put(f"/v1/memories/{mid}", json=body, headers=h)
            op = f"put {r.status_code}"
            assert r.status_code in (202, 404, 409), r.text
            if r.status_code == 202:
                self.m.tasks.append(r.json()["task_id"])
                self.m.wrote(mid, stored)
        elif op == "patch":
            content = self.m.text(mid)
            r = api.patch(f"/v1/memories/{mid}", json={"content": content, "refresh": True}, headers=h)
            op = f"patch {r.status_code}"
            assert r.status_code in (200, 202, 404, 409), r.text
            if r.status_code in (200, 202):
                if r.json().get("task_id"):
                    self.m.tasks.append(r.json()["task_id"])
                before = self.m.present[mid]
                self.m.wrote(mid, Stored(content, before.conversation, before.node))
        elif op == "delete":
            r = api.delete(f"/v1/memories/{mid}", headers=h)
            op = f"delete {r.status_code}"
            assert r.status_code in (202, 204, 404), r.text
            assert r.status_code != 404 or mid not in self.m.present, (mid, self.m.present)
            self.m.deleted(mid)
        elif op == "forget":
            self.quiesce()  # what it covers is what is stored when it begins
            conversation = self.rng.choice([*CONVERSATIONS, None])  # None: all
            what = {"conversation_id": conversation} if conversation else {"all": True}
            covered = [m for m, s in self.m.present.items() if conversation in (None, s.conversation)]
            for m in covered:
                self.with_history += bool(api.get(f"/v1/memories/{m}/history", headers=h).json()["versions"])
            r = api.post("/v1/forget", json=what, headers=h)
            assert r.status_code == 202, r.text
            self.m.forgets.append(r.json()["task_id"])
            for m in covered:
                self.m.deleted(m)
            op = f"forget {conversation}"
        elif op == "node_delete":
            self.quiesce()
            r = api.get("/v1/nodes", params={"prefix": "Proj"}, headers=h)
            assert r.status_code == 200, r.text
            nodes = [n for n in r.json()["nodes"] if n["label"] == "Proj"]
            if nodes:
                r = api.delete(f"/v1/nodes/{nodes[0]['id']}", params={"cascade": "true"}, headers=h)
                assert r.status_code in (200, 202, 204), r.text
                if r.status_code == 202:
                    _node_task(api, h, r.json()["task"]["task_id"])
                for m, s in list(self.m.present.items()):
                    if s.node == "Proj":
                        self.m.deleted(m)
        elif op == "settle":
            self.quiesce()
        elif op == "export":
            self.quiesce()
            self.export()
        self.log.append(f"{op} {mid}")

    def export(self) -> None:
        from typer.testing import CliRunner

        from brain_search.commands.cli import app

        copy = tenant_headers(self.api, f"copy-{os.urandom(4).hex()}")
        fd, path = tempfile.mkstemp(suffix=".jsonl")
        os.close(fd)
        env = {"BRAIN_API_URL": self.api.live_url}
        try:
            res = CliRunner().invoke(app, ["export", path], env={**env, "BRAIN_API_KEY": self.h["Authorization"][7:]})
            assert res.exit_code == 0, res.output
            res = CliRunner().invoke(app, ["import", path], env={**env, "BRAIN_API_KEY": copy["Authorization"][7:]})
            assert res.exit_code == 0, res.output
        finally:
            if os.path.exists(path):
                os.unlink(path)
        got = {m["memory_id"]: m["content"] for m in _listing(self.api, copy)}
        assert got == {m: s.content for m, s in self.m.present.items()}, ("import of the export", got)

    def check(self) -> None:
        api, h, m = self.api, self.h, self.m
        expected = {mid: s.content for mid, s in m.present.items()}
        listed = {x["memory_id"]: x["content"] for x in _listing(api, h)}
        assert listed == expected, ("listing", listed, expected)
        for mid in IDS:
            got = api.get(f"/v1/memories/{mid}", headers=h)
            history = api.get(f"/v1/memories/{mid}/history", headers=h)
            if mid in m.present:
                assert got.status_code == 200 and got.json()["content"] == expected[mid], (mid, got.text)
                old = {v["memory"]["content"] for v in history.json()["versions"]}
                # only this id's texts, and none from before it was last deleted or forgotten
                assert old <= m.since_delete[mid] - {expected[mid]}, (mid, "history", old)
            else:
                assert got.status_code == 404, (mid, got.text)
                assert history.status_code == 404 or not history.json()["versions"], (mid, history.text)
        live = {_token(c) for c in expected.values()}
        dead = [t for t in m.owner if t not in live]
        for token in self.rng.sample(dead, min(len(dead), 8)) + sorted(live):
            r = api.post("/v1/recall", json={"query": f"notes {token}", "limit": 20}, headers=h)
            assert r.status_code == 200, r.text
            for hit in r.json()["results"]:
                assert hit["id"] in expected and hit["content"] == expected[hit["id"]], ("recall", token, hit)


def _listing(api: Any, headers: dict[str, str]) -> list[dict[str, Any]]:
    r = api.get("/v1/memories", params={"limit": 1000}, headers=headers)
    assert r.status_code == 200, r.text
    return list(r.json()["memories"])


def _node_task(api: Any, headers: dict[str, str], task_id: str) -> None:
    deadline = time.monotonic() + 60
    while not (t := api.get(f"/v1/nodes/tasks/{task_id}", headers=headers).json())["completed"]:
        assert time.monotonic() < deadline, t
        time.sleep(0.1)


def test_random_interleavings_keep_what_was_accepted_and_forget_what_was_deleted(live_api, api) -> None:
    api.live_url = live_api
    deadline, runs, with_history = time.monotonic() + BUDGET_S, 0, 0
    while time.monotonic() < deadline or runs < 2:
        seed = int(os.environ.get("BRAIN_PROPERTY_SEED", random.randrange(2**32)))
        rng, log = random.Random(seed), []
        run = Run(api, tenant_headers(api, f"prop-{runs}-{seed}"), rng, log)
        try:
            for _ in range(rng.randint(12, 30)):
                run.step()
            run.quiesce()
            run.check()
        except AssertionError as exc:
            raise AssertionError(f"seed {seed}, operations {log}: {exc}") from exc
        runs, with_history = runs + 1, with_history + run.with_history
    print(f"{runs} runs, {with_history} memories forgotten with a history")
