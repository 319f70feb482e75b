"""No import circle in the service or the workers, also through imports inside function bodies
(only ``if TYPE_CHECKING:`` imports, which never run, are left out). Found on 2026-12-04:
config → store.indices → store.templates → config, hidden in function bodies."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("brain_search", "workers")


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in (ROOT / pkg).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(path: Path, known: dict[str, Path], *, type_only: bool = False) -> set[str]:
    """The package's modules that ``path`` imports at run time, anywhere in the file (and those
    imported for type checking only, with ``type_only``)."""

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    tree = ast.parse(path.read_text())
    checking_only = {
        id(sub)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for sub in ast.walk(node)
    }
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if id(node) in checking_only and not type_only:
            continue
        if isinstance(node, ast.Import):
            found |= {resolve(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {resolve(f"{node.module}.{a.name}") for a in node.names}
    return {m for m in found if m}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_checker_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    """Between any two modules of the service and the workers, type-only imports included
    (``workers/tasks.py`` named ``BrainCelery`` from ``workers/app.py``, which imports it: the
    type has its own module, ``workers/brain_celery.py``)."""
    known = modules()
    graph = {m: imports(p, known, type_only=True) - {m} for m, p in known.items()}
    assert circles(graph) == []


# ------------------------------------------------------------------------------------------------
# the house by role (issue 57): the doors import the work, the work what it stands on, never up

LAYERS: dict[str, int] = {
    # the ground
    "brain_search": 0,
    "brain_search.config": 0,
    "brain_search.models": 0,
    "brain_search.errors": 0,
    "brain_search.index_names": 0,
    "brain_search.lru": 0,
    # what the work stands on
    "brain_search.store": 1,
    "brain_search.encoders": 1,
    "brain_search.graph": 1,
    "brain_search.tenancy": 1,
    # the service's work
    "brain_search.ingest": 2,
    "brain_search.retrieval": 2,
    "brain_search.feedback": 2,
    # the doors
    "brain_search.api": 3,
    "brain_search.mcp": 3,
    "brain_search.commands": 3,
    "workers": 3,
    # deployed beside the service, on the ground and the engine client only
    "brain_search.gateway": 1,
    # what `make run` and the tests start
    "brain_search.local": 4,
}
LOCAL_USERS = ("brain_search.local", "brain_search.commands")
"""who may import ``brain_search.local`` (and the tests)"""


def layer_of(module: str) -> tuple[str, int]:
    """The room a module lives in (its longest prefix in ``LAYERS``) and that room's layer."""
    name = module
    while name not in LAYERS:
        name = name.rpartition(".")[0]
        if not name:
            raise AssertionError(f"{module} lives in no room: add its package to LAYERS")
    return name, LAYERS[name]


def test_every_module_lives_in_a_room_and_only_the_ground_is_loose() -> None:
    ground = {
        "brain_search",
        "brain_search.config",
        "brain_search.models",
        "brain_search.errors",
        "brain_search.index_names",
        "brain_search.lru",
    }
    for module in modules():
        layer_of(module)  # raises for a module in no room
        if module.count(".") == 1 and module.startswith("brain_search."):
            path = ROOT / (module.replace(".", "/") + ".py")
            assert module in ground or not path.exists(), f"{module} is loose at the top of brain_search/"


def test_no_import_runs_up() -> None:
    known = modules()
    ups = []
    for module, path in known.items():
        room, level = layer_of(module)
        for target in imports(path, known) - {module}:
            target_room, target_level = layer_of(target)
            if target_room == room:
                continue
            if target_room == "brain_search.local":
                if not room.startswith(LOCAL_USERS):
                    ups.append(f"{module} imports the local stack's {target}")
            elif target_level > level:
                ups.append(f"{module} ({level}) imports {target} ({target_level})")
    assert ups == [], "\n".join(sorted(ups))


def test_the_layer_check_sees_an_import_that_runs_up() -> None:
    assert layer_of("brain_search.store.client") == ("brain_search.store", 1)
    assert layer_of("brain_search.retrieval.pipeline")[1] > layer_of("brain_search.graph.store.ops")[1]
    assert layer_of("brain_search.local.stack")[1] > layer_of("brain_search.api.app")[1]


DOORS = ("brain_search.api", "brain_search.mcp", "brain_search.commands", "workers")


def room_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    """Room → the rooms its modules import (type-only imports left out)."""
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        room = layer_of(module)[0]
        targets = {layer_of(t)[0] for t in imports(path, known) - {module}}
        graph.setdefault(room, set()).update(targets - {room})
    return graph


def test_no_two_rooms_of_one_layer_import_each_other() -> None:
    """Issue 70: same-layer imports were never checked, and ``encoders`` ↔ ``store`` made a circle
    between two foundations (encoders/follow.py imported the engine client). Rooms may import a
    room of their own layer, never in a circle."""
    assert circles(room_graph(modules())) == []


def test_the_local_stack_imports_no_door() -> None:
    """``local/`` starts the processes the doors run; it imports the service's work and the
    client, never a door (local/demo.py imported the CLI's renderer and client)."""
    known = modules()
    found = [
        f"{m} imports {t}"
        for m, p in known.items()
        if layer_of(m)[0] == "brain_search.local"
        for t in imports(p, known)
        if layer_of(t)[0].startswith(DOORS)
    ]
    assert found == [], found


def test_the_room_check_sees_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"a"}, "c": set()}) != []


# ------------------------------------------------------------------------------------------------
# retrieval/ by stage (issue 70): a recall runs plan → search → score → respond, and the modules
# of a stage import only the stages before it (and their own), type-only imports included

RETRIEVAL_STAGES: dict[str, int] = {
    "brain_search.retrieval": 0,
    "brain_search.retrieval.text": 0,
    "brain_search.retrieval.zscale": 0,
    "brain_search.retrieval.intent": 1,
    "brain_search.retrieval.engine": 1,
    "brain_search.retrieval.question": 2,
    "brain_search.retrieval.score": 2,
    "brain_search.retrieval.languages": 2,
    "brain_search.retrieval.plan": 3,
    "brain_search.retrieval.context": 4,
    "brain_search.retrieval.respond": 4,
    "brain_search.retrieval.pipeline": 5,
}
"""a module or subpackage of ``retrieval/`` → its stage (the ground, the question and the engine,
the score, the plan, the response, the pipeline that runs them)"""


def stage_of(module: str) -> tuple[str, int]:
    name = module
    while name not in RETRIEVAL_STAGES:
        name = name.rpartition(".")[0]
        if name == "brain_search":
            raise AssertionError(f"{module} has no stage: add it to RETRIEVAL_STAGES")
    return name, RETRIEVAL_STAGES[name]


def stage_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    """Stage → the stages its modules import, type-only imports included."""
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        if not module.startswith("brain_search.retrieval"):
            continue
        stage = stage_of(module)[0]
        targets = {
            stage_of(t)[0] for t in imports(path, known, type_only=True) if t.startswith("brain_search.retrieval")
        }
        graph.setdefault(stage, set()).update(targets - {stage})
    return graph


def test_no_retrieval_stage_imports_a_later_one() -> None:
    known = modules()
    later = [
        f"{stage} ({stage_of(stage)[1]}) imports {t} ({stage_of(t)[1]})"
        for stage, targets in stage_graph(known).items()
        for t in targets
        if stage_of(t)[1] > stage_of(stage)[1]
    ]
    assert later == [], "\n".join(sorted(later))


def test_no_import_circle_in_retrieval_even_for_types() -> None:
    """Neither between two stages nor between two modules (``context.py`` and ``pipeline.py``
    imported each other for ``SearchPlan``'s type until plan.py owned it)."""
    known = modules()
    assert circles(stage_graph(known)) == []
    retrieval = {m: p for m, p in known.items() if m.startswith("brain_search.retrieval")}
    graph = {m: imports(p, known, type_only=True) & set(retrieval) - {m} for m, p in retrieval.items()}
    assert circles(graph) == []


def test_the_stage_check_sees_an_import_that_runs_back() -> None:
    assert stage_of("brain_search.retrieval.engine.queries") == ("brain_search.retrieval.engine", 1)
    assert stage_of("brain_search.retrieval.score.scoring")[1] > stage_of("brain_search.retrieval.engine.search")[1]
    assert stage_of("brain_search.retrieval.pipeline")[1] > stage_of("brain_search.retrieval.respond")[1]
