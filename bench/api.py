"""API benchmark: the public read pages of a big arena, under 32 concurrent clients.

Creates a fresh PostgreSQL database (default ``cow006_bench``, dropped first if it exists),
brings its schema up to date, seeds it with COPY: 1,000 agents (100 owners, a version each,
all entered in one ladder, each with a rating) and 100,000 finished 4-player ladder matches
(seats, scores, ranks, one rating point per seat; no logs).  Then it starts the app with
uvicorn on a free port of 127.0.0.1 in a subprocess and reads, with 32 concurrent clients
(asyncio, keep-alive connections, a minimal HTTP/1.1 client: see ``Connection``) and a
bounded number of requests, the pages people read most:

    GET /api/ladders/{id}/leaderboard?limit=50&offset=...
    GET /api/agents/{id}
    GET /api/agents/{id}/ratings
    GET /api/matches?agent_id=...

Before measuring it waits until every server process has warmed its page cache (the server
renders the most read pages ahead at start: ``crud.ladders.warm_keys``), and says how long
that took; ``--cold`` turns warming off, to compare.  ``--writes R`` finishes R ladder
matches a second while the clients read, through the platform's own write path
(``results.create_match`` and ``finish_match`` of a real played match, in this process like
a worker), so pages keep being dropped and rendered again as on a live arena.

It reports latency percentiles (p50/p95/p99, overall and per endpoint) and throughput, and
where the time went: the server's CPU per request and the pages it rendered per finished
match (with ``--writes``, measured from the writer's first finished match), and the share of
the cores the clients, the writer (its CPU per match, and how much of it playing) and
everything else (the database, other jobs on a shared machine) took meanwhile.

It also counts those renders by the route that answered (``renders_per_match_by_route``,
from ``cow006_page_cache_renders_total``), and ``--profile FILE`` runs the server under
cProfile (``profiled.py``: every thread's CPU, only while the clients read) and writes its
profile to FILE (pstats).  ``bench/renders.py`` measures the CPU of one render, by page.

Target: p99 <= 50 ms, and with ``--writes 5`` at least 0.7x the requests a second of the
same run without.  The clients run on the same machine as the server and the database.
By default the clients run a closed loop (no pause between requests): that measures the
server's saturation, where latency is mostly queueing (about clients / throughput); with
``--rate R`` they send R requests a second in all, and latency counts from when each was due.

Issue 16, first round: old (c3baa5d) / new, medians of three interleaved rounds, a machine
shared with jobs taking 0.1-1.4 of its 2 cores:

    no writes:           old 7,730 req/s, p99 8.5 ms;  new 8,003 req/s, p99 9.4 ms
    --writes 5:          old 1,843 req/s, p99 169 ms (leaderboard 250)
                         new 4,785 req/s, p99 24.7 ms (leaderboard 38.4)

Second round: main (7472a41) / this version, eight interleaved rounds, each with and without
writes, medians of the seven whose writer kept up, on a machine whose other jobs took 1.2-1.6
of the 2 cores (load average 9-27; docs/operations.md has every round):

    server CPU a finished match costs:  old 48 ms, new 41 ms  (15.1 / 15.6 pages rendered)
    --writes 5:          old 1,782 req/s, p99 167 ms (leaderboard 222), with/without 0.58
                         new 2,757 req/s, p99  64 ms (leaderboard 107), with/without 0.66
    no writes:           old p99 31.7 ms, new 28.0 ms

    python bench/api.py --url postgresql://root@127.0.0.1:5432/postgres [--requests N]
        [--clients 32] [--workers 1] [--rate R] [--popularity uniform|zipf] [--writes R]
        [--cold] [--db cow006_bench] [--keep | --reuse] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from harness import free_port, psycopg_url, recreate_database, wait_answering, with_db
from psycopg import sql
from sqlalchemy import select as sa_select

from cow006 import bots, play_match
from cow006_platform import db, results
from cow006_platform.app import prepare_database
from cow006_platform.models import LadderEntry, MatchKind
from cow006_platform.ratings import conservative, ranks_from_scores
from cow006_platform.settings import Settings

OWNERS = 100
PLAYERS = 4


def seed(url: str, agents: int, matches: int, rng: random.Random) -> dict[str, Any]:
    """Fill the (empty, migrated) database with COPY; returns ids the load needs."""
    t0 = time.perf_counter()
    start = datetime(2025, 1, 1, tzinfo=UTC)
    with psycopg.connect(psycopg_url(url)) as conn, conn.cursor() as cur:

        def copy(table: str, columns: list[str], rows: Any) -> int:
            n = 0
            stmt = sql.SQL("COPY {} ({}) FROM STDIN").format(
                sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, columns))
            )
            with cur.copy(stmt) as cp:
                for row in rows:
                    cp.write_row(row)
                    n += 1
            return n

        copy(
            "users",
            ["id", "name", "is_admin", "token_hash", "created_at"],
            ((i, f"owner-{i}", False, f"{i:064x}", start) for i in range(1, OWNERS + 1)),
        )
        copy(
            "agents",
            ["id", "owner_id", "name", "disabled", "created_at"],
            ((i, 1 + (i - 1) % OWNERS, f"bot-{i}", False, start) for i in range(1, agents + 1)),
        )
        copy(
            "agent_versions",
            [
                "id",
                "agent_id",
                "number",
                "sha256",
                "filename",
                "size",
                "unpacked_size",
                "files",
                "status",
                "created_at",
                "validated_at",
            ],
            (
                (i, i, 1, f"{i:064x}", "bot.py", 500, 500, 1, "active", start, start)
                for i in range(1, agents + 1)
            ),
        )
        copy(
            "ladders",
            [
                "id",
                "name",
                "state",
                "players",
                "decision_time",
                "time_bank",
                "mu",
                "sigma",
                "beta",
                "tau",
                "draw_probability",
                "created_at",
            ],
            [(1, "main", "open", PLAYERS, 1.0, 10.0, 25.0, 25 / 3, 25 / 6, 25 / 300, 0.011, start)],
        )
        copy(
            "ladder_entries",
            ["id", "ladder_id", "agent_id", "version_id", "active", "entered_at"],
            ((i, 1, i, i, True, start) for i in range(1, agents + 1)),
        )
        # Matches, seats and rating points, generated together so they agree.
        mu = [25.0] * (agents + 1)
        sigma = [25 / 3] * (agents + 1)
        played = [0] * (agents + 1)
        wins = [0] * (agents + 1)
        seats: list[tuple[Any, ...]] = []
        points: list[tuple[Any, ...]] = []

        def match_rows() -> Any:
            for m in range(1, matches + 1):
                when = start + timedelta(seconds=30 * m)
                table = rng.sample(range(1, agents + 1), PLAYERS)
                scores = [rng.randint(5, 60) for _ in table]
                ranks = ranks_from_scores(scores)
                for s, (vid, score, rank) in enumerate(zip(table, scores, ranks, strict=True)):
                    seats.append((m * PLAYERS + s, m, s, vid, vid, score, rank, 0, False))
                    # A plausible drift, not TrueSkill: the pages read numbers, not their math.
                    mu[vid] += (2.5 - rank) * 0.3 * sigma[vid] / 8
                    sigma[vid] = max(0.8, sigma[vid] * 0.995)
                    played[vid] += 1
                    wins[vid] += rank == 1
                    points.append((m * PLAYERS + s, 1, vid, m, mu[vid], sigma[vid], when))
                yield (
                    m,
                    "ladder",
                    1,
                    True,
                    rng.getrandbits(62),
                    "finished",
                    True,
                    json.dumps(scores),
                    json.dumps(ranks),
                    "[]",
                    1,
                    when - timedelta(seconds=5),
                    when - timedelta(seconds=5),
                    when,
                )

        copy(
            "matches",
            [
                "id",
                "kind",
                "ladder_id",
                "rated",
                "seed",
                "status",
                "rating_applied",
                "scores",
                "ranks",
                "faults",
                "attempts",
                "created_at",
                "started_at",
                "finished_at",
            ],
            match_rows(),
        )
        copy(
            "match_seats",
            [
                "id",
                "match_id",
                "seat",
                "version_id",
                "agent_id",
                "score",
                "rank",
                "faults",
                "forfeited",
            ],
            seats,
        )
        copy(
            "rating_points",
            ["id", "ladder_id", "version_id", "match_id", "mu", "sigma", "created_at"],
            points,
        )
        copy(
            "ratings",
            ["id", "ladder_id", "version_id", "mu", "sigma", "conservative", "matches", "wins"],
            (
                (v, 1, v, mu[v], sigma[v], conservative(mu[v], sigma[v]), played[v], wins[v])
                for v in range(1, agents + 1)
            ),
        )
        # Explicit ids were copied: move each sequence past them.
        for table in (
            "users",
            "agents",
            "agent_versions",
            "ladders",
            "ladder_entries",
            "matches",
            "match_seats",
            "rating_points",
            "ratings",
        ):
            cur.execute(
                sql.SQL("SELECT setval(pg_get_serial_sequence({}, 'id'), max(id)) FROM {}").format(
                    sql.Literal(table), sql.Identifier(table)
                )
            )
        conn.commit()
    with psycopg.connect(psycopg_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return {"seconds": time.perf_counter() - t0, "seats": len(seats), "points": len(points)}


def start_server(
    url: str, port: int, workers: int, data_dir: str, warm: bool = True, profile: str = ""
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "COW006_DATABASE_URL": url, "COW006_DATA_DIR": data_dir}
    env["COW006_METRICS"] = "open"  # wait_warm scrapes /metrics (a token by default)
    if not warm:
        env["COW006_CACHE_WARM_PAGES"] = "0"
    if profile:  # one process under cProfile (``profiled.py``), its stats written to ``profile``
        env["COW006_PROFILE"] = profile
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "profiled.py")
        return subprocess.Popen([sys.executable, script, "--port", str(port)], env=env)
    cmd = [
        sys.executable,
        "-m",
        "uvicorn",
        "--factory",
        "cow006_workers.embedded:embedded_app",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--workers",
        str(workers),
        "--log-level",
        "warning",
        "--no-access-log",
    ]
    return subprocess.Popen(cmd, env=env)


def _gauge(text: str, name: str) -> float | None:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def process_cpu(pid: int) -> float:
    """CPU seconds a process (and its finished children) used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def server_cpu(proc: subprocess.Popen[bytes]) -> float:
    """CPU seconds the server process (and its finished children) used so far."""
    return process_cpu(proc.pid)


def machine_cpu() -> float:
    """CPU seconds the whole machine was busy so far (all cores, everything but idle and
    iowait: the database, the writer, other jobs on a shared machine)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    busy = sum(fields[:8]) - fields[3] - fields[4]
    return busy / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    """CPU seconds this process (the clients) used so far."""
    t = os.times()
    return t.user + t.system


def renders(base: str) -> dict[str, float]:
    """Pages the server's page cache rendered so far (misses and renders ahead: one worker),
    by the route that answered."""
    text = httpx.get(f"{base}/metrics", timeout=30).text
    out: dict[str, float] = {}
    prefix = 'cow006_page_cache_renders_total{route="'
    for line in text.splitlines():
        if line.startswith(prefix):
            route, _, value = line[len(prefix) :].rpartition('"} ')
            out[route] = float(value)
    if not out:  # a server of before the count by route: the totals
        out["all routes"] = sum(
            _gauge(text, f"cow006_page_cache_{name}_total") or 0.0
            for name in ("misses", "rendered_ahead")
        )
    return out


def wait_written(path: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    """Wait until the profiled server has written its profile to ``path``."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline or proc.poll() is not None:
            raise SystemExit("the server wrote no profile")
        time.sleep(0.1)
    time.sleep(0.5)  # its last bytes


def wait_warm(base: str, workers: int, timeout: float = 600) -> float:
    """Seconds until the page caches are warm: ``/metrics`` shows nothing left to render ahead
    and some pages held, in several scrapes in a row (each may reach any worker process)."""
    start = time.monotonic()
    in_a_row = 0
    while in_a_row < 4 * workers:
        if time.monotonic() - start > timeout:
            raise SystemExit("the page cache did not warm in time")
        text = httpx.get(f"{base}/metrics", timeout=30).text
        pending = _gauge(text, "cow006_page_cache_pending")
        entries = _gauge(text, "cow006_page_cache_entries")
        warm = pending == 0 and (entries or 0) > 0
        in_a_row = in_a_row + 1 if warm else 0
        time.sleep(0.05 if warm else 0.5)
    return time.monotonic() - start


def write_matches(url: str, rate: float, seed: int, stop: Any, done: Any, playing: Any) -> None:
    """Finish ``rate`` ladder matches a second until ``stop`` is set, as a worker would: a
    queued match of 4 entered versions, played by built-in random bots, stored with
    ``results.finish_match`` (ratings, rating points, the change feed).  Runs in a process of
    its own, like a worker, so that it does not share the clients' interpreter.  ``playing``
    adds up the CPU seconds spent playing (the rest of its CPU is storing)."""
    rng = random.Random(seed)
    engine = db.make_engine(url)
    factory = db.make_sessionmaker(engine)
    with factory() as session:
        entries = session.execute(
            sa_select(LadderEntry.ladder_id, LadderEntry.version_id).where(
                LadderEntry.active.is_(True)
            )
        ).all()
    start = time.monotonic()
    while not stop.wait(max(0.0, start + done.value / rate - time.monotonic())):
        versions = [v for _, v in rng.sample(entries, PLAYERS)]
        with db.session_scope(factory) as session:
            match = results.create_match(
                session, kind=MatchKind.ladder, version_ids=versions, ladder_id=entries[0][0]
            )
            match_id, match_seed = match.id, match.seed
        t = time.process_time()
        log = play_match([bots.make("random") for _ in versions], seed=match_seed)
        playing.value += time.process_time() - t
        with db.session_scope(factory) as session:
            results.finish_match(session, match_id, log, [None] * PLAYERS)
        done.value += 1
    engine.dispose()


def requests_plan(
    n: int, agents: int, rng: random.Random, popularity: str = "uniform"
) -> list[tuple[str, str]]:
    """(endpoint name, path) for n requests: the four pages in equal shares.

    ``popularity`` picks the agents: ``uniform`` (every agent as likely: the worst case for
    the page cache, nearly every agent page is read once) or ``zipf`` (agent k read in
    proportion to 1/k, as readers favour the top of a ladder).
    """
    weights = [1 / k for k in range(1, agents + 1)] if popularity == "zipf" else None
    plan = []
    for i in range(n):
        if weights is None:
            agent = rng.randint(1, agents)
        else:
            agent = rng.choices(range(1, agents + 1), weights)[0]
        kind = i % 4
        if kind == 0:
            offset = rng.randrange(0, agents, 50)
            plan.append(("leaderboard", f"/api/ladders/1/leaderboard?limit=50&offset={offset}"))
        elif kind == 1:
            plan.append(("agent", f"/api/agents/{agent}"))
        elif kind == 2:
            plan.append(("ratings", f"/api/agents/{agent}/ratings"))
        else:
            plan.append(("matches", f"/api/matches?agent_id={agent}"))
    rng.shuffle(plan)
    return plan


class Connection:
    """A minimal HTTP/1.1 keep-alive client for GETs.

    httpx spends about 3 ms of CPU per request; on a 2-core machine shared with the server
    and the database, the load generator would then measure mostly itself.  This one sends a
    request line and reads a Content-Length body: a few hundredths of a millisecond.
    """

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def get(self, path: str) -> tuple[int, bytes, str]:
        """Status, body, and the page cache's verdict (``x-cache``: hit, stale or miss)."""
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        code = int(lines[0].split()[1])
        length = next(
            int(line.split(":", 1)[1])
            for line in lines
            if line.lower().startswith("content-length:")
        )
        cache = next(
            (
                line.split(":", 1)[1].strip()
                for line in lines
                if line.lower().startswith("x-cache:")
            ),
            "",
        )
        return code, await self.reader.readexactly(length), cache

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def load(
    port: int, plan: list[tuple[str, str]], clients: int, rate: float = 0.0
) -> tuple[dict[str, list[float]], dict[str, int], dict[str, int]]:
    """Run the plan with ``clients`` concurrent clients, each one request at a time on its
    own keep-alive connection.

    ``rate`` 0: a closed loop, no pause between requests (the server's saturation: latency is
    then mostly queueing, about clients / throughput).  ``rate`` R: request i is due at i/R
    seconds and its latency counts from then (so a backlog shows, no coordinated omission).
    """
    latencies: dict[str, list[float]] = defaultdict(list)
    hits: dict[str, int] = defaultdict(int)  # answered from the cache, fresh or stale
    stale: dict[str, int] = defaultdict(int)
    queue: asyncio.Queue[tuple[int, str, str]] = asyncio.Queue()
    for i, (name, path) in enumerate(plan):
        queue.put_nowait((i, name, path))
    errors: list[str] = []
    start = time.perf_counter()

    async def client() -> None:
        conn = Connection("127.0.0.1", port)
        try:
            while True:
                try:
                    i, name, path = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                t = time.perf_counter()
                if rate:
                    due = start + i / rate
                    if due > t:
                        await asyncio.sleep(due - t)
                    t = due
                code, body, verdict = await conn.get(path)
                latencies[name].append(time.perf_counter() - t)
                hits[name] += verdict in ("hit", "stale")
                stale[name] += verdict == "stale"
                if code != 200:
                    errors.append(f"{path}: {code} {body[:100]!r}")
        finally:
            conn.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    if errors:
        raise SystemExit(f"{len(errors)} requests failed, e.g. {errors[:3]}")
    return latencies, hits, stale


def latencies_all(latencies: dict[str, list[float]]) -> list[float]:
    return [x for xs in latencies.values() for x in xs]


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, math.ceil(p / 100 * len(ordered)) - 1))
    return ordered[k] * 1000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--url",
        default="postgresql://root@127.0.0.1:5432/postgres",
        help="a PostgreSQL server's URL (any existing database, to create ours)",
    )
    ap.add_argument("--db", default="cow006_bench", help="the database to (re)create")
    ap.add_argument("--agents", type=int, default=1000)
    ap.add_argument("--matches", type=int, default=100_000)
    ap.add_argument("--requests", type=int, default=4000, help="measured requests")
    ap.add_argument("--warmup", type=int, default=400)
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    ap.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="requests per second in all (paced, open loop); 0: closed loop, as fast as served",
    )
    ap.add_argument(
        "--popularity",
        choices=["uniform", "zipf"],
        default="uniform",
        help="which agents' pages are read: uniformly (the default, worst case) or zipf (1/k)",
    )
    ap.add_argument(
        "--writes",
        type=float,
        default=0.0,
        help="ladder matches finished per second while the clients read (0: none)",
    )
    ap.add_argument("--cold", action="store_true", help="no page cache warming at start")
    ap.add_argument(
        "--profile",
        default="",
        metavar="FILE",
        help="run the server under cProfile (one process) and write its profile of the "
        "measured requests to FILE (pstats; read the shares: profiling slows it about 2x)",
    )
    ap.add_argument("--keep", action="store_true", help="keep the database afterwards")
    ap.add_argument("--reuse", action="store_true", help="reuse a seeded database (no seeding)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    rng = random.Random(1)
    url = with_db(db.normalize_url(args.url), args.db)
    seeded: dict[str, Any] = {}
    if not args.reuse:
        recreate_database(db.normalize_url(args.url), args.db)
        engine = db.make_engine(url)
        prepare_database(Settings(database_url=url), engine)
        engine.dispose()
        seeded = seed(url, args.agents, args.matches, rng)
        print(
            f"seeded {args.agents} agents, {args.matches} matches, {seeded['seats']} seats, "
            f"{seeded['points']} rating points in {seeded['seconds']:.1f} s",
            file=sys.stderr,
        )
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory() as data_dir:
        if args.profile and args.workers != 1:
            raise SystemExit("--profile profiles one server process: --workers 1")
        profile = os.path.abspath(args.profile) if args.profile else ""
        if profile and os.path.exists(profile):
            os.remove(profile)
        proc = start_server(url, port, args.workers, data_dir, not args.cold, profile)
        writer = None
        try:
            wait_answering(f"{base}/api/ladders", proc)
            warm_seconds = None if args.cold else wait_warm(base, args.workers)
            warmup = requests_plan(args.warmup, args.agents, rng, args.popularity)
            asyncio.run(load(port, warmup, args.clients))
            plan = requests_plan(args.requests, args.agents, rng, args.popularity)
            if args.writes:
                ctx = multiprocessing.get_context("spawn")
                stop, done, playing = ctx.Event(), ctx.Value("i", 0), ctx.Value("d", 0.0)
                writer = ctx.Process(
                    target=write_matches, args=(url, args.writes, 2, stop, done, playing)
                )
                writer.start()
                # Measured from the writer's first finished match: a spawned process takes
                # seconds to import, which a short run would otherwise spend without writes.
                deadline = time.monotonic() + 120
                while done.value < 1 and writer.is_alive() and time.monotonic() < deadline:
                    time.sleep(0.05)
                if done.value < 1:
                    raise SystemExit("the writer finished no match")
            cpu0, renders0, done0 = server_cpu(proc), renders(base), done.value if writer else 0
            machine0, clients0 = machine_cpu(), own_cpu()
            writer0 = process_cpu(writer.pid) if writer is not None and writer.pid else 0.0
            playing0 = playing.value if writer is not None else 0.0
            if profile:
                proc.send_signal(signal.SIGUSR1)
            t0 = time.perf_counter()
            latencies, hits, stale = asyncio.run(load(port, plan, args.clients, args.rate))
            elapsed = time.perf_counter() - t0
            if profile:
                proc.send_signal(signal.SIGUSR2)
                wait_written(profile, proc)
            cpu = server_cpu(proc) - cpu0
            machine, clients_cpu = machine_cpu() - machine0, own_cpu() - clients0
            writer_cpu = (
                process_cpu(writer.pid) - writer0 if writer is not None and writer.pid else 0.0
            )
            playing_cpu = playing.value - playing0 if writer is not None else 0.0
            renders1 = renders(base)
            by_route = {r: n - renders0.get(r, 0.0) for r, n in renders1.items()}
            by_route = {r: n for r, n in by_route.items() if n}
            rendered = sum(by_route.values())
            finished = (done.value if writer else 0) - done0
        finally:
            if writer is not None:
                stop.set()
                writer.join(timeout=60)
            proc.terminate()
            proc.wait(timeout=30)
    if not args.keep and not args.reuse:
        recreate_database(db.normalize_url(args.url), args.db, drop_only=True)
    everything = [x for xs in latencies.values() for x in xs]
    report: dict[str, Any] = {
        "requests": len(everything),
        "clients": args.clients,
        "workers": args.workers,
        "rate": args.rate or "closed loop",
        "popularity": args.popularity,
        "cache_hit_rate": round(sum(hits.values()) / max(1, len(everything)), 3),
        "stale_rate": round(sum(stale.values()) / max(1, len(everything)), 3),
        "warm_seconds": None if warm_seconds is None else round(warm_seconds, 1),
        "writes_per_second": round(finished / elapsed, 1),
        # Where the server's time went: its CPU per request answered, and the pages it
        # rendered (readers' misses and renders ahead) per match finished meanwhile.
        "server_cpu_ms_per_request": round(cpu * 1000 / max(1, len(latencies_all(latencies))), 3),
        "server_cpu_share": round(cpu / elapsed, 2),
        # Who else used the 2 cores meanwhile (in cores): the clients (this process), the
        # writer (it plays its matches and stores them, like a worker), and the rest
        # (the database, other jobs).
        "clients_cpu_share": round(clients_cpu / elapsed, 2),
        "writer_cpu_share": round(writer_cpu / elapsed, 2),
        "writer_cpu_ms_per_match": round(writer_cpu * 1000 / finished, 1) if finished else None,
        "writer_playing_ms_per_match": (
            round(playing_cpu * 1000 / finished, 1) if finished else None
        ),
        "other_cpu_share": round((machine - cpu - clients_cpu - writer_cpu) / elapsed, 2),
        "renders": int(rendered),
        "renders_per_match": round(rendered / finished, 1) if finished else None,
        # By the route that answered: which pages a finished match has rendered again.
        "renders_per_match_by_route": (
            {r: round(n / finished, 2) for r, n in sorted(by_route.items())} if finished else None
        ),
        "seconds": round(elapsed, 2),
        "requests_per_second": round(len(everything) / elapsed, 1),
        "all": {f"p{p}": round(pct(everything, p), 1) for p in (50, 95, 99)},
        "endpoints": {
            name: {
                **{f"p{p}": round(pct(xs, p), 1) for p in (50, 95, 99)},
                "mean": round(statistics.fmean(xs) * 1000, 1),
                "hits": round(hits[name] / len(xs), 3),
            }
            for name, xs in sorted(latencies.items())
        },
        "target_p99_ms": 50,
    }
    report["ok"] = report["all"]["p99"] <= 50
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(
        f"{report['requests']} requests, {args.clients} clients, {args.workers} worker(s), "
        f"{'paced at ' + str(args.rate) + ' req/s' if args.rate else 'closed loop'}: "
        f"{report['requests_per_second']} req/s, {args.popularity} popularity, "
        f"page cache hits {report['cache_hit_rate']:.0%} (stale {report['stale_rate']:.1%})"
    )
    warmth = "off" if args.cold else f"{report['warm_seconds']} s before the measurement"
    print(
        f"page cache warming: {warmth}; "
        f"matches finished while reading: {report['writes_per_second']}/s"
    )
    per_match = report["renders_per_match"]
    print(
        f"server CPU {report['server_cpu_ms_per_request']} ms a request "
        f"({report['server_cpu_share']:.0%} of a core); pages rendered {report['renders']}"
        + (f", {per_match} a finished match" if per_match else "")
    )
    if report["renders_per_match_by_route"]:
        print(
            "pages rendered a finished match, by route: "
            + ", ".join(f"{r} {n}" for r, n in report["renders_per_match_by_route"].items())
        )
    print(
        f"cores busy meanwhile: server {report['server_cpu_share']}, "
        f"clients {report['clients_cpu_share']}, writer {report['writer_cpu_share']}"
        + (
            f" ({report['writer_cpu_ms_per_match']} ms a match, "
            f"{report['writer_playing_ms_per_match']} of them playing)"
            if report["writer_cpu_ms_per_match"]
            else ""
        )
        + f", the rest (database, other jobs) {report['other_cpu_share']}"
    )
    print(f"{'endpoint':<12} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8} {'mean ms':>8} {'hits':>6}")
    for name, f in report["endpoints"].items():
        print(
            f"{name:<12} {f['p50']:>8} {f['p95']:>8} {f['p99']:>8} {f['mean']:>8} {f['hits']:>6.0%}"
        )
    a = report["all"]
    print(f"{'all':<12} {a['p50']:>8} {a['p95']:>8} {a['p99']:>8}")
    print(f"target p99 <= 50 ms: {'met' if report['ok'] else 'NOT met'}")


if __name__ == "__main__":
    main()
