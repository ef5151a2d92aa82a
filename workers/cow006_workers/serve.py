"""``cow006 serve``: the whole arena on one machine, in one command.

It brings the database schema up to date, makes sure the demo content exists (the built-in
bots in the ``demo`` ladder, ``demo.ensure_demo``), then starts three child processes and
watches them:

* the API and web pages: ``cow006 api`` (uvicorn with ``api_app``, ``create_app`` with a
  ``CeleryExecutor``, and the limits of ``httpserver``);
* a worker pool: ``cow006 worker`` (Celery, sandboxed matches);
* the scheduler: ``cow006 beat`` (the ladder refills and the reaper).

With the default settings everything lives under ./var: the SQLite database, the SQLite
broker, the uploaded bots; COW006_DATABASE_URL / COW006_BROKER_URL point it at PostgreSQL and
Redis instead.  Ctrl-C or SIGTERM stops the children (SIGTERM, then SIGKILL after a grace
period); the children also get SIGTERM if this process dies (``PR_SET_PDEATHSIG``), so none is
ever left behind.  This process is a child subreaper: orphans of its children's processes
are reaped here (``reaper``).  If one child dies, the others are stopped and the command fails.

What it prints is for a person (issue 20): a short banner (``banner``: the URL first, the
demo ladder, where the data lives, how to stop), then one line per event (``serve_events``,
and the children's own "worker started" lines); the children print no banner and log
warnings only.  ``verbose`` (``cow006 serve --verbose``) gives every child's full output.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TextIO

from fastapi import FastAPI
from sqlalchemy.exc import SQLAlchemyError

from cow006_platform import db
from cow006_platform.app import create_app, prepare_database
from cow006_platform.executor import CeleryExecutor
from cow006_platform.settings import Settings

from . import reaper
from .demo import ensure_demo
from .serve_events import EventFeed

STOP_GRACE = 20.0  # seconds a child gets to finish its work after SIGTERM


def api_app() -> FastAPI:
    """The uvicorn factory of ``serve``'s API process: the app sending work to the workers."""
    settings = Settings()
    # COW006_LOG_FORMAT / COW006_LOG_LEVEL, in each uvicorn process (after uvicorn's own setup).
    from cow006_platform import logs

    logs.configure(settings)
    return create_app(settings, executor=CeleryExecutor(settings.celery_broker_url))


@dataclass
class Child:
    name: str
    argv: list[str]
    proc: subprocess.Popen[bytes] | None = None


def _cow006(*args: str) -> list[str]:
    return [sys.executable, "-m", "cow006_workers", *args]


def children(
    host: str, port: int, workers: int, loglevel: str, verbose: bool = True
) -> list[Child]:
    # Quiet (the default of ``cow006 serve``): no Celery banners, and a line of our own when
    # a worker or the scheduler is up (``--quiet-start``).
    quiet = [] if verbose else ["--quiet-start"]
    return [
        # ``cow006 api``: uvicorn with the served limits (httpserver); its migration is a
        # no-op by then.
        Child(
            "api",
            _cow006(
                "api",
                "--host",
                host,
                "--port",
                str(port),
                "--loglevel",
                loglevel,
                "--no-access-log",
            ),
        ),
        Child(
            "worker",
            _cow006("worker", "--concurrency", str(workers), "--loglevel", loglevel, *quiet),
        ),
        Child("scheduler", _cow006("beat", "--loglevel", loglevel, *quiet)),
    ]


def _wait_port(host: str, port: int, alive: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    target = "127.0.0.1" if host in ("0.0.0.0", "") else host
    while time.monotonic() < deadline and alive():
        with contextlib.suppress(OSError), socket.create_connection((target, port), timeout=0.5):
            return True
        time.sleep(0.1)
    return False


def stop(procs: Sequence[Child], grace: float = STOP_GRACE) -> None:
    """SIGTERM every child, wait up to ``grace`` seconds, SIGKILL what is left, reap all."""
    running = [c.proc for c in procs if c.proc is not None and c.proc.poll() is None]
    for proc in running:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for proc in running:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
    for proc in running:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait()


def where_data_lives(settings: Settings) -> str:
    """The banner's "data" line: the database (its password hidden) and the bots' folder."""
    from sqlalchemy.engine import make_url

    url = make_url(db.normalize_url(settings.database_url))
    if url.get_backend_name() == "sqlite" and url.database:
        database = str(Path(url.database).resolve())
    else:
        database = url.render_as_string(hide_password=True)
    return f"{database}, bots under {Path(settings.data_dir).resolve()}"


def root_note(settings: Settings) -> str | None:
    """Our one line instead of Celery's root SecurityWarning (None when not root).

    As root with the sandbox on, bots never run as root: each runs as a sandbox slot's own
    unprivileged uid, so Celery's warning is silenced in the children (``cli``) and this says
    why.  With ``COW006_SANDBOX=off`` Celery's warning stays: then bots do run as root.
    """
    if os.geteuid() != 0:
        return None
    if settings.sandbox == "off":
        return "note: running as root with COW006_SANDBOX=off: bots run unconfined, as root"
    return "note: running as root; bots run sandboxed, as unprivileged users of their own"


def banner(settings: Settings, host: str, port: int, ladder_id: int) -> list[str]:
    """The few lines ``serve`` starts with: the URL first."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    shown = f"[{shown}]" if ":" in shown else shown  # an IPv6 address, as URLs write it
    base = f"http://{shown}:{port}"
    lines = [
        f"Корова 006 arena at {base}/",
        f"  demo ladder: {base}/ladders/{ladder_id}   API docs: {base}/docs",
        f"  data: {where_data_lives(settings)}",
        "  stop: Ctrl-C (--verbose shows every child's log)",
    ]
    note = root_note(settings)
    if note:
        lines.append(f"  {note}")
    return lines


def child_env(verbose: bool, loglevel: str) -> dict[str, str] | None:
    """The children's environment: quiet, the arena's own loggers at ``loglevel`` too (the
    API's Alembic INFO lines among them) unless COW006_LOG_LEVEL says otherwise."""
    if verbose:
        return None
    env = dict(os.environ)
    env.setdefault("COW006_LOG_LEVEL", loglevel.upper())
    return env


def serve(
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 2,
    loglevel: str = "warning",
    out: TextIO = sys.stdout,
    verbose: bool = True,
) -> int:
    """Run the arena until Ctrl-C / SIGTERM (see the module); the exit status.

    Quiet unless ``verbose``: the banner, then one line per event (``serve_events``).
    """
    settings = Settings()
    engine = db.make_engine(settings.database_url)
    try:
        prepare_database(settings, engine)
        demo = ensure_demo(db.make_sessionmaker(engine), settings)
    finally:
        engine.dispose()

    stopping = False

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        nonlocal stopping
        stopping = True

    def say(line: str) -> None:
        print(line, file=out, flush=True)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    procs = children(host, port, workers, loglevel, verbose)
    status = 0
    feed_engine = db.make_engine(settings.database_url)
    feed = None if verbose else EventFeed(db.make_sessionmaker(feed_engine))
    if not verbose:
        for line in banner(settings, host, port, demo.ladder_id):
            say(line)
    # Orphans of the children's processes come here rather than to a pid 1 that may not reap.
    reaper.become_subreaper()
    try:
        env = child_env(verbose, loglevel)
        for child in procs:
            # A session of its own: the terminal's Ctrl-C reaches this process only, which
            # then stops the children in order.
            child.proc = subprocess.Popen(
                child.argv, start_new_session=True, preexec_fn=reaper.die_with_parent, env=env
            )
        # The built-ins' validations go through the broker like any upload's.
        executor = CeleryExecutor(settings.celery_broker_url)
        try:
            for version_id in demo.pending:
                executor.submit_validation(version_id)
        finally:
            executor.close()
        api = procs[0].proc
        assert api is not None
        if _wait_port(host, port, lambda: api.poll() is None and not stopping, 60.0):
            if verbose:
                say(
                    f"Корова 006 arena at http://{host}:{port}/  (API docs: /docs; demo ladder "
                    f"id {demo.ladder_id}).  Ctrl-C stops it."
                )
            else:
                say("api ready: the pages and the API answer")
        next_poll = 0.0
        while not stopping:
            dead = [c for c in procs if c.proc is not None and c.proc.poll() is not None]
            if dead:
                for c in dead:
                    assert c.proc is not None
                    say(f"cow006 serve: the {c.name} exited ({c.proc.returncode})")
                status = 1
                break
            reaper.reap_orphans(keep=lambda pid: any(c.proc and c.proc.pid == pid for c in procs))
            if feed is not None and time.monotonic() >= next_poll:
                next_poll = time.monotonic() + 1.0
                # A busy SQLite (the workers writing): the events wait for the next poll.
                with contextlib.suppress(SQLAlchemyError):
                    for line in feed.poll():
                        say(line)
            time.sleep(0.3)
    finally:
        say("cow006 serve: stopping ...")
        stop(procs)
        reaper.reap_orphans()
        feed_engine.dispose()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return status
