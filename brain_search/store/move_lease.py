"""One move at a time: an engine-side lease that a move (``store/moves.py``) holds while it runs.

A deployment's moves share one lease document (``move-lease`` in the node-tasks index, updated
compare-and-set on its sequence number), which lists who holds which move:

- ``tenant:<id>``: a tenant's own index (``brain-search tenant-index``);
- ``shared``: the shared index's encoder move (``brain-search reindex``), which conflicts with every
  tenant move (both change where a tenant's memories live).

A holder is an owner (host, process, a random token) and an expiry, renewed by a thread every
third of the lease's length while the move runs. A second run of the same or a conflicting move
is refused with ``MoveBusy``, which names the holder and when its lease runs out; a lease that ran
out (its process was killed, or stopped long enough; at once when the holder is a process of
this host that is gone) is taken over, and the new holder resumes
from the phase the move's own record holds. Before each destructive step the move calls
``hold()``, which reads the lease from the engine again and raises ``LeaseLost`` unless this
holder still has it (and renews it): a process stopped past its expiry and then continued never
deletes on a stale belief.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from opensearchpy import ConflictError, NotFoundError, OpenSearch

from brain_search.errors import SetupError
from brain_search.index_names import IndexNames

log = logging.getLogger(__name__)

LEASE_ID = "move-lease"
SHARED = "shared"
LEASE_S = 60.0


class MoveBusy(SetupError):
    """Another run holds this move, or one that conflicts with it."""


class LeaseLost(SetupError):
    """This run no longer holds its lease (it ran out, and another run may have taken it over)."""


def tenant_key(tenant_id: str) -> str:
    return f"tenant:{tenant_id}"


def conflicts(key: str, held: str) -> bool:
    """Whether a move of ``key`` may not run while ``held`` is held (pure): the same move, or the
    shared index's move beside any tenant's."""
    return key == held or SHARED in (key, held)


def live_holders(
    holders: dict[str, Any], now: float, dead: Callable[[str], bool] = lambda owner: False
) -> dict[str, Any]:
    """The holders whose lease has not run out at ``now`` and whose owner is not ``dead``."""
    return {k: h for k, h in holders.items() if float(h.get("until", 0)) > now and not dead(str(h.get("owner")))}


def dead_here(owner: str) -> bool:
    """Whether ``owner`` (``host:pid:token``) is a process of this host that no longer runs: its
    lease need not run out before another run takes over."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def describe(key: str, holder: dict[str, Any], now: float) -> str:
    left = float(holder.get("until", 0)) - now
    since = time.strftime("%H:%M:%S", time.gmtime(float(holder.get("since", 0))))
    return f"{key} is held by {holder.get('owner')} (since {since} UTC, its lease runs {left:.0f} s more)"


class MoveLease:
    """The lease of one move (``key``), taken with ``take()`` and given back with ``release()``
    (or as a context manager)."""

    def __init__(
        self,
        client: OpenSearch,
        names: IndexNames,
        key: str,
        *,
        lease_s: float = LEASE_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client, self.index, self.key = client, names.node_tasks, key
        self.lease_s, self.clock = lease_s, clock
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.took_over: str | None = None
        """the owner whose run-out lease this run took over, if any"""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lost: str | None = None

    # -- the document ------------------------------------------------------------------------------
    def _read(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """(holders, compare-and-set params: ``if_seq_no`` … or ``op_type=create`` when new)."""
        try:
            r = self.client.get(index=self.index, id=LEASE_ID)
        except NotFoundError:
            return {}, {"op_type": "create"}
        holders = dict(((r.get("_source") or {}).get("result") or {}).get("holders") or {})
        return holders, {"if_seq_no": r["_seq_no"], "if_primary_term": r["_primary_term"]}

    def _write(self, holders: dict[str, Any], cas: dict[str, Any]) -> bool:
        """Write ``holders`` if nobody wrote the document since it was read; False if someone did."""
        doc = {"kind": LEASE_ID, "result": {"holders": holders}}
        try:
            self.client.index(index=self.index, id=LEASE_ID, body=doc, params={"refresh": "true", **cas})
        except ConflictError:
            return False
        return True

    # -- taking, renewing, giving back ---------------------------------------------------------------
    def take(self) -> MoveLease:
        """Take the lease (MoveBusy while a live holder conflicts), then keep it renewed."""
        while True:
            holders, cas = self._read()
            now = self.clock()
            live = live_holders(holders, now, dead_here)
            busy = [describe(k, h, now) for k, h in sorted(live.items()) if conflicts(self.key, k)]
            if busy:
                raise MoveBusy(
                    f"another move runs: {'; '.join(busy)}. Wait for it to end, or for its lease to run out "
                    f"(renewed every {self.lease_s / 3:.0f} s while it runs), then run this again"
                )
            stale = holders.get(self.key)
            live[self.key] = {"owner": self.owner, "since": now, "until": now + self.lease_s}
            if self._write(live, cas):
                if stale is not None:
                    self.took_over = str(stale.get("owner"))
                    log.warning("move %s: took over the run-out lease of %s", self.key, self.took_over)
                break
        self._thread = threading.Thread(target=self._renew_loop, name=f"lease-{self.key}", daemon=True)
        self._thread.start()
        return self

    def renew(self) -> None:
        """Push the expiry ``lease_s`` ahead; LeaseLost when this run no longer holds it."""
        while True:
            holders, cas = self._read()
            now = self.clock()
            mine = holders.get(self.key)
            if mine is None or mine.get("owner") != self.owner or float(mine.get("until", 0)) <= now:
                raise LeaseLost(self._lost_reason(mine, now))
            holders[self.key] = {**mine, "until": now + self.lease_s}
            if self._write(holders, cas):
                return

    def hold(self) -> None:
        """Before a destructive step: this run still holds the lease, renewed ``lease_s`` ahead;
        LeaseLost otherwise."""
        if self._lost is not None:
            raise LeaseLost(self._lost)
        self.renew()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        while True:
            holders, cas = self._read()
            mine = holders.get(self.key)
            if mine is None or mine.get("owner") != self.owner:
                return
            del holders[self.key]
            if self._write(holders, cas):
                return

    def _renew_loop(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                self.renew()
            except LeaseLost as exc:
                self._lost = exc.reason
                log.error("move %s: %s", self.key, exc.reason)
                return
            except Exception:  # the engine did not answer: the next round tries again, hold() decides
                log.warning("move %s: the lease was not renewed this round", self.key, exc_info=True)

    def _lost_reason(self, mine: dict[str, Any] | None, now: float) -> str:
        if mine is None:
            who = "nobody holds it now"
        elif mine.get("owner") != self.owner:
            who = f"{mine.get('owner')} holds it now"
        else:
            who = f"it ran out {now - float(mine.get('until', 0)):.0f} s ago"
        return f"this run lost the lease of move {self.key} ({who}): it stopped before its next step; run it again"

    def __enter__(self) -> MoveLease:
        return self.take()

    def __exit__(self, *exc: object) -> None:
        self.release()
