"""The ``cow006`` command: play a match, run a tournament, verify logs.

::

    cow006 match builtin:random builtin:heuristics ./my_bot.py --seed 7 --log match.json
    cow006 tournament builtin:random builtin:best ./my_bot.py --matches 100 --players 3 \\
        --jobs 4 --out logs/ --seed 1
    cow006 verify logs/*.json
    cow006 rerun match.json ./my_bot.py --seat 2   # a recorded match, your bot in seat 2

And against an arena's HTTP API (``cow006._client``; credentials saved by ``login``)::

    cow006 login http://127.0.0.1:8000 --register alice
    cow006 submit ./my_bot.py --agent my-bot --ladder main
    cow006 status
    cow006 logs 42 --save match-42.json
    cow006 logs --ladder main --out dataset/   # every finished match of a ladder
    cow006 replay 42          # or a log file: cow006 replay match.json
    cow006 token list         # your API tokens there; token create|revoke|rotate

The commands live by what they do: local play in ``cow006._cli_local`` (match, tournament,
verify), the arena client in ``cow006._cli_arena`` (login, submit, status, logs, replay) and
``cow006._cli_token`` (token), the printing of matches and replays in ``cow006._transcript``.
This module makes them one command.

Bad input (a missing file, a bot that does not start, a wrong number of players, an unreadable
log, a bad option) is reported as one ``error: ...`` line on stderr with a non-zero exit, never
a traceback.  ``typer`` and ``rich`` are only used by the command's modules;
``trueskill`` is imported by ``cow006._tournament.rate``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from . import _cli_arena as arena
from . import _cli_local as local
from . import _cli_rerun
from ._cli_shared import fail
from ._cli_token import token_app
from ._errors import Cow006Error


class _Group(TyperGroup):
    """The command group, reporting every expected failure as one ``error:`` line."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        # The whole signature of click's main (windows_expand_args too), passed on as it is.
        if not standalone_mode:
            return super().main(
                args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra
            )
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:  # click's usage errors, in typer's own copy
            code = getattr(exc, "exit_code", 2)
            if type(exc).__name__ == "NoArgsIsHelpError":
                # typer's copy of click's NoArgsIsHelpError (a private class, matched by its
                # name) prints the help; TyperException itself has no show().
                exc.show()  # type: ignore[attr-defined]
                sys.exit(code)
            ctx = getattr(exc, "ctx", None)
            hint = f" (see {ctx.command_path} --help)" if ctx is not None else ""
            fail(exc.format_message() + hint, code)
        except typer.Abort:
            fail("aborted", 130)
        except Cow006Error as exc:
            fail(str(exc))
        except OSError as exc:
            where = f": {exc.filename}" if exc.filename else ""
            fail(f"{exc.strerror or exc}{where}")
        sys.exit(rv if isinstance(rv, int) else 0)


app = typer.Typer(
    cls=_Group,
    name="cow006",
    help="Корова 006 (6 nimmt!) bot arena: play matches and tournaments, verify match logs, "
    "submit bots to an arena and follow them there.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

# In the order ``cow006 --help`` lists them.
for command in (
    local.match,
    local.tournament,
    local.verify,
    _cli_rerun.rerun,
    arena.login,
    arena.submit,
    arena.status,
    arena.logs,
    arena.replay,
):
    app.command()(command)
app.add_typer(token_app)


def main() -> None:
    """Entry point of the ``cow006`` console script and of ``python -m cow006``."""
    app(prog_name="cow006")
