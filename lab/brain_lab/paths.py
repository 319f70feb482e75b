"""Where the lab's files live in a checkout (the lab runs from the repository, never from a wheel)."""

from __future__ import annotations

from pathlib import Path

LAB = Path(__file__).resolve().parents[1]
"""``lab/``"""
REPO = LAB.parent
"""the repository root"""
DATA = LAB / "data"
"""labelled queries and their readings (``lab/data/README.md``)"""
REPORTS = LAB / "reports"
"""generated reports: ``eval/`` (``brain-search eval``), ``perf/`` and ``performance.md``"""
EVAL_REPORT = REPORTS / "eval"
LOADTESTS = REPO / "loadtests"
OUT = REPO / "out"
"""scratch output of runs (git-ignored)"""
