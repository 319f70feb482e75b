"""``brain-search bench tenant-list`` on the real engine, small: 2,500 tenants in bulk, listed whole
in pages of 1,000 (the issue's 100,000: lab/README.md)."""

from __future__ import annotations

import pytest
from brain_lab.bench.tenant_list import run_tenant_list

pytestmark = pytest.mark.integration


def test_the_tenant_list_pages_in_full(stack_settings) -> None:  # type: ignore[no-untyped-def]
    s = stack_settings.model_copy(update={"index_prefix": f"{stack_settings.index_prefix}-tl"})
    rep = run_tenant_list(s, 2500, page=1000, log=lambda m: None)
    assert (rep.listed, rep.pages, rep.whole) == (2500, 3, True), rep
