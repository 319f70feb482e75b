"""Every Python example of docs/client.md and of the README's quickstart runs, in order, against
the real stack (the API served by uvicorn), as a reader would paste it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from brain_search_client import AdminClient

from tests.conftest import ADMIN_KEY

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def blocks(doc: str) -> list[str]:
    return BLOCK.findall((ROOT / doc).read_text())


def _env(monkeypatch: pytest.MonkeyPatch, live_api: str, tenant: str) -> None:
    with AdminClient(live_api, admin_key=ADMIN_KEY) as admin:
        admin.tenants.ensure(tenant)
        key = admin.keys.create(tenant, label="docs").key
    monkeypatch.setenv("BRAIN_API_URL", live_api)
    monkeypatch.setenv("BRAIN_API_KEY", key)
    monkeypatch.setenv("BRAIN_ADMIN_KEY", ADMIN_KEY)


def test_every_example_of_the_client_guide_runs(live_api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("langchain_core", reason="the guide's retriever examples need brain-search-client[langchain]")
    pytest.importorskip("llama_index.core", reason="the guide's retriever examples need [llamaindex]")
    _env(monkeypatch, live_api, "docs")
    examples = blocks("docs/client.md")
    assert len(examples) >= 7
    namespace: dict[str, object] = {"__name__": "docs_client"}
    for i, code in enumerate(examples):
        exec(compile(code, f"docs/client.md example {i + 1}", "exec"), namespace)


def test_the_readme_quickstart_runs(live_api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _env(monkeypatch, live_api, "demo")
    (quickstart,) = blocks("README.md")
    exec(compile(quickstart, "README.md quickstart", "exec"), {"__name__": "readme"})
