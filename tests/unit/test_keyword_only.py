"""Long signatures are keyword-only (issue 70): no function or method of the service
(``brain_search/``) or the workers takes more than four positional parameters, ``self`` and
``cls`` not counted; past the fourth comes ``*,``, so a caller cannot swap two floats, two
booleans or two ids by their place."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_POSITIONAL = 4

SKIPPED: tuple[str, ...] = ()
"""paths the walk leaves out (none: retrieval/ took its keyword-only parameters with its move by stage)"""

EXEMPT = {
    ("brain_search/store/http.py", "perform_request"): (
        "overrides opensearch-py's Connection.perform_request: the library's Transport calls it with"
        " method, url, params and body by place, and the override must keep the supertype's signature"
    ),
}
"""(module, function) -> why its signature is not ours to change"""


def positional(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    names = [a.arg for a in fn.args.posonlyargs + fn.args.args]
    return names[1:] if names and names[0] in ("self", "cls") else names


def modules() -> dict[str, ast.Module]:
    out = {}
    for pkg in ("brain_search", "workers"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(SKIPPED):
                out[rel] = ast.parse(path.read_text(), filename=rel)
    return out


def long_positional(tree: ast.Module) -> list[tuple[str, int, list[str]]]:
    return [
        (fn.name, fn.lineno, positional(fn))
        for fn in ast.walk(tree)
        if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and len(positional(fn)) > MAX_POSITIONAL
    ]


def test_no_service_function_takes_more_than_four_positional_parameters() -> None:
    found = [
        f"{rel}:{line} {name}({', '.join(params)})"
        for rel, tree in modules().items()
        for name, line, params in long_positional(tree)
        if (rel, name) not in EXEMPT
    ]
    assert not found, "put `*,` after the fourth parameter (and pass the rest by keyword):\n" + "\n".join(found)


def test_every_exemption_is_still_needed() -> None:
    trees = modules()
    stale = [
        key
        for key in EXEMPT
        if key[0] not in trees or key[1] not in {name for name, _, _ in long_positional(trees[key[0]])}
    ]
    assert not stale, f"exempt but no longer long (drop them from EXEMPT): {stale}"


def test_the_check_sees_a_long_signature() -> None:
    tree = ast.parse(
        "def f(a, b, c, d, e): ...\n"
        "def g(a, b, c, d, *, e): ...\n"
        "class K:\n"
        "    def m(self, a, b, c, d): ...\n"
        "    def n(self, a, b, c, d, e, f=1): ...\n"
    )
    assert [(name, len(params)) for name, _, params in long_positional(tree)] == [("f", 5), ("n", 6)]
