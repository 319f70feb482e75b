"""The sync client is the async one without ``await`` (generated: client/scripts/unasync.py), and
the keyword arguments the methods take are the shared models' fields."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints

from brain_search_client import AdminClient, AsyncAdminClient, AsyncBrainClient, BrainClient
from brain_search_client import typed as t
from brain_search_client.models import memory as m
from brain_search_client.models.ingest import IngestOptions, MemoryPatch, MemoryReplace
from brain_search_client.models.recall import RecallRequest

CLIENT = Path(__file__).resolve().parents[1]


def test_the_sync_twin_is_what_the_async_source_gives() -> None:
    out = subprocess.run(
        [sys.executable, str(CLIENT / "scripts/unasync.py"), "--check"], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr


def _methods(obj: Any) -> dict[str, inspect.Signature]:
    found = {}
    for name in dir(type(obj)):
        if not name.startswith("_") and callable(getattr(obj, name)):
            found[name] = inspect.signature(getattr(obj, name))
    return found


def _resources(client: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(client).items() if not k.startswith("_")}


def test_both_twins_have_the_same_methods_with_the_same_parameters() -> None:
    pairs = [
        (BrainClient("http://x"), AsyncBrainClient("http://x")),
        (AdminClient("http://x"), AsyncAdminClient("http://x")),
    ]
    for sync, aio in pairs:
        assert _methods(sync).keys() == _methods(aio).keys()
        assert _resources(sync).keys() == _resources(aio).keys()
        for name, res in _resources(sync).items():
            twin = _resources(aio)[name]
            assert {k: list(s.parameters) for k, s in _methods(res).items()} == {
                k: list(s.parameters) for k, s in _methods(twin).items()
            }, name


def test_the_keyword_arguments_are_the_models_fields() -> None:
    # refresh: the methods' own ``wait`` sets it
    assert set(get_type_hints(t.MemoryFields)) == set(m.MemoryGiven.model_fields) - {"content"}
    assert set(get_type_hints(t.MemoryChanges)) == set(MemoryPatch.model_fields) - {"refresh"}
    assert set(get_type_hints(t.ReplaceFields)) == set(MemoryReplace.model_fields) - {"refresh", "content"}
    assert set(IngestOptions.model_fields) == {"chunk", "refresh", "create_nodes"}
    assert set(get_type_hints(t.RecallOptions)) == set(RecallRequest.model_fields) - {"query"}
