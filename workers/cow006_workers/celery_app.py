"""The Celery application of the arena's workers: broker, queues, reliability settings, beat.

Start a worker with ``cow006 worker`` (or ``celery -A cow006_workers.celery_app worker``) and
the scheduler with ``celery -A cow006_workers.celery_app beat``; both read the COW006_*
settings (``cow006_platform.settings``): COW006_BROKER_URL (empty: the embedded SQLite broker
under ./var) and COW006_DATABASE_URL above all.

Reliability comes from the database, not the broker: a match row exists, queued, before its
task is sent; a worker takes it with a lease (``tasks.run_match``); the reaper sends again
what a lost queue or a dead worker dropped.  The settings below only make the broker's part
as safe as it can be: a task is acknowledged after it ran (``acks_late``), given back when
its worker process dies (``reject_on_worker_lost``), and a worker takes one task at a time
(``prefetch_multiplier = 1``: a match waits in the broker, where any free worker can take it,
not in a busy worker's buffer).

Each work class has its queue (``cow006_platform.tasknames``, with the tasks' names):
``cow006.validate``, ``cow006.ladder`` (ladder and league matches), ``cow006.challenge``; the
beat's ticks go through ``cow006.control``, worked off by the scheduler process itself
(``cow006 beat``), so a tick never waits for a match worker.  A worker reads the queues it
was given in turn (Redis: kombu's round robin, where a queue found empty stays first
in line; the embedded broker: a plain rotation), so with one task per pool process a flood in
one queue delays another by about the match each pool process is playing.
"""

from __future__ import annotations

from celery import Celery

from cow006_platform.executor import prepare_broker
from cow006_platform.settings import Settings
from cow006_platform.tasknames import (
    CONTROL_QUEUE,
    LADDER_QUEUE,
    REAP_TASK,
    RUN_MATCH_TASK,
    SCHEDULE_TASK,
    VALIDATE_QUEUE,
    VALIDATE_TASK,
)

__all__ = ["app", "make_app"]

EMBEDDED_POLLING = 0.2  # seconds between two polls of the embedded SQLite broker


def make_app(settings: Settings | None = None) -> Celery:
    """The workers' Celery app, configured from ``settings`` (the environment by default)."""
    settings = settings or Settings()
    broker = settings.celery_broker_url
    prepare_broker(broker)
    app = Celery("cow006", broker=broker, include=["cow006_workers.tasks"])
    transport_options: dict[str, object] = {}
    if broker.startswith("sqla+"):
        # Kombu's virtual transports poll the broker, once a second by default; every 0.2 s
        # keeps the embedded setup responsive.  Set on the class: this transport hands all of
        # its options to SQLAlchemy's create_engine, which refuses ``polling_interval``.
        from kombu.transport import sqlalchemy as kombu_sqla

        kombu_sqla.Transport.polling_interval = EMBEDDED_POLLING
    if broker.startswith(("redis://", "rediss://")):
        # A task taken but not acknowledged comes back after this; the reaper is faster for
        # matches, and this bounds it for everything else.
        transport_options["visibility_timeout"] = 3600
    app.conf.update(
        task_serializer="json",
        accept_content=["json"],
        result_serializer="json",
        task_ignore_result=True,
        result_backend=None,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        # Every send names its queue (a match's by its kind: tasks.send_matches); these are
        # the defaults of a send that does not.
        task_default_queue=LADDER_QUEUE,
        task_routes={
            SCHEDULE_TASK: {"queue": CONTROL_QUEUE},
            REAP_TASK: {"queue": CONTROL_QUEUE},
            RUN_MATCH_TASK: {"queue": LADDER_QUEUE},
            VALIDATE_TASK: {"queue": VALIDATE_QUEUE},
        },
        broker_transport_options=transport_options,
        broker_connection_retry_on_startup=True,
        # Keep reconnecting to a broker that went away (a Redis restart), never give up.
        broker_connection_max_retries=None,
        # Running matches survive a broker outage: the lease, not the broker, guards them.
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_hijack_root_logger=False,
        worker_send_task_events=False,
        # Beat keeps its schedule in memory: nothing to store, two ticks are idempotent.
        beat_scheduler="celery.beat:Scheduler",
        beat_schedule={
            "schedule-ladders": {
                "task": SCHEDULE_TASK,
                "schedule": settings.scheduler_period,
                # A tick nobody took in time is dropped: the next one does the same work.
                "options": {"expires": max(1.0, settings.scheduler_period)},
            },
            "reap": {
                "task": REAP_TASK,
                "schedule": settings.reaper_period,
                "options": {"expires": max(1.0, settings.reaper_period)},
            },
        },
        timezone="UTC",
    )
    return app


app = make_app()
