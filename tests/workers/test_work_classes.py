"""Work classes under a flood: a queue per class, challenges admitted a few at a time.

Issue 14: four users each sending 30 challenges queued hours of work in the one queue that
validations and ladder matches shared: a new upload's validation went from 14.5 s to still
pending after 150 s, and the ladder finished nothing for 2 minutes.  Here several users,
each from an address of their own and each as far as the caps let them, fill the arena with
challenges of slow bots, through the real API, Redis, one worker process and the beat; a new
upload must still be validated within seconds and the ladder keep finishing matches.  On
the old single queue both wait behind the whole flood (about 6 s a challenge here).

Also in-process: the reaper never sends a held challenge; ``--queues`` picks work classes.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest
import typer
from fastapi.testclient import TestClient
from helpers import servers, services
from helpers import workers as wt
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, results, security, tasknames, workclasses
from cow006_platform.app import create_app
from cow006_platform.executor import CeleryExecutor
from cow006_platform.models import Match, MatchKind, MatchStatus
from cow006_platform.settings import Settings
from cow006_workers import scheduler
from cow006_workers.cli import worker_queues

FLOODERS = 4
SLOW = 0.03  # seconds a slow bot sleeps per card: about 6 s per 3-player challenge


def _moment(t: float) -> datetime:
    return datetime.fromtimestamp(t, UTC)


def _busy(factory: sessionmaker[Session], since: float) -> dict[MatchKind, float]:
    """Seconds of match time per kind since the wall-clock time ``since`` (running ones up
    to now)."""
    now = _moment(time.time())
    out = {MatchKind.ladder: 0.0, MatchKind.challenge: 0.0}
    with db.session_scope(factory) as s:
        for kind, started, finished in s.execute(
            select(Match.kind, Match.started_at, Match.finished_at).where(
                Match.started_at.is_not(None)
            )
        ):
            start = max(started.replace(tzinfo=UTC), _moment(since))
            end = finished.replace(tzinfo=UTC) if finished is not None else now
            if end > start and kind in out:
                out[kind] += (end - start).total_seconds()
    return out


def _finished(factory: sessionmaker[Session], kind: MatchKind, since: float) -> int:
    """Matches of ``kind`` finished after the wall-clock time ``since``."""
    moment = _moment(since)
    with db.session_scope(factory) as s:
        return int(
            s.scalar(
                select(func.count(Match.id)).where(
                    Match.kind == kind,
                    Match.status == MatchStatus.finished,
                    Match.finished_at >= moment,
                )
            )
            or 0
        )


def _ladder_started(factory: sessionmaker[Session], since: float) -> int:
    """Ladder matches started after the wall-clock time ``since`` and before the second
    challenge that started after it."""
    moment = _moment(since)
    with db.session_scope(factory) as s:
        second = s.scalars(
            select(Match.started_at)
            .where(Match.kind == MatchKind.challenge, Match.started_at >= moment)
            .order_by(Match.started_at)
            .offset(1)
            .limit(1)
        ).first()
        return int(
            s.scalar(
                select(func.count(Match.id)).where(
                    Match.kind == MatchKind.ladder,
                    Match.started_at >= moment,
                    Match.started_at < (second or _moment(time.time())),
                )
            )
            or 0
        )


@pytest.mark.slow
def test_a_challenge_flood_leaves_validations_and_the_ladder_moving(arena: wt.Arena) -> None:
    ladder_bots = [wt.BOTS["low"], wt.BOTS["high"], wt.BOTS["mid"], wt.BOTS["third"]]
    versions = [arena.upload(f"ladder-{i}", f"lad-{i}", src) for i, src in enumerate(ladder_bots)]
    arena.ladder(versions, players=2, decision_time=1.0, time_bank=5.0)
    # Each flooder owns three slow bots and seats them together: no per-opponent rule applies.
    flooders: list[tuple[dict[str, str], list[int]]] = []
    for i in range(FLOODERS):
        with db.session_scope(arena.session_factory) as s:
            _, token = security.create_user(s, f"flooder{i}")
        own = [
            arena.upload(f"flooder{i}", f"slow-{i}-{j}", wt.slow_bot(f"{i}{j}", SLOW))
            for j in range(3)
        ]
        flooders.append(({"Authorization": f"Bearer {token}"}, own))
    with db.session_scope(arena.session_factory) as s:
        _, token = security.create_user(s, "newcomer")
    newcomer = {"Authorization": f"Bearer {token}"}

    arena.worker(concurrency=1)
    arena.beat()
    executor = CeleryExecutor(arena.broker_url)
    app = create_app(arena.settings, executor=executor)
    with TestClient(app) as client:
        # The flood starts with the arena, before the ladder has played.
        sent = refused = 0
        for i, (headers, own) in enumerate(flooders):
            from_here = TestClient(app, client=(f"198.51.100.{i + 1}", 40000))
            for _ in range(30):  # as many as they would: the caps answer 429
                r = from_here.post("/api/challenges", json={"version_ids": own}, headers=headers)
                assert r.status_code in (201, 429), r.text
                sent += r.status_code == 201
                refused += r.status_code == 429
        s = arena.settings
        assert sent == FLOODERS * s.challenges_queued_per_user and refused > 0
        t0 = time.time()

        # A new upload, mid-flood: validated within seconds, not after the flood.
        r = client.post("/api/agents", json={"name": "fresh"}, headers=newcomer)
        assert r.status_code == 201, r.text
        agent_id = r.json()["id"]
        r = client.post(
            f"/api/agents/{agent_id}/versions",
            files={"file": ("bot.py", b"# fresh\n" + wt.BOTS["low"].encode(), "text/x-python")},
            headers=newcomer,
        )
        assert r.status_code == 201, r.text

        def status() -> str:
            return str(client.get(f"/api/agents/{agent_id}/versions/1").json()["status"])

        # The guarantee: the validation waits for at most the match the worker's one pool
        # process is playing.  Timed in matches, not seconds: the machine may be slow.
        servers.wait_for(lambda: status() != "pending", 120, every=0.25)
        validated = time.time() - t0
        verdict = client.get(f"/api/agents/{agent_id}/versions/1", headers=newcomer).json()
        # A bot that missed its start-up limit on an overloaded machine is a verdict too.
        assert verdict["status"] == "active" or "did not start" in verdict["reason"], verdict
        assert _finished(arena.session_factory, MatchKind.challenge, t0) <= 1

        # Until a second challenge is admitted after the upload (challenges are slowed down,
        # not starved), the ladder had most of the worker's time and kept finishing matches;
        # on one shared queue it would have finished none behind the flood.
        def second_admitted() -> bool:
            with db.session_scope(arena.session_factory) as s2:
                started = s2.scalar(
                    select(func.count(Match.id)).where(
                        Match.kind == MatchKind.challenge, Match.started_at >= _moment(t0)
                    )
                )
                return (started or 0) >= 2

        servers.wait_for(second_admitted, 180, every=0.5)
        busy = _busy(arena.session_factory, t0)
        with db.session_scope(arena.session_factory) as s2:
            # Ladder matches created after the flood began: on one shared queue, behind it.
            fresh = s2.scalar(
                select(func.count(Match.id)).where(
                    Match.kind == MatchKind.ladder,
                    Match.status == MatchStatus.finished,
                    Match.created_at >= _moment(t0),
                )
            )
        started = _ladder_started(arena.session_factory, t0)
        print(
            f"validated in {validated:.1f} s; then {fresh} new ladder matches, {started} "
            f"started before the second challenge; busy {busy}"
        )
        assert (fresh or 0) >= 3
        # Challenges are kept below a share (0.25 by default) of the latest SHARE_MATCHES
        # matches, by time and by number.  Over this short window the ladder had well over a
        # third of the worker's time, or (its matches being short: a fast machine) played the
        # matches that pushed the challenge out of the latest ones.
        least = (1 - arena.settings.challenge_share) * workclasses.SHARE_MATCHES
        assert busy[MatchKind.ladder] >= 0.4 * sum(busy.values()) or started >= least, busy
        with db.session_scope(arena.session_factory) as s2:
            states = dict(
                s2.execute(
                    select(Match.held, func.count(Match.id))
                    .where(
                        Match.kind == MatchKind.challenge,
                        Match.status.in_([MatchStatus.queued, MatchStatus.running]),
                    )
                    .group_by(Match.held)
                ).all()
            )
        assert states.get(True, 0) > 0  # the flood goes on, held in the database
        assert states.get(False, 0) <= arena.settings.challenge_slots
    executor.close()
    assert not wt.failures(arena.session_factory)


def test_the_reaper_never_sends_a_held_challenge(
    session_factory: sessionmaker[Session], settings: Settings
) -> None:
    vids = wt.active_versions(session_factory, settings, 2)
    with db.session_scope(session_factory) as s:
        held = results.create_match(s, kind=MatchKind.challenge, version_ids=vids, rated=False)
        held.held = True
        lost = results.create_match(s, kind=MatchKind.challenge, version_ids=vids, rated=False)
        held_id, lost_id = held.id, lost.id
    later = settings.model_copy(update={"requeue_seconds": 0.0001})
    time.sleep(0.01)
    work = scheduler.reap(session_factory, later)
    assert work.matches == [lost_id]
    assert held_id not in work.matches
    # The scheduler's tick admits it (the one admitted challenge is unfinished: no slot).
    assert workclasses.release_challenges(session_factory, settings) == []
    with db.session_scope(session_factory) as s:
        m = s.get(Match, lost_id)
        assert m is not None
        m.status = MatchStatus.failed
    assert scheduler.schedule_tick(session_factory, settings).matches == [held_id]


def test_worker_queues_names_work_classes() -> None:
    assert worker_queues(None) == [*tasknames.WORK_QUEUES, tasknames.LEGACY_QUEUE]
    assert worker_queues("challenge") == [tasknames.CHALLENGE_QUEUE]
    assert worker_queues("validate, cow006.ladder,ladder") == [
        tasknames.VALIDATE_QUEUE,
        tasknames.LADDER_QUEUE,
    ]
    with pytest.raises(typer.Exit):
        worker_queues("ladders")


def _llen(key: str) -> int:
    """The length of list ``key`` in the arena's Redis database (a kombu queue)."""
    import socket

    with socket.create_connection((services.REDIS_HOST, services.REDIS_PORT), timeout=5) as sock:
        sock.sendall(f"SELECT {services.REDIS_DB}\r\nLLEN {key}\r\n".encode())
        reply = b""
        while reply.count(b"\r\n") < 2:
            reply += sock.recv(256)
    return int(reply.split(b"\r\n")[1].lstrip(b":"))


def test_the_api_sends_each_task_to_its_class_queue(arena: wt.Arena) -> None:
    """No worker runs: the tasks stay in Redis, in the lists of their queues."""
    executor = CeleryExecutor(arena.broker_url)
    try:
        executor.submit_match(1, kind=MatchKind.challenge)
        executor.submit_match(2, kind=MatchKind.league)
        executor.submit_match(3)
        executor.submit_validation(4)
    finally:
        executor.close()
    assert _llen("cow006.challenge") == 1
    assert _llen("cow006.ladder") == 2
    assert _llen("cow006.validate") == 1
    assert _llen("cow006") == 0
    assert tasknames.queue_for_match("ladder") == "cow006.ladder"
