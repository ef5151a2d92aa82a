"""Match results: create, finish exactly once (even when two deliveries race), fail, read."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from helpers import data as dt
from helpers import races
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import LogError, verify
from cow006_platform import db, results
from cow006_platform.models import (
    AgentVersion,
    Match,
    MatchKind,
    MatchLog,
    MatchStatus,
    Rating,
    RatingPoint,
)

Factory = sessionmaker[Session]


def _queued(factory: Factory, n: int = 4, **kwargs: Any) -> int:
    vids = dt.versions(factory, n)
    with db.session_scope(factory) as s:
        if kwargs.pop("on_ladder", False):
            kwargs["ladder_id"] = dt.ladder(s).id
        return results.create_match(s, version_ids=vids, **kwargs).id


def _queued_ladder_match(factory: Factory) -> tuple[int, dict[str, Any]]:
    """A queued 4-player ladder match and a real log of it (not delivered yet)."""
    mid = _queued(factory, 4, kind=MatchKind.ladder, on_ladder=True)
    with db.session_scope(factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        return mid, dt.log_for(m)


def _snapshot(factory: Factory, match_id: int) -> dict[str, Any]:
    with db.session_scope(factory) as s:
        m = s.get(Match, match_id)
        assert m is not None
        seats = [(x.score, x.rank, x.faults, x.forfeited, x.stderr) for x in m.seats]
        body = s.get(MatchLog, match_id)
        return {
            "match": (m.status, m.scores, m.ranks, m.faults, m.finished_at, m.rating_applied),
            "seats": seats,
            "log": body.body if body else None,
            "points": s.scalar(select(func.count()).select_from(RatingPoint)),
            "ratings": sorted(
                (r.version_id, r.mu, r.sigma, r.matches) for r in s.scalars(select(Rating))
            ),
        }


def test_create_match(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 3)
    with db.session_scope(session_factory) as s:
        m = results.create_match(s, kind=MatchKind.challenge, version_ids=vids)
        seats = [(x.seat, x.version_id) for x in m.seats]
        agents = [x.agent_id for x in m.seats]
        expected_agents = [s.get(AgentVersion, v).agent_id for v in vids]  # type: ignore[union-attr]
        assert m.status is MatchStatus.queued and m.rated is False  # only ladder matches rate
        assert 0 <= m.seed < 2**63
        mid = m.id
    assert seats == list(enumerate(vids)) and agents == expected_agents
    with db.session_scope(session_factory) as s:
        seeds = {results.create_match(s, kind="ladder", version_ids=vids).seed for _ in range(5)}
        assert len(seeds) == 5  # drawn at random
        fixed = results.create_match(s, kind=MatchKind.ladder, version_ids=vids[:2], seed=7)
        assert fixed.seed == 7 and fixed.rated is False  # no ladder: nothing to rate
        lad = dt.ladder(s)
        rated = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lad.id)
        assert rated.rated is True
        assert s.get(Match, mid) is not None


def test_create_match_refuses_bad_input(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 2)
    with db.session_scope(session_factory) as s:
        with pytest.raises(ValueError):
            results.create_match(s, kind=MatchKind.challenge, version_ids=vids[:1])
        with pytest.raises(ValueError, match="no agent version"):
            results.create_match(s, kind=MatchKind.challenge, version_ids=[vids[0], 10**6])
        with pytest.raises(ValueError, match="seed"):
            results.create_match(s, kind=MatchKind.challenge, version_ids=vids, seed=2**63)
        with pytest.raises(ValueError):
            results.create_match(s, kind="bogus", version_ids=vids)  # type: ignore[arg-type]


def test_finish_stores_everything_once(session_factory: Factory) -> None:
    mid = _queued(session_factory, 4, kind=MatchKind.ladder, on_ladder=True)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        log = dt.log_for(m, ["random", "greedy", "safe", "random"])
    # A fault and a forfeit, as a misbehaving bot would leave them.
    log["faults"] = [{"seat": 1, "round": 0, "turn": 2, "kind": "timeout", "detail": "slow"}]
    log["forfeited"] = [1]
    stderr = ["hello from 0", None, "", "x" * 10]
    with db.session_scope(session_factory) as s:
        assert results.finish_match(s, mid, log, stderr) is True
    first = _snapshot(session_factory, mid)
    status, scores, ranks, faults, finished_at, applied = first["match"]
    assert status is MatchStatus.finished and scores == log["scores"] and ranks == log["ranks"]
    assert faults == log["faults"] and finished_at is not None and applied is True
    assert [x[:4] for x in first["seats"]] == [
        (log["scores"][i], log["ranks"][i], int(i == 1), i == 1) for i in range(4)
    ]
    assert [x[4] for x in first["seats"]] == stderr
    assert first["points"] == 4 and len(first["ratings"]) == 4
    with db.session_scope(session_factory) as s:
        stored = results.read_log(s, mid)
        assert stored == log and results.read_log(s, 10**6) is None
    verify(stored)
    # The same result (or another) delivered again changes nothing.
    with db.session_scope(session_factory) as s:
        assert results.finish_match(s, mid, log, stderr) is False
    with db.session_scope(session_factory) as s:
        assert results.finish_match(s, mid, log, ["other"] * 4) is False
    assert _snapshot(session_factory, mid) == first


def test_finish_refuses_logs_that_do_not_fit(session_factory: Factory) -> None:
    mid = _queued(session_factory, 3, kind=MatchKind.challenge)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        good = dt.log_for(m)
        seed = m.seed
    bad_scores = {**good, "scores": [0, 0, 0]}
    other_seed = {**good, "seed": seed ^ 1}  # replays (the deals are recorded) but is not ours
    with db.session_scope(session_factory) as s, pytest.raises(LogError):
        results.finish_match(s, mid, bad_scores, [None] * 3)
    with db.session_scope(session_factory) as s:
        with pytest.raises(ValueError, match="players"):
            results.finish_match(s, mid, {**good, "players": good["players"][:2]}, [None] * 3)
        with pytest.raises(ValueError, match="stderr"):
            results.finish_match(s, mid, good, [None] * 2)
        with pytest.raises(ValueError, match="no match"):
            results.finish_match(s, 10**6, good, [None] * 3)
    with db.session_scope(session_factory) as s, pytest.raises((ValueError, LogError)):
        results.finish_match(s, mid, other_seed, [None] * 3)
    snap = _snapshot(session_factory, mid)
    assert snap["match"][0] is MatchStatus.queued and snap["log"] is None


def test_fail_match(session_factory: Factory) -> None:
    mid = _queued(session_factory, 2, kind=MatchKind.challenge)
    with db.session_scope(session_factory) as s:
        assert results.fail_match(s, mid, "  The bots could not be started.  ") is True
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None
        assert m.status is MatchStatus.failed and m.error == "The bots could not be started."
    # A failed match can still get its result (a retry that got through) ...
    assert dt.play_and_finish(session_factory, mid) is True
    # ... and a finished one is never failed afterwards.
    with db.session_scope(session_factory) as s:
        assert results.fail_match(s, mid, "late failure") is False
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.finished and m.error is None


@pytest.mark.slow
def test_a_second_delivery_waits_for_the_first_and_is_ignored(session_factory: Factory) -> None:
    """Deterministic race: delivery A holds the lock (not committed) while B arrives."""
    mid, log = _queued_ladder_match(session_factory)
    a_applied = threading.Event()
    release_a = threading.Event()
    outcome: dict[str, Any] = {}

    def deliver_a() -> None:
        with db.session_scope(session_factory) as s:
            outcome["a"] = results.finish_match(s, mid, log, [None] * 4)
            a_applied.set()
            release_a.wait(30)

    def deliver_b() -> None:
        with db.session_scope(session_factory) as s:
            outcome["b"] = results.finish_match(s, mid, log, [None] * 4)
        outcome["b_done_at"] = time.monotonic()

    ta = threading.Thread(target=deliver_a)
    ta.start()
    assert a_applied.wait(30)
    tb = threading.Thread(target=deliver_b)
    tb.start()
    time.sleep(0.5)
    assert "b" not in outcome  # B is waiting for A's lock, not reading a stale row
    released_at = time.monotonic()
    release_a.set()
    ta.join(30)
    tb.join(30)
    assert outcome["a"] is True and outcome["b"] is False
    assert outcome["b_done_at"] >= released_at
    snap = _snapshot(session_factory, mid)
    assert snap["points"] == 4 and all(r[3] == 1 for r in snap["ratings"])


def test_racing_deliveries_apply_exactly_once(session_factory: Factory) -> None:
    """Free-for-all: several connections deliver the same result at the same instant."""
    mid, log = _queued_ladder_match(session_factory)
    n = 4
    got: list[bool] = []

    def deliver() -> None:
        with db.session_scope(session_factory) as s:
            got.append(results.finish_match(s, mid, log, [None] * 4))

    assert races.at_once(deliver, n) == []
    assert sorted(got) == [False] * (n - 1) + [True]
    snap = _snapshot(session_factory, mid)
    assert snap["points"] == 4 and [r[3] for r in snap["ratings"]] == [1, 1, 1, 1]
