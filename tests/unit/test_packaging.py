"""The house rules, checked: the service is apart from the lab, its arrows point one way, the
wheel holds what a deployment runs (and nothing of the lab), and no module grows past 500 lines."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SERVICE = ("brain_search", "workers")
MAX_LINES = 500


def _modules(*tops: str) -> list[Path]:
    out: list[Path] = []
    for top in tops:
        out += sorted((ROOT / top).rglob("*.py"))
    return out


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_importing_the_api_and_the_worker_loads_no_lab_and_no_plotting() -> None:
    code = (
        "import sys\n"
        "import brain_search.api.app, brain_search.commands.cli, brain_search.mcp.server\n"
        "import workers.app, workers.tasks, workers.runtime, workers.cli\n"
        "bad = {'matplotlib', 'locust', 'pandas', 'brain_lab'}\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def test_arrows_point_one_way() -> None:
    for path in _modules("brain_search"):
        imported = _imports(path)
        assert not any(m.split(".")[0] in ("workers", "brain_lab") for m in imported), path
    for path in _modules("workers"):
        assert not any(m.split(".")[0] == "brain_lab" for m in _imports(path)), path
    # the ingest service is composed by its caller: it imports neither the API nor the workers
    assert not any(m.startswith("brain_search.api") for m in _imports(ROOT / "brain_search/ingest/service.py"))


def test_no_module_is_over_500_lines() -> None:
    long = [
        (str(p.relative_to(ROOT)), n)
        for p in _modules("brain_search", "workers", "lab/brain_lab")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    ]
    assert not long, long


@pytest.mark.slow
def test_the_wheel_ships_the_service_and_its_templates_not_the_lab(tmp_path: Path) -> None:
    had_build = (ROOT / "build").exists()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), "."],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    if not had_build:  # setuptools' scratch folder, made by this test
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    (wheel,) = tmp_path.glob("brain_search-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "index_templates/memories.json" in names
    assert "brain_search/data/intent_model.json" in names and "brain_search/static/app.js" in names
    assert "workers/tasks.py" in names
    assert not [n for n in names if n.startswith(("brain_lab/", "lab/", "tests/", "brain_search/eval/"))]
    assert not [n for n in names if "/bench/" in n or n.endswith("commands/eval.py")]
