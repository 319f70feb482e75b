"""Fixtures the integration tests share (the stack fixtures are in tests/conftest.py)."""

from __future__ import annotations

import pytest

from tests.integration.recall_corpus import index_corpus


@pytest.fixture
def alice(api, make_tenant, client):  # type: ignore[no-untyped-def]
    """Tenant ``alice`` with the small recall corpus indexed; returns her key's headers."""
    headers = make_tenant("alice")
    index_corpus(api.app.state.brain, client, "alice")
    return headers
