"""``pip install ./client`` in a fresh virtualenv brings httpx and pydantic and their own few
dependencies: none of the server's (no engine client, no model runtime, no queue, no numpy)."""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

CLIENT = Path(__file__).resolve().parents[1]
SERVER_ONLY = {"onnxruntime", "celery", "opensearch-py", "numpy", "onnx", "tokenizers", "redis", "fastapi", "torch"}
ALLOWED = {
    "brain-search-client",
    "httpx",
    "httpcore",
    "h11",
    "anyio",
    "idna",
    "sniffio",
    "certifi",
    "pydantic",
    "pydantic-core",
    "annotated-types",
    "typing-extensions",
    "typing-inspection",
    "pip",
    "setuptools",
    "wheel",
    "exceptiongroup",
}


@pytest.mark.slow
def test_a_fresh_install_of_the_client_holds_none_of_the_server(tmp_path: Path) -> None:
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    py = env / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(CLIENT)], check=True, timeout=600)
    listed = subprocess.run(
        [str(py), "-m", "pip", "list", "--format", "json"], check=True, capture_output=True, text=True
    )
    installed = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    print("installed:", sorted(installed))
    assert not installed & SERVER_ONLY
    assert installed <= ALLOWED, sorted(installed - ALLOWED)
    code = (
        "import sys, brain_search_client as c; from brain_search_client import BrainClient, AsyncBrainClient;"
        "print(sorted(m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "('brain_search', 'opensearchpy', 'numpy', 'onnxruntime', 'celery', 'langchain_core', 'llama_index')))"
    )
    out = subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"
    assert sys.version_info >= (3, 11)
