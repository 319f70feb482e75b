"""What each engine role may do, as rules over the request line (pure: no I/O).

The engine gateway (``gateway/nginx.py``: nginx from Debian's packages, TLS and basic auth in
front of the loopback-bound OpenSearch) allows a request when one rule of its user's role matches
``"<METHOD> <raw request URI>"``. The same rules are rendered into nginx's ``map`` (``render_map``)
and checked here in Python (``allowed``), so the unit tests read what nginx enforces.

- ``admin``: everything (index set-up, migrations, the tests' own fixtures). Never given to the
  API or the workers.
- ``api``: the service at run time. Documents, searches and by-query deletes on the deployment's
  own indices (``<prefix>-…``); no index creation or deletion, no mapping, settings, template,
  cluster or snapshot call, no index of another prefix, no request without an index in its path.
- ``worker``: write-only on memories. ``_bulk`` into the memories alias and the dead letters; the
  one ``_mget`` a job makes before writing (tombstones: ``_source=tombstone_of,memory_id`` and
  nothing else); its task records. It cannot search, count or read a memory's content.

A rule can also pin what the engine answers (``Rule.response``): the gateway appends that
``filter_path`` to the request it forwards, so only the listed fields leave OpenSearch whatever
the body asked for. The worker's ``_mget`` answers ids, versions and the two tombstone fields even
when a ``docs`` entry names its own ``_source``; its ``_bulk`` answers statuses and errors, never
the ``get`` an ``update`` with ``"_source": true`` asks for. A client's own ``filter_path`` on
those paths matches no rule. The task records' payloads (queued jobs, so memory text) are sealed
by the API under the job key (``ingest/sealing.py``): the worker role reads them as ciphertext.

The engine is started with ``rest.action.multi.allow_explicit_index: false``: a ``_bulk``,
``_msearch`` or ``_mget`` body cannot name another index than its path, so the path is the whole
truth of what a request reaches. Rules match the raw URI: a percent-encoded index name matches
no rule (denied), and the default is deny.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Role(StrEnum):
    admin = "admin"
    api = "api"
    worker = "worker"


# every index of a deployment, after its prefix (store/indices.py)
INDEX_SUFFIXES = (
    "memories",
    "memories-v[0-9]+",
    "memories-tenant-[a-z0-9_.-]+",  # a tenant's own index and its alias (store/placement.py)
    "tenants",
    "keys",
    "nodes",
    "node-tasks",
    "ingest-tasks",
    "dead-letters",
    "memory-history",
    "audit",
    "feedback",
)
_ID = r"[^/?#]+"
_ARGS = r"(?:\?[^#]*)?$"
# what a worker's write may ask for in its query string (no ``_source``, no ``filter_path``)
_BULK_ARGS = r"(?:\?refresh=(?:wait_for|true|false))?$"
# what the worker's requests answer (OpenSearch's ``filter_path``, appended by the gateway)
WORKER_MGET_RESPONSE = "docs._id,docs.found,docs._version,docs._source.tombstone_of,docs._source.memory_id,docs.error"
WORKER_BULK_RESPONSE = (
    "took,errors,items.*._id,items.*.status,items.*.result,items.*._version,items.*._seq_no,"
    "items.*._primary_term,items.*.error.type,items.*.error.reason,items.*.error.caused_by.type,"
    "items.*.error.caused_by.reason"
)


@dataclass(frozen=True)
class Rule:
    role: Role
    methods: tuple[str, ...]
    path: str  # a regex over the raw path and query, anchored at both ends by ``pattern``
    response: str | None = None  # the ``filter_path`` the gateway appends (what the answer may hold)

    @property
    def pattern(self) -> str:
        return f"^{self.role.value} (?:{'|'.join(self.methods)}) {self.path}"


def rules(prefix_pattern: str) -> list[Rule]:
    """The rules of every role for the indices under ``prefix_pattern`` (a regex: a deployment
    passes ``re.escape(prefix)``; the test stack also allows its per-test prefixes)."""
    p = f"(?:{prefix_pattern})"
    idx = f"{p}-(?:{'|'.join(INDEX_SUFFIXES)})"
    idx_list = f"(?:{idx}(?:,{idx})*|{p}-\\*)"
    memories = f"{p}-memories"
    tenant_memories = f"{memories}(?:-tenant-[a-z0-9_.-]+)?"  # the shared alias or a tenant's own
    placements = f"/_alias/{memories}-tenant-\\*{_ARGS}"  # every tenant's own index (store/placement.py)
    api, worker = Role.api, Role.worker
    read = ("GET", "HEAD")
    write = ("PUT", "POST")
    common = [Rule(r, read, f"/{_ARGS}") for r in (api, worker)] + [
        Rule(r, ("GET",), f"/_cluster/health{_ARGS}") for r in (api, worker)
    ]
    # the memories index's mapping (its ``_meta``: which encoder wrote the vectors), read at start
    common += [Rule(r, ("GET",), f"/{idx}/_mapping{_ARGS}") for r in (api, worker)]
    return [
        Rule(Role.admin, ("[A-Z]+",), ".*$"),
        *common,
        # the API: documents, searches and by-query changes on the deployment's own indices
        Rule(api, read, f"/{idx_list}{_ARGS}"),
        Rule(api, read, f"/_alias/{memories}{_ARGS}"),
        Rule(api, ("GET",), placements),
        Rule(api, ("GET", "POST"), f"/{idx_list}/(?:_search|_msearch|_count|_mget|_refresh){_ARGS}"),
        Rule(api, write, f"/{idx_list}/_bulk{_ARGS}"),
        Rule(api, ("POST",), f"/{idx_list}/(?:_delete_by_query|_update_by_query){_ARGS}"),
        Rule(api, ("GET", "HEAD", "PUT", "POST", "DELETE"), f"/{idx}/_doc/{_ID}{_ARGS}"),
        Rule(api, ("POST",), f"/{idx}/_doc{_ARGS}"),
        Rule(api, write, f"/{idx}/_create/{_ID}{_ARGS}"),
        Rule(api, ("POST",), f"/{idx}/_update/{_ID}{_ARGS}"),
        Rule(api, ("GET",), f"/_tasks/{_ID}{_ARGS}"),
        # workers: write-only on memories, their task records, their dead letters
        Rule(worker, ("HEAD",), f"/{idx}{_ARGS}"),
        Rule(worker, read, f"/_alias/{memories}{_ARGS}"),
        Rule(worker, ("GET",), placements),
        Rule(worker, write, f"/(?:{tenant_memories}|{p}-dead-letters)/_bulk{_BULK_ARGS}", WORKER_BULK_RESPONSE),
        Rule(
            worker,
            ("GET", "POST"),
            f"/{tenant_memories}/_mget\\?_source=tombstone_of%2Cmemory_id$",
            WORKER_MGET_RESPONSE,
        ),
        Rule(worker, ("GET", "HEAD", "PUT", "POST"), f"/{p}-ingest-tasks/_doc/{_ID}{_ARGS}"),
        Rule(worker, ("POST",), f"/{p}-ingest-tasks/_update/{_ID}{_ARGS}"),
        Rule(
            worker,
            ("GET", "POST"),
            f"/{p}-ingest-tasks/(?:_search|_count|_refresh|_delete_by_query){_ARGS}",
        ),
    ]


def allowed(prefix_pattern: str, user: str, method: str, uri: str) -> bool:
    """Whether the gateway lets ``user`` send ``method uri`` (the Python twin of ``render_map``)."""
    line = f"{user} {method} {uri}"
    return any(re.match(r.pattern, line) for r in rules(prefix_pattern))


def render_map(prefix_pattern: str, variable: str = "$brain_allowed") -> str:
    """nginx's ``map`` of ``"$remote_user $request_method $request_uri"`` → 1 (allowed) / 0.

    A request without credentials maps to 1 so that ``auth_basic`` answers it 401 rather than
    403. ``$remote_user`` is read before the password is checked (rewrite phase), and the access
    phase then refuses a wrong password: a request passes only with both."""
    lines = [f'map "$remote_user $request_method $request_uri" {variable} {{', "    default 0;", '    "~^ " 1;']
    for r in rules(prefix_pattern):
        if '"' in r.pattern:
            raise ValueError(f"a rule cannot hold a double quote: {r.pattern}")
        lines.append(f'    "~{r.pattern}" 1;')
    lines.append("}")
    return "\n".join(lines) + "\n"


def upstream_uri(prefix_pattern: str, user: str, method: str, uri: str) -> str:
    """The URI the gateway forwards for an allowed request (the Python twin of
    ``render_upstream_map``): ``uri``, with the rule's ``filter_path`` appended when it pins one."""
    line = f"{user} {method} {uri}"
    for r in rules(prefix_pattern):
        if r.response and re.match(r.pattern, line):
            return f"{uri}{'&' if '?' in uri else '?'}filter_path={r.response}"
    return uri


def render_upstream_map(prefix_pattern: str, variable: str = "$brain_upstream_uri") -> str:
    """nginx's ``map`` of ``"$remote_user $request_method $request_uri"`` → the URI to forward:
    ``$request_uri`` itself, or with the ``filter_path`` of a rule that pins its answer (after
    ``?`` or ``&``: ``$brain_filter_sep``, from ``$is_args``)."""
    lines = [
        "map $is_args $brain_filter_sep {",
        '    "?" "&";',
        '    default "?";',
        "}",
        f'map "$remote_user $request_method $request_uri" {variable} {{',
        "    default $request_uri;",
    ]
    for r in rules(prefix_pattern):
        if not r.response:
            continue
        if '"' in r.pattern or not re.fullmatch(r"[A-Za-z0-9_.,*]+", r.response):
            raise ValueError(f"a rule cannot hold a double quote or pin that answer: {r.pattern}")
        lines.append(f'    "~{r.pattern}" "$request_uri${{brain_filter_sep}}filter_path={r.response}";')
    lines.append("}")
    return "\n".join(lines) + "\n"
