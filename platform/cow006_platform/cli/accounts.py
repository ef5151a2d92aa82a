"""``cow006 admin`` commands for accounts: users, their tokens, invite codes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

import typer

from ._app import admin, fail, find, open_database, switch, transaction

if TYPE_CHECKING:
    from sqlalchemy.orm import Session

    from ..models import User


@admin.command("create-user")
def create_user_command(
    name: Annotated[str, typer.Argument(help="2 to 40 letters, digits, '_' or '-'.")],
    is_admin: Annotated[bool, typer.Option("--admin", help="Make the user an admin.")] = False,
) -> None:
    """Create a user and print its API token (shown this once; only its hash is stored)."""
    from ..security import create_user
    from ..settings import Settings

    factory = open_database(Settings())
    try:
        with transaction(factory) as session:
            user, token = create_user(session, name, is_admin=is_admin)
            role = "admin" if user.is_admin else "user"
            user_id = user.id
    except ValueError as exc:  # a bad or taken name
        fail(str(exc))
    typer.echo(f"created {role} {name} (id {user_id}); API token (shown once):", err=True)
    typer.echo(token)


def _setter(flag: str, value: bool) -> Callable[[Session, User], bool]:
    def change(_session: Session, user: User) -> bool:
        changed = getattr(user, flag) != value
        setattr(user, flag, value)
        return changed

    return change


@switch(
    "disable-user",
    "user",
    _setter("disabled", True),
    "disabled user {name}: their tokens are refused",
    "user {name} is already disabled",
)
def disable_user_command() -> None:
    """Disable a user: every request with one of their tokens is refused (403) from now on,
    in every API process.  Their agents, versions and matches stay."""


@switch(
    "enable-user",
    "user",
    _setter("disabled", False),
    "enabled user {name}",
    "user {name} is not disabled",
)
def enable_user_command() -> None:
    """Enable a disabled user again (their live tokens work again)."""


@switch(
    "approve-user",
    "user",
    _setter("pending", False),
    "approved user {name}",
    "user {name} is not pending",
)
def approve_user_command() -> None:
    """Approve a user who registered while the arena approves new users
    (COW006_REGISTRATION=approval): their token works from now on."""


@admin.command("pending-users")
def pending_users_command() -> None:
    """List the users waiting for approval, oldest first."""
    from .. import crud

    with transaction() as session:
        rows = crud.users.pending(session)
    for name, created in rows:
        typer.echo(f"{name}\tregistered {created:%Y-%m-%d %H:%M}")
    if not rows:
        typer.echo("no user is waiting for approval", err=True)


@admin.command("revoke-tokens")
def revoke_tokens_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
) -> None:
    """Revoke every token of a user: each is refused at once, in every API process.  The
    user is not disabled; ``cow006 admin new-token NAME`` gives them a new token."""
    from .. import security

    with transaction() as session:
        found = find(session, "user", user)
        name = found.name
        n = security.revoke_all(session, found.id)
    typer.echo(f"revoked {n} token{'' if n == 1 else 's'} of user {name}")


@admin.command("new-token")
def new_token_command(
    user: Annotated[str, typer.Argument(help="The user's name or id.")],
    name: Annotated[str, typer.Option("--name", help="The token's name.")] = "admin-issued",
) -> None:
    """Make a token for a user (one who lost theirs, or whose tokens were revoked) and print
    it, this once."""
    from .. import security
    from ..settings import Settings

    factory = open_database(Settings())
    try:
        with transaction(factory) as session:
            found = find(session, "user", user)
            user_name = found.name
            if any(t.name == name for t in security.live_tokens(session, found.id)):
                fail(f"user {user_name} already has a token named {name!r}; pick another --name")
            _, token = security.add_token(session, found.id, name)
    except ValueError as exc:  # a bad token name
        fail(str(exc))
    typer.echo(f"new token {name!r} of user {user_name} (shown once):", err=True)
    typer.echo(token)


@admin.command("invite")
def invite_command(
    uses: Annotated[
        int, typer.Option("--uses", min=1, max=10_000, help="Registrations it is good for.")
    ] = 1,
    days: Annotated[
        float | None,
        typer.Option("--days", min=0.001, max=3650, help="Valid this many days (default: ever)."),
    ] = None,
    note: Annotated[
        str | None, typer.Option("--note", help="Who it is for (kept with it, up to 200 chars).")
    ] = None,
) -> None:
    """Make an invite code for COW006_REGISTRATION=invite and print it, this once (only its
    hash is stored).  It is sent as "invite" with POST /api/users, or given to
    ``cow006 login URL --register NAME --invite CODE``."""
    from .. import security

    if note is not None and len(note) > 200:
        fail("a note is at most 200 characters")
    with transaction() as session:
        _, code = security.create_invite(session, uses, days=days, note=note)
    good = f"{uses} registration{'' if uses == 1 else 's'}"
    until = f" within {days:g} days" if days is not None else ""
    typer.echo(f"invite code for {good}{until} (shown once):", err=True)
    typer.echo(code)
