"""CLI: `brain-search users ...`: the users of your organisation (a tenant), through the HTTP API
with the organisation's key (``--api-key`` / ``BRAIN_API_KEY``): mint, list and revoke keys held
to one user, and forget a user (every memory, version, dead letter, task record and recall
record of theirs). One user's memories: `brain-search export FILE --user USER`."""

from __future__ import annotations

import typer

from brain_search.commands.common import JSON_OPT, KEY_OPT, URL_OPT, console, iso_time, printed, tenant_api
from brain_search.commands.memories import follow_forget

users_app = typer.Typer(help="Your organisation's users: keys held to one user, and forgetting a user.")


def register(app: typer.Typer) -> None:
    app.add_typer(users_app, name="users")


@users_app.command("key")
def key(
    user: str = typer.Argument(..., help="the user's id inside your organisation"),
    read_only: bool = typer.Option(False, "--read-only", help="the key recalls and reads only"),
    label: str = typer.Option(None, "--label", help="what the key is for"),
    expires: str = typer.Option(
        None, "--expires", callback=iso_time, help="from then on the key is refused (ISO 8601)"
    ),
    *,
    url: str = URL_OPT,
    api_key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Mint a key held to USER: it reads and writes that user's memories only (shown once)."""
    flags = {"expires_at": "--expires", "label": "--label"}
    out = tenant_api(url, api_key, flags)(
        lambda c: c.users.create_key(user, label=label or None, read_only=read_only, expires_at=expires)
    )
    if as_json:
        typer.echo(printed(out))
        return
    kind = "read-only key" if out.read_only else "key"
    console.print(f"{kind} {out.key_id} for user {out.user_id} (shown once):", highlight=False)
    typer.echo(out.key)


@users_app.command("keys")
def keys(
    user: str = typer.Argument(..., help="the user's id"),
    url: str = URL_OPT,
    api_key: str = KEY_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """The keys held to USER, without their secrets."""
    found = tenant_api(url, api_key)(lambda c: c.users.keys(user))
    if as_json:
        typer.echo(printed(found))
        return
    for k in found:
        state = "revoked" if k.revoked else ("read-only" if k.read_only else "read-write")
        created = k.model_dump(mode="json")["created_at"]
        console.print(f"{k.key_id}  {state:10}  {created}  {k.label or ''}", highlight=False)
    if not found:
        console.print("no keys", highlight=False)


@users_app.command("revoke")
def revoke(
    user: str = typer.Argument(..., help="the user's id"),
    key_id: str = typer.Argument(..., help="the key's id (`users keys` lists them)"),
    url: str = URL_OPT,
    api_key: str = KEY_OPT,
) -> None:
    """Revoke a key held to USER (refused at once here, within 5 s by every API process)."""
    tenant_api(url, api_key)(lambda c: c.users.revoke_key(user, key_id))
    console.print(f"{key_id}: revoked", highlight=False)


@users_app.command("forget")
def forget(
    user: str = typer.Argument(..., help="the user's id"),
    wait: bool = typer.Option(True, help="wait for the task and print what it removed"),
    url: str = URL_OPT,
    api_key: str = KEY_OPT,
    *,
    as_json: bool = JSON_OPT,
) -> None:
    """Forget USER: every memory of theirs (tombstoned: no earlier write brings one back), with its
    history and dead letters, the records of ended tasks that wrote for them and of their recalls.
    Their keys stay: revoke them apart."""
    api = tenant_api(url, api_key, {"user_id": "USER"})
    follow_forget(api, api(lambda c: c.users.forget(user)), wait, as_json)
