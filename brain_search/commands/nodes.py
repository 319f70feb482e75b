"""CLI: `brain-search nodes ...` (the knowledge graph) and `brain-search tenants ...` (admin),
both talking to a running API over HTTP.

The API is found at ``--api-url`` / ``BRAIN_API_URL``; node commands send ``--api-key`` /
``BRAIN_API_KEY``, tenant commands send ``--admin-key`` / ``BRAIN_ADMIN_KEY``. Keys are never
printed back, except the new key that `tenants key` creates (shown once).
"""

from __future__ import annotations

import json
from typing import Any

import typer
from brain_search_client import AdminClient, BrainClient
from brain_search_client.models.admin import TenantIn
from pydantic import BaseModel
from rich.table import Table

from brain_search.commands.common import ADMIN_OPT, JSON_OPT, KEY_OPT, URL_OPT, Api, admin_api, console, tenant_api
from brain_search.store.scope import TENANT_FIELD

nodes_app = typer.Typer(help="Knowledge-graph nodes (X-axis) of your tenant, through the HTTP API.")
tenants_app = typer.Typer(help="Tenants and API keys (needs the admin key), through the HTTP API.")


def register(app: typer.Typer) -> None:
    """Add `nodes` and `tenants` to the main command."""
    app.add_typer(nodes_app, name="nodes")
    app.add_typer(tenants_app, name="tenants")


def _print_nodes(nodes: list[dict[str, Any]], title: str | None = None) -> None:
    table = Table(title=title)
    for col in ("id", "label", "related", "description"):
        table.add_column(col)
    for n in nodes:
        table.add_row(n["id"], n["label"], str(len(n.get("related") or [])), (n.get("description") or "")[:60])
    console.print(table)


def _json(model: BaseModel) -> Any:
    return model.model_dump(mode="json")


def _follow(api: Api[BrainClient], task: dict[str, Any] | None, wait: bool, as_json: bool) -> None:
    if task is None:
        return
    task_id = str(task["task_id"])
    if wait and not task["completed"] and task["state"] != "unknown":
        task = _json(api(lambda c: c.nodes.wait_task(task_id, timeout=3600)))
    if as_json:
        print(json.dumps(task))
        return
    done = task["updated"] if task["kind"] == "move" else task["deleted"]
    console.print(
        f"task {task['task_id']} ({task['kind']}): {task['state']}, {done}/{task['total']} memories"
        + (f", {task['version_conflicts']} version conflicts" if task["version_conflicts"] else "")
    )


# ------------------------------------------------------------------ nodes
@nodes_app.command("create")
def create(
    label: str = typer.Argument(..., help="a path like aiConnected/Brain"),
    description: str = typer.Option(None, "--description", "-d"),
    node_id: str = typer.Option(None, "--id", help="a stable id (default: derived from the label)"),
    url: str = URL_OPT,
    *,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Create a node (and its missing ancestors)."""
    node = _json(tenant_api(url, key)(lambda c: c.nodes.create(label, description=description, id=node_id)))
    print(json.dumps(node)) if as_json else _print_nodes([node])


@nodes_app.command("list")
def list_(
    prefix: str = typer.Option(None, help="labels starting with this string"),
    subtree: str = typer.Option(None, help="this label path and everything under it"),
    limit: int = typer.Option(1000, min=1, max=1000),
    url: str = URL_OPT,
    *,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """The tenant's nodes, sorted by label."""
    data = _json(tenant_api(url, key)(lambda c: c.nodes.list(prefix=prefix, subtree=subtree, limit=limit)))
    print(json.dumps(data)) if as_json else _print_nodes(data["nodes"])


@nodes_app.command("get")
def get(ref: str = typer.Argument(..., help="node id or label path"), url: str = URL_OPT, key: str = KEY_OPT) -> None:
    """One node as JSON."""
    print(json.dumps(_json(tenant_api(url, key)(lambda c: c.nodes.get(ref))), indent=2))


@nodes_app.command("move")
def move(
    ref: str = typer.Argument(..., help="node id or label path"),
    new_label: str = typer.Argument(..., help="the new label path; the subtree and its memories follow"),
    wait: bool = typer.Option(True, help="wait until the memories are re-labelled"),
    url: str = URL_OPT,
    *,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Rename / move a node with its subtree; memories' node_path is re-labelled by a task."""
    api = tenant_api(url, key)
    r = _json(api(lambda c: c.nodes.update(ref, label=new_label)))
    if not as_json:
        console.print(f"moved to {r['node']['label']} ({r['relabelled_nodes']} node(s))")
    _follow(api, r["task"], wait, as_json)


@nodes_app.command("delete")
def delete(
    ref: str = typer.Argument(..., help="node id or label path"),
    cascade: bool = typer.Option(False, help="also delete descendant nodes and every memory under them"),
    wait: bool = typer.Option(True, help="wait until the memories are deleted"),
    url: str = URL_OPT,
    *,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Delete a node (refused while it holds memories or descendants, unless --cascade)."""
    api = tenant_api(url, key)
    r = _json(api(lambda c: c.nodes.delete(ref, cascade=cascade)))
    if not as_json:
        console.print(f"deleted {len(r['deleted_nodes'])} node(s); {r['memories']} memories under them")
    _follow(api, r["task"], wait, as_json)


def _edge(ref: str, other: str, url: str, key: str, *, add: bool) -> None:
    api = tenant_api(url, key)
    node = _json(api(lambda c: c.nodes.relate(ref, other) if add else c.nodes.unrelate(ref, other)))
    console.print(f"{node['label']}: related to {len(node['related'])} node(s)")


@nodes_app.command("relate")
def relate(ref: str, other: str, url: str = URL_OPT, key: str = KEY_OPT) -> None:
    """Relate two nodes (both directions)."""
    _edge(ref, other, url, key, add=True)


@nodes_app.command("unrelate")
def unrelate(ref: str, other: str, url: str = URL_OPT, key: str = KEY_OPT) -> None:
    """Remove the related edge between two nodes."""
    _edge(ref, other, url, key, add=False)


@nodes_app.command("neighbors")
def neighbors(
    ref: str,
    depth: int = typer.Option(1, min=1, max=5),
    url: str = URL_OPT,
    key: str = KEY_OPT,
    *,
    as_json: bool = JSON_OPT,
) -> None:
    """Parent, children and related nodes up to --depth hops."""
    data = _json(tenant_api(url, key)(lambda c: c.nodes.neighbors(ref, depth=depth)))
    if as_json:
        print(json.dumps(data))
        return
    table = Table(title=f"neighbors of {data['node']['label']}")
    for col in ("distance", "relation", "label", "id"):
        table.add_column(col)
    for nb in data["neighbors"]:
        table.add_row(str(nb["distance"]), nb["relation"], nb["node"]["label"], nb["node"]["id"])
    console.print(table)


@nodes_app.command("task")
def task(
    task_id: str, wait: bool = typer.Option(False), url: str = URL_OPT, key: str = KEY_OPT, *, as_json: bool = JSON_OPT
) -> None:
    """Progress of a move or cascading delete."""
    api = tenant_api(url, key)
    _follow(api, _json(api(lambda c: c.nodes.task(task_id))), wait, as_json)


# ------------------------------------------------------------------ tenants (admin)
def _admin(url: str, admin_key: str | None) -> Api[AdminClient]:
    return admin_api(url, admin_key)


@tenants_app.command("create")
def tenant_create(
    tenant_id: str, name: str = typer.Option(None), url: str = URL_OPT, admin_key: str = ADMIN_OPT
) -> None:
    """Create a tenant."""
    t = _admin(url, admin_key)(lambda a: a.tenants.create(tenant_id, name=name))
    console.print(f"tenant {t.tenant_id} created")


@tenants_app.command("list")
def tenant_list(
    limit: int = typer.Option(1000, "--limit", min=1, max=1000, help="tenants a request"),
    after: str = typer.Option(None, "--after", help="start after this tenant id"),
    url: str = URL_OPT,
    admin_key: str = ADMIN_OPT,
) -> None:
    """Every tenant in id order (page after page of --limit, however many there are)."""
    api = _admin(url, admin_key)
    while True:
        page = api(lambda a, after=after: a.tenants.list(limit=limit, after=after))  # type: ignore[misc]
        for t in page.tenants:
            console.print(f"{t.tenant_id}\t{t.name}\t{_json(t)['created_at']}", highlight=False)
        after = page.next_after
        if not after:
            return


@tenants_app.command("create-many")
def tenant_create_many(
    file: str = typer.Argument(
        ..., help="one tenant a line: its id, then a tab and its name if it has one ('-': stdin)"
    ),
    url: str = URL_OPT,
    admin_key: str = ADMIN_OPT,
) -> None:
    """Create many tenants, 1,000 a request; prints how many were created, already existed or are
    still being erased."""
    import sys

    fh = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        rows = [line.rstrip("\n").split("\t", 1) for line in fh if line.strip()]
    finally:
        if fh is not sys.stdin:
            fh.close()
    api = _admin(url, admin_key)
    totals = {"created": 0, "existing": 0, "erasing": 0}
    for start in range(0, len(rows), 1000):
        chunk = [
            TenantIn(tenant_id=r[0].strip(), name=r[1] if len(r) > 1 else None) for r in rows[start : start + 1000]
        ]
        out = _json(api(lambda a, chunk=chunk: a.tenants.create_many(chunk)))  # type: ignore[misc]
        for k in totals:
            totals[k] += len(out[k])
    console.print(", ".join(f"{n} {k}" for k, n in totals.items()), highlight=False)


@tenants_app.command("key")
def tenant_key(
    tenant_id: str,
    label: str = typer.Option(None),
    expires_at: str = typer.Option(None, "--expires-at", help="ISO 8601: from then on the key is refused"),
    url: str = URL_OPT,
    *,
    admin_key: str = ADMIN_OPT,
) -> None:
    """Create an API key for a tenant. The key is printed once (stdout); only its hash is stored."""
    k = _admin(url, admin_key)(lambda a: a.keys.create(tenant_id, label=label, expires_at=expires_at))
    console.print(f"key id {k.key_id} for tenant {k.tenant_id} (shown once, keep it safe):", style="dim")
    print(k.key)


@tenants_app.command("keys")
def tenant_keys(tenant_id: str, url: str = URL_OPT, admin_key: str = ADMIN_OPT) -> None:
    """A tenant's keys (ids and labels; never the secrets)."""
    for k in [_json(k) for k in _admin(url, admin_key)(lambda a: a.keys.list(tenant_id))]:
        state = "revoked" if k["revoked"] else f"expires {k['expires_at']}" if k.get("expires_at") else "active"
        console.print(f"{k['key_id']}\t{state}\t{k['label']}", highlight=False)


@tenants_app.command("rate-limit")
def tenant_rate_limit(
    tenant_id: str,
    per_s: float = typer.Option(None, "--per-s", help="requests per second of each key (0: no limit)"),
    burst: int = typer.Option(None, "--burst", help="requests a key may send at once"),
    url: str = URL_OPT,
    *,
    admin_key: str = ADMIN_OPT,
) -> None:
    """Set the tenant's own per-key rate limit (neither option: back to the default)."""
    r = _admin(url, admin_key)(lambda a: a.tenants.set_rate_limit(tenant_id, requests_per_s=per_s, burst=burst))
    console.print(f"tenant {tenant_id}: {r.requests_per_s:g} requests/s, burst {r.burst} per key")


@tenants_app.command("usage")
def tenant_usage(
    tenant_id: str = typer.Argument(None, help="one tenant (default: every tenant, the largest first)"),
    by_user: bool = typer.Option(False, "--by-user", help="a row per user of the tenant"),
    days: int = typer.Option(7, "--days", min=1, help="the window of writes and recalls"),
    limit: int = typer.Option(100, "--limit", min=1, help="rows at most"),
    *,
    url: str = URL_OPT,
    admin_key: str = ADMIN_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Memories held, written and recalls made over the last --days, per tenant or per user."""
    usage = _admin(url, admin_key)(lambda a: a.usage(tenant=tenant_id or None, by_user=by_user, days=days, limit=limit))
    if as_json:
        typer.echo(json.dumps(_json(usage), indent=2))
        return
    console.print(
        f"{'user' if by_user else 'tenant':24} memories  written  recalls   (last {days} days)", highlight=False
    )
    for r in usage.rows:
        who = (r.user_id or "(shared)") if by_user else r.tenant_id
        console.print(f"{who:24} {r.memories:>8} {r.written:>8} {r.recalls:>8}", highlight=False)


@tenants_app.command("languages")
def tenant_languages(
    tenant_id: str = typer.Argument(..., help="the tenant"),
    url: str = URL_OPT,
    admin_key: str = ADMIN_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """The tenant's encoder, how much of its memories reads as another language, and the move
    that would pay (a command to run), if any."""
    out = _json(_admin(url, admin_key)(lambda a: a.tenants.languages(tenant_id)))
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    where = "its own index" if out["own_index"] else "the shared index"
    console.print(f"{tenant_id}: {out['encoder']} ({out['encoder_languages']}), {where}", highlight=False)
    console.print(
        f"  {out['other_language']} of {out['sampled']} sampled memories read as another language than English"
        f" ({out['share']:.0%}): {out['reason']}",
        highlight=False,
    )
    if out["recommend"]:
        console.print(f"  recommended: {out['recommend']}", highlight=False)


@tenants_app.command("audit")
def tenant_audit(
    tenant_id: str = typer.Argument(None), limit: int = 100, url: str = URL_OPT, admin_key: str = ADMIN_OPT
) -> None:
    """Changes to tenants and keys, newest first (one tenant's, or all)."""
    for e in _admin(url, admin_key)(lambda a: a.audit(tenant=tenant_id or None, limit=limit)):
        who = e.get(TENANT_FIELD) or f"#{str(e.get('tenant_hash', ''))[:12]}"
        console.print(f"{e['at']}\t{e['action']}\t{who}\t{e.get('key_id') or ''}", highlight=False)


@tenants_app.command("revoke")
def tenant_revoke(key_id: str, url: str = URL_OPT, admin_key: str = ADMIN_OPT) -> None:
    """Revoke a key by its id (the `bsk_<id>_...` part, or as listed by `tenants keys`)."""
    _admin(url, admin_key)(lambda a: a.keys.revoke(key_id))
    console.print(f"key {key_id} revoked")
