"""The embedded setups: the workers' own code run in this process, without a broker.

The platform's ``create_app`` takes an executor (``cow006_platform.executor.Executor``).  In
production that is the ``CeleryExecutor``, which sends tasks to the workers; on a single
machine, in tests and in tools, it is one of these, which run the very code a Celery worker
runs (``runs.run_match`` under its lease, with its follow-ups: a league's next round, a
ladder's refill, held challenges admitted; ``validation.validate_version``), on a database
engine of their own as a worker has:

* ``InProcessExecutor``: a pool of threads; ``submit_*`` returns at once and the work runs
  in the background (``wait_idle`` waits for it);
* ``SynchronousExecutor``: the work, and what follows it, runs in the caller's thread before
  ``submit_*`` returns.

There is no scheduler or reaper here: ladders are refilled after each finished ladder match
only, and work lost with the process stays queued.  ``embedded_app`` is the uvicorn factory
of the single-process arena (``uvicorn --factory cow006_workers.embedded:embedded_app``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from fastapi import FastAPI

from cow006_platform.app import create_app
from cow006_platform.models import MatchKind
from cow006_platform.settings import Settings

from . import runs, validation
from .context import Context

logger = logging.getLogger(__name__)


class _Work:
    """What both executors run, on their own engine (errors are logged, never raised)."""

    def __init__(self, settings: Settings) -> None:
        self.ctx = Context.create(settings)

    def match(self, match_id: int, send_matches: runs.SendMatches) -> None:
        """Play the match (``runs.run_match``); its follow-ups go to ``send_matches``."""
        runs.run_match(self.ctx.session_factory, self.ctx.settings, match_id, send_matches)

    def validation(self, version_id: int) -> None:
        validation.validate_version(self.ctx.session_factory, self.ctx.settings, version_id)

    def close(self) -> None:
        self.ctx.close()


class SynchronousExecutor:
    """Runs each piece of work at submit time, in the caller's thread (tests, tools).

    The follow-ups of a match are played too, one after the other, before ``submit_match``
    returns.  A ladder match refills its ladder as on a worker, so an open ladder would be
    played on and on: the API submits challenges and league matches only.
    """

    def __init__(self, settings: Settings) -> None:
        self._work = _Work(settings)

    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        queue = [match_id]
        while queue:
            self._work.match(queue.pop(0), queue.extend)

    def submit_validation(self, version_id: int) -> None:
        self._work.validation(version_id)

    def close(self) -> None:
        self._work.close()


class InProcessExecutor:
    """Runs the work on a pool of ``threads`` threads in this process."""

    def __init__(self, settings: Settings, threads: int = 1) -> None:
        self._work = _Work(settings)
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="cow006")
        self._idle = threading.Condition()
        self._pending = 0
        self._closed = False

    def _submit(self, job: Callable[[], None]) -> None:
        with self._idle:
            if self._closed:
                raise RuntimeError("the executor is closed")
            self._pending += 1
        try:
            self._pool.submit(self._run, job)
        except BaseException:
            self._done()
            raise

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            if self._pending == 0:
                self._idle.notify_all()

    def _run(self, job: Callable[[], None]) -> None:
        try:
            job()
        except Exception:
            logger.exception("an embedded executor's work failed")
        finally:
            self._done()

    def _send(self, match_ids: list[int]) -> None:
        # Called while the match that created them still counts as pending: wait_idle never
        # sees a gap between a match and its follow-ups.
        for match_id in match_ids:
            self.submit_match(match_id)

    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        self._submit(lambda: self._work.match(match_id, self._send))

    def submit_validation(self, version_id: int) -> None:
        self._submit(lambda: self._work.validation(version_id))

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no work is queued or running; False if ``timeout`` seconds pass first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        """Refuse new work, let the work in hand finish, and close the engine."""
        with self._idle:
            if self._closed:
                return
            self._closed = True
        self._pool.shutdown(wait=True)
        self._work.close()


def embedded_app() -> FastAPI:
    """The uvicorn factory of the single-process arena: the app with an ``InProcessExecutor``
    (settings from the environment), whose threads finish the work in hand before the
    process exits."""
    settings = Settings()
    return create_app(settings, InProcessExecutor(settings))
