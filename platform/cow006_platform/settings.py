"""Platform settings, from COW006_* environment variables (pydantic-settings).

Each field's ``description`` is its documentation: docs/operations.md's table of settings is
generated from this class (``settings_table``; ``make docs`` writes it, and a test fails when
the table and the class disagree), so a setting cannot be added without being documented.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

# Kombu's SQLAlchemy transport on an SQLite file: a broker that needs no server (one machine).
EMBEDDED_BROKER_URL = "sqla+sqlite:///var/broker.sqlite"


def _doc(default: Any, text: str) -> Any:
    """A setting's default and its one-line documentation (the operator guide's table)."""
    return Field(default, description=text)


class Settings(BaseSettings):
    """Everything an operator can set; each field is COW006_<NAME> in the environment."""

    model_config = SettingsConfigDict(env_prefix="COW006_", extra="ignore")

    # -- storage ------------------------------------------------------------------------------
    database_url: str = _doc(
        "sqlite:///var/cow006.db", "PostgreSQL in production (`postgresql://...`, psycopg 3)"
    )
    data_dir: Path = _doc(
        Path("var/data"),
        "uploaded bots (content-addressed by sha256), shared by the API and every worker",
    )
    # -- uploads and challenges (cow006_platform.workclasses; "Work classes" below) ----------
    # Sized for a small network's weights (a .npz in the zip, numpy: docs/bot-guide.md): the
    # request body cap (limits), the archive checks (storage) and the upload page follow them.
    max_upload_bytes: int = _doc(
        20 * 1024 * 1024, "the largest upload (a .py file or a .zip), weights included"
    )
    max_unpacked_bytes: int = _doc(
        40 * 1024 * 1024,
        "the most an upload's files may hold unpacked (twice `MAX_UPLOAD_BYTES`: an archive "
        "inflating further is refused as a zip bomb)",
    )
    max_files: int = _doc(200, "the most files an uploaded archive may hold")
    uploads_per_day: int = _doc(50, "uploads per user in 24 hours (429 past it)")
    uploads_per_day_per_address: int = _doc(
        100, "uploads per client address in 24 hours, whatever the accounts behind it"
    )
    challenges_per_hour: int = _doc(30, "challenges a user may make in an hour (429 past it)")
    challenges_per_hour_per_address: int = _doc(
        60, "challenges per client address (an IPv6 one counted as its /64) in an hour"
    )
    challenges_queued_per_user: int = _doc(4, "a user's challenges waiting or being played at once")
    challenges_queued_per_address: int = _doc(
        8, "challenges waiting or being played at once per client address"
    )
    challenges_queued: int = _doc(64, "challenges waiting or being played at once, in all")
    challenges_per_opponent: int = _doc(
        4, "challenges waiting or being played that seat one version of another owner"
    )
    challenge_slots: int = _doc(
        1, "challenges admitted to the workers at once (the others wait in the database)"
    )
    challenge_share: float = _doc(
        0.25,
        "while ladder or league matches wait, the most challenges may take of the latest "
        "matches started (by their time and by their number)",
    )
    # -- evaluation runs (POST /api/evaluations; cow006_platform.crud.evaluations) ----------
    evaluation_slots: int = _doc(
        1, "matches of evaluation runs admitted to the workers at once (the others wait)"
    )
    evaluation_share: float = _doc(
        0.25,
        "while ladder or league matches wait, the most evaluation runs may take of the latest "
        "matches started (by their time and by their number)",
    )
    evaluation_matches_max: int = _doc(
        400, "matches one evaluation run may ask for (its version's and its baseline's)"
    )
    evaluations_per_day: int = _doc(10, "evaluation runs a user may start in 24 hours")
    evaluations_unfinished_per_user: int = _doc(
        2, "a user's evaluation runs with matches still to play"
    )
    # -- playing against the bots (POST /api/plays; cow006_platform.crud.plays) --------------
    plays_per_day: int = _doc(20, "matches a person may start against the bots in 24 hours")
    plays_unfinished_per_user: int = _doc(
        1, "a person's matches against the bots still waiting or being played"
    )
    plays_unfinished: int = _doc(
        8,
        "matches against the bots waiting or being played at once, in all (each holds a "
        "worker's pool process while its person plays)",
    )
    play_builtins: tuple[str, ...] = _doc(
        ("random", "lowest", "greedy", "safe", "montecarlo"),
        "the built-in bots a person may play against (`cow006.bots`' names; each runs as a "
        "sandboxed bot process, like any bot)",
    )
    play_decision_seconds: float = _doc(
        120.0,
        "seconds a person has for each decision in a match against the bots (then the "
        "fallback plays for them, as for a bot that times out)",
    )
    # -- validation: the smoke match a new version plays against built-in bots ---------------
    validation_opponents: tuple[str, ...] = _doc(
        ("builtin:random", "builtin:greedy", "builtin:safe"),
        "the built-ins a new version meets in its validation match when no ladder sets the "
        "table (run as sandboxed bot processes, like any bot)",
    )
    validation_decision: float = _doc(
        1.0, "seconds per decision in a validation match outside any ladder"
    )
    validation_bank: float = _doc(
        10.0, "the time bank (seconds) of a validation match outside any ladder"
    )
    max_validations: int = _doc(
        3, "validation runs of a version without a verdict before it is rejected"
    )
    sandbox: str = _doc("on", "`off` runs bots unconfined: your own machine and bots only")
    # -- the API ------------------------------------------------------------------------------
    max_page_size: int = _doc(200, "the most items a list endpoint returns on one page")
    # Few threads: the routes are short and CPU-bound between queries (dozens would fight
    # over the GIL); waiting requests queue on the event loop.
    api_threads: int = _doc(
        8,
        "threads per API process for the routes (2 and 4 measured no better with `bench/api.py`)",
    )
    # -- the public page cache (cow006_platform.cache) ----------------------------------------
    public_cache: bool = _doc(
        True, "keep anonymous answers of the hot read routes in memory (below)"
    )
    cache_bytes: int = _doc(
        128 * 1024 * 1024, "the page cache's size per API process (least recently used out)"
    )
    cache_poll_seconds: float = _doc(
        0.25,
        "how often each API process reads the change feed: with `CACHE_STALE_SECONDS`, the "
        "most a page may lag a write made elsewhere",
    )
    cache_max_age: float = _doc(120.0, "a backstop: no cached page is older than this")
    cache_warm_pages: int = _doc(
        20_000,
        "pages each API process renders ahead at start (0: off); about 3 per entered agent",
    )
    cache_stale_seconds: float = _doc(
        1.0,
        "a read page whose data another process changed may be answered this much longer "
        "while it is rendered again (0: dropped at once)",
    )
    # -- distributed execution (cow006_workers) -----------------------------------------------
    broker_url: str = _doc(
        "",
        "the Celery broker: `redis://host:6379/0` in production; empty: the embedded "
        f"`{EMBEDDED_BROKER_URL}` (no server to run)",
    )
    # A worker holds a running match with a lease in the database, renewed by a heartbeat; a
    # lease that runs out (its worker died) lets another worker take the match over.
    lease_seconds: float = _doc(30.0, "how long a worker holds a running match without renewing")
    heartbeat_seconds: float = _doc(
        10.0, "how often a worker renews the lease of the match it plays"
    )
    write_behind: bool = _doc(
        True,
        "a worker process stores a played match's result while it plays the next one "
        "(prefork and solo pools); off: it stores the result before it takes the next match",
    )
    max_attempts: int = _doc(5, "runs of one match cut short (worker deaths) before it is failed")
    suspend_after: int = _doc(
        3,
        "ladder matches of a version failing in a row before it is suspended from ladder tables",
    )
    ladder_queue_depth: int = _doc(8, "matches queued or running per open ladder")
    scheduler_period: float = _doc(
        2.0, "seconds between two refills of every ladder (and league checks)"
    )
    reaper_period: float = _doc(5.0, "seconds between two reaper passes")
    # The broker's queue may have lost the task; duplicates are harmless.
    requeue_seconds: float = _doc(
        60.0, "a queued match or pending version older than this has its task sent again"
    )
    # -- operations (cow006_platform.logs, cow006_platform.metrics) ---------------------------
    log_format: Literal["text", "json"] = _doc(
        "text",
        "`json`: one JSON object per log line (time, level, logger, message, match and "
        "version ids)",
    )
    log_level: str = _doc("INFO", "the level of the arena's own loggers")
    # A scrape (every few seconds, from every Prometheus) then costs a few aggregate queries.
    metrics_cache_seconds: float = _doc(
        5.0, "`GET /metrics` answers from a database snapshot at most this old"
    )
    metrics: Literal["open", "token", "bind"] = _doc(
        "token", "who reads `GET /metrics`: `token`, `open` or `bind` (below)"
    )
    metrics_token: str = _doc(
        "", "the bearer token of `METRICS=token` (an admin's API token works too)"
    )
    metrics_bind: str = _doc(
        "127.0.0.1:9100", "the address `/metrics` is served on with `METRICS=bind`"
    )
    # -- request limits (cow006_platform.limits, cow006_workers.httpserver) -------------------
    max_json_bytes: int = _doc(
        64 * 1024,
        "the body of any request but an upload (uploads: `MAX_UPLOAD_BYTES` plus 16 KiB of "
        "multipart framing)",
    )
    body_seconds: float = _doc(60.0, "a request body must arrive in full within this (a 408)")
    header_timeout: float = _doc(
        10.0,
        "seconds a connection has, from its opening or its previous answer, to send a "
        "request's headers in full",
    )
    keepalive_seconds: float = _doc(5.0, "an idle keep-alive connection is closed after this")
    max_header_bytes: int = _doc(32 * 1024, "a request's line and headers in all (a 431 past it)")
    max_connections: int = _doc(
        1000, "connections and requests at once per API process (a 503 past it)"
    )
    gc_grace_seconds: float = _doc(
        3600.0,
        "crash leftovers younger than this are left to the upload that may be writing them "
        "(`cow006 admin gc`, API start)",
    )
    # -- accounts (cow006_platform.security, cow006_platform.throttle) ------------------------
    registration: Literal["open", "invite", "approval"] = _doc(
        "open",
        "who may register with `POST /api/users`: `open`, `invite` (an invite code from "
        "`cow006 admin invite`) or `approval` (pending until `cow006 admin approve-user`) "
        "(below)",
    )
    # Database counters: every API process counts together.
    registrations_per_hour_per_address: int = _doc(
        20,
        "registrations an hour per client address, all API processes together (429 past it; "
        "0: no limit)",
    )
    auth_failures_per_minute_per_address: int = _doc(
        60,
        "refused tokens (401s) a minute per client address, all API processes together (429 "
        "past it; 0: no limit)",
    )
    max_tokens_per_user: int = _doc(20, "live API tokens one user may hold at once")
    session_hours: float = _doc(
        14 * 24.0,
        "how long a browser stays signed in on the site (its session cookie; signing out, or "
        "revoking the API token it signed in with, ends it sooner)",
    )
    # -- bulk export of logs (GET /api/ladders/{id}/logs, cow006_platform.exports) ----------
    export_page_max: int = _doc(1000, "match logs one bulk export request may ask for (`limit`)")
    exports_per_minute_per_address: int = _doc(
        120,
        "bulk export requests a minute per client address, all API processes together (429 "
        "past it; 0: no limit)",
    )

    @property
    def celery_broker_url(self) -> str:
        """The broker to use: ``broker_url``, or the embedded SQLite one under ./var."""
        return self.broker_url or EMBEDDED_BROKER_URL


@lru_cache
def get_settings() -> Settings:
    return Settings()


def _shown(value: Any) -> str:
    """A default as the operator writes it in the environment."""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, tuple):  # pydantic-settings reads a list as JSON
        return f"`{json.dumps(list(value))}`"
    if value == "":
        return "empty"
    if isinstance(value, str | Path):
        return f"`{value}`"
    return f"{value:g}" if isinstance(value, float) else str(value)


def settings_table(settings: type[BaseSettings] = Settings) -> str:
    """The Markdown table of every setting (docs/operations.md holds it between markers)."""
    lines = ["| setting | default | what |", "|---|---|---|"]
    for name, field in settings.model_fields.items():
        if not field.description:
            raise ValueError(f"the setting {name!r} has no description")
        default = _shown(field.default)
        lines.append(f"| `{name.upper()}` | {default} | {field.description} |")
    return "\n".join(lines) + "\n"


DOC_START = "<!-- settings: generated from cow006_platform.settings.Settings by `make docs`"
DOC_END = "<!-- settings: end -->"


def with_settings_table(doc: str) -> str:
    """``doc`` (docs/operations.md) with the table between its markers made anew."""
    start = doc.index(DOC_START)
    head_end = doc.index("\n", start) + 1
    end = doc.index(DOC_END, head_end)
    return doc[:head_end] + settings_table() + doc[end:]


if __name__ == "__main__":  # make docs: python -m cow006_platform.settings docs/operations.md
    import sys

    for name in sys.argv[1:]:
        path = Path(name)
        path.write_text(with_settings_table(path.read_text(encoding="utf-8")), encoding="utf-8")
