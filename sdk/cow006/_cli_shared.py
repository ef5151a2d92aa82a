"""What the modules of the ``cow006`` command share: its console and its one-line errors.

This module, the ``_cli_*`` modules, ``cow006._cli_token`` and ``cow006._transcript`` are the
only parts of the SDK that use ``typer`` and ``rich``.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import typer
from rich.console import Console

from .untrusted import for_terminal

PIPE_WIDTH = 120  # columns of output that does not go to a terminal


def console(*, stderr: bool = False) -> Console:
    """A rich console; when the output is not a terminal (a file, a pipe) tables get room."""
    out = Console(stderr=stderr)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        out = Console(stderr=stderr, width=PIPE_WIDTH)
    return out


def one_line(message: str) -> str:
    return " ".join(part.strip() for part in str(message).splitlines() if part.strip())


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``error: message`` on one line of stderr and exit with ``code``."""
    # An error may quote a bot (a start-up fault): never a raw escape on the terminal.
    typer.echo(f"error: {for_terminal(one_line(message))}", err=True)
    sys.exit(code)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"
