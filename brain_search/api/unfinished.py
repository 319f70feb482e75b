"""What an API process finishes for another that died: forgets whose lease ran out
(``ingest/forget.py``) and tenant erases whose second pass is overdue (``tenancy/erase.py``).

Every API process runs this sweep on a thread, at start and every ``SWEEP_S``: a forget or an
erase interrupted by a kill or a restart at any point ends the same, run again by whichever API
comes first (each is idempotent, and claimed before it is run).
"""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime

from opensearchpy import OpenSearch

from brain_search.config import Settings
from brain_search.ingest.forget import Forgetter
from brain_search.store.indices import IndexNames
from brain_search.tenancy.auth import ERASING_FIELD
from brain_search.tenancy.erase import finish_erase

log = logging.getLogger(__name__)
SWEEP_S = 5.0


def overdue_erases(client: OpenSearch, settings: Settings) -> list[tuple[str, str | None]]:
    """(tenant id, erase id) of each erase marker whose second pass is overdue."""
    now = datetime.now(UTC).isoformat()
    query = {"bool": {"filter": [{"exists": {"field": ERASING_FIELD}}, {"range": {"second_pass_at": {"lt": now}}}]}}
    r = client.search(index=IndexNames.of(settings).tenants, body={"query": query, "size": 100})
    return [(h["_source"][ERASING_FIELD], h["_source"].get("erase_id")) for h in r["hits"]["hits"]]


def sweep(client: OpenSearch, settings: Settings, forgetter: Forgetter) -> None:
    """One pass: every stale forget run to its end, every overdue erase finished."""
    forgetter.resume_stale()
    for tenant_id, erase_id in overdue_erases(client, settings):
        if finish_erase(client, settings, tenant_id, erase_id):
            log.warning("erase %s: the overdue second pass ran here", tenant_id)


class Unfinished:
    """The sweep's thread (``start``/``close``); a failed pass is logged and tried again."""

    def __init__(self, client: OpenSearch, settings: Settings, forgetter: Forgetter, every_s: float = SWEEP_S) -> None:
        self.client, self.settings, self.forgetter, self.every_s = client, settings, forgetter, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="unfinished", daemon=True)

    def start(self) -> Unfinished:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                sweep(self.client, self.settings, self.forgetter)
            except Exception:
                log.exception("the sweep of unfinished forgets and erases failed; trying again")
            self._stop.wait(self.every_s)

    def close(self) -> None:
        self._stop.set()
