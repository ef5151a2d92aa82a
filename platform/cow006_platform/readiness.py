"""Readiness checks shared by ``GET /readyz`` and ``cow006 ready``: the database, the broker.

Each check returns None when the dependency answers, else one sentence saying why not.
Every check is bounded in time (``bounded``): a probe that hangs on a black-holed address
must answer "not ready" before the orchestrator's own probe timeout, never hang with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlalchemy import Engine, text

from . import db
from .executor import prepare_broker

CHECK_TIMEOUT = 3.0  # seconds one check may take before it counts as failed


def _reason(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def bounded(check: Callable[[], None], timeout: float, what: str) -> str | None:
    """Run ``check`` in a daemon thread; None if it returned within ``timeout`` seconds,
    else one sentence about ``what`` (an exception it raised, or the time it took).

    A thread, not a signal or a cancellation: database drivers block in C, and the one way
    to stop waiting for them is to stop waiting (the thread ends with its connect timeout).
    """
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            check()
            outcome.append(None)
        except BaseException as exc:  # reported, whatever it is
            outcome.append(exc)

    thread = threading.Thread(target=run, name=f"cow006-check-{what}", daemon=True)
    thread.start()
    thread.join(timeout)
    if not outcome:
        return f"the {what} did not answer within {timeout:g} s"
    exc = outcome[0]
    if exc is None:
        return None
    return f"the {what} is unreachable ({_reason(exc)})"


def _select_one(engine: Engine) -> None:
    with engine.connect() as conn:
        conn.execute(text("SELECT 1"))


def check_engine(engine: Engine, timeout: float = CHECK_TIMEOUT) -> str | None:
    """``SELECT 1`` on an existing engine (the API's pool)."""
    return bounded(lambda: _select_one(engine), timeout, "database")


def check_database(url: str, timeout: float = CHECK_TIMEOUT) -> str | None:
    """``SELECT 1`` on a new engine for ``url`` (a process without a pool: ``cow006 ready``)."""

    def check() -> None:
        engine = db.make_engine(url)
        try:
            _select_one(engine)
        finally:
            engine.dispose()

    return bounded(check, timeout, "database")


def _connect_broker(url: str, timeout: float) -> None:
    if url.startswith("sqla+"):
        # Kombu's SQLAlchemy transport connects lazily (ensure_connection alone proves
        # nothing): open its database instead, the way the transport will.
        from sqlalchemy import create_engine

        prepare_broker(url)
        engine = create_engine(url.removeprefix("sqla+"))
        try:
            _select_one(engine)
        finally:
            engine.dispose()
        return
    from kombu import Connection  # imported here: only the broker check needs kombu

    with Connection(url, connect_timeout=timeout) as conn:
        # One attempt, no back-off: a probe answers now; retrying is the orchestrator's job.
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)


def check_broker(url: str, timeout: float = CHECK_TIMEOUT) -> str | None:
    """A connection to the Celery broker at ``url`` (Redis, or the embedded SQLite one)."""
    return bounded(lambda: _connect_broker(url, timeout), timeout, "broker")
