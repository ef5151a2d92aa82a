"""Throughput benchmark: sandboxed ladder matches per hour through the whole platform.

Everything is real and on this machine: the API (uvicorn, ``CeleryExecutor``), Redis, the
Celery workers (``cow006 worker``), the scheduler (``cow006 beat``), PostgreSQL, and bots in
the sandbox.  For each worker count asked for (default: 1, then 2 worker processes of
concurrency 1), on a fresh database:

1. through the API: an admin creates a 4-player ladder; users register, create agents and
   upload trivial bots (one line each: a card from the hand); the workers validate them;
   the owners enter the ladder;
2. the scheduler keeps the ladder's queue full; after a warm-up, the matches finished in a
   measured window give the throughput (matches per hour; target >= 20,000 with 2 workers)
   and the queue latency (queued -> started, p50 / p95), and the match time (started ->
   finished);
3. with the ladder busy, a newcomer uploads a new bot and enters it as soon as it is active:
   how long from the upload until it has 20 rated matches (target <= 2 minutes).

    python bench/throughput.py [--workers 1,2] [--concurrency 1] [--measure 60] [--json]
        [--url postgresql://root@127.0.0.1:5432/postgres] [--redis redis://127.0.0.1:6379/9]
        [--set NAME=VALUE ...]   (platform settings, e.g. --set write_behind=false)

Needs PostgreSQL, Redis and a working sandbox; without one it says which and exits 2.
The figures include the machine's whole load: API, database, broker and workers share its
cores with the bots, and so does anything else running (the load average is printed).  The
CPU each match costs (the platform's processes with their bots, and PostgreSQL with Redis)
is measured too, which gives what an otherwise idle machine would sustain.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import psycopg
import redis
from harness import free_port, psycopg_url, recreate_database, wait_answering, with_db
from sqlalchemy import Engine

from cow006 import sandbox
from cow006_platform import db, security
from cow006_platform.app import prepare_database
from cow006_platform.settings import Settings

BOTS = [
    "def play(view):\n    return min(view.hand)\n",
    "def play(view):\n    return max(view.hand)\n",
    "def play(view):\n    return sorted(view.hand)[len(view.hand) // 2]\n",
    "def play(view):\n    return sorted(view.hand)[len(view.hand) // 3]\n",
    "def play(view):\n    return sorted(view.hand)[-2] if len(view.hand) > 1 else view.hand[0]\n",
    "def play(view):\n    return sorted(view.hand)[1] if len(view.hand) > 1 else view.hand[0]\n",
    "def play(view):\n    return view.hand[0]\n",
    "def play(view):\n    return view.hand[-1]\n",
]
NEWCOMER = "def play(view):\n    return sorted(view.hand)[(2 * len(view.hand)) // 3]\n"
TARGET_RATED = 20


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(match: Any) -> float:
    """CPU seconds (user + system, with reaped children) of the live processes for which
    ``match(fields)`` is true (``fields``: /proc/PID/stat after the command name)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat.rsplit(")", 1)[1].split()
        if match(comm, fields):
            total += sum(int(x) for x in fields[11:15])  # utime stime cutime cstime
    return total / TICK


def configure(
    db_url: str, redis_url: str, workdir: Path, depth: int, **more: str
) -> tuple[dict[str, str], Settings, Engine]:
    """The platform's settings for a run (``more``: others, as COW006_* values): the
    environment of its processes, the settings, and an engine on its database, migrated."""
    values = {
        "database_url": db_url,
        "broker_url": redis_url,
        "data_dir": str(workdir / "data"),
        "ladder_queue_depth": str(depth),
        "scheduler_period": "1",
        "validation_decision": "1",
        "validation_bank": "5",
        **more,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("COW006_")}
    env.update({f"COW006_{k.upper()}": v for k, v in values.items()})
    settings = Settings(**values)  # type: ignore[arg-type]
    engine = db.make_engine(db_url)
    prepare_database(settings, engine)
    return env, settings, engine


def bench_ladder(api: httpx.Client, admin: dict[str, str]) -> int:
    """The ladder the benchmark's bots play in (4 seats, 1 s a move, a 5 s bank); its id."""
    r = api.post(
        "/api/ladders",
        json={"name": "bench", "players": 4, "decision_time": 1.0, "time_bank": 5.0},
        headers=admin,
    )
    r.raise_for_status()
    return int(r.json()["id"])


class Platform:
    """The processes of one run: API, workers, scheduler (stopped by ``close``)."""

    def __init__(self, env: dict[str, str], workdir: Path) -> None:
        self.env = env
        self.workdir = workdir
        self.procs: list[subprocess.Popen[bytes]] = []

    def spawn(self, name: str, argv: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115 (kept by the child)
        proc = subprocess.Popen(
            argv,
            env=self.env,
            cwd=self.workdir,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def start(self, workers: int, concurrency: int, tag: str) -> httpx.Client:
        """The API on a free port, ``workers`` workers playing ``concurrency`` matches each,
        the beat; a client of the API once it answers."""
        port = free_port()
        py = sys.executable
        self.spawn(
            "api",
            [
                *(py, "-m", "uvicorn", "cow006_workers.serve:api_app", "--factory"),
                *("--port", str(port), "--log-level", "warning", "--no-access-log"),
            ],
        )
        for i in range(workers):
            self.spawn(
                f"worker{i}",
                [
                    *(py, "-m", "cow006_workers", "worker", f"--concurrency={concurrency}"),
                    *("--loglevel=warning", f"--hostname={tag}{i}@%h"),
                ],
            )
        self.spawn("beat", [py, "-m", "cow006_workers", "beat", "--loglevel=warning"])
        wait_answering(f"http://127.0.0.1:{port}/api/ladders")
        return httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30)

    def cpu(self) -> float:
        """CPU seconds used so far by the platform's processes and the bots they reaped."""
        sids = {str(p.pid) for p in self.procs}
        return _cpu_seconds(lambda _comm, f: f[3] in sids)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def run_once(args: argparse.Namespace, workers: int) -> dict[str, Any]:
    """One configuration on a fresh database; its figures."""
    db_name = f"{args.db}_{workers}"
    recreate_database(args.url, db_name)
    db_url = with_db(args.url, db_name)
    redis.Redis.from_url(args.redis).flushdb()
    workdir = Path(tempfile.mkdtemp(prefix="cow006-throughput-"))
    depth = max(8, 4 * workers * args.concurrency)
    env, _settings, engine = configure(db_url, args.redis, workdir, depth, **dict(args.set))
    factory = db.make_sessionmaker(engine)
    with db.session_scope(factory) as s:
        _, admin_token = security.create_user(s, "bench-admin", is_admin=True)

    platform = Platform(env, workdir)
    try:
        api = platform.start(workers, args.concurrency, "bench")
        ladder_id = bench_ladder(api, {"Authorization": f"Bearer {admin_token}"})

        def upload(name: str, source: str) -> tuple[dict[str, str], int, int]:
            r = api.post("/api/users", json={"name": name})
            r.raise_for_status()
            headers = {"Authorization": f"Bearer {r.json()['token']}"}
            r = api.post("/api/agents", json={"name": name}, headers=headers)
            r.raise_for_status()
            agent_id = r.json()["id"]
            r = api.post(
                f"/api/agents/{agent_id}/versions",
                files={"file": ("bot.py", source.encode(), "text/x-python")},
                headers=headers,
            )
            r.raise_for_status()
            return headers, agent_id, r.json()["number"]

        def enter_when_active(headers: dict[str, str], agent_id: int, number: int) -> int:
            while True:
                v = api.get(f"/api/agents/{agent_id}/versions/{number}", headers=headers).json()
                if v["status"] == "active":
                    break
                if v["status"] == "rejected":
                    raise RuntimeError(f"a bench bot was rejected: {v.get('reason')}")
                time.sleep(0.1)
            r = api.post(
                f"/api/ladders/{ladder_id}/entries",
                json={"agent_id": agent_id, "version_id": v["id"]},
                headers=headers,
            )
            r.raise_for_status()
            return int(v["id"])

        t_setup = time.monotonic()
        owners = [upload(f"bench-{i}", src) for i, src in enumerate(BOTS)]
        for headers, agent_id, number in owners:
            enter_when_active(headers, agent_id, number)
        setup_s = time.monotonic() - t_setup

        time.sleep(args.warmup)
        services = lambda comm, _f: comm.startswith(("postgres", "redis-server"))  # noqa: E731
        with psycopg.connect(psycopg_url(db_url)) as conn:
            cpu0, svc0 = platform.cpu(), _cpu_seconds(services)
            load0 = os.getloadavg()[0]
            t0 = conn.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
            time.sleep(args.measure)
            t1 = conn.execute("select clock_timestamp()").fetchone()[0]  # type: ignore[index]
            cpu1, svc1 = platform.cpu(), _cpu_seconds(services)
            load1 = os.getloadavg()[0]
            rows = conn.execute(
                "select created_at, started_at, finished_at from matches "
                "where kind = 'ladder' and status = 'finished' "
                "and finished_at >= %s and finished_at < %s",
                (t0, t1),
            ).fetchall()
            window = (t1 - t0).total_seconds()
        finished = len(rows)
        queue = [(s - c).total_seconds() for c, s, _ in rows]
        play = [(f - s).total_seconds() for _, s, f in rows]

        # A newcomer in the busy ladder: upload -> 20 rated matches.
        t_up = time.monotonic()
        headers, agent_id, number = upload("bench-newcomer", NEWCOMER)
        version_id = enter_when_active(headers, agent_id, number)
        t_entered = time.monotonic()
        with psycopg.connect(psycopg_url(db_url), autocommit=True) as conn:
            deadline = time.monotonic() + args.newcomer_timeout
            rated = 0
            while rated < TARGET_RATED and time.monotonic() < deadline:
                row = conn.execute(
                    "select matches from ratings where ladder_id = %s and version_id = %s",
                    (ladder_id, version_id),
                ).fetchone()
                rated = int(row[0]) if row else 0
                time.sleep(0.1)
        t_done = time.monotonic()
        per_match = (cpu1 - cpu0) / finished if finished else float("nan")
        svc_per_match = (svc1 - svc0) / finished if finished else float("nan")
        return {
            "workers": workers,
            "concurrency": args.concurrency,
            "queue_depth": depth,
            "setup_s": round(setup_s, 1),
            "window_s": round(window, 1),
            "finished": finished,
            "matches_per_hour": round(finished / window * 3600) if window else 0,
            "queue_latency_p50_s": round(_pct(queue, 0.5), 3),
            "queue_latency_p95_s": round(_pct(queue, 0.95), 3),
            "match_time_p50_s": round(_pct(play, 0.5), 3),
            "match_time_mean_s": round(statistics.fmean(play), 3) if play else None,
            # CPU per match of the platform's processes with their bots, and of PostgreSQL
            # and Redis (all of their processes: other users of the servers count too).
            "cpu_per_match_s": round(per_match, 4),
            "services_cpu_per_match_s": round(svc_per_match, 4),
            # What the machine's cores would play if this run had them all to itself.
            "idle_machine_estimate_per_hour": round(
                (os.cpu_count() or 1) * 3600 / (per_match + svc_per_match)
            )
            if finished
            else None,
            "load_average": round((load0 + load1) / 2, 2),
            "newcomer_rated": rated,
            "newcomer_upload_to_20_rated_s": round(t_done - t_up, 1)
            if rated >= TARGET_RATED
            else None,
            "newcomer_entry_to_20_rated_s": round(t_done - t_entered, 1)
            if rated >= TARGET_RATED
            else None,
        }
    finally:
        platform.close()
        engine.dispose()
        if not args.keep:
            recreate_database(args.url, db_name, drop_only=True)


def _setting(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or name.strip().lower() not in Settings.model_fields:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE of a platform setting")
    return name.strip().lower(), value


def _problems(args: argparse.Namespace) -> list[str]:
    out = []
    try:
        with psycopg.connect(psycopg_url(args.url), connect_timeout=3):
            pass
    except Exception as exc:
        out.append(f"PostgreSQL at {args.url}: {exc}")
    try:
        redis.Redis.from_url(args.redis, socket_connect_timeout=3).ping()
    except Exception as exc:
        out.append(f"Redis at {args.redis}: {exc}")
    status = sandbox.probe()
    if not status.ok:
        out.append(f"the sandbox: {status.reason}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", default="postgresql://root@127.0.0.1:5432/postgres")
    ap.add_argument("--redis", default="redis://127.0.0.1:6379/9")
    ap.add_argument("--db", default="cow006_throughput")
    ap.add_argument("--workers", default="1,2", help="worker process counts to measure")
    ap.add_argument("--concurrency", type=int, default=1, help="matches at once per worker")
    ap.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring")
    ap.add_argument("--measure", type=float, default=60.0, help="seconds measured")
    ap.add_argument("--newcomer-timeout", type=float, default=300.0)
    ap.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        type=_setting,
        metavar="NAME=VALUE",
        help="a platform setting for the run's processes (COW006_NAME), e.g. write_behind=false",
    )
    args = ap.parse_args()
    problems = _problems(args)
    if problems:
        print("cannot run the throughput benchmark: " + "; ".join(problems), file=sys.stderr)
        sys.exit(2)
    started = datetime.now().isoformat(timespec="seconds")
    runs = []
    for w in (int(x) for x in args.workers.split(",")):
        runs.append(run_once(args, w))
        if not args.json:
            r = runs[-1]
            print(
                f"{w} worker(s) x {args.concurrency}: {r['matches_per_hour']:,} matches/hour "
                f"({r['finished']} in {r['window_s']} s; target >= 20,000 with 2); "
                f"queue latency p50 {r['queue_latency_p50_s']} s, p95 "
                f"{r['queue_latency_p95_s']} s; match {r['match_time_p50_s']} s (p50); "
                f"CPU per match {r['cpu_per_match_s']} s + {r['services_cpu_per_match_s']} s "
                f"(database, broker), so about {r['idle_machine_estimate_per_hour']:,}/hour "
                f"on an idle machine (load average here {r['load_average']}); "
                f"newcomer: 20 rated matches {r['newcomer_upload_to_20_rated_s']} s after "
                f"upload ({r['newcomer_entry_to_20_rated_s']} s after entry; target <= 120)",
                flush=True,
            )
    if args.json:
        settings = dict(args.set)
        print(json.dumps({"started": started, "settings": settings, "runs": runs}, indent=2))


if __name__ == "__main__":
    main()
