"""Bulk export benchmark: a ladder's logs out of PostgreSQL, in matches per second.

Seeds a database of its own (``cow006_export``) with N finished matches of one ladder (real
logs of random built-ins, ``--distinct`` of them reused in turn, stored as the workers store
them), starts the API (uvicorn, one process, the embedded app: the ladder is closed, so
nothing is scheduled) and measures, in one run:

* **the API**: every page of ``GET /api/ladders/{id}/logs`` (JSON lines, the default page
  size) read over HTTP, bodies discarded: matches per second, and per page the median time;
* **the command**: ``cow006 logs --ladder dataset --out DIR`` run as a process (its start
  included): pages written as one file per log and ``index.jsonl``: matches per second;
* the same as a tar (``format=tar``), API only.

Target: at least 2,000 matches/s from PostgreSQL for the API and the command.  Client,
server and database share the machine (the load average is printed).

    python bench/export.py [--matches 10000] [--url postgresql://root@127.0.0.1:5432/postgres]
        [--json]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from harness import free_port, psycopg_url, recreate_database, wait_answering, with_db

from cow006 import play_match
from cow006.bots import make
from cow006_platform import db
from cow006_platform.app import prepare_database
from cow006_platform.settings import Settings

PLAYERS = 4


def seed(url: str, n: int, distinct: int) -> float:
    """Users, agents, versions, a closed ladder and ``n`` finished matches with their logs and
    seats, by COPY; the seconds it took."""
    t0 = time.perf_counter()
    names = [f"bot-{i}@1" for i in range(1, PLAYERS + 1)]
    logs = [
        play_match([make("random") for _ in range(PLAYERS)], seed=s, names=names)
        for s in range(distinct)
    ]
    bodies = [
        gzip.compress(json.dumps(log, separators=(",", ":")).encode(), mtime=0) for log in logs
    ]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    with psycopg.connect(psycopg_url(url)) as conn, conn.cursor() as cur:
        cur.execute(
            "INSERT INTO users (id, name, is_admin, token_hash, created_at) VALUES "
            "(1, 'owner', false, repeat('0', 64), now())"
        )
        for i in range(1, PLAYERS + 1):
            cur.execute(
                "INSERT INTO agents (id, owner_id, name, disabled, created_at) "
                "VALUES (%s, 1, %s, false, now())",
                (i, f"bot-{i}"),
            )
            cur.execute(
                "INSERT INTO agent_versions (id, agent_id, number, sha256, filename, size, "
                "unpacked_size, files, status, created_at) "
                "VALUES (%s, %s, 1, %s, 'bot.py', 10, 10, 1, 'active', now())",
                (i, i, f"{i:064x}"),
            )
        cur.execute(
            "INSERT INTO ladders (id, name, state, players, decision_time, time_bank, mu, sigma,"
            " beta, tau, draw_probability, created_at) VALUES (1, 'dataset', 'closed', %s, 1.0,"
            " 10.0, 25.0, 8.333, 4.1667, 0.0833, 0.011, now())",
            (PLAYERS,),
        )
        columns = "id, kind, ladder_id, rated, seed, status, rating_applied, scores, ranks, "
        columns += "faults, attempts, created_at, started_at, finished_at"
        with cur.copy(f"COPY matches ({columns}) FROM STDIN") as cp:
            for m in range(1, n + 1):
                log = logs[m % distinct]
                when = start + timedelta(seconds=m)
                cp.write_row(
                    (
                        m,
                        "ladder",
                        1,
                        True,
                        log["seed"],
                        "finished",
                        True,
                        json.dumps(log["scores"]),
                        json.dumps(log["ranks"]),
                        "[]",
                        1,
                        when,
                        when,
                        when,
                    )
                )
        with cur.copy("COPY match_logs (match_id, body) FROM STDIN") as cp:
            for m in range(1, n + 1):
                cp.write_row((m, bodies[m % distinct]))
        seat_cols = "match_id, seat, version_id, agent_id, score, rank, faults, forfeited"
        with cur.copy(f"COPY match_seats ({seat_cols}) FROM STDIN") as cp:
            for m in range(1, n + 1):
                log = logs[m % distinct]
                for s in range(PLAYERS):
                    cp.write_row((m, s, s + 1, s + 1, log["scores"][s], log["ranks"][s], 0, False))
        for table in ("users", "agents", "agent_versions", "ladders", "matches"):
            cur.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), max(id)) FROM {table}"
            )
        conn.commit()
    with psycopg.connect(psycopg_url(url), autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
    return time.perf_counter() - t0


def read_pages(base: str, fmt: str) -> tuple[int, float, list[float]]:
    """Every page of the export over HTTP: (matches, seconds, seconds per page)."""
    count, since, per_page = 0, 0, []
    t0 = time.perf_counter()
    with httpx.Client(base_url=base, timeout=60) as http:
        while True:
            t = time.perf_counter()
            r = http.get("/api/ladders/1/logs", params={"since": since, "format": fmt})
            r.raise_for_status()
            per_page.append(time.perf_counter() - t)
            count += int(r.headers["Cow006-Next-Since"]) - since if r.content else 0
            since = int(r.headers["Cow006-Next-Since"])
            if r.headers["Cow006-More"] != "true":
                break
    return count, time.perf_counter() - t0, per_page


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--url", default="postgresql://root@127.0.0.1:5432/postgres")
    ap.add_argument("--db", default="cow006_export")
    ap.add_argument("--matches", type=int, default=10_000)
    ap.add_argument("--distinct", type=int, default=200, help="distinct logs played")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    recreate_database(args.url, args.db)
    url = with_db(args.url, args.db)
    sa_url = url.replace("postgresql://", "postgresql+psycopg://", 1)
    workdir = Path(tempfile.mkdtemp(prefix="cow006-export-"))
    settings = Settings(database_url=sa_url, data_dir=workdir / "data")
    engine = db.make_engine(sa_url)
    prepare_database(settings, engine)
    engine.dispose()
    seeded = seed(url, args.matches, args.distinct)

    port = free_port()
    env = {
        **os.environ,
        "COW006_DATABASE_URL": sa_url,
        "COW006_DATA_DIR": str(workdir / "data"),
        "COW006_EXPORTS_PER_MINUTE_PER_ADDRESS": "0",
        "COW006_LOG_LEVEL": "warning",
    }
    cmd = [sys.executable, "-m", "uvicorn", "--factory", "cow006_workers.embedded:embedded_app"]
    cmd += ["--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"]
    server = subprocess.Popen(cmd, env=env, cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_answering(f"{base}/api/ladders", server)
        read_pages(base, "jsonl")  # warm: the database's pages and the server's code
        n_api, s_api, pages = read_pages(base, "jsonl")
        n_tar, s_tar, _ = read_pages(base, "tar")
        out = workdir / "dataset"
        command = [str(Path(sys.executable).parent / "cow006"), "logs", "--ladder", "dataset"]
        cli_env = {**os.environ, "COW006_URL": base, "COW006_CONFIG": str(workdir / "c.json")}
        t0 = time.perf_counter()
        subprocess.run([*command, "--out", str(out)], env=cli_env, check=True, capture_output=True)
        s_cli = time.perf_counter() - t0
        downloaded = len(list((out / "matches").glob("*.json")))
    finally:
        server.terminate()
        server.wait(30)
        recreate_database(args.url, args.db, drop_only=True)

    figures: dict[str, Any] = {
        "matches": args.matches,
        "seed_seconds": round(seeded, 1),
        "api_jsonl_per_s": round(n_api / s_api),
        "api_tar_per_s": round(n_tar / s_tar),
        "command_per_s": round(downloaded / s_cli),
        "page_median_ms": round(statistics.median(pages) * 1000, 1),
        "pages": len(pages),
        "load_average": round(os.getloadavg()[0], 2),
        "target_per_s": 2000,
    }
    if args.json:
        print(json.dumps(figures))
    else:
        print(
            f"{args.matches} matches: API {figures['api_jsonl_per_s']:,}/s as JSON lines "
            f"({figures['pages']} pages, median {figures['page_median_ms']} ms), "
            f"{figures['api_tar_per_s']:,}/s as tar; `cow006 logs --ladder` "
            f"{figures['command_per_s']:,}/s to disk (target >= 2,000/s); "
            f"load average {figures['load_average']}"
        )
    ok = min(figures["api_jsonl_per_s"], figures["command_per_s"]) >= 2000
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
