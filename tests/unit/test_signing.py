"""Ingest job signatures (pure)."""

from __future__ import annotations

from brain_search.config import load_settings
from brain_search.ingest.models import IngestJob, MemoryItem
from brain_search.ingest.signing import job_kwargs, signing_keys, verified


def _job(tenant: str = "acme") -> IngestJob:
    return IngestJob(task_id="t1", tenant_id=tenant, items=[MemoryItem(memory_id="m1", content="hello")])


def test_signed_jobs_verify_and_changed_ones_do_not() -> None:
    keys = [b"k" * 32]
    kw = job_kwargs(_job(), keys)
    assert verified(kw["job"], kw["sig"], keys)
    forged = {**kw["job"], "tenant_id": "victim"}  # the same signature on another tenant's job
    assert not verified(forged, kw["sig"], keys)
    assert not verified(kw["job"], None, keys)
    assert not verified(kw["job"], job_kwargs(_job(), [b"x" * 32])["sig"], keys)


def test_rotation_first_key_signs_any_verifies() -> None:
    s = load_settings(job_signing_keys="new-key-0000000000000000000000000, old-key-0000000000000000000000000")
    keys = signing_keys(s)
    assert keys == [b"new-key-0000000000000000000000000", b"old-key-0000000000000000000000000"]
    old_signed = job_kwargs(_job(), keys[1:])
    assert verified(old_signed["job"], old_signed["sig"], keys)
    assert job_kwargs(_job(), keys)["sig"] != old_signed["sig"]


def test_without_keys_nothing_is_signed_or_checked() -> None:
    kw = job_kwargs(_job(), [])
    assert "sig" not in kw and verified(kw["job"], None, [])
