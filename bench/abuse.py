"""Abuse benchmark: does a challenge flood starve validations and the ladder?

Everything is real and on this machine, as in ``bench/throughput.py``: the API (uvicorn,
``CeleryExecutor``), Redis, worker processes (``cow006 worker``, every work class), the
scheduler (``cow006 beat``), PostgreSQL, sandboxed bots.  One run, one platform, two phases
of ``--measure`` seconds each, side by side:

1. **quiet**: a 4-player ladder of 8 trivial bots keeps the workers busy; every ``--every``
   seconds a newcomer uploads a new bot and waits until it is active;
2. **flood**: the same, while 8 flooding users, each from an address of its own (sent as
   ``X-Forwarded-For``, which uvicorn takes from 127.0.0.1), ask for challenges as fast as
   the caps allow: a new one the moment the last answer was a 201, and after a 429 again
   when its ``Retry-After`` says (``--hammer``: after ``--pause`` seconds, whatever it says).
   Each seats three bots of its own (no per-opponent rule applies).

Figures per phase: ladder matches finished per minute, and the time from upload to active
(p50 / p95) of the newcomers' versions; then flood / quiet ratios (target: both within 1.5x).
The ladder's and the flooders' bots are made active in the database (their validations would
only lengthen the setup); the newcomers' uploads go through the API and the workers.  A
newcomer rejected for a start-up past its limit (a loaded machine) counts with the time of
its verdict and is reported.

    python bench/abuse.py [--workers 2] [--measure 60] [--every 5] [--flooders 8] [--json]
        [--slow 0] [--challenges-per-hour 1000] [--hammer] [--pause 0.5]
        [--url postgresql://root@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/9]

``--challenges-per-hour`` raises the per-user hourly cap (30 by default) so that the flood
lasts the whole phase: the worst case.  The other caps and the admission of challenges
(``COW006_CHALLENGE_SLOTS``, ``COW006_CHALLENGE_SHARE``) are the defaults.  ``--slow S``
makes the flooders' bots sleep S seconds per card (slow challenges).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import psycopg_url, recreate_database, with_db
from sqlalchemy import select
from throughput import (
    BOTS,
    Platform,
    _pct,
    _problems,
    bench_ladder,
    configure,
)

from cow006_platform import db, security, storage
from cow006_platform.models import Agent, User, VersionStatus
from cow006_platform.storage import add_version


def _slow_bot(tag: str, pause: float) -> str:
    if pause <= 0:
        return f"# {tag}\ndef play(view):\n    return min(view.hand)\n"
    return (
        f"import time\n\n# {tag}\n"
        f"def play(view):\n    time.sleep({pause})\n    return min(view.hand)\n"
    )


class Flood:
    """The flooders' threads: challenges as fast as the caps allow, until ``stop``."""

    def __init__(
        self,
        base: str,
        users: list[tuple[dict[str, str], list[int]]],
        pause: float,
        hammer: bool,
    ) -> None:
        self.base, self.users, self.pause, self.hammer = base, users, pause, hammer
        self.stop = threading.Event()
        self.sent = self.refused = self.errors = 0
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(i,), daemon=True) for i in range(len(users))
        ]

    def _run(self, i: int) -> None:
        headers, versions = self.users[i]
        headers = {**headers, "X-Forwarded-For": f"198.51.100.{i + 1}"}
        with httpx.Client(base_url=self.base, timeout=30) as client:
            while not self.stop.is_set():
                wait = self.pause
                try:
                    r = client.post(
                        "/api/challenges", json={"version_ids": versions}, headers=headers
                    )
                    code = r.status_code
                    if code == 429 and not self.hammer:
                        # As fast as allowed: again when the answer says it may succeed.
                        wait = max(wait, float(r.headers.get("retry-after", 0)))
                except httpx.HTTPError:
                    code = -1
                with self._lock:
                    self.sent += code == 201
                    self.refused += code == 429
                    self.errors += code not in (201, 429)
                if code != 201:
                    self.stop.wait(wait)

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def close(self) -> None:
        self.stop.set()
        for t in self._threads:
            t.join(30)


def phase(
    api: httpx.Client,
    conn: psycopg.Connection[Any],
    newcomer: tuple[dict[str, str], int],
    args: argparse.Namespace,
    tag: str,
) -> dict[str, Any]:
    """Measure one phase: ladder matches per minute, newcomers' upload -> active."""
    headers, agent_id = newcomer
    latencies: list[float] = []
    rejected = 0
    pending: list[tuple[int, float]] = []
    t0 = conn.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
    start = time.monotonic()
    next_upload = start
    n = 0
    while time.monotonic() - start < args.measure or pending:
        now = time.monotonic()
        if now >= next_upload and now - start < args.measure:
            n += 1
            source = f"# {tag} {n} {time.time()}\ndef play(view):\n    return max(view.hand)\n"
            r = api.post(
                f"/api/agents/{agent_id}/versions",
                files={"file": ("bot.py", source.encode(), "text/x-python")},
                headers=headers,
            )
            r.raise_for_status()
            pending.append((int(r.json()["number"]), time.monotonic()))
            next_upload += args.every
        still = []
        for number, t_up in pending:
            v = api.get(f"/api/agents/{agent_id}/versions/{number}", headers=headers).json()
            if v["status"] == "pending":
                if time.monotonic() - t_up > args.timeout:
                    latencies.append(float("inf"))
                else:
                    still.append((number, t_up))
            else:  # active, or rejected (a start-up past its limit on a loaded machine)
                latencies.append(time.monotonic() - t_up)
                rejected += v["status"] != "active"
        pending = still
        time.sleep(0.1)
    t1 = conn.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
    counts = dict(
        conn.execute(
            "select kind, count(*) from matches where status = 'finished' "
            "and finished_at >= %s and finished_at < %s group by kind",
            (t0, t1),
        ).fetchall()
    )
    window = (t1 - t0).total_seconds()
    return {
        "window_s": round(window, 1),
        "ladder_finished": int(counts.get("ladder", 0)),
        "ladder_per_minute": round(counts.get("ladder", 0) / window * 60, 1),
        "challenges_finished": int(counts.get("challenge", 0)),
        "uploads": len(latencies),
        "uploads_rejected": rejected,
        "upload_to_active_p50_s": round(_pct(latencies, 0.5), 2),
        "upload_to_active_p95_s": round(_pct(latencies, 0.95), 2),
        "upload_to_active_mean_s": round(statistics.fmean(latencies), 2) if latencies else None,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    db_name = args.db
    recreate_database(args.url, db_name)
    db_url = with_db(args.url, db_name)
    redis.Redis.from_url(args.redis).flushdb()
    workdir = Path(tempfile.mkdtemp(prefix="cow006-abuse-"))
    depth = max(8, 4 * args.workers)
    more = {"challenges_per_hour": str(args.challenges_per_hour)}
    env, settings, engine = configure(db_url, args.redis, workdir, depth, **more)
    factory = db.make_sessionmaker(engine)
    # Users are made in the database, not registered: registration has caps of its own.
    tokens: dict[str, str] = {}
    with db.session_scope(factory) as s:
        for name in ["bench-admin", "newcomer", *(f"flooder{i}" for i in range(args.flooders))]:
            _, tokens[name] = security.create_user(s, name, is_admin=name == "bench-admin")
        for i in range(len(BOTS)):
            _, tokens[f"owner{i}"] = security.create_user(s, f"owner{i}")

    def auth(name: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {tokens[name]}"}

    platform = Platform(env, workdir)
    flood: Flood | None = None
    try:
        api = platform.start(args.workers, 1, "abuse")
        base = str(api.base_url).rstrip("/")
        ladder_id = bench_ladder(api, auth("bench-admin"))

        def stored_bot(s: Any, owner_name: str, name: str, source: str) -> tuple[int, int]:
            """An agent with an active version stored like an upload: (agent, version)."""
            owner = s.scalar(select(User).where(User.name == owner_name))
            assert owner is not None
            stored = storage.store_upload(settings, "bot.py", source.encode())
            row = Agent(name=name, owner_id=owner.id)
            s.add(row)
            s.flush()
            version = add_version(s, row.id, stored)
            version.status = VersionStatus.active
            s.flush()
            return row.id, version.id

        # The ladder's and the flooders' bots are made active in the database: validating 32
        # bots first would only make the setup longer (and, on a loaded machine, a bot that
        # misses its start-up limit is rejected).  Only the newcomers' uploads are validated.
        with db.session_scope(factory) as s:
            entrants = [
                stored_bot(s, f"owner{i}", f"ladder-{i}", src) for i, src in enumerate(BOTS)
            ]
            flooders = [
                (
                    auth(f"flooder{i}"),
                    [
                        stored_bot(
                            s, f"flooder{i}", f"flood-{i}-{j}", _slow_bot(f"{i} {j}", args.slow)
                        )[1]
                        for j in range(3)
                    ],
                )
                for i in range(args.flooders)
            ]
        for i, (agent_id, vid) in enumerate(entrants):
            r = api.post(
                f"/api/ladders/{ladder_id}/entries",
                json={"agent_id": agent_id, "version_id": vid},
                headers=auth(f"owner{i}"),
            )
            r.raise_for_status()
        newcomer_agent = int(
            api.post("/api/agents", json={"name": "newcomer"}, headers=auth("newcomer")).json()[
                "id"
            ]
        )
        newcomer = (auth("newcomer"), newcomer_agent)

        with psycopg.connect(psycopg_url(db_url), autocommit=True) as conn:
            # The workers are up (start-ups are slow on a loaded machine) and the ladder runs.
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                row = conn.execute(
                    "select count(*) from matches where kind = 'ladder' and status = 'finished'"
                ).fetchone()
                if row is not None and row[0] >= 10:
                    break
                time.sleep(0.5)
            time.sleep(args.warmup)
            load0 = os.getloadavg()[0]
            quiet = phase(api, conn, newcomer, args, "quiet")
            quiet["load_average"] = round((load0 + os.getloadavg()[0]) / 2, 2)
            flood = Flood(base, flooders, args.pause, args.hammer)
            flood.start()
            time.sleep(args.warmup)  # the flood builds up: every cap reached
            load0 = os.getloadavg()[0]
            flooded = phase(api, conn, newcomer, args, "flood")
            flooded["load_average"] = round((load0 + os.getloadavg()[0]) / 2, 2)
            waiting = dict(
                conn.execute(
                    "select held, count(*) from matches where kind = 'challenge' "
                    "and status in ('queued', 'running') group by held"
                ).fetchall()
            )
            flood.close()
            flooded.update(
                challenges_created=flood.sent,
                challenges_refused_429=flood.refused,
                challenge_errors=flood.errors,
                challenges_held_at_end=int(waiting.get(True, 0)),
                challenges_admitted_at_end=int(waiting.get(False, 0)),
            )
        ladder_ratio = (
            quiet["ladder_per_minute"] / flooded["ladder_per_minute"]
            if flooded["ladder_per_minute"]
            else float("inf")
        )
        p95_ratio = (
            flooded["upload_to_active_p95_s"] / quiet["upload_to_active_p95_s"]
            if quiet["upload_to_active_p95_s"]
            else float("inf")
        )
        return {
            "workers": args.workers,
            "flooders": args.flooders,
            "slow": args.slow,
            "quiet": quiet,
            "flood": flooded,
            "ladder_slowdown": round(ladder_ratio, 2),
            "upload_to_active_p95_ratio": round(p95_ratio, 2),
        }
    finally:
        if flood is not None:
            flood.close()
        platform.close()
        engine.dispose()
        if not args.keep:
            recreate_database(args.url, db_name, drop_only=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="postgresql://root@127.0.0.1:5432/postgres")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    ap.add_argument("--db", default="cow006_abuse")
    ap.add_argument("--workers", type=int, default=2, help="worker processes (concurrency 1)")
    ap.add_argument("--flooders", type=int, default=8)
    ap.add_argument("--measure", type=float, default=60.0, help="seconds per phase")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before each phase")
    ap.add_argument("--every", type=float, default=5.0, help="seconds between uploads")
    ap.add_argument("--timeout", type=float, default=300.0, help="an upload's longest wait")
    ap.add_argument("--pause", type=float, default=0.5, help="a flooder's least wait after a 429")
    ap.add_argument(
        "--hammer", action="store_true", help="flooders ignore Retry-After (wait --pause only)"
    )
    ap.add_argument("--slow", type=float, default=0.0, help="flood bots' sleep per card")
    ap.add_argument("--challenges-per-hour", type=int, default=1000)
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    # SIGTERM as Ctrl-C: the platform's processes are stopped on the way out.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    problems = _problems(args)
    if problems:
        print("cannot run the abuse benchmark: " + "; ".join(problems), file=sys.stderr)
        sys.exit(2)
    started = datetime.now().isoformat(timespec="seconds")
    result = run(args)
    if args.json:
        print(json.dumps({"started": started, **result}, indent=2))
        return
    for name in ("quiet", "flood"):
        p = result[name]
        print(
            f"{name:5}: {p['ladder_per_minute']} ladder matches/minute "
            f"({p['ladder_finished']} in {p['window_s']} s), {p['challenges_finished']} "
            f"challenges; upload to active p50 {p['upload_to_active_p50_s']} s, p95 "
            f"{p['upload_to_active_p95_s']} s ({p['uploads']} uploads, "
            f"{p['uploads_rejected']} rejected); load average "
            f"{p['load_average']}"
        )
    f = result["flood"]
    print(
        f"flood: {f['challenges_created']} challenges created, {f['challenges_refused_429']} "
        f"refused (429), {f['challenges_held_at_end']} held and "
        f"{f['challenges_admitted_at_end']} admitted at the end"
    )
    print(
        f"ladder slowdown {result['ladder_slowdown']}x, upload-to-active p95 "
        f"{result['upload_to_active_p95_ratio']}x (targets: both <= 1.5)"
    )


if __name__ == "__main__":
    main()
