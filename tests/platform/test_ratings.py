"""Ratings: explicit TrueSkill environments, exactly-once updates, rerate."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path
from typing import Any

import pytest
import trueskill
from helpers import data as dt
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, ratings, results
from cow006_platform.models import (
    Ladder,
    Match,
    MatchKind,
    MatchStatus,
    Rating,
    RatingPoint,
)

ROOT = Path(__file__).resolve().parents[2]

Factory = sessionmaker[Session]


def test_environment_is_explicit_and_from_the_ladder() -> None:
    lad = Ladder(mu=30.0, sigma=5.0, beta=2.0, tau=0.5, draw_probability=0.02)
    env = ratings.environment(lad)
    assert (env.mu, env.sigma, env.beta, env.tau, env.draw_probability) == (
        30.0,
        5.0,
        2.0,
        0.5,
        0.02,
    )
    assert ratings.environment(lad, tau=0).tau == 0.0
    params = {"mu": 1, "sigma": 2, "beta": 3, "tau": 4, "draw_probability": 0.1}
    assert ratings.environment(params).beta == 3.0
    # The package's global environment is neither used nor changed.
    before = trueskill.global_env()
    trueskill.setup(mu=99.0)
    try:
        assert ratings.environment(lad).mu == 30.0
    finally:
        trueskill.setup(env=before)


def test_ranks_from_scores() -> None:
    assert ratings.ranks_from_scores([10, 3, 25, 3]) == [3, 1, 4, 1]
    assert ratings.ranks_from_scores([5, 5]) == [1, 1]
    assert ratings.ranks_from_scores([66, 0, 12]) == [3, 1, 2]


def test_default_draw_probability_is_the_ladder_default() -> None:
    assert Ladder.__table__.c.draw_probability.default.arg == ratings.DEFAULT_DRAW_PROBABILITY
    assert ratings.DEFAULT_PARAMS["draw_probability"] == ratings.DEFAULT_DRAW_PROBABILITY


@pytest.mark.slow
def test_draw_probability_measurement_is_in_line() -> None:
    """A short run of the measurement behind the constant (bench/draws.py; the real one:
    5000 matches)."""
    spec = importlib.util.spec_from_file_location("draws", ROOT / "bench" / "draws.py")
    assert spec is not None and spec.loader is not None
    draws = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draws)
    found = draws.measure_draw_probability(200, seed=3)
    assert found["pairs"] == 200 * 6
    assert 0.0 < found["probability"] < 0.04
    assert abs(found["probability"] - ratings.DEFAULT_DRAW_PROBABILITY) < 0.02


def _ladder_matches(
    factory: Factory, n_versions: int, n_matches: int, seed: int
) -> tuple[int, list[int], list[int]]:
    """A ladder, versions and queued rated matches of 4 random entrants each."""
    vids = dt.versions(factory, n_versions)
    rng = random.Random(seed)
    with db.session_scope(factory) as s:
        lid = dt.ladder(s).id
        mids = [
            results.create_match(
                s,
                kind=MatchKind.ladder,
                version_ids=rng.sample(vids, 4),
                ladder_id=lid,
                seed=rng.getrandbits(63),
            ).id
            for _ in range(n_matches)
        ]
    return lid, vids, mids


def _ratings(factory: Factory, lid: int) -> list[tuple[Any, ...]]:
    with db.session_scope(factory) as s:
        rows = s.scalars(select(Rating).where(Rating.ladder_id == lid).order_by(Rating.version_id))
        return [(r.version_id, r.mu, r.sigma, r.conservative, r.matches, r.wins) for r in rows]


def _points(factory: Factory, lid: int) -> list[tuple[Any, ...]]:
    with db.session_scope(factory) as s:
        rows = s.scalars(
            select(RatingPoint).where(RatingPoint.ladder_id == lid).order_by(RatingPoint.id)
        )
        return [(p.version_id, p.match_id, p.mu, p.sigma) for p in rows]


def test_apply_match_updates_and_is_exactly_once(session_factory: Factory) -> None:
    lid, _, (mid,) = _ladder_matches(session_factory, 4, 1, seed=1)
    assert dt.play_and_finish(session_factory, mid, ["greedy", "random", "safe", "random"])
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        lad = s.get(Ladder, lid)
        assert m is not None and lad is not None and m.rating_applied and m.ranks is not None
        env = ratings.environment(lad)
        expected = ratings.rate(env, [env.create_rating()] * 4, m.ranks)
        seat_version = [x.version_id for x in m.seats]
        ranks = list(m.ranks)
        # Applying again (any path) is refused without a change.
        assert ratings.apply_match(s, m) is False
    rows = {r[0]: r for r in _ratings(session_factory, lid)}
    for v, exp, rank in zip(seat_version, expected, ranks, strict=True):
        _, mu, sigma, cons, played, wins = rows[v]
        assert (mu, sigma) == (exp.mu, exp.sigma)
        assert cons == mu - 3 * sigma and played == 1 and wins == int(rank == 1)
    assert len(_points(session_factory, lid)) == 4


def test_apply_match_refuses_what_cannot_be_rated(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 2)
    with db.session_scope(session_factory) as s:
        queued = results.create_match(
            s, kind=MatchKind.ladder, version_ids=vids, ladder_id=dt.ladder(s).id
        )
        with pytest.raises(ValueError, match="not finished"):
            ratings.apply_match(s, queued)
        challenge = results.create_match(s, kind=MatchKind.challenge, version_ids=vids)
        cid = challenge.id
    assert dt.play_and_finish(session_factory, cid)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, cid)
        assert m is not None and m.status is MatchStatus.finished and not m.rating_applied
        with pytest.raises(ValueError, match="not a rated ladder match"):
            ratings.apply_match(s, m)
        assert s.scalar(select(func.count()).select_from(Rating)) == 0


@pytest.mark.slow
def test_rerate_reaches_the_incremental_numbers(session_factory: Factory) -> None:
    lid, _, mids = _ladder_matches(session_factory, 6, 14, seed=2)
    rng = random.Random(5)
    bots = ["random", "greedy", "safe"]
    for mid in mids:  # one transaction per result, in id order: the incremental path
        assert dt.play_and_finish(session_factory, mid, [rng.choice(bots) for _ in range(4)])
    incremental, points = _ratings(session_factory, lid), _points(session_factory, lid)
    assert len(incremental) == 6 and len(points) == 14 * 4
    assert sum(r[4] for r in incremental) == 14 * 4
    with db.session_scope(session_factory) as s:
        assert ratings.rerate(s, lid) == 14
    # Bit for bit: the same floats, the same history.
    assert _ratings(session_factory, lid) == incremental
    assert [p[:2] for p in _points(session_factory, lid)] == [p[:2] for p in points]
    assert [p[2:] for p in _points(session_factory, lid)] == [p[2:] for p in points]
    with db.session_scope(session_factory) as s:
        assert ratings.rerate(s, lid) == 14  # idempotent
        with pytest.raises(ValueError):
            ratings.rerate(s, 10**6)
    assert _ratings(session_factory, lid) == incremental


def test_rerate_repairs_tampered_ratings(session_factory: Factory) -> None:
    lid, _, mids = _ladder_matches(session_factory, 4, 3, seed=3)
    for mid in mids:
        dt.play_and_finish(session_factory, mid)
    good = _ratings(session_factory, lid)
    with db.session_scope(session_factory) as s:
        for r in s.scalars(select(Rating)):
            r.mu, r.matches = 0.0, 99
    with db.session_scope(session_factory) as s:
        ratings.rerate(s, lid)
    assert _ratings(session_factory, lid) == good


def test_ties_share_a_rank_and_wins(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 2)
    with db.session_scope(session_factory) as s:
        lid = dt.ladder(s).id
        m = results.create_match(s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid)
        m.status, m.scores, m.ranks = MatchStatus.finished, [20, 20], [1, 1]
        assert ratings.apply_match(s, m) is True
    rows = _ratings(session_factory, lid)
    assert [r[5] for r in rows] == [1, 1]  # both won (shared first place)
    assert rows[0][1] == pytest.approx(rows[1][1]) and rows[0][1] == pytest.approx(25.0)
