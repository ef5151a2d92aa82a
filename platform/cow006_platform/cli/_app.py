"""The ``admin`` and ``db`` command groups, and what their commands share: opening the
database, finding a user, ladder or agent by name or id, failing with one line, and the
commands that switch a row's state (``switch``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

if TYPE_CHECKING:
    from sqlalchemy import Engine
    from sqlalchemy.orm import Session, sessionmaker

    from ..settings import Settings

# The platform (SQLAlchemy, FastAPI, trueskill) is imported inside the commands that need it:
# ``cow006 match`` and friends start as fast as the SDK's own command.

admin = typer.Typer(
    name="admin",
    help="Administer the arena: users, ladders, agents, failed matches, ratings, exports.",
    no_args_is_help=True,
    add_completion=False,
)
db_app = typer.Typer(
    name="db", help="The arena's database schema.", no_args_is_help=True, add_completion=False
)


def fail(message: str) -> NoReturn:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def upgrade(settings: Settings) -> Engine:
    """An engine on the settings' database, its schema created or migrated to this version
    first (the one step of ``cow006 db upgrade``, and before the admin commands)."""
    from .. import db
    from ..app import prepare_database

    engine = db.make_engine(settings.database_url)
    try:
        prepare_database(settings, engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def open_database(settings: Settings) -> sessionmaker[Session]:
    """A session factory on the settings' database, its schema brought up to date first."""
    from .. import db

    return db.make_sessionmaker(upgrade(settings))


@contextmanager
def transaction(factory: sessionmaker[Session] | None = None) -> Iterator[Session]:
    """One transaction on the database of COW006_DATABASE_URL (or of ``factory``),
    committed if it succeeds."""
    from .. import db
    from ..settings import Settings

    with db.session_scope(factory or open_database(Settings())) as session:
        yield session


def find(session: Session, what: str, ref: str) -> Any:
    """The user, ladder or agent (``what``) named ``ref``, or with the id ``ref``; a one-line
    error if there is none."""
    from .. import crud, models

    model = {"user": models.User, "ladder": models.Ladder, "agent": models.Agent}[what]
    found = crud.by_name_or_id(session, model, ref)
    if found is None:
        fail(f"no {what} named {ref!r}")
    return found


def switch(
    command: str,
    what: str,
    change: Callable[[Session, Any], bool],
    done: str,
    already: str,
) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Register ``cow006 admin COMMAND REF``: ``change`` the ``what`` (user, ladder, agent)
    named ``REF`` in one transaction, True if it changed anything, and say ``done`` or
    ``already`` (``{name}``: the row's name).  The decorated function gives the docstring."""

    def register(doc: Callable[..., None]) -> Callable[..., None]:
        def run(ref: str) -> None:
            with transaction() as session:
                row = find(session, what, ref)
                name, changed = row.name, change(session, row)
            typer.echo((done if changed else already).format(name=name))

        # Set here, not written in the signature: postponed annotations cannot see ``what``.
        argument = typer.Argument(metavar=what, help=f"The {what}'s name or id.")
        run.__annotations__ = {"ref": Annotated[str, argument], "return": None}
        run.__doc__ = doc.__doc__
        run.__name__ = doc.__name__
        admin.command(command)(run)
        return run

    return register


@db_app.command("upgrade")
def upgrade_command() -> None:
    """Create the schema of a new database, or migrate an existing one to this version."""
    from ..settings import Settings

    engine = upgrade(Settings())
    engine.dispose()
    typer.echo(f"database at {engine.url.render_as_string(hide_password=True)} is up to date")
