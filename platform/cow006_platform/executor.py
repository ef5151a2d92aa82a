"""Executors: how the API hands work (matches to play, versions to validate) to workers.

The API knows only the ``Executor`` protocol.  ``InProcessExecutor`` runs the work on a
thread pool inside the API process (the embedded, single-machine setup);
``SynchronousExecutor`` runs it at once, in the caller's thread (tests);
``CeleryExecutor`` sends it as tasks to the Celery workers (``cow006_workers``), by task name
only (the platform never imports the workers), each to its work class's queue
(``workclasses``: validations, ladder and league matches, challenges).

After a league match, the executor also starts the league's next round when the current one
is settled (``execution.after_match``) and runs the new matches.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Literal, Protocol

from sqlalchemy.orm import Session, sessionmaker

from . import execution, workclasses
from .models import MatchKind
from .settings import Settings

logger = logging.getLogger(__name__)


class Executor(Protocol):
    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        """Queue a match (already in the database, status queued) to be played; ``kind``
        picks its work class's queue (None: a ladder or league match)."""

    def submit_validation(self, version_id: int) -> None:
        """Queue a new version's validation."""

    def close(self) -> None:
        """Stop accepting work and let the work in hand finish."""


class _Runner:
    """The work itself, shared by the executors (errors are logged, never raised)."""

    def __init__(self, session_factory: sessionmaker[Session], settings: Settings) -> None:
        self.session_factory = session_factory
        self.settings = settings

    def run_match(self, match_id: int) -> list[int]:
        execution.run_match(self.session_factory, self.settings, match_id)
        try:
            follow_ups = execution.after_match(self.session_factory, match_id)
            # A slot for a held challenge may have come free (workclasses).
            return follow_ups + workclasses.release_challenges(self.session_factory, self.settings)
        except Exception:
            logger.exception("the work after match %s failed", match_id)
            return []

    def validate(self, version_id: int) -> None:
        try:
            execution.validate_version(self.session_factory, self.settings, version_id)
        except Exception:
            logger.exception("version %s could not be validated", version_id)


class SynchronousExecutor:
    """Runs each piece of work at submit time, in the caller's thread (for tests)."""

    def __init__(self, session_factory: sessionmaker[Session], settings: Settings) -> None:
        self._runner = _Runner(session_factory, settings)

    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        for follow_up in self._runner.run_match(match_id):
            self.submit_match(follow_up)

    def submit_validation(self, version_id: int) -> None:
        self._runner.validate(version_id)

    def close(self) -> None:
        pass


class InProcessExecutor:
    """Runs the work on a pool of ``threads`` threads in this process."""

    def __init__(
        self, session_factory: sessionmaker[Session], settings: Settings, threads: int = 1
    ) -> None:
        self._runner = _Runner(session_factory, settings)
        self._pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="cow006")
        self._idle = threading.Condition()
        self._pending = 0
        self._closed = False

    def _submit(self, kind: Literal["match", "validation"], arg: int) -> None:
        with self._idle:
            if self._closed:
                raise RuntimeError("the executor is closed")
            self._pending += 1
        try:
            self._pool.submit(self._run, kind, arg)
        except BaseException:
            self._done()
            raise

    def _done(self) -> None:
        with self._idle:
            self._pending -= 1
            if self._pending == 0:
                self._idle.notify_all()

    def _run(self, kind: Literal["match", "validation"], arg: int) -> None:
        try:
            if kind == "match":
                for follow_up in self._runner.run_match(arg):
                    # Counted before this task is done: wait_idle never sees a gap.
                    self._submit("match", follow_up)
            else:
                self._runner.validate(arg)
        except Exception:
            logger.exception("executor task %s %s failed", kind, arg)
        finally:
            self._done()

    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        self._submit("match", match_id)

    def submit_validation(self, version_id: int) -> None:
        self._submit("validation", version_id)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no work is queued or running; False if ``timeout`` seconds pass first."""
        with self._idle:
            return self._idle.wait_for(lambda: self._pending == 0, timeout)

    def close(self) -> None:
        with self._idle:
            self._closed = True
        self._pool.shutdown(wait=True)


# The names of the workers' tasks (cow006_workers.tasks): the contract between the two.
RUN_MATCH_TASK = "cow006.run_match"
VALIDATE_TASK = "cow006.validate_version"
# The queue of all work before the work classes (``workclasses``: one queue per class);
# workers still read it, nothing sends to it.
QUEUE = workclasses.LEGACY_QUEUE


def prepare_broker(url: str) -> None:
    """The embedded SQLite broker needs its folder (kombu creates the file, not the folder)."""
    if url.startswith("sqla+sqlite:///"):
        path = url.removeprefix("sqla+sqlite:///")
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)


class CeleryExecutor:
    """Sends the work to the Celery workers through ``broker_url``, by task name.

    The database is the source of truth: the match row (or the pending version) exists
    before its task is sent, so a task that cannot be sent (the broker is down) is not lost
    work: it is logged, and the workers' reaper sends it again later.  Sending never blocks
    a request for long: a few quick retries, then it gives up.
    """

    def __init__(self, broker_url: str) -> None:
        # Imported here: the in-process setups never load Celery.
        from celery import Celery

        self.broker_url = broker_url
        prepare_broker(broker_url)
        self._app: Any = Celery("cow006-platform", broker=broker_url, set_as_current=False)
        self._app.conf.update(
            task_serializer="json",
            accept_content=["json"],
            task_ignore_result=True,
            broker_connection_retry_on_startup=True,
        )
        self._retry = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2}

    def _send(self, name: str, arg: int, queue: str) -> None:
        try:
            self._app.send_task(name, args=[arg], queue=queue, retry=True, retry_policy=self._retry)
        except Exception:  # the broker is down: the reaper re-sends from the database
            logger.exception("could not send %s(%s); the reaper will send it again", name, arg)

    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        self._send(RUN_MATCH_TASK, match_id, workclasses.queue_for_match(kind))

    def submit_validation(self, version_id: int) -> None:
        self._send(VALIDATE_TASK, version_id, workclasses.VALIDATE_QUEUE)

    def close(self) -> None:
        self._app.close()
