"""Writes the sync client (``brain_search_client/_sync``) from the async one (``_async``): one
source, two twins. ``--check``: exit 1 when ``_sync`` is not what ``_async`` gives (the tests run
it). Run it after changing ``_async``: ``python client/scripts/unasync.py``."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "brain_search_client"
CONFIG = Path(__file__).resolve().parents[2] / "pyproject.toml"
"""the repository's: line length and the lint rules"""
HEADER = "# Generated from _async/{name} by client/scripts/unasync.py: edit that file, then run the script.\n"
RULES: tuple[tuple[str, str], ...] = (
    (r"\basync def\b", "def"),
    (r"\bawait ", ""),
    (r"\basync with\b", "with"),
    (r"\basync for\b", "for"),
    (r"__aenter__", "__enter__"),
    (r"__aexit__", "__exit__"),
    (r"\.aclose\(", ".close("),
    (r"\bimport asyncio\b", "import time"),
    (r"\basyncio\.sleep\(", "time.sleep("),
    (r"\bAsync([A-Z]\w*)", r"\1"),
    (r"brain_search_client\._async\b", "brain_search_client._sync"),
    (r"\bawaited\b", "called"),
    (r"\bthe async client\b", "the sync client"),
)


YIELD_EACH = re.compile(r"^( *)for (\w+) in ([^\n]+):\n *yield \2\n", re.MULTILINE)
"""``for x in xs: yield x``: an async generator's only way, ``yield from xs`` in a sync one"""


def unasync(text: str) -> str:
    for pattern, repl in RULES:
        text = re.sub(pattern, repl, text)
    return YIELD_EACH.sub(r"\1yield from \3\n", text)


def generate(out_dir: Path) -> list[Path]:
    written = []
    for src in sorted((PACKAGE / "_async").glob("*.py")):
        target = out_dir / src.name
        target.write_text(HEADER.format(name=src.name) + unasync(src.read_text()))
        written.append(target)
    # the project's formatter and its settings, so the twins read as written by hand
    files = [str(p) for p in written]
    ruff = [sys.executable, "-m", "ruff"]
    config = ["--config", str(CONFIG)] if CONFIG.exists() else []
    subprocess.run([*ruff, "check", "-q", "--fix", *config, "--select", "I,F401", *files], check=False)
    subprocess.run([*ruff, "format", "-q", *config, *files], check=True)
    return written


def _read(path: Path) -> str | None:
    return path.read_text() if path.exists() else None


def main(argv: list[str]) -> int:
    if "--check" in argv:
        with tempfile.TemporaryDirectory() as tmp:
            # inside a package of the same name: the import sections come out as in the tree
            out = Path(tmp) / PACKAGE.name / "_sync"
            out.mkdir(parents=True)
            for init in (out.parent / "__init__.py", out / "__init__.py"):
                init.write_text("")
            made = {p.name: p.read_text() for p in generate(out)}
        stale = [name for name, text in made.items() if _read(PACKAGE / "_sync" / name) != text]
        if stale:
            print(f"_sync is stale ({', '.join(stale)}): run python client/scripts/unasync.py", file=sys.stderr)
            return 1
        return 0
    generate(PACKAGE / "_sync")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
