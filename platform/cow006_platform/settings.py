"""Platform settings, from COW006_* environment variables (pydantic-settings)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict

# Kombu's SQLAlchemy transport on an SQLite file: a broker that needs no server (one machine).
EMBEDDED_BROKER_URL = "sqla+sqlite:///var/broker.sqlite"


class Settings(BaseSettings):
    """Everything an operator can set; each field is COW006_<NAME> in the environment."""

    model_config = SettingsConfigDict(env_prefix="COW006_", extra="ignore")

    # SQLite file under ./var by default; postgresql+psycopg://... in production.
    database_url: str = "sqlite:///var/cow006.db"
    # Where uploaded bots are unpacked and kept (content-addressed by sha256).
    data_dir: Path = Path("var/data")
    # Upload caps.
    max_upload_bytes: int = 1024 * 1024
    max_unpacked_bytes: int = 5 * 1024 * 1024
    max_files: int = 200
    uploads_per_day: int = 50
    challenges_per_hour: int = 30
    # Validation: the smoke match a new version plays against built-in bots.
    validation_opponents: tuple[str, ...] = ("builtin:random", "builtin:greedy", "builtin:safe")
    validation_decision: float = 1.0
    validation_bank: float = 10.0
    # "off" runs bots unsandboxed (an operator's own machine only); anything else requires it.
    sandbox: str = "on"
    # Page size of list endpoints (the maximum a client may ask for).
    max_page_size: int = 200

    # Threads of an API process for the (sync) routes: few, since they are short and CPU-bound
    # between queries (dozens would fight over the GIL); waiting requests queue on the loop.
    api_threads: int = 8
    # The public page cache (cow006_platform.cache): anonymous answers of the hot read routes,
    # kept until the change feed says their data changed.  ``cache_poll_seconds`` bounds how
    # long another process's write may go unseen; ``cache_max_age`` is a backstop.
    public_cache: bool = True
    cache_bytes: int = 128 * 1024 * 1024  # per API process
    cache_poll_seconds: float = 0.25
    cache_max_age: float = 120.0
    # Pages rendered ahead at start (cache.warm_keys: leaderboards, then the entered agents'
    # pages, best first); 0 turns warming off.  About 3 pages per entered agent.
    cache_warm_pages: int = 20_000
    # A read page whose data another process changed may be answered this much longer while
    # it is rendered again (0: dropped at once, readers render it).
    cache_stale_seconds: float = 1.0

    # -- distributed execution (cow006_workers) ------------------------------------------------
    # The Celery broker: redis://127.0.0.1:6379/0 in production.  Empty: the embedded default,
    # Celery's SQLAlchemy transport on an SQLite file under ./var (no server to run).
    broker_url: str = ""
    # A worker holds a running match with a lease in the database, renewed by a heartbeat; a
    # lease that runs out (its worker died) lets another worker take the match over.
    lease_seconds: float = 30.0
    heartbeat_seconds: float = 10.0
    # A match whose runs were cut short this many times (it kills its workers) is failed.
    max_attempts: int = 5
    # Matches queued or running per open ladder that the scheduler keeps up.
    ladder_queue_depth: int = 8
    # Seconds between two scheduler ticks (queue refills) and two reaper ticks.
    scheduler_period: float = 2.0
    reaper_period: float = 5.0
    # A queued match (or pending version) whose task is this many seconds old is sent again:
    # its task may have been lost with the broker's queue (duplicates are harmless).
    requeue_seconds: float = 60.0

    # -- operations (cow006_platform.logs, cow006_platform.metrics) ----------------------------
    # Log lines as plain text or as one JSON object per line (for a log collector).
    log_format: Literal["text", "json"] = "text"
    log_level: str = "INFO"
    # GET /metrics answers from a snapshot of the database at most this many seconds old: a
    # scrape (every few seconds, from every Prometheus) then costs a few aggregate queries.
    metrics_cache_seconds: float = 5.0

    @property
    def celery_broker_url(self) -> str:
        """The broker to use: ``broker_url``, or the embedded SQLite one under ./var."""
        return self.broker_url or EMBEDDED_BROKER_URL


@lru_cache
def get_settings() -> Settings:
    return Settings()
