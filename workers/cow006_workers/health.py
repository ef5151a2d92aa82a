"""``cow006 ready [--worker]``: is this machine able to take part in the arena right now?

::

    $ cow006 ready --worker
    database: ok
    broker: ok
    sandbox: ok

One line per check (``NAME: ok`` or ``NAME: failed: why``), exit status 0 when every check
passed, 1 otherwise: an exec probe for orchestrators (Kubernetes ``readinessProbe``, compose
``healthcheck``).  The database and the broker are the ones of COW006_DATABASE_URL and
COW006_BROKER_URL, each check bounded to a few seconds (``cow006_platform.readiness``).
``--worker`` adds the sandbox probe a worker runs before it joins (``cli._check_sandbox``):
a worker whose sandbox broke (bubblewrap gone, slots exhausted) is not ready.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Annotated

import typer

SANDBOX_TIMEOUT = 30.0  # seconds: the probe starts a sandboxed process or two


def sandbox_problem(timeout: float = SANDBOX_TIMEOUT) -> str | None:
    """None if bots can be sandboxed here, else why not (one sentence).

    The probe runs in a child process, for the reason ``cli._check_sandbox`` gives: this
    process must not become the parent of sandboxed processes' orphans.
    """
    from .cli import _PROBE  # the very probe a worker runs before joining

    try:
        done = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"the sandbox probe did not finish within {timeout:g} s"
    if done.returncode == 0:
        return None
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else f"the sandbox probe failed ({done.returncode})"


def run_checks(worker: bool) -> list[tuple[str, str | None]]:
    """(name, problem or None) of each check, in the order they are printed."""
    from cow006_platform import readiness
    from cow006_platform.settings import Settings

    settings = Settings()
    checks = [
        ("database", readiness.check_database(settings.database_url)),
        ("broker", readiness.check_broker(settings.celery_broker_url)),
    ]
    if worker:
        checks.append(("sandbox", sandbox_problem()))
    return checks


def ready_command(
    worker: Annotated[
        bool, typer.Option("--worker", help="Check the sandbox too (for a worker machine).")
    ] = False,
) -> None:
    """Check the database, the broker and (--worker) the sandbox; exit 1 if any fails."""
    failed = False
    for name, problem in run_checks(worker):
        if problem is None:
            typer.echo(f"{name}: ok")
        else:
            failed = True
            typer.echo(f"{name}: failed: {problem}")
    raise typer.Exit(1 if failed else 0)
