"""The ``cow006`` command of the arena: the SDK's commands plus ``admin`` and ``db``.

::

    cow006 admin create-user alice --admin    # prints alice's API token, this once
    cow006 admin rerate main                  # recompute a ladder's ratings (name or id)
    cow006 db upgrade                         # create or migrate the database schema

The database is the one in COW006_DATABASE_URL (see ``cow006_platform.settings``).  The SDK's
own ``cow006`` (sdk/pyproject.toml) has only the player commands: ``match``, ``tournament``,
``verify``; this module registers those same command objects, it does not copy them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cow006 import cli as sdk_cli

if TYPE_CHECKING:
    from sqlalchemy.orm import Session, sessionmaker

    from .settings import Settings

# The platform (SQLAlchemy, FastAPI, trueskill) is imported inside the commands that need it:
# ``cow006 match`` and friends start as fast as the SDK's own command.

admin = typer.Typer(
    name="admin",
    help="Administer the arena: users, ratings.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(
    name="db", help="The arena's database schema.", no_args_is_help=True, add_completion=False
)


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _open(settings: Settings) -> sessionmaker[Session]:
    """A session factory on the settings' database, its schema brought up to date first."""
    from . import db
    from .app import prepare_database

    engine = db.make_engine(settings.database_url)
    prepare_database(settings, engine)
    return db.make_sessionmaker(engine)


@admin.command("create-user")
def create_user_command(
    name: Annotated[str, typer.Argument(help="2 to 40 letters, digits, '_' or '-'.")],
    is_admin: Annotated[bool, typer.Option("--admin", help="Make the user an admin.")] = False,
) -> None:
    """Create a user and print its API token (shown this once; only its hash is stored)."""
    from . import db
    from .security import create_user
    from .settings import Settings

    factory = _open(Settings())
    try:
        with db.session_scope(factory) as session:
            user, token = create_user(session, name, is_admin=is_admin)
            role = "admin" if user.is_admin else "user"
            user_id = user.id
    except ValueError as exc:  # a bad or taken name
        _fail(str(exc))
    typer.echo(f"created {role} {name} (id {user_id}); API token (shown once):", err=True)
    typer.echo(token)


@admin.command("rerate")
def rerate_command(
    ladder: Annotated[str, typer.Argument(help="The ladder's name or id.")],
) -> None:
    """Recompute a ladder's ratings from its finished rated matches, in order."""
    from sqlalchemy import select

    from . import db, ratings
    from .models import Ladder
    from .settings import Settings

    factory = _open(Settings())
    with db.session_scope(factory) as session:
        query = select(Ladder).where(Ladder.name == ladder)
        found = session.scalar(query)
        if found is None and ladder.isdigit():
            found = session.get(Ladder, int(ladder))
        if found is None:
            _fail(f"no ladder named {ladder!r}")
            return
        n = ratings.rerate(session, found.id)
        name = found.name
    typer.echo(f"rerated ladder {name}: {n} matches")


@db_app.command("upgrade")
def upgrade_command() -> None:
    """Create the schema of a new database, or migrate an existing one to this version."""
    from . import db
    from .app import prepare_database
    from .settings import Settings

    settings = Settings()
    engine = db.make_engine(settings.database_url)
    try:
        prepare_database(settings, engine)
    finally:
        engine.dispose()
    typer.echo(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")


def build_app() -> typer.Typer:
    """The full command: the SDK's commands (same objects, same error handling) + ours."""
    app = typer.Typer(
        cls=sdk_cli.app.info.cls,
        name="cow006",
        help="Корова 006 (6 nimmt!) bot arena: play matches and tournaments, verify match "
        "logs, administer the arena's platform.",
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
    )
    app.registered_commands.extend(sdk_cli.app.registered_commands)
    app.add_typer(admin)
    app.add_typer(db_app)
    return app


def main() -> None:
    """Entry point of the root project's ``cow006`` console script."""
    build_app()(prog_name="cow006")
