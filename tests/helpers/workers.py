"""Helpers of the worker tests: services, arenas of real worker processes, checks.

An ``Arena`` is one test's platform: a fresh PostgreSQL schema, a Redis database flushed
for it (this xdist worker's: ``services.REDIS_DB``), a data folder, and the COW006_*
environment its worker and beat subprocesses get (short leases so that failures are seen
within seconds).  Workers and beat are started as
``python -m cow006_workers worker|beat`` in sessions of their own, so a test can SIGKILL a
whole worker (its pool processes and their bots with it) like a machine going away.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import verify
from cow006_platform import db, results, storage
from cow006_platform.app import prepare_database
from cow006_platform.models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    Rating,
    RatingPoint,
    User,
    VersionStatus,
)
from cow006_platform.settings import Settings
from helpers import services
from helpers.servers import clean_env, spawn, wait_for
from helpers.services import REDIS_DB, REDIS_HOST, REDIS_PORT

# Trivial bots (distinct files, so distinct versions).
BOTS = {
    "low": "def play(view):\n    return min(view.hand)\n",
    "high": "def play(view):\n    return max(view.hand)\n",
    "mid": "def play(view):\n    return sorted(view.hand)[len(view.hand) // 2]\n",
    "third": "def play(view):\n    return sorted(view.hand)[len(view.hand) // 3]\n",
    "greedy": "from cow006.bots import make\n\nagent = make('greedy')\n",
}


def slow_bot(tag: str, pause: float = 0.03) -> str:
    """A trivial bot that pauses before each card (4 of them at 0.03 s: about 6 s a match)."""
    return (
        f"import time\n\n# {tag}\n"
        f"def play(view):\n    time.sleep({pause})\n    return min(view.hand)\n"
    )


# -- an arena of worker processes -------------------------------------------------------------


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    logfile: Path

    def log(self) -> str:
        return self.logfile.read_text(errors="replace") if self.logfile.exists() else ""

    def pool_pids(self) -> list[int]:
        """The worker's pool processes (its children running Python)."""
        return [pid for pid in children_of(self.popen.pid) if _is_python(pid)]


def _processes() -> Iterator[tuple[int, list[str]]]:
    """(pid, the fields of /proc/PID/stat after the command) of every process there is."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # The command (which may hold spaces) is in parentheses: the fields follow it.
            yield int(stat.parent.name), stat.read_text().rsplit(")", 1)[1].split()


def children_of(pid: int) -> list[int]:
    return [child for child, fields in _processes() if int(fields[1]) == pid]


def _is_python(pid: int) -> bool:
    try:
        return "cow006_workers" in Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return False


def session_pids(sid: int) -> list[int]:
    """Every live process of session ``sid`` (a worker started with a session of its own)."""
    return [pid for pid, fields in _processes() if fields[0] != "Z" and int(fields[3]) == sid]


@dataclass
class Arena:
    """One test's platform: database schema, Redis database, data folder, processes."""

    tmp: Path
    db_url: str
    broker_url: str
    env: dict[str, str]
    settings: Settings
    session_factory: sessionmaker[Session]
    procs: list[Proc] = field(default_factory=list)
    _n: int = 0

    # processes

    def _spawn(self, name: str, args: list[str]) -> Proc:
        logfile = self.tmp / f"{name}.log"
        argv = [sys.executable, "-m", "cow006_workers", *args, f"--logfile={logfile}"]
        out = self.tmp / f"{name}.out"
        popen = spawn(argv, cwd=self.tmp, env=self.env, out=out, session=True)
        proc = Proc(name, popen, logfile)
        self.procs.append(proc)
        return proc

    def worker(self, concurrency: int = 1, wait: bool = True) -> Proc:
        self._n += 1
        proc = self._spawn(
            f"worker{self._n}",
            [
                "worker",
                f"--concurrency={concurrency}",
                "--loglevel=info",
                f"--hostname=w{self._n}-{uuid.uuid4().hex[:6]}@%h",
            ],
        )
        if wait:
            wait_for(lambda: " ready." in proc.log() or proc.popen.poll() is not None, 60)
            assert proc.popen.poll() is None, f"worker died: {proc.log()[-3000:]}"
        return proc

    def beat(self) -> Proc:
        return self._spawn("beat", ["beat", "--loglevel=info"])

    def kill(self, proc: Proc) -> float:
        """SIGKILL the whole worker: every process of its session (its supervisor, the
        Celery worker, the pool; the bots die with them); the time of the kill."""
        t = time.time()
        for _ in range(50):
            pids = session_pids(proc.popen.pid)
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        proc.popen.wait()
        return t

    def stop(self, proc: Proc, timeout: float = 30) -> None:
        if proc.popen.poll() is None:
            proc.popen.send_signal(signal.SIGTERM)
            try:
                proc.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.popen.pid, signal.SIGKILL)
                proc.popen.wait()
        # Whatever the session still runs (it should be nothing) goes too.
        for pid in session_pids(proc.popen.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for proc in self.procs:
            with contextlib.suppress(Exception):
                self.stop(proc, timeout=15)

    def journal(self) -> str:
        return "".join(p.log() for p in self.procs)

    # data

    def upload(self, owner: str, name: str, source: str) -> int:
        """An agent with one version of ``source``, stored like an upload; the version id."""
        with db.session_scope(self.session_factory) as s:
            user = s.scalar(select(User).where(User.name == owner))
            if user is None:
                user = User(name=owner, token_hash=uuid.uuid4().hex * 2)
                s.add(user)
                s.flush()
            return add_version(s, self.settings, user.id, name, source).id

    def ladder(self, version_ids: list[int], **kwargs: Any) -> int:
        return ladder(self.session_factory, version_ids, **kwargs)

    def counts(self) -> dict[str, int]:
        with db.session_scope(self.session_factory) as s:
            rows = s.execute(select(Match.status, func.count()).group_by(Match.status)).all()
            return {status.value: n for status, n in rows}


def add_version(
    s: Session, settings: Settings, owner_id: int, name: str, source: str | None
) -> AgentVersion:
    """A new agent ``name`` of ``owner_id`` with one active version, flushed: of ``source``
    stored like an upload, or (None) naming files that were never stored."""
    agent = Agent(name=name, owner_id=owner_id)
    s.add(agent)
    s.flush()
    if source is not None:
        stored = storage.store_upload(settings, "bot.py", source.encode())
    else:
        sha = uuid.uuid4().hex * 2
        stored = storage.StoredBot(sha, "bot.py", 1, 1, 1, storage.bot_path(settings, sha))
    version = storage.add_version(s, agent.id, stored)
    version.status = VersionStatus.active
    s.flush()
    return version


def active_versions(
    factory: sessionmaker[Session], settings: Settings, n: int, *, source: str | None = None
) -> list[int]:
    """n active versions of n new agents, each of its own new owner (ladders seat one owner's
    versions apart); their ids.  With ``source`` each bot is stored like an upload (a distinct
    comment on top of ``source``); without, the versions name files that were never stored."""
    out = []
    with db.session_scope(factory) as s:
        for i in range(n):
            owner = User(name=f"u{uuid.uuid4().hex[:8]}", token_hash=uuid.uuid4().hex * 2)
            s.add(owner)
            s.flush()
            text = None if source is None else f"# bot {i} {uuid.uuid4().hex}\n" + source
            out.append(add_version(s, settings, owner.id, f"a{uuid.uuid4().hex[:10]}", text).id)
    return out


def ladder(factory: sessionmaker[Session], version_ids: list[int], **kwargs: Any) -> int:
    """A ladder (``kwargs``: its columns) with the versions entered; its id."""
    with db.session_scope(factory) as s:
        row = Ladder(name=kwargs.pop("name", f"ladder-{uuid.uuid4().hex[:8]}"), **kwargs)
        s.add(row)
        s.flush()
        for vid in version_ids:
            version = s.get(AgentVersion, vid)
            assert version is not None
            s.add(LadderEntry(ladder_id=row.id, agent_id=version.agent_id, version_id=vid))
        return row.id


@contextlib.contextmanager
def reaping(arena: Arena | None = None) -> Iterator[None]:
    """Make this (pytest) process a child subreaper that reaps the orphans of the processes
    it kills (``cow006_workers.reaper``): pid 1 may reap nothing here, and a dead bot's
    zombie would keep its sandbox slot busy for good."""
    from cow006_workers import reaper

    known = (lambda pid: any(p.popen.pid == pid for p in arena.procs)) if arena else None
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(0.1):
            reaper.reap_orphans(keep=known or (lambda pid: False))

    reaper.become_subreaper()
    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        reaper.become_subreaper(False)
        reaper.reap_orphans(keep=known or (lambda pid: False))


def make_arena(tmp: Path, **overrides: Any) -> Iterator[Arena]:
    """A fresh arena (see ``Arena``); its processes are stopped and its schema dropped after."""
    with services.pg_schema("w") as db_url:
        yield from _arena_on(tmp, db_url, overrides)


def _arena_on(tmp: Path, db_url: str, overrides: dict[str, Any]) -> Iterator[Arena]:
    # The shared Redis's database of this xdist worker, emptied, unless the test brings its
    # own broker (``broker_url``: a private Redis it may stop).
    shared = "broker_url" not in overrides
    broker_url = overrides.get("broker_url", f"redis://{REDIS_HOST}:{REDIS_PORT}/{REDIS_DB}")
    if shared:
        services.flush_redis()
    values: dict[str, Any] = {
        "database_url": db_url,
        "broker_url": broker_url,
        "data_dir": str(tmp / "data"),
        "sandbox": "on",
        "lease_seconds": 3.0,
        "heartbeat_seconds": 1.0,
        "max_attempts": 8,
        "ladder_queue_depth": 4,
        "scheduler_period": 1.0,
        "reaper_period": 1.0,
        "requeue_seconds": 5.0,
        "validation_decision": 0.5,
        "validation_bank": 2.0,
    }
    values.update(overrides)
    env = clean_env(**{f"COW006_{k.upper()}": str(v) for k, v in values.items()})
    settings = Settings(**values)
    engine = db.make_engine(db_url)
    prepare_database(settings, engine)
    arena = Arena(tmp, db_url, broker_url, env, settings, db.make_sessionmaker(engine))
    try:
        yield arena
    finally:
        arena.stop_all()
        engine.dispose()
        if shared:
            with contextlib.suppress(Exception):
                services.flush_redis()


# -- checks -----------------------------------------------------------------------------------


RUN = re.compile(
    r"run (start|end) match=(\d+) attempt=(\d+) worker=(\S+) t=([\d.]+)(?: lost=(\d))?"
)


def run_intervals(journal: str, killed: dict[str, float]) -> dict[int, list[tuple[float, float]]]:
    """Per match, the (start, end) of each run from the workers' journal lines; a run without
    an end line ended when its worker was killed (``killed``: worker name -> time)."""
    starts: dict[tuple[int, int], tuple[str, float]] = {}
    ends: dict[tuple[int, int], float] = {}
    for what, mid, attempt, worker, t, _lost in RUN.findall(journal):
        key = (int(mid), int(attempt))
        if what == "start":
            starts[key] = (worker, float(t))
        else:
            ends[key] = float(t)
    out: dict[int, list[tuple[float, float]]] = {}
    for key, (worker, start) in starts.items():
        end = ends.get(key)
        if end is None:
            end = killed.get(worker, float("inf"))
        out.setdefault(key[0], []).append((start, end))
    return out


def assert_no_overlap(intervals: dict[int, list[tuple[float, float]]]) -> None:
    for mid, runs in intervals.items():
        runs.sort()
        for (s1, e1), (s2, _e2) in itertools.pairwise(runs):
            assert e1 <= s2, f"match {mid}: a run from {s1} to {e1} overlaps one from {s2}"


def assert_rated_once(factory: sessionmaker[Session]) -> int:
    """Every finished rated ladder match is rated exactly once: rating_applied, one rating
    point per seat, and the ratings' match counts add up; the number of such matches."""
    with db.session_scope(factory) as s:
        finished = s.scalars(
            select(Match).where(
                Match.kind == MatchKind.ladder,
                Match.rated.is_(True),
                Match.status == MatchStatus.finished,
            )
        ).all()
        seats = 0
        for m in finished:
            assert m.rating_applied, f"match {m.id} finished but not rated"
            points = s.scalar(select(func.count()).where(RatingPoint.match_id == m.id))
            assert points == len(m.seats), f"match {m.id}: {points} rating points"
            seats += len(m.seats)
        total_points = s.scalar(select(func.count(RatingPoint.id)))
        assert total_points == seats
        counted = s.scalar(select(func.coalesce(func.sum(Rating.matches), 0)))
        assert counted == seats
        unfinished_rated = s.scalar(
            select(func.count(Match.id)).where(
                Match.rating_applied.is_(True), Match.status != MatchStatus.finished
            )
        )
        assert unfinished_rated == 0
        return len(finished)


def assert_logs_verify(factory: sessionmaker[Session]) -> int:
    """Every stored log replays (``cow006.log.verify``); how many there are."""
    n = 0
    with db.session_scope(factory) as s:
        ids = s.scalars(select(Match.id).where(Match.status == MatchStatus.finished)).all()
        for mid in ids:
            log = results.read_log(s, mid)
            assert log is not None, f"match {mid} has no log"
            verify(log)
            n += 1
    return n


def failures(factory: sessionmaker[Session]) -> list[tuple[int, int, str | None]]:
    """(id, attempts, error) of every failed match."""
    with db.session_scope(factory) as s:
        rows = s.execute(
            select(Match.id, Match.attempts, Match.error).where(Match.status == MatchStatus.failed)
        ).all()
        return [(int(i), int(a), e) for i, a, e in rows]


def in_flight(factory: sessionmaker[Session]) -> set[int]:
    """The ids of the matches queued or running."""
    with db.session_scope(factory) as s:
        unsettled = [MatchStatus.queued, MatchStatus.running]
        return set(s.scalars(select(Match.id).where(Match.status.in_(unsettled))))


def assert_sound(factory: sessionmaker[Session]) -> int:
    """No match failed, every finished rated match is rated exactly once and every stored log
    replays; the number of rated matches."""
    failed = failures(factory)
    assert not failed, failed
    rated = assert_rated_once(factory)
    assert_logs_verify(factory)
    return rated


def seats_of(factory: sessionmaker[Session], match_id: int) -> list[int]:
    with db.session_scope(factory) as s:
        return list(
            s.scalars(
                select(MatchSeat.version_id)
                .where(MatchSeat.match_id == match_id)
                .order_by(MatchSeat.seat)
            )
        )
