"""``cow006 token``: the logged-in user's API tokens on an arena (``cow006._client``).

::

    cow006 token list                 # name, prefix, dates; * marks the token this CLI uses
    cow006 token create laptop        # prints the new secret, this once (--use: log in with it)
    cow006 token revoke laptop        # by name or id; refused at once by the arena
    cow006 token rotate               # a new secret for this CLI's token (saved), old one revoked

A secret is printed once, by ``create`` and ``rotate``; the arena keeps only its hash.  When
the token this CLI uses (the credentials file's) is rotated, the file gets the new one; a
token from ``COW006_TOKEN`` cannot be rewritten, so the new one is printed to set there.
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import typer

from . import _client as client

token_app = typer.Typer(
    name="token",
    help="Your API tokens on the arena you logged in to: list, create, revoke, rotate.",
    no_args_is_help=True,
    add_completion=False,
)


def _arena() -> tuple[client.Client, client.Credentials]:
    creds = client.load_credentials()
    if creds.url is None or not creds.token:
        raise client.ClientError(
            "not logged in: run `cow006 login URL` first (or set COW006_URL and COW006_TOKEN)"
        )
    return client.Client(creds.url, creds.token), creds


def _find(tokens: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    """A live token by name, else by id."""
    for t in tokens:
        if t["name"] == ref:
            return t
    for t in tokens:
        if ref.isdigit() and t["id"] == int(ref):
            return t
    names = ", ".join(t["name"] for t in tokens) or "none"
    raise client.ClientError(f"you have no live token named {ref!r} (yours: {names})")


def _day(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "-"


@token_app.command("list")
def list_command(
    show_all: Annotated[
        bool, typer.Option("--all", help="Revoked and expired tokens too.")
    ] = False,
) -> None:
    """List your tokens: id, name, first characters, created, last used, expiry."""
    arena, _ = _arena()
    rows = arena.tokens(revoked=show_all)
    if not rows:
        typer.echo("no tokens")
        return
    typer.echo(
        f"  {'id':>6}  {'name':<20} {'prefix':<10} {'created':<16}  {'last used':<16}  expires"
    )
    for t in rows:
        mark = "*" if t["current"] else " "
        prefix = f"{t['prefix']}…" if t["prefix"] else "(old)"
        state = f" (revoked {_day(t['revoked_at'])})" if t.get("revoked_at") else ""
        typer.echo(
            f"{mark} {t['id']:>6}  {t['name']:<20} {prefix:<10} {_day(t['created_at']):<16}  "
            f"{_day(t['last_used_at']):<16}  {_day(t['expires_at'])}{state}"
        )


@token_app.command("create")
def create_command(
    name: Annotated[str, typer.Argument(help="1 to 40 letters, digits, '.', '_' or '-'.")],
    days: Annotated[
        int | None, typer.Option("--days", min=1, max=3650, help="Expire after this many days.")
    ] = None,
    use: Annotated[
        bool, typer.Option("--use", help="Log this CLI in with the new token (saved).")
    ] = False,
) -> None:
    """Create a token and print its secret (shown this once)."""
    arena, creds = _arena()
    made = arena.create_token(name, days)
    typer.echo(f"created token {made['name']} (id {made['id']}); secret (shown once):", err=True)
    typer.echo(made["token"])
    if use:
        _save(creds, arena.url, str(made["token"]))


@token_app.command("revoke")
def revoke_command(
    refs: Annotated[list[str], typer.Argument(help="Token names or ids.", metavar="TOKEN...")],
) -> None:
    """Revoke tokens: the arena refuses them from now on."""
    arena, _ = _arena()
    tokens = arena.tokens()
    chosen = [_find(tokens, ref) for ref in refs]  # all found before any is revoked
    for t in chosen:
        arena.revoke_token(int(t["id"]))
        typer.echo(f"revoked token {t['name']} (id {t['id']})")
    if any(t["current"] for t in chosen):
        typer.echo(
            "that was the token this CLI uses: log in again with another "
            f"(cow006 login {arena.url})",
            err=True,
        )


@token_app.command("rotate")
def rotate_command(
    ref: Annotated[
        str | None, typer.Argument(help="A token name or id (default: the one this CLI uses).")
    ] = None,
) -> None:
    """Replace a token by a new secret of the same name; the old one is revoked at once."""
    arena, creds = _arena()
    tokens = arena.tokens()
    if ref is None:
        current = [t for t in tokens if t["current"]]
        if not current:
            raise client.ClientError("the arena did not say which token this CLI uses")
        old = current[0]
    else:
        old = _find(tokens, ref)
    made = arena.rotate_token(int(old["id"]))
    if old["current"]:
        typer.echo(f"rotated token {made['name']}: the old secret is revoked")
        _save(creds, arena.url, str(made["token"]))
    else:
        typer.echo(f"rotated token {made['name']}; new secret (shown once):", err=True)
        typer.echo(made["token"])


def _save(creds: client.Credentials, url: str, token: str) -> None:
    """Log this CLI in with ``token``: into the credentials file, or ask for COW006_TOKEN."""
    if os.environ.get(client.TOKEN_ENV):
        typer.echo(f"this CLI's token comes from {client.TOKEN_ENV}; set it to:", err=True)
        typer.echo(token)
        return
    user = creds.user or str(client.Client(url, token).get("/users/me")["name"])
    path = client.save_credentials(url, token, user)
    typer.echo(f"saved the new token in {path}")
