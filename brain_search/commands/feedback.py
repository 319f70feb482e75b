"""CLI: `brain-search feedback rate RECALL_ID ...` (a recall's rating and results marked relevant
or not) and `brain-search feedback summary` (the tenant's satisfaction), through the HTTP API
(``--api-url`` / ``BRAIN_API_URL``, ``--api-key`` / ``BRAIN_API_KEY``). `recall` prints the id."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table

from brain_search.commands.common import JSON_OPT, KEY_OPT, OWNER_FLAGS, URL_OPT, USER_OPT, console, tenant_api

feedback_app = typer.Typer(help="Rate what a recall returned, and see your tenant's satisfaction.")
# the API's field, and the flag of `rate` that sets it
FLAGS = {"rating": "--rating", r"results\.\d+\.memory_id": "--relevant / --not-relevant", **OWNER_FLAGS}


def register(app: typer.Typer) -> None:
    app.add_typer(feedback_app, name="feedback")


@feedback_app.command("rate")
def rate(
    recall_id: str = typer.Argument(..., help="the recall_id a recall printed"),
    rating: int = typer.Option(None, "--rating", "-r", help="the recall as a whole, 1 (useless) … 5 (exactly right)"),
    relevant: list[str] = typer.Option(None, "--relevant", "-y", help="a result's id that was relevant (repeat)"),
    not_relevant: list[str] = typer.Option(None, "--not-relevant", "-n", help="a result's id that was not (repeat)"),
    *,
    user: str = USER_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Rate a recall and/or mark its results; sent again, the rating and each mark are replaced."""
    marks = {m: True for m in relevant or []} | {m: False for m in not_relevant or []}
    answer = tenant_api(url, key, FLAGS)(
        lambda c: c.feedback.give(recall_id, rating=rating, results=marks, user_id=user)
    ).model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(answer, indent=2))
        return
    marked = ", ".join(f"{m['memory_id']} {'👍' if m['relevant'] else '👎'}" for m in answer["results"]) or "none"
    stars = "★" * answer["rating"] if answer.get("rating") else "not rated"
    console.print(f"recall {answer['recall_id']}: {stars} · results marked: {marked}", highlight=False)
    console.print(f"[dim]kept until {answer['expires_at']}[/dim]", highlight=False)


def _share(s: dict[str, Any]) -> str:
    if s.get("share") is None:
        return "—"
    return f"{s['share']:.0%} of {s['marked']} ({s['low']:.0%}–{s['high']:.0%})"


@feedback_app.command("summary")
def summary(
    days: int = typer.Option(None, "--days", help="the last this many days (default: all that is kept)"),
    user: str = USER_OPT,
    url: str = URL_OPT,
    key: str = KEY_OPT,
    *,
    as_json: bool = JSON_OPT,
) -> None:
    """Mean rating with its 95 % interval, the share of results marked relevant by tier and by
    intent, and the worst-rated recent queries."""
    found = tenant_api(url, key, OWNER_FLAGS)(lambda c: c.feedback.summary(days=days or None, user_id=user))
    s = found.model_dump(mode="json")
    if as_json:
        typer.echo(json.dumps(s, indent=2))
        return
    r = s["rating"]
    mean = f"{r['mean']:.2f} / 5 (95 % {r['low']:.2f}–{r['high']:.2f})" if r["mean"] is not None else "no ratings"
    console.print(f"last {s['days']} days · {s['recalls_kept']} recalls kept · {r['count']} rated · mean {mean}")
    console.print(f"results marked relevant: {_share(s['relevant'])}")
    table = Table(title="relevant, by tier and by intent")
    table.add_column("group")
    table.add_column("relevant")
    for name, share in {**s["relevant_by_tier"], **s["relevant_by_intent"]}.items():
        table.add_row(name, _share(share))
    console.print(table)
    for w in s["worst"]:
        console.print(f"{'★' * w['rating']:<5} {w['query'][:80]}  [dim]{w['recall_id']} · {w['intent']}[/dim]")
