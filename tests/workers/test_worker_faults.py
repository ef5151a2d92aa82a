"""Failures of real worker processes and of the broker: nothing is lost, nothing counts twice.

* Workers are SIGKILLed in the middle of matches, 20 times: half the time the pool process
  playing the match, half the time the whole worker (its parent, pool and bots: a machine
  gone).  Every match still finishes, exactly once rated, and two runs of one match never
  overlap in time (the workers' run journal, with the kill times for runs that never ended).
* Redis is stopped (it keeps nothing: every queued task is lost) and started again while
  matches are queued and running: the reaper sends the lost tasks again, every match
  finishes.  That Redis is the test's own (``services.private_redis``, on a port of its
  own): the shared one, which the other tests (and xdist workers) use, is never stopped.

Leases are short here (3 s, heartbeat 1 s, reaper every second, lost tasks re-sent after
5 s) and the bots trivial but slow enough (seconds a match) to be killed mid-match.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import servers, services
from helpers import workers as wt
from sqlalchemy import select

from cow006_platform import db
from cow006_platform.db import aware
from cow006_platform.executor import CeleryExecutor
from cow006_platform.models import Ladder, LadderState, Match, MatchStatus, utcnow

# Real worker processes killed mid-match: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

KILLS = 20


def _slow_ladder(arena: wt.Arena, n: int = 5, pause: float = 0.03) -> int:
    vids = [arena.upload(f"owner{i}", f"slow{i}", wt.slow_bot(f"slow{i}", pause)) for i in range(n)]
    return arena.ladder(vids, players=4, decision_time=1.0, time_bank=5.0)


def _depth(arena: wt.Arena, depth: int) -> None:
    """Workers started from now on keep ladders ``depth`` matches deep."""
    arena.env["COW006_LADDER_QUEUE_DEPTH"] = str(depth)


def _pause(arena: wt.Arena, ladder_id: int) -> None:
    with db.session_scope(arena.session_factory) as s:
        ladder = s.get(Ladder, ladder_id)
        assert ladder is not None
        ladder.state = LadderState.paused


def _settled(arena: wt.Arena) -> bool:
    counts = arena.counts()
    return counts.get("queued", 0) == 0 and counts.get("running", 0) == 0


def _session_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[3])


def _victim(
    arena: wt.Arena, hit: dict[int, int], killed: dict[str, float]
) -> tuple[int, str, int, wt.Proc] | None:
    """A match running for a moment on one of our live workers (a run not killed yet), not
    hit twice before: (match id, its worker's name, the pool process id, the worker)."""
    with db.session_scope(arena.session_factory) as s:
        rows = s.execute(
            select(Match.id, Match.worker, Match.started_at).where(
                Match.status == MatchStatus.running
            )
        ).all()
    now = utcnow()
    for mid, worker, started in rows:
        started = aware(started)
        if hit.get(mid, 0) >= 2 or worker is None or worker in killed or started is None:
            continue
        if (now - started).total_seconds() < 0.4:
            continue  # just claimed: let its bots start
        pid = int(worker.rsplit("/", 1)[1])
        sid = _session_of(pid)
        for proc in arena.procs:
            if proc.popen.poll() is None and proc.popen.pid == sid and proc.name != "beat":
                return mid, worker, pid, proc
    return None


def test_sigkilled_workers_lose_no_match_and_rate_none_twice(arena: wt.Arena) -> None:
    ladder_id = _slow_ladder(arena, 6, 0.01)
    _depth(arena, 6)
    arena.beat()
    for _ in range(3):
        arena.worker(concurrency=1, wait=False)
    sender = CeleryExecutor(arena.broker_url)
    killed: dict[str, float] = {}
    hit: dict[int, int] = {}  # match id -> times killed
    try:
        for k in range(KILLS):
            mid, worker, pid, proc = servers.wait_for(
                lambda: _victim(arena, hit, killed), 60, every=0.05
            )
            hit[mid] = hit.get(mid, 0) + 1
            if k % 2 == 0:  # the pool process playing the match; Celery starts a new one
                killed[worker] = time.time()
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            else:  # the whole worker; another one joins
                killed[worker] = arena.kill(proc)
                arena.worker(concurrency=1, wait=False)
            if k % 5 == 4:
                # Duplicate deliveries of everything in flight: harmless by design.
                for match_id in sorted(wt.in_flight(arena.session_factory)):
                    sender.submit_match(match_id)
        _pause(arena, ladder_id)
        servers.wait_for(lambda: _settled(arena), 120, every=0.5)
    finally:
        sender.close()
        arena.stop_all()
    assert wt.assert_sound(arena.session_factory) >= len(hit)
    intervals = wt.run_intervals(arena.journal(), killed)
    wt.assert_no_overlap(intervals)
    # The kills landed mid-match: those matches were run again (attempts > 1).
    with db.session_scope(arena.session_factory) as s:
        retried = s.scalars(select(Match.id).where(Match.attempts > 1)).all()
    landed = set(retried) & set(hit)
    assert len(landed) >= len(hit) * 3 // 4, (sorted(hit), sorted(retried))
    assert all(len(intervals[mid]) >= 2 for mid in landed)


@pytest.fixture
def redis_arena(tmp_path: Path) -> Iterator[tuple[wt.Arena, services.PrivateRedis]]:
    """An arena whose broker is a private Redis (stopped after the arena's processes)."""
    services.require_services()
    with services.private_redis(tmp_path / "redis") as redis:
        for arena in wt.make_arena(tmp_path, broker_url=redis.url):
            with wt.reaping(arena):
                yield arena, redis


def test_a_redis_restart_loses_no_match(
    redis_arena: tuple[wt.Arena, services.PrivateRedis],
) -> None:
    arena, redis = redis_arena
    ladder_id = _slow_ladder(arena, 5, 0.01)
    arena.worker(concurrency=1)
    arena.worker(concurrency=1)
    arena.beat()
    try:
        # Matches finished, others running, more queued behind them.
        servers.wait_for(lambda: arena.counts().get("finished", 0) >= 2, 60)
        servers.wait_for(
            lambda: arena.counts().get("running", 0) >= 1 and arena.counts().get("queued", 0) >= 1,
            30,
            every=0.05,
        )
        in_flight = wt.in_flight(arena.session_factory)
        try:
            redis.stop()
            assert not redis.ping()
            time.sleep(2.0)
        finally:
            redis.start()
        # Everything that was in flight finishes; new matches keep coming.
        servers.wait_for(lambda: _finished(arena, in_flight), 90, every=0.5)
        _pause(arena, ladder_id)
        servers.wait_for(lambda: _settled(arena), 90, every=0.5)
    finally:
        redis.start()
        arena.stop_all()
    wt.assert_sound(arena.session_factory)
    wt.assert_no_overlap(wt.run_intervals(arena.journal(), {}))


def _finished(arena: wt.Arena, ids: set[int]) -> bool:
    with db.session_scope(arena.session_factory) as s:
        statuses = s.scalars(select(Match.status).where(Match.id.in_(ids))).all()
    return all(st is MatchStatus.finished for st in statuses)
