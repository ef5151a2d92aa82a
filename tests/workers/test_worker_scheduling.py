"""The scheduler, the reaper and the lease, in process (no Celery), on SQLite and PostgreSQL.

The tests that play matches run real sandboxed bots (trivial ones, short limits).
"""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta

import pytest
from helpers import services
from helpers import workers as wt
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, locks, results
from cow006_platform.models import (
    AgentVersion,
    LadderEntry,
    LadderState,
    Match,
    MatchKind,
    MatchStatus,
    RatingPoint,
    VersionStatus,
    utcnow,
)
from cow006_platform.settings import Settings
from cow006_workers import lease, runs, scheduler

Factory = sessionmaker[Session]
LOW = "def play(view):\n    return min(view.hand)\n"


def _challenge(factory: Factory, settings: Settings, source: str) -> int:
    """A queued challenge of two new versions of ``source``; its id."""
    vids = wt.active_versions(factory, settings, 2, source=source)
    with db.session_scope(factory) as s:
        return results.create_match(s, kind=MatchKind.challenge, version_ids=vids).id


def _in_flight(factory: Factory, ladder_id: int) -> int:
    with db.session_scope(factory) as s:
        return int(
            s.scalar(
                select(func.count(Match.id)).where(
                    Match.ladder_id == ladder_id, Match.status.in_(scheduler.IN_FLIGHT)
                )
            )
            or 0
        )


def test_refill_keeps_the_queue_at_depth_and_places_newcomers_at_once(
    session_factory: Factory, settings: Settings
) -> None:
    vids = wt.active_versions(session_factory, settings, 5)
    lid = wt.ladder(session_factory, vids, players=4)
    rng = random.Random(1)
    first = scheduler.refill_ladder(session_factory, lid, 3, rng)
    assert len(first) == 3 and _in_flight(session_factory, lid) == 3
    assert scheduler.refill_ladder(session_factory, lid, 3, rng) == []  # full
    with db.session_scope(session_factory) as s:
        for mid in first:
            m = s.get(Match, mid)
            assert m is not None and m.kind is MatchKind.ladder and m.rated
            agents = {seat.agent_id for seat in m.seats}
            assert len(agents) == 4  # never two versions of one agent at a table
    # A new entry gets its placement match although the queue is full.
    newcomer = wt.active_versions(session_factory, settings, 1)[0]
    with db.session_scope(session_factory) as s:
        v = s.get(AgentVersion, newcomer)
        assert v is not None
        s.add(LadderEntry(ladder_id=lid, agent_id=v.agent_id, version_id=newcomer))
    placed = scheduler.refill_ladder(session_factory, lid, 3, rng)
    assert len(placed) == 1
    with db.session_scope(session_factory) as s:
        m = s.get(Match, placed[0])
        assert m is not None and newcomer in {seat.version_id for seat in m.seats}
    # Once it has a match queued it waits like everybody else.
    assert scheduler.refill_ladder(session_factory, lid, 3, rng) == []
    # Settling matches frees room again.
    with db.session_scope(session_factory) as s:
        results.fail_match(s, first[0], "test")
    assert _in_flight(session_factory, lid) == 3
    assert len(scheduler.refill_ladder(session_factory, lid, 4, rng)) == 1
    assert scheduler.refill_ladder(session_factory, lid, 4, rng) == []


def test_refill_skips_closed_ladders_and_too_small_fields(
    session_factory: Factory, settings: Settings
) -> None:
    vids = wt.active_versions(session_factory, settings, 4)
    paused = wt.ladder(session_factory, vids, players=4, state=LadderState.paused)
    assert scheduler.refill_ladder(session_factory, paused, 5) == []
    small = wt.ladder(session_factory, vids[:3], players=4)
    assert scheduler.refill_ladder(session_factory, small, 5) == []
    # A pending version does not play.
    with db.session_scope(session_factory) as s:
        v = s.get(AgentVersion, vids[0])
        assert v is not None
        v.status = VersionStatus.pending
    lid = wt.ladder(session_factory, vids, players=3)
    created = scheduler.refill_ladder(session_factory, lid, 4)
    assert created
    with db.session_scope(session_factory) as s:
        for mid in created:
            m = s.get(Match, mid)
            assert m is not None and vids[0] not in {seat.version_id for seat in m.seats}
    work = scheduler.schedule_tick(session_factory, settings)
    assert work.matches == []  # every open ladder is full or too small


def test_claims_hold_a_lease_and_a_fencing_token(
    session_factory: Factory, settings: Settings
) -> None:
    mid = _challenge(session_factory, settings, LOW)
    first = lease.claim_match(
        session_factory, settings, mid, worker="a", lease_seconds=30, max_attempts=3
    )
    assert first is not None and first.attempt == 1
    # Held by a live lease: nobody else takes it.
    assert lease.claim_match(session_factory, settings, mid, worker="b", lease_seconds=30) is None
    assert lease.renew_lease(session_factory, first, 30) is not None
    # The lease runs out (its worker is gone): the next claim takes over.
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        m.lease_expires_at = utcnow() - timedelta(seconds=1)
    second = lease.claim_match(
        session_factory, settings, mid, worker="b", lease_seconds=30, max_attempts=3
    )
    assert second is not None and second.attempt == 2 and second.worker == "b"
    # The first run's heartbeat and result no longer count.
    assert lease.renew_lease(session_factory, first, 30) is None
    log, stderr = _builtin_log(session_factory, mid)
    assert runs.finish_claim(session_factory, first, log, stderr) is False
    assert runs.finish_claim(session_factory, second, log, stderr) is True
    assert runs.finish_claim(session_factory, second, log, stderr) is False  # once
    assert lease.claim_match(session_factory, settings, mid, lease_seconds=30) is None


def test_a_match_that_keeps_losing_its_workers_is_given_up(
    session_factory: Factory, settings: Settings
) -> None:
    mid = _challenge(session_factory, settings, LOW)
    for _ in range(2):
        claim = lease.claim_match(
            session_factory, settings, mid, lease_seconds=0.01, max_attempts=2
        )
        assert claim is not None
        time.sleep(0.02)
    assert (
        lease.claim_match(session_factory, settings, mid, lease_seconds=1, max_attempts=2) is None
    )
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.failed
        assert m.error is not None and "2 attempts" in m.error


def _builtin_log(factory: Factory, match_id: int) -> tuple[dict[str, object], list[str | None]]:
    from cow006 import play_match
    from cow006.bots import make

    with db.session_scope(factory) as s:
        m = s.get(Match, match_id)
        assert m is not None
        n, seed = len(m.seats), m.seed
    return play_match([make("random") for _ in range(n)], seed=seed), [None] * n


def test_the_reaper_requeues_expired_leases_and_resends_lost_tasks(
    session_factory: Factory, settings: Settings
) -> None:
    vids = wt.active_versions(session_factory, settings, 2, source=LOW)
    with db.session_scope(session_factory) as s:
        dead, alive, old, fresh = (
            results.create_match(s, kind=MatchKind.challenge, version_ids=vids).id for _ in range(4)
        )
    for mid in (dead, alive):
        assert lease.claim_match(session_factory, settings, mid, lease_seconds=30)
    past = utcnow() - timedelta(seconds=60)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, dead)
        assert m is not None
        m.lease_expires_at = utcnow() - timedelta(seconds=1)
        m = s.get(Match, old)
        assert m is not None
        m.created_at = past
        v = s.get(AgentVersion, vids[0])
        assert v is not None
        v.status = VersionStatus.pending
        v.created_at = utcnow() - timedelta(seconds=settings.requeue_seconds + 0.5)
    work = scheduler.reap(session_factory, settings)
    assert sorted(work.matches) == sorted([dead, old])
    assert work.validations == [vids[0]]
    with db.session_scope(session_factory) as s:
        m = s.get(Match, dead)
        assert m is not None and m.status is MatchStatus.queued and m.attempts == 1
        m = s.get(Match, alive)
        assert m is not None and m.status is MatchStatus.running
    # A match is sent once per requeue_seconds, not on every pass.
    again = scheduler.reap(session_factory, settings)
    assert again.matches == []
    # A pending version is sent when its age crosses a multiple of requeue_seconds.
    with db.session_scope(session_factory) as s:
        v = s.get(AgentVersion, vids[0])
        assert v is not None
        v.created_at = utcnow() - timedelta(seconds=settings.requeue_seconds + 3)
    assert scheduler.reap(session_factory, settings).validations == []
    assert fresh not in work.matches


@pytest.mark.slow
def test_run_match_plays_rates_once_and_refills(
    session_factory: Factory, settings: Settings
) -> None:
    services.require_sandbox()
    vids = wt.active_versions(session_factory, settings, 4, source=LOW)
    lid = wt.ladder(session_factory, vids, players=4, decision_time=1.0, time_bank=5.0)
    created = scheduler.refill_ladder(session_factory, lid, 1)
    assert len(created) == 1
    sent: list[int] = []
    outcome = runs.run_match(session_factory, settings, created[0], sent.extend)
    assert outcome.status == "finished"
    assert sent == outcome.follow_ups  # the ladder was refilled to its depth
    assert len(sent) == settings.ladder_queue_depth
    again = runs.run_match(session_factory, settings, created[0], sent.extend)
    assert again.status == "skipped"  # a duplicate
    with db.session_scope(session_factory) as s:
        m = s.get(Match, created[0])
        assert m is not None and m.status is MatchStatus.finished and m.rating_applied
        assert m.lease_expires_at is None and m.attempts == 1
        points = s.scalar(select(func.count()).where(RatingPoint.match_id == m.id))
        assert points == 4


@pytest.mark.slow
def test_a_lost_lease_stops_the_run_and_drops_its_result(
    session_factory: Factory, settings: Settings
) -> None:
    services.require_sandbox()
    slow = "import time\n\ndef play(view):\n    time.sleep(0.2)\n    return min(view.hand)\n"
    mid = _challenge(session_factory, settings, slow)
    outcome: list[runs.Outcome] = []
    runner = threading.Thread(
        target=lambda: outcome.append(runs.run_match(session_factory, settings, mid, list))
    )
    started = time.monotonic()
    runner.start()
    # Another run takes the match over (as after a lease ran out): attempts moves on.
    deadline = time.monotonic() + 20
    while True:
        with db.session_scope(session_factory) as s:
            m = s.get(Match, mid)
            assert m is not None
            if m.status is MatchStatus.running:
                m.attempts += 1
                m.worker = "thief"
                break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    stolen = time.monotonic()
    runner.join(30)
    assert outcome and outcome[0].status == "lost"
    # The bots were killed: far sooner than the ~24 s the match takes (counted from the
    # theft: the bots' start before it may be slow on a loaded machine).
    assert time.monotonic() - stolen < 12, time.monotonic() - started
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.running and m.worker == "thief"
        assert results.read_log(s, mid) is None


def _played(factory: Factory, settings: Settings, match_id: int) -> runs.Played:
    claim = lease.claim_match(factory, settings, match_id, lease_seconds=60)
    assert claim is not None
    log, stderr = _builtin_log(factory, match_id)
    return runs.Played(claim, log, stderr, time.monotonic())


def test_a_finished_ladder_match_refills_its_ladder_in_the_transaction_that_stores_it(
    session_factory: Factory, settings: Settings
) -> None:
    vids = wt.active_versions(session_factory, settings, 4, source=LOW)
    lid = wt.ladder(session_factory, vids, players=4)
    depth = settings.ladder_queue_depth
    first = scheduler.refill_ladder(session_factory, lid, depth, random.Random(1))
    assert len(first) == depth
    sent: list[list[int]] = []
    # A quarter of the queue missing: the worker that settles a match refills it.
    missing = runs.refill_batch(depth)
    for mid in first[:missing]:
        outcome = runs.settle(
            session_factory, settings, _played(session_factory, settings, mid), sent.append
        )
        assert outcome.status == "finished"
    assert len(outcome.follow_ups) == missing
    assert sent[-1] == outcome.follow_ups
    assert _in_flight(session_factory, lid) == depth
    with db.session_scope(session_factory) as s:  # committed with the result, rated once
        m = s.get(Match, first[0])
        assert m is not None and m.status is MatchStatus.finished and m.rating_applied
        queued = [s.get(Match, i) for i in outcome.follow_ups]
        assert all(q is not None and q.status is MatchStatus.queued for q in queued)


def test_a_follow_up_that_fails_in_the_database_keeps_the_stored_result(
    session_factory: Factory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refill and the admissions run in a savepoint of the storing transaction: a
    statement the database refuses there (PostgreSQL then refuses the whole transaction
    until it rolls back) costs only the follow-ups, which the scheduler's tick redoes."""
    from sqlalchemy import text

    vids = wt.active_versions(session_factory, settings, 4, source=LOW)
    lid = wt.ladder(session_factory, vids, players=4)
    created = scheduler.refill_ladder(session_factory, lid, 4, random.Random(2))

    def broken(session: Session, settings: Settings) -> list[int]:
        session.execute(text("SELECT * FROM no_such_table"))
        return []

    monkeypatch.setattr(runs.workclasses, "admit_challenges", broken)
    sent: list[list[int]] = []
    outcome = runs.settle(
        session_factory, settings, _played(session_factory, settings, created[0]), sent.append
    )
    assert outcome.status == "finished" and outcome.follow_ups == [] and sent == []
    with db.session_scope(session_factory) as s:
        m = s.get(Match, created[0])
        assert m is not None and m.status is MatchStatus.finished and m.rating_applied
        assert s.scalar(select(func.count(RatingPoint.id)).where(RatingPoint.match_id == m.id))


def test_follow_ups_of_a_rolled_back_store_are_not_sent(
    session_factory: Factory, settings: Settings
) -> None:
    """A result stored again (its first transaction refused at commit) runs its follow-ups
    again: only the matches of the transaction that committed are sent."""
    vids = wt.active_versions(session_factory, settings, 4, source=LOW)
    lid = wt.ladder(session_factory, vids, players=4)
    depth = settings.ladder_queue_depth
    created = scheduler.refill_ladder(session_factory, lid, depth, random.Random(4))
    with db.session_scope(session_factory) as s:  # a quarter of the queue gone
        for mid in created[: runs.refill_batch(depth)]:
            m = s.get(Match, mid)
            assert m is not None
            m.status = MatchStatus.failed
    follow = runs.FollowUp(settings, random.Random(5))
    # As in a store, the match's row is locked first (on SQLite: a write, which opens the
    # transaction the follow-ups' savepoint is taken in).
    with session_factory() as s, s.begin():
        m = locks.lock(s, Match, created[0])
        assert m is not None
        follow(s, m)
        lost = list(follow.created)
        s.rollback()
    assert lost
    with db.session_scope(session_factory) as s:
        m = locks.lock(s, Match, created[0])
        assert m is not None
        follow(s, m)
    with db.session_scope(session_factory) as s:
        assert follow.created and all(s.get(Match, i) is not None for i in follow.created)
