"""Executors: how the API hands work (matches to play, versions to validate) to the workers.

The API knows only the ``Executor`` protocol, and ``create_app`` is given one.
``CeleryExecutor`` sends the work as tasks to the Celery workers (``cow006_workers``), by task
name only (``tasknames``: the platform never imports the workers), each to its work class's
queue.  The embedded setups, where the worker code runs inside the API's process (one
machine, tests), take their executors from ``cow006_workers.embedded``: the platform itself
never plays a match.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Protocol

from . import tasknames
from .models import MatchKind

logger = logging.getLogger(__name__)


class Executor(Protocol):
    def submit_match(self, match_id: int, kind: MatchKind | str | None = None) -> None:
        """Queue a match (already in the database, status queued) to be played; ``kind``
        picks its work class's queue (None: a ladder or league match)."""

    def submit_validation(self, version_id: int) -> None:
        """Queue a new version's validation."""

    def close(self) -> None:
        """Stop accepting work and let the work in hand finish."""


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
        # Imported here: the embedded setups never load Celery.
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
        self._send(tasknames.RUN_MATCH_TASK, match_id, tasknames.queue_for_match(kind))

    def submit_validation(self, version_id: int) -> None:
        self._send(tasknames.VALIDATE_TASK, version_id, tasknames.VALIDATE_QUEUE)

    def close(self) -> None:
        self._app.close()
