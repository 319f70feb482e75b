"""CLI: ``brain-search bench shards`` and ``bench tenants`` (issue 56, items 1 and 4): a large shared
index at several shard layouts (``bench/shared.py``), a tenant's routed and unrouted recall across
them, and small tenants beside one alone; ``bench users`` (issue 67): a user of a big tenant
beside the same memories as a tenant of their own. ``add_shared_commands`` puts them on the bench
app."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.table import Table

from brain_lab.commands.bench_common import _load_avg, _log, _out, _pool, _settings, console

if TYPE_CHECKING:
    from opensearchpy import OpenSearch

    from brain_lab.bench.corpus import Pool
    from brain_lab.bench.shared import Built, SharedLayout


SHARED_SIZE_HELP = "memories in the shared index (1m as the issue asks: ~17 min a layout by bulk here; 20k to try)"
KEEP_HELP = "keep the shared indices for the next run (--no-keep deletes them after)"


def _shared_indices(size: str, layouts: str, merge: bool, force: bool) -> tuple[Pool, SharedLayout, list[Built]]:
    """The pool, what the shared index holds and every shard layout's index (built when missing)."""
    from brain_lab.bench.corpus import parse_size
    from brain_lab.bench.shared import SharedLayout, build_shared, parse_layouts
    from brain_search.store.client import make_client

    s = _settings(None)
    try:
        shard_layouts = parse_layouts(layouts)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    layout = SharedLayout(parse_size(size))
    pool = _pool(s)
    _log(
        f"shared index: {layout.documents:,} memories = {layout.big_tenants} tenants of {layout.big_size:,}"
        f" + {layout.small_tenants:,} of {layout.small_size}; {', '.join(x.label for x in shard_layouts)};"
        f" load avg {_load_avg()}"
    )
    built = build_shared(make_client(s), s, pool, layout, shard_layouts, force=force, merge=merge, log=_log)
    for b in built:
        _log(f"{b.index}: {b.how} {b.load_s:.0f} s, merge {b.merge_s:.0f} s")
    return pool, layout, built


def _ratio_table(
    title: str, paths: dict[str, dict[str, float]], ratios: list[tuple[str, float, float, float]]
) -> Table:
    t = Table(title=title)
    heads = ("path", "engine CPU ms", "net of background", "shard searches", "shard ms", "API CPU ms", "p50", "p95")
    for h in (*heads, "engine CPU (net) ×", "shard ms ×", "p95 ×"):
        t.add_column(h, justify="left" if h == "path" else "right")
    for label, eng, sh, p95 in ratios:
        p = paths[label]
        t.add_row(
            label,
            f"{p['engine_cpu_ms']:.2f}",
            f"{p['engine_cpu_net_ms']:.2f}",
            f"{p['shard_searches']:.1f}",
            f"{p['shard_ms']:.2f}",
            f"{p['api_cpu_ms']:.2f}",
            f"{p['p50_ms']:.1f}",
            f"{p['p95_ms']:.1f}",
            f"{eng:.2f}",
            f"{sh:.2f}",
            f"{p95:.2f}",
        )
    return t


def shards(
    size: str = typer.Option("1m", help=SHARED_SIZE_HELP),
    layouts: str = typer.Option(
        "1,3,12:3,12:3+",
        help="shards[:routing partition][+: routing shards = shards]; the first bulk-loaded, the rest _reindex",
    ),
    n: int = typer.Option(200, min=1, help="distinct questions of the ~1k-memory tenants"),
    rounds: int = typer.Option(2, min=1, help="measured rounds over the questions"),
    merge: bool = typer.Option(True, help="force-merge each new index to one segment per shard"),
    force: bool = typer.Option(False, help="rebuild the indices even where complete"),
    keep: bool = typer.Option(True, help=KEEP_HELP),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """A ~1k-memory tenant's recall in a large shared index at 1, 3 and 12 shards (issue 56.1):
    routed (the service) beside unrouted (before routing), engine CPU and p50/p95 one at a time,
    ratios to the first layout's routed figure, and whether the answers equal its answers."""
    from brain_lab.bench.shards import fanout_ratios, path_label, run_shards
    from brain_search.store.client import make_client

    pool, layout, built = _shared_indices(size, layouts, merge, force)
    client = make_client(_settings(None))
    folder = _out(out, "shards")
    rep = run_shards(client, built, pool, layout, n, rounds, log=_log)
    title = (
        f"recall of a ~{layout.big_size:,}-memory tenant in a {layout.documents:,}-memory index, {rep.questions}"
        f" questions × {rep.rounds}, one at a time; load avg {rep.load_avg_before} → {rep.load_avg_after}"
    )
    console.print(_ratio_table(title, rep.paths, fanout_ratios(rep, built)))
    for row in rep.indices:
        console.print(
            f"{row['layout']}: {row['index']}, {row['documents']:,} memories, {row['segments']} segments,"
            f" {row['store_bytes'] / 2**20:,.0f} MiB; {row['how']} {row['load_s']:.0f} s, merge {row['merge_s']:.0f} s"
        )
    base = path_label(built[0], True)
    for label, agree in rep.agree.items():
        console.print(f"answers equal to {base}'s (ids in order): {agree}/{rep.questions} for {label}")
    one = rep.paths[base]
    for b in built[1:]:
        r, u = rep.paths[path_label(b, True)], rep.paths[path_label(b, False)]
        console.print(
            f"{b.layout.label} ÷ {built[0].layout.label} routed: engine CPU per recall (net of the node's"
            f" background, {rep.background_cpu_ms_per_s:.0f} ms/s)"
            f" {r['engine_cpu_net_ms'] / one['engine_cpu_net_ms']:.2f}× routed (goal ≤ 1.3),"
            f" {u['engine_cpu_net_ms'] / one['engine_cpu_net_ms']:.2f}× unrouted; shard ms"
            f" {r['shard_ms'] / one['shard_ms']:.2f}× routed, {u['shard_ms'] / one['shard_ms']:.2f}× unrouted;"
            f" p95 {r['p95_ms'] / one['p95_ms']:.2f}× routed, {u['p95_ms'] / one['p95_ms']:.2f}× unrouted"
        )
    _finish(folder / "shards.json", rep.__dict__, client, built, keep)


def tenants(
    size: str = typer.Option("1m", help=SHARED_SIZE_HELP),
    layouts: str = typer.Option("1,12:3,12:3+", help="shards[:routing partition][+] of the shared index measured"),
    n: int = typer.Option(300, min=1, help="random small tenants' questions"),
    rounds: int = typer.Option(2, min=1, help="measured rounds over the questions"),
    rss_tenants: int = typer.Option(
        10_000, min=0, help="tenants served by the API's own objects for its RSS (0: skip)"
    ),
    merge: bool = typer.Option(True, help="force-merge each new index to one segment per shard"),
    force: bool = typer.Option(False, help="rebuild the indices even where complete"),
    keep: bool = typer.Option(True, help=KEEP_HELP),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """Random ~100-memory tenants of a shared index beside a tenant of the same size alone in an
    index of its own (issue 56.4): engine CPU and p50/p95 per recall, ratios to the lone tenant;
    then the API's resident memory after serving ``--rss-tenants`` tenants through its caches."""
    from brain_lab.bench.tenants import alone_ratios, rss_over_tenants, run_tenants
    from brain_search.store.client import make_client
    from brain_search.store.templates import delete_indices

    pool, layout, built = _shared_indices(size, layouts, merge, force)
    client = make_client(_settings(None))
    folder = _out(out, "tenants")
    rep, lone = run_tenants(client, built, pool, layout, n, rounds, log=_log)
    for s in lone:
        delete_indices(client, s)
    title = (
        f"recall of random ~{layout.small_size}-memory tenants ({rep.tenants_sampled} of {layout.small_tenants:,})"
        f" in a {layout.documents:,}-memory index, {rep.questions} questions × {rep.rounds}; load avg"
        f" {rep.load_avg_before} → {rep.load_avg_after}"
    )
    ratios = alone_ratios(rep)
    console.print(_ratio_table(title, rep.paths, ratios))
    for label, eng, sh, p95 in ratios:
        console.print(f"{label} ÷ alone: engine CPU (net) {eng:.2f}×, shard ms {sh:.2f}×, p95 {p95:.2f}× (goal ≤ 1.2)")
    console.print(f"the node's background CPU: {rep.background_cpu_ms_per_s:.0f} ms/s")
    if rss_tenants:
        rss = rss_over_tenants(built[-1].settings, pool, layout, rss_tenants, log=_log)
        rep.rss = rss
        console.print(
            f"API RSS over {rss['tenants']:,} tenants ({rss['tenants_with_memories']:,} with memories,"
            f" {built[-1].layout.label}): {rss['rss_before_kib'] / 1024:.0f} MiB before,"
            f" {rss['rss_after_kib'] / 1024:.0f} MiB after; caches after {rss['caches_after']}"
        )
    _finish(folder / "tenants.json", rep.__dict__, client, built, keep)


def users(
    size: str = typer.Option("100k", help="memories of the big tenant (the issue's 1m: see lab/README.md)"),
    user_count: int = typer.Option(10_000, "--users", min=1, help="users the big tenant's memories are spread over"),
    n: int = typer.Option(300, min=1, help="random users asked a question (each also a tenant of its own)"),
    rounds: int = typer.Option(2, min=1, help="measured rounds over the questions"),
    request_cache: bool = typer.Option(
        False, help="leave the engine's request cache on (a repeated count is then free; off: as under writes)"
    ),
    force: bool = typer.Option(False, help="rebuild the index even where complete"),
    keep: bool = typer.Option(True, help="keep the index for the next run (--no-keep deletes it after)"),
    out: Path = typer.Option(None, help="output folder"),
) -> None:
    """A user's recall in one big tenant of many users (the ``user_id`` scope) against the same
    memories as a tenant of their own, same index (issue 67): engine CPU per recall and p95, and
    their ratios (goal ≤ 1.2)."""
    from brain_lab.bench.corpus import parse_size
    from brain_lab.bench.users import IN_ORG, OWN, UsersLayout, drop_users, run_users, users_ratios
    from brain_search.store.client import make_client

    s = _settings(None)
    layout = UsersLayout(parse_size(size), user_count)
    client = make_client(s)
    folder = _out(out, "users")
    _log(f"{layout.documents:,} memories over {layout.users:,} users ({layout.per_user} each); load avg {_load_avg()}")
    rep = run_users(client, s, _pool(s), layout, n, rounds, request_cache=request_cache, force=force, log=_log)
    title = (
        f"recall of a user with {layout.per_user} memories: in a {layout.documents:,}-memory tenant of"
        f" {layout.users:,} users, or alone; {rep.questions} questions × {rep.rounds}, request cache"
        f" {'on' if rep.request_cache else 'off'}; load avg"
        f" {rep.load_avg_before} → {rep.load_avg_after}"
    )
    eng, sh, p95 = users_ratios(rep)
    console.print(_ratio_table(title, rep.paths, [(IN_ORG, eng, sh, p95), (OWN, 1.0, 1.0, 1.0)]))
    console.print(
        f"{IN_ORG} ÷ {OWN}: engine CPU (net) {eng:.2f}×, shard ms {sh:.2f}×, p95 {p95:.2f}× (goal ≤ 1.2);"
        f" the same answers (ids in order) for {rep.same_answers}/{rep.questions} questions;"
        f" the node's background {rep.background_cpu_ms_per_s:.0f} ms/s"
    )
    if rep.load_s:
        console.print(f"{rep.index}: loaded in {rep.load_s:.0f} s, merged in {rep.merge_s:.0f} s")
    (folder / "users.json").write_text(json.dumps(rep.__dict__, indent=2))
    if not keep:
        drop_users(client, s, layout)
        console.print("index deleted")
    console.print(f"results in {folder}")


def tenant_list(
    tenants: int = typer.Option(100_000, min=1, help="tenants created in bulk (1,000 a request)"),
    page: int = typer.Option(1000, min=1, max=1000, help="tenants a page"),
) -> None:
    """The tenant list at scale (issue 67): ``--tenants`` created in bulk, then listed with the
    cursor to the last page: seconds to create and to list, pages, the slowest page, and whether
    the list is whole (every id once, in order)."""
    from brain_lab.bench.tenant_list import run_tenant_list

    s = _settings(None).model_copy(update={"index_prefix": "bench-tenant-list"})
    rep = run_tenant_list(s, tenants, page, log=_log)
    console.print(
        f"{rep.tenants:,} tenants: created in {rep.create_s:.1f} s ({rep.tenants / rep.create_s:,.0f}/s); listed in"
        f" {rep.pages} pages of {page} in {rep.list_s:.1f} s (slowest page {rep.slowest_page_ms:.0f} ms);"
        f" {rep.listed:,} listed, whole: {'yes' if rep.whole else 'NO'}"
    )
    if not rep.whole:
        raise typer.Exit(1)


def _finish(path: Path, report: dict[str, Any], client: OpenSearch, built: list[Built], keep: bool) -> None:
    """The report written to ``path``; the shared indices deleted unless ``keep``."""
    from brain_lab.bench.shared import drop_shared

    path.write_text(json.dumps(report, indent=2))
    if not keep:
        drop_shared(client, built)
        console.print("shared indices deleted")
    console.print(f"results in {path.parent}")


def add_shared_commands(app: typer.Typer) -> None:
    """``shards``, ``tenants``, ``users`` and ``tenant-list`` as commands of ``app`` (the bench app)."""
    app.command("shards")(shards)
    app.command("tenants")(tenants)
    app.command("users")(users)
    app.command("tenant-list")(tenant_list)
