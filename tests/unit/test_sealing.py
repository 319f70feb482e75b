"""What Redis and the worker's engine role are not trusted with (issue 54, items 9 and 10), pure:
task-record payloads sealed under the job key (ingest/sealing.py) and spool entries signed with
it (workers/spool.py)."""

from __future__ import annotations

import json

from brain_search.ingest.sealing import SEALED, seal, unseal
from workers.spool import open_entry, seal_entry

KEY, OLD, OTHER = b"the-job-key-0000000000000000000000", b"old-key-000000000000000000000000000", b"made-up"
PAYLOAD = {"task_id": "t1", "tenant_id": "acme", "items": [{"memory_id": "m", "content": "Secret BLUEHERON"}]}


def test_a_sealed_payload_holds_no_text_and_opens_only_for_its_task_under_a_key() -> None:
    stored = seal(PAYLOAD, "t1", [KEY])
    assert set(stored) == {SEALED} and "BLUEHERON" not in json.dumps(stored)
    assert unseal(stored, "t1", [KEY]) == PAYLOAD
    assert unseal(stored, "t1", [OTHER, KEY]) == PAYLOAD  # any key opens (rotation)
    assert unseal(seal(PAYLOAD, "t1", [OLD]), "t1", [KEY, OLD]) == PAYLOAD
    assert unseal(stored, "t2", [KEY]) is None  # moved into another task's record
    assert unseal(stored, "t1", [OTHER]) is None
    assert unseal(PAYLOAD, "t1", [KEY]) is None  # a plain payload, written without the key
    assert unseal({SEALED: "not base64!"}, "t1", [KEY]) is None
    assert seal(PAYLOAD, "t1", []) == PAYLOAD and unseal(PAYLOAD, "t1", []) == PAYLOAD  # no key: plain


def test_a_spool_entry_opens_only_when_signed_under_a_key() -> None:
    entry = {"tenant_id": "acme", "task_id": "t1", "attempts": 1, "error": "e", "failures": []}
    assert open_entry(seal_entry(entry, [KEY]), [KEY]) == entry
    assert open_entry(seal_entry(entry, [OLD]), [KEY, OLD]) == entry
    assert open_entry(seal_entry(entry, []), [KEY]) is None  # unsigned
    assert open_entry(seal_entry(entry, [OTHER]), [KEY]) is None  # another key
    assert open_entry(json.dumps(entry), [KEY]) is None  # the format before signatures
    tampered = json.loads(seal_entry(entry, [KEY]))
    tampered["entry"] = tampered["entry"].replace("acme", "victim")
    assert open_entry(json.dumps(tampered), [KEY]) is None
    assert open_entry("not json", [KEY]) is None and open_entry(b"[1, 2]", [KEY]) is None
    assert open_entry(seal_entry(entry, []), []) == entry  # no key: neither signed nor checked
