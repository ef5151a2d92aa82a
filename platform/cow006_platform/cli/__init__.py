"""The ``cow006`` command of the arena: the SDK's commands plus ``admin`` and ``db``.

::

    cow006 admin create-user alice --admin    # prints alice's API token, this once
    cow006 admin invite --uses 5              # an invite code (COW006_REGISTRATION=invite)
    cow006 admin approve-user bob             # a pending user (COW006_REGISTRATION=approval)
    cow006 admin disable-user bob             # refuse bob's tokens; enable-user undoes it
    cow006 admin revoke-tokens bob            # every token of bob's refused from now on
    cow006 admin rerate main                  # recompute a ladder's ratings (name or id)
    cow006 admin pause main                   # stop scheduling a ladder's matches; resume
    cow006 admin disable-agent cheater        # out of every ladder's matchmaking; enable-agent
    cow006 admin requeue-failed --ladder main # failed matches played again (rated once)
    cow006 admin unsuspend cheater@2          # seat a suspended version at ladder tables again
    cow006 admin export main main.tar.gz      # every finished match log + index.jsonl
    cow006 db upgrade                         # create or migrate the database schema

The database is the one in COW006_DATABASE_URL (see ``cow006_platform.settings``).  The SDK's
own ``cow006`` (sdk/pyproject.toml) has only the player commands: ``match``, ``tournament``,
``verify``; this module registers those same command objects, it does not copy them.
"""

from __future__ import annotations

import typer

from cow006 import cli as sdk_cli

# The command groups; their commands register in the order ``--help`` lists them.
from . import accounts, arena, export  # noqa: F401  (they register their commands)
from ._app import admin, db_app, upgrade

__all__ = ["admin", "build_app", "db_app", "main", "upgrade"]


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
    app.registered_groups.extend(sdk_cli.app.registered_groups)  # cow006 token ...
    app.add_typer(admin)
    app.add_typer(db_app)
    return app


def main() -> None:
    """Entry point of the root project's ``cow006`` console script."""
    build_app()(prog_name="cow006")
