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
    # Work classes and challenges (cow006_platform.workclasses, docs/operations.md): the caps
    # on challenges waiting or being played, per user, per client address and in all; a
    # version of another owner is seated in at most ``challenges_per_opponent`` of them.
    challenges_queued_per_user: int = 4
    challenges_queued_per_address: int = 8
    challenges_queued: int = 64
    challenges_per_opponent: int = 4
    # Per client address (an IPv6 one counted as its /64), whatever the accounts behind it.
    challenges_per_hour_per_address: int = 60
    uploads_per_day_per_address: int = 100
    # Challenges admitted to the workers: at most this many unfinished at once, and, while
    # ladder or league matches wait, at most this share of the latest matches started (by
    # their time and by their number).
    challenge_slots: int = 1
    challenge_share: float = 0.25
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
    # A version whose ladder matches failed this many times in a row is suspended from ladder
    # tables (cow006_platform.suspension); a version whose validation was started this many
    # times without a verdict is rejected.
    suspend_after: int = 3
    max_validations: int = 3
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
    # Who may read GET /metrics: "token" (a bearer token: ``metrics_token``, or an admin's API
    # token), "open" (anyone), or "bind" (only on its own address, ``metrics_bind``, which
    # ``cow006 api`` and ``cow006 serve`` listen on besides the API's; the API's port has none).
    metrics: Literal["open", "token", "bind"] = "token"
    metrics_token: str = ""
    metrics_bind: str = "127.0.0.1:9100"

    # -- request limits (cow006_platform.limits, cow006_workers.httpserver) --------------------
    # The body of any request but an upload (JSON bodies are a few hundred bytes).
    max_json_bytes: int = 64 * 1024
    # A request body must arrive in full within this many seconds of the first read (a 408).
    body_seconds: float = 60.0
    # A connection must send a request's headers in full within this many seconds of opening
    # (or of its previous answer); an idle keep-alive connection is closed after
    # ``keepalive_seconds``.  Headers are at most ``max_header_bytes`` in all.
    header_timeout: float = 10.0
    keepalive_seconds: float = 5.0
    max_header_bytes: int = 32 * 1024
    # Connections and requests at once per API process, past which it answers 503 at once.
    max_connections: int = 1000
    # Temporary upload folders and unreferenced bot folders younger than this are left to
    # the upload that may be writing them (``cow006 admin gc``, API start).
    gc_grace_seconds: float = 3600.0

    # -- accounts (cow006_platform.security, cow006_platform.throttle) -------------------------
    # Who may register through POST /api/users: anyone ("open"), holders of an invite code
    # from ``cow006 admin invite`` ("invite"), or anyone, but the account stays pending until
    # ``cow006 admin approve-user NAME`` ("approval").
    registration: Literal["open", "invite", "approval"] = "open"
    # Per client address, counted by every API process together (database counters): at most
    # this many registrations an hour, and this many refused tokens (401) a minute, after which
    # the address gets 429 with Retry-After until the window ends.  0 turns a limit off.
    registrations_per_hour_per_address: int = 20
    auth_failures_per_minute_per_address: int = 60
    # Live (unrevoked, unexpired) tokens a user may hold at once.
    max_tokens_per_user: int = 20

    @property
    def celery_broker_url(self) -> str:
        """The broker to use: ``broker_url``, or the embedded SQLite one under ./var."""
        return self.broker_url or EMBEDDED_BROKER_URL


@lru_cache
def get_settings() -> Settings:
    return Settings()
