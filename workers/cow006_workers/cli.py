"""The ``cow006`` command with everything: the SDK's and the platform's commands, plus ours.

::

    cow006 serve [--host 127.0.0.1] [--port 8000] [--workers 2]   # the arena on one machine
    cow006 api [--host 127.0.0.1] [--port 8000] [--workers 1]     # migrate, then serve the API
    cow006 worker [--concurrency N] [--pool prefork|threads|solo]  # join an arena as a worker
                  [--queues validate,ladder,challenge]           # which work classes (all)
    cow006 beat                                   # the scheduler and reaper (one per arena)

``worker`` and ``beat`` find the arena through COW006_BROKER_URL and COW006_DATABASE_URL
(docs/operations.md).  The root project's ``cow006`` console script is ``main`` here; the
platform's command (``cow006_platform.cli.build_app``) is reused, not copied.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Annotated

import typer

from cow006_platform import cli as platform_cli

from . import health, httpserver

# Celery, FastAPI and uvicorn are imported inside the commands that need them: ``cow006
# match`` and the admin commands start as fast as before.


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


_PROBE = """
import sys
from cow006 import sandbox
from cow006_platform.settings import Settings
from cow006_workers import play
try:
    play.sandbox_for(Settings())
except sandbox.SandboxError as exc:
    sys.exit(str(exc))
"""


def _check_sandbox() -> None:
    """Fail closed before joining: a worker that cannot sandbox bots must not take matches.

    The probe runs in a child process: probing here would make this process (the Celery
    parent) the child subreaper of sandboxed processes, and the orphans of the pool
    processes' bots would then pile up here as zombies, never reaped.
    """
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True)
    if done.returncode != 0:
        _fail(done.stderr.strip() or f"the sandbox probe failed ({done.returncode})")


_ROOT_WARNING = r"You're running the worker with superuser privileges"


def quiet_start(what: str) -> None:
    """``--quiet-start`` (``cow006 serve`` without ``--verbose``): no Celery banner (Celery's
    ``--quiet``, added by the caller), one line of ours once ready, and Celery's root warning
    silenced when the sandbox is on: bots then run as the sandbox slots' unprivileged uids,
    never as root (``serve.root_note`` says so once, in the banner)."""
    import warnings

    from celery.signals import worker_ready

    from cow006_platform.settings import Settings

    if Settings().sandbox != "off":
        warnings.filterwarnings("ignore", message=_ROOT_WARNING)

    def ready(**_: object) -> None:
        # sys.__stdout__: Celery has pointed sys.stdout at its logger by then.
        print(f"{what} started", file=sys.__stdout__, flush=True)

    worker_ready.connect(ready, weak=False)


def worker_queues(spec: str | None) -> list[str]:
    """The queues of ``--queues``: work classes by name (``ladder``) or queue
    (``cow006.ladder``), comma-separated; all of them (and the old ``cow006``) when empty."""
    from cow006_platform.tasknames import DEFAULT_WORKER_QUEUES, LEGACY_QUEUE, WORK_QUEUES

    if not spec or not spec.strip():
        return list(DEFAULT_WORKER_QUEUES)
    known = {q: q for q in (*WORK_QUEUES, LEGACY_QUEUE)}
    known.update({q.removeprefix("cow006."): q for q in WORK_QUEUES})
    out: list[str] = []
    for name in (part.strip() for part in spec.split(",")):
        if not name:
            continue
        if name not in known:
            names = ", ".join(q.removeprefix("cow006.") for q in WORK_QUEUES)
            _fail(f"--queues: {name!r} is not a work class (the classes are {names})")
        if known[name] not in out:
            out.append(known[name])
    if not out:
        _fail("--queues names no work class")
    return out


def worker_command(
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            "-c",
            min=1,
            help="Matches played at once (each seat of each match takes a sandbox slot).",
        ),
    ] = max(1, os.cpu_count() or 1),
    pool: Annotated[
        str, typer.Option(help="Celery pool: prefork (processes), threads or solo.")
    ] = "prefork",
    loglevel: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    logfile: Annotated[str | None, typer.Option(help="Log to this file.")] = None,
    hostname: Annotated[str | None, typer.Option(help="The worker's node name.")] = None,
    queues: Annotated[
        str | None,
        typer.Option(
            "--queues",
            "-Q",
            help="Work classes to take, comma-separated: validate, ladder, challenge "
            "(default: all of them, in turn).",
        ),
    ] = None,
    supervised: Annotated[bool, typer.Option("--supervised", hidden=True)] = False,
    quiet: Annotated[bool, typer.Option("--quiet-start", hidden=True)] = False,
) -> None:
    """Join the arena as a worker: play matches, validate uploads (Celery)."""
    from . import reaper

    chosen = worker_queues(queues)  # a typo fails before the sandbox probe
    _check_sandbox()
    if not supervised:
        # This process stays as the worker's reaping parent (reaper.supervise); the worker
        # itself is the same command, run again with --supervised.
        argv = [sys.executable, "-m", "cow006_workers", *sys.argv[1:], "--supervised"]
        raise typer.Exit(reaper.supervise(argv))

    from .celery_app import app

    argv = ["--quiet"] if quiet else []
    if quiet:
        quiet_start(f"worker ({concurrency} matches at once, {pool})")
    argv += [
        "worker",
        f"--concurrency={concurrency}",
        f"--pool={pool}",
        f"--loglevel={loglevel}",
        f"--queues={','.join(chosen)}",
        "--without-gossip",
        "--without-mingle",
    ]
    if logfile:
        argv.append(f"--logfile={logfile}")
    if hostname:
        argv.append(f"--hostname={hostname}")
    app.worker_main(argv=argv)


def beat_command(
    loglevel: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    logfile: Annotated[str | None, typer.Option(help="Log to this file.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet-start", hidden=True)] = False,
) -> None:
    """Start the scheduler, ladder refills and the reaper (exactly one per arena).

    Celery beat sends ``cow006.schedule`` every COW006_SCHEDULER_PERIOD seconds and
    ``cow006.reap`` every COW006_REAPER_PERIOD seconds to a queue of their own, which this
    same process works off (a solo worker on that queue only): the ticks never wait for a
    free match worker, so lost tasks are sent again even while every worker is busy.
    """
    from cow006_platform.tasknames import CONTROL_QUEUE

    from .celery_app import app

    argv = ["--quiet"] if quiet else []
    if quiet:
        quiet_start("scheduler")
    argv += [
        "worker",
        "--beat",
        "--pool=solo",
        "--concurrency=1",
        f"--queues={CONTROL_QUEUE}",
        f"--loglevel={loglevel}",
        "--without-gossip",
        "--without-mingle",
        "--hostname=cow006-scheduler@%h",
    ]
    if logfile:
        argv.append(f"--logfile={logfile}")
    app.worker_main(argv=argv)


def serve_command(
    host: Annotated[str, typer.Option(help="The address the API and pages listen on.")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(help="Their port.")] = 8000,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, help="Matches played at once.")
    ] = 2,
    loglevel: Annotated[str, typer.Option(help="The children's log level.")] = "warning",
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose", "-v", help="Every child's own output (Celery's banners and all)."
        ),
    ] = False,
) -> None:
    """Run the whole arena on this machine until Ctrl-C.

    The database schema is brought up to date, the built-in bots are entered in the demo
    ladder, then the API and pages, a worker pool and the scheduler run as child processes.
    It prints a short banner (the URL first), then one line per event: a worker started, a
    version validated or rejected, a match finished.
    """
    from . import serve

    raise typer.Exit(serve.serve(host, port, workers, loglevel, verbose=verbose))


def api_command(
    host: Annotated[
        str,
        typer.Option(
            help="The address the API and pages listen on (0.0.0.0: every interface, as a "
            "container needs)."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Their port.")] = 8000,
    workers: Annotated[
        int, typer.Option("--workers", "-w", min=1, help="uvicorn worker processes.")
    ] = 1,
    loglevel: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
    access_log: Annotated[bool, typer.Option(help="Log every request (uvicorn).")] = True,
) -> None:
    """Serve the API and pages in production: migrate the database, then run uvicorn.

    The app (``cow006_workers.serve:api_app``) sends matches and validations to the workers
    through COW006_BROKER_URL; it never plays a match itself.  The schema is brought up to
    date here, once, before any uvicorn process starts: several processes (or replicas)
    migrating at the same moment would race on the migration table.
    """
    from cow006_platform import db
    from cow006_platform.app import prepare_database
    from cow006_platform.settings import Settings

    settings = Settings()
    engine = db.make_engine(settings.database_url)
    try:
        prepare_database(settings, engine)
    finally:
        engine.dispose()
    # Header and keep-alive timeouts, connection and header caps, /metrics on its own
    # address if so set (httpserver).
    httpserver.run_api(host, port, workers, loglevel, access_log=access_log)


def build_app() -> typer.Typer:
    """The platform's command with ``serve``, ``api``, ``worker`` and ``beat`` added."""
    app = platform_cli.build_app()
    app.command("serve")(serve_command)
    app.command("api")(api_command)
    app.command("worker")(worker_command)
    app.command("beat")(beat_command)
    app.command("ready")(health.ready_command)
    return app


def main() -> None:
    """Entry point of the root project's ``cow006`` console script."""
    build_app()(prog_name="cow006")
