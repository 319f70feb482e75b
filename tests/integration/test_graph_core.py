import pytest

from brain_search.errors import InvalidInput, NotFound
from brain_search.graph.store import normalize_label

pytestmark = pytest.mark.integration


def test_normalize_label() -> None:
    assert normalize_label(" aiConnected//Brain/ ") == "aiConnected/Brain"
    with pytest.raises(InvalidInput):
        normalize_label("///")


def test_create_get_resolve(api) -> None:
    graph = api.app.state.brain.graph
    n = graph.create("t1", "aiConnected/Brain/Architecture", "how Brain is built")
    assert n.parent == "aiConnected/Brain"
    assert graph.get("t1", n.id).label == n.label
    assert graph.get("t1", "aiConnected/Brain/Architecture").id == n.id
    with pytest.raises(NotFound):
        graph.get("t2", n.id)  # another tenant does not see it
    with pytest.raises(InvalidInput, match="unknown node"):
        graph.resolve("t1", ["nope/nothing"])
    with pytest.raises(InvalidInput, match="already exists"):
        graph.create("t1", "aiConnected/Brain/Architecture")
    assert graph.ensure("t1", "aiConnected/Brain/Architecture").id == n.id
