"""Leagues: a balanced, deterministic schedule; rounds created one at a time; standings."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from helpers import data as dt
from helpers import races
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, leagues, results
from cow006_platform.models import League, LeagueState, Match, MatchKind, MatchStatus, Rating

Factory = sessionmaker[Session]


def _stats(plan: list[list[tuple[int, ...]]], n: int) -> tuple[list[int], list[Counter[int]]]:
    meet: Counter[tuple[int, int]] = Counter()
    seats = [Counter[int]() for _ in range(n)]
    for rnd in plan:
        everyone = [e for t in rnd for e in t]
        assert len(everyone) == len(set(everyone))  # nobody plays twice in a round
        for table in rnd:
            for pos, e in enumerate(table):
                seats[e][pos] += 1
            for a, b in itertools.combinations(sorted(table), 2):
                meet[a, b] += 1
    return [meet[p] for p in itertools.combinations(range(n), 2)], seats


@pytest.mark.parametrize(
    ("n", "size", "rounds", "pair_spread", "seat_spread"),
    [
        (8, 4, 7, 0, 1),  # a perfect design exists, and is found: every pair meets 3 times
        (6, 6, 4, 0, 1),
        (9, 4, 8, 0, 2),  # 3 tables of 3
        (12, 4, 11, 2, 2),
        (16, 4, 15, 2, 2),
        (20, 5, 19, 2, 2),
        (40, 4, 20, 2, 2),
    ],
)
@pytest.mark.slow
def test_schedule_balances_pairs_and_seats(
    n: int, size: int, rounds: int, pair_spread: int, seat_spread: int
) -> None:
    plan = leagues.schedule(n, size, rounds, seed=1)
    assert len(plan) == rounds
    pairs, seats = _stats(plan, n)
    assert max(pairs) - min(pairs) <= pair_spread
    assert min(pairs) >= 1 or n > size * rounds  # everyone meets everyone when possible
    table = max(len(t) for t in plan[0])
    for counts in seats:
        assert sum(counts.values()) == rounds  # equal tables: everyone plays every round
        assert max(counts[p] for p in range(table)) - min(counts[p] for p in range(table)) <= (
            seat_spread
        )


@pytest.mark.parametrize(("n", "size", "rounds"), [(10, 4, 9), (7, 3, 6), (13, 4, 12), (5, 4, 8)])
def test_uneven_fields_spread_the_small_tables(n: int, size: int, rounds: int) -> None:
    plan = leagues.schedule(n, size, rounds, seed=4)
    sizes = [len(t) for t in plan[0]]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 2 and max(sizes) <= size
    assert sum(sizes) == n
    pairs, _ = _stats(plan, n)
    assert max(pairs) - min(pairs) <= 2
    small = Counter(e for rnd in plan for t in rnd if len(t) < max(sizes) for e in t)
    counts = [small[e] for e in range(n)]
    assert max(counts) - min(counts) <= 2


def test_odd_field_at_tables_of_two_rotates_the_bye() -> None:
    plan = leagues.schedule(5, 2, 10, seed=2)
    byes = Counter(e for rnd in plan for e in set(range(5)) - {x for t in rnd for x in t})
    assert sorted(byes.values()) == [2, 2, 2, 2, 2]
    pairs, _ = _stats(plan, 5)
    assert max(pairs) - min(pairs) <= 1


def test_schedule_is_deterministic_and_checks_its_input() -> None:
    assert leagues.schedule(10, 4, 5, seed=9) == leagues.schedule(10, 4, 5, seed=9)
    assert leagues.schedule(10, 4, 5, seed=9) != leagues.schedule(10, 4, 5, seed=10)
    assert [sorted(t) for rnd in leagues.schedule(3, 4, 2, seed=1) for t in rnd] == [[0, 1, 2]] * 2
    for bad in ((1, 4, 1), (4, 1, 1), (4, 11, 1), (4, 4, 0)):
        with pytest.raises(ValueError):
            leagues.schedule(*bad, seed=0)


def _round_matches(factory: Factory, league_id: int, league_round: int) -> list[int]:
    with db.session_scope(factory) as s:
        return list(
            s.scalars(
                select(Match.id)
                .where(Match.league_id == league_id, Match.league_round == league_round)
                .order_by(Match.id)
            )
        )


@pytest.mark.slow
def test_a_league_from_start_to_standings(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 6)
    with db.session_scope(session_factory) as s:
        lg = dt.league(s, vids, table_size=3, rounds=3, seed=42)
        lid = lg.id
        assert leagues.refresh_league_state(s, lg) is LeagueState.scheduled
        first = leagues.start_league(s, lg)
        assert [m.league_round for m in first] == [1, 1]
        assert all(m.kind is MatchKind.league and not m.rated for m in first)
        plan = leagues.schedule(6, 3, 3, seed=42)
        assert [tuple(vids.index(x.version_id) for x in m.seats) for m in first] == plan[0]
        assert lg.state is LeagueState.running
        # The round is being played: nothing more to create.
        assert leagues.start_league(s, lg) == []
    bots = ["safe", "greedy", "random"]
    for league_round in (1, 2, 3):
        mids = _round_matches(session_factory, lid, league_round)
        assert len(mids) == 2
        for i, mid in enumerate(mids):
            if league_round == 2 and i == 1:
                with db.session_scope(session_factory) as s:
                    results.fail_match(s, mid, "The bots could not be started.")
                continue
            dt.play_and_finish(session_factory, mid, bots)
        with db.session_scope(session_factory) as s:
            lg = s.get(League, lid)
            assert lg is not None
            created = leagues.start_league(s, lg)
            state = leagues.refresh_league_state(s, lg)
            if league_round < 3:
                assert [m.league_round for m in created] == [league_round + 1] * 2
                assert state is LeagueState.running
            else:
                assert created == [] and state is LeagueState.finished
    with db.session_scope(session_factory) as s:
        lg = s.get(League, lid)
        assert lg is not None
        assert leagues.start_league(s, lg) == []  # over
        table = leagues.standings(s, lid)
        assert s.scalar(select(func.count()).select_from(Rating)) == 0  # no ladder moved
        seeds = [m.seed for m in s.scalars(select(Match).where(Match.league_id == lid))]
    assert [row["position"] for row in table] == [1, 2, 3, 4, 5, 6]
    assert {row["version_id"] for row in table} == set(vids)
    assert sum(row["matches"] for row in table) == 5 * 3  # 5 finished matches of 3 seats
    means = [row["mean_rank"] for row in table]
    assert means == sorted(means)
    for row in table:
        assert row["conservative"] == pytest.approx(row["mu"] - 3 * row["sigma"])
        assert row["sigma"] < 25 / 3  # every entrant played and became more certain
        assert row["label"] == f"{row['agent']}@{row['number']}"
    assert len(set(seeds)) == len(seeds)  # fixed by the league's seed, distinct per table
    with db.session_scope(session_factory) as s:
        assert leagues.standings(s, lid) == table  # a pure function of the results
        with pytest.raises(ValueError):
            leagues.standings(s, 10**6)


def test_standings_before_any_match(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 3)
    with db.session_scope(session_factory) as s:
        lg = dt.league(s, vids, table_size=4, rounds=1)
        rows = leagues.standings(s, lg.id)
    assert [r["matches"] for r in rows] == [0, 0, 0]
    assert all(r["mean_rank"] is None and r["mu"] == 25.0 for r in rows)


def test_start_league_needs_two_entrants(session_factory: Factory) -> None:
    vids = dt.versions(session_factory, 1)
    with db.session_scope(session_factory) as s:
        lg = dt.league(s, vids)
        with pytest.raises(ValueError, match="at least 2"):
            leagues.start_league(s, lg)


@pytest.mark.slow
def test_a_round_is_created_once_when_two_finishers_race(session_factory: Factory) -> None:
    """Two workers finishing the last matches of a round both ask for the next one."""
    vids = dt.versions(session_factory, 4)
    with db.session_scope(session_factory) as s:
        lg = dt.league(s, vids, table_size=2, rounds=2)
        lid = lg.id
        leagues.start_league(s, lg)
    for mid in _round_matches(session_factory, lid, 1):
        dt.play_and_finish(session_factory, mid)

    def advance() -> None:
        with db.session_scope(session_factory) as s:
            found = s.get(League, lid)
            assert found is not None
            leagues.start_league(s, found)

    assert races.at_once(advance, 3) == []
    assert len(_round_matches(session_factory, lid, 2)) == 2
    with db.session_scope(session_factory) as s:
        statuses = set(s.scalars(select(Match.status).where(Match.league_id == lid)))
    assert statuses == {MatchStatus.finished, MatchStatus.queued}
