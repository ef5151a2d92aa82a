"""Ladder matchmaking (cow006_workers.matchmaking): pure logic, seeded, statistical where needed.

The statistical tests draw thousands of tables from fixed seeds, so they are deterministic; the
margins are wide enough that a change of seed would not flip them.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence

import pytest

from cow006_workers.matchmaking import (
    FILL_EXPLORE,
    Candidate,
    closeness,
    fill_weight,
    pick_seed,
    pick_table,
    plan_matches,
    queue_factor,
    seed_weight,
    staleness,
)

NOW = 1_000_000.0


def cand(
    vid: int,
    *,
    agent: int | None = None,
    owner: int | None = None,
    mu: float = 25.0,
    sigma: float = 2.0,
    games: int = 50,
    last: float | None = NOW - 100,
    queued: int = 0,
) -> Candidate:
    """A candidate; by default its own agent and owner, established, played recently."""
    return Candidate(
        version_id=vid,
        agent_id=vid if agent is None else agent,
        owner_id=vid if owner is None else owner,
        mu=mu,
        sigma=sigma,
        games=games,
        last_played=last,
        queued=queued,
    )


def field(n: int, *, sigma: float = 2.0, games: int = 50) -> list[Candidate]:
    """``n`` established candidates, ``mu`` spread 15..35."""
    return [cand(i + 1, mu=15 + 20 * i / max(1, n - 1), sigma=sigma, games=games) for i in range(n)]


def tables(pool: Sequence[Candidate], players: int, n: int, seed: int = 1) -> list[list[Candidate]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        t = pick_table(pool, players, rng, NOW)
        assert t is not None
        out.append(t)
    return out


# --- one agent, one seat -----------------------------------------------------------------------


def test_no_two_versions_of_one_agent_at_a_table() -> None:
    # 6 agents, most with two or three versions in the list (a version switch with matches
    # still queued for the old one): never two of them at one table.
    pool = [
        cand(vid, agent=agent, mu=20 + vid, games=vid % 3, queued=vid % 2)
        for vid, agent in enumerate([1, 1, 2, 2, 2, 3, 4, 4, 5, 6], start=1)
    ]
    for players in (2, 4, 6):
        for t in tables(pool, players, 500, seed=players):
            assert len(t) == players
            assert len({c.agent_id for c in t}) == players
    for t in plan_matches(pool, 4, 50, random.Random(3), NOW):
        assert len({c.agent_id for c in t}) == 4


def test_version_switch_never_makes_a_self_match() -> None:
    old = cand(1, agent=7, games=80, queued=3, mu=30)
    new = cand(2, agent=7, games=0, queued=0, mu=25, sigma=25 / 3)  # placed at once...
    pool = [old, new, *field(5)[1:]]
    for t in tables(pool, 4, 300):
        ids = {c.version_id for c in t}
        assert not {1, 2} <= ids  # ...but never against its own old version


def test_distinct_owners_keeps_an_owner_to_one_seat() -> None:
    pool = [cand(i + 1, owner=i % 3, mu=20 + i) for i in range(9)]  # 9 agents, 3 owners
    rng = random.Random(5)
    for _ in range(200):
        t = pick_table(pool, 3, rng, NOW, distinct_owners=True)
        assert t is not None and len({c.owner_id for c in t}) == 3
    assert pick_table(pool, 4, rng, NOW, distinct_owners=True) is None
    assert pick_table(pool, 4, rng, NOW) is not None  # agents differ: fine without the flag


def test_none_when_fewer_distinct_agents_than_seats() -> None:
    pool = [cand(1, agent=1), cand(2, agent=1), cand(3, agent=2), cand(4, agent=3)]
    rng = random.Random(0)
    assert pick_table(pool, 4, rng, NOW) is None
    assert pick_table([], 2, rng, NOW) is None
    assert plan_matches(pool, 4, 5, rng, NOW) == []
    assert pick_table(pool, 3, rng, NOW) is not None


def test_bad_arguments() -> None:
    rng = random.Random(0)
    with pytest.raises(ValueError):
        pick_table(field(4), 1, rng, NOW)
    with pytest.raises(ValueError):
        plan_matches(field(4), 2, -1, rng, NOW)
    with pytest.raises(ValueError):
        plan_matches([cand(1), cand(1, agent=2)], 2, 1, rng, NOW)  # one version twice
    assert plan_matches(field(4), 2, 0, rng, NOW) == []


# --- placement -----------------------------------------------------------------------------------


def test_a_new_version_is_placed_at_once() -> None:
    pool = [*field(12, sigma=1.0, games=300), cand(99, games=0, last=None, sigma=25 / 3)]
    for seed in range(200):
        t = pick_table(pool, 4, random.Random(seed), NOW)
        assert t is not None and 99 in {c.version_id for c in t}


def test_placements_go_in_upload_order_then_spread() -> None:
    fresh = [cand(100 + i, games=0, last=None, sigma=25 / 3) for i in range(3)]
    pool = [*field(10, sigma=1.0, games=300), *reversed(fresh)]
    rng = random.Random(2)
    assert pick_seed(pool, rng, NOW).version_id == 100  # oldest upload first
    plan = plan_matches(pool, 4, 3, rng, NOW)
    placed = [{c.version_id for c in t} for t in plan]
    for i, vid in enumerate((100, 101, 102)):
        # each newcomer is in the table it seeded at the latest (it may already sit in an
        # earlier one as a filler: a newcomer's wide sigma makes it near everyone)
        assert any(vid in ids for ids in placed[: i + 1])
    # a version already queued is not "fresh": no forced placement again
    queued_new = cand(200, games=0, last=None, queued=1, sigma=25 / 3)
    seeds = Counter(
        pick_seed([*field(10, sigma=1.0, games=300), queued_new], random.Random(s), NOW).version_id
        for s in range(300)
    )
    assert 0 < seeds[200] < 300


# --- the seed ------------------------------------------------------------------------------------


def seed_counts(pool: Sequence[Candidate], n: int = 4000, seed: int = 7) -> Counter[int]:
    rng = random.Random(seed)
    return Counter(pick_seed(pool, rng, NOW).version_id for _ in range(n))


def test_seeds_favour_few_games() -> None:
    pool = [cand(1, games=5), cand(2, games=20), cand(3, games=80), cand(4, games=320)]
    counts = seed_counts(pool)
    assert counts[1] > counts[2] > counts[3] > counts[4]
    assert counts[1] > 0.5 * sum(counts.values())


def test_seeds_favour_high_sigma() -> None:
    pool = [cand(1, sigma=4.0), cand(2, sigma=2.0), cand(3, sigma=1.0), cand(4, sigma=0.5)]
    counts = seed_counts(pool)
    assert counts[1] > counts[2] > counts[3] > counts[4]
    assert seed_weight(pool[0]) == pytest.approx(16 / 51)
    assert seed_weight(cand(1, sigma=4.0, queued=2)) == pytest.approx(16 / 51 / 9)


def test_queued_matches_count_as_games_for_the_seed() -> None:
    pool = [cand(1, games=10, queued=0), cand(2, games=10, queued=10)]
    counts = seed_counts(pool)
    assert counts[1] > 1.5 * counts[2]


def test_the_least_recently_played_is_never_starved() -> None:
    # A settled version (many games, small sigma) that has not played for a day among busy
    # uncertain ones: the 10 % "stale" rule still seeds it about once in ten tables.
    busy = [cand(i, games=10, sigma=3.0, last=NOW - 10) for i in range(1, 8)]
    old = cand(50, games=1000, sigma=0.7, last=NOW - 86_400)
    counts = seed_counts([*busy, old])
    share = counts[50] / sum(counts.values())
    assert 0.07 < share < 0.2


def test_queue_factor() -> None:
    assert [queue_factor(cand(1, queued=q)) for q in (0, 1, 2, -1)] == [1, 4, 9, 1]


def test_staleness() -> None:
    assert staleness(cand(1, last=None), NOW) == float("inf")
    assert staleness(cand(1, last=NOW - 60), NOW) == 60
    assert staleness(cand(1, last=NOW - 60, queued=1), NOW) == 0  # about to play
    assert staleness(cand(1, last=NOW + 5), NOW) == 0  # clock skew


# --- the fill ------------------------------------------------------------------------------------


def test_closeness() -> None:
    a = cand(1, mu=25, sigma=1)
    assert closeness(a, cand(2, mu=25, sigma=1)) == 1.0
    assert closeness(a, cand(2, mu=26, sigma=1)) > closeness(a, cand(2, mu=28, sigma=1))
    assert closeness(cand(2, mu=26, sigma=1), a) == closeness(a, cand(2, mu=26, sigma=1))
    # twice the posterior probability that the order is the other way round: a gap of one
    # standard deviation of the difference (sqrt(1 + 1)) leaves 2 * Phi(-1) = 0.3173
    assert closeness(a, cand(2, mu=25 + 2**0.5, sigma=1)) == pytest.approx(0.3173, abs=1e-4)
    # the same gap matters less while the ratings are uncertain
    assert closeness(cand(1, mu=25, sigma=8), cand(2, mu=30, sigma=8)) > 0.6
    assert closeness(a, cand(2, mu=30, sigma=1)) < 0.01
    assert closeness(cand(1, sigma=0), cand(2, sigma=0)) == 1.0
    assert closeness(cand(1, mu=25, sigma=0), cand(2, mu=26, sigma=0)) == 0.0


def test_fill_weight_asks_every_seated_version() -> None:
    seed = cand(1, mu=25, sigma=1)
    low, high, middle = cand(2, mu=23.5, sigma=1), cand(3, mu=26.5, sigma=1), cand(4, mu=24.2)
    # alone with the seed, the two sides are alike
    assert fill_weight([seed], low) == pytest.approx(fill_weight([seed], high))
    assert fill_weight([seed], high) == pytest.approx(closeness(seed, high))
    # once ``low`` is seated, ``high`` is far from it (its order against ``low`` is settled),
    # while a version between the two is uncertain against both
    assert fill_weight([seed, low], high) == pytest.approx(
        closeness(seed, high) * closeness(low, high)
    )
    assert fill_weight([seed, low], high) < 0.1 * fill_weight([seed], high)
    assert fill_weight([seed, low], middle) > 5 * fill_weight([seed, low], high)
    # queued matches divide it
    busy = cand(5, mu=24.2, queued=1)
    assert fill_weight([seed, low], busy) == pytest.approx(fill_weight([seed, low], middle) / 4)


def test_tables_are_mutually_close() -> None:
    # 16 settled versions 1 apart in mu, sigma 1: most tables are 4 neighbours in a row (span
    # 3), because every seat must be uncertain against every seated version.  Closeness to the
    # seed alone made that 54 % of the tables; the product makes it 77 %.
    pool = [cand(i, mu=float(i), sigma=1.0, games=100) for i in range(16)]
    spans = [max(c.mu for c in t) - min(c.mu for c in t) for t in tables(pool, 4, 3000)]
    assert sum(span <= 3 for span in spans) > 0.7 * len(spans)
    assert max(spans) > 6  # exploration still reaches across the field


def test_tables_fill_near_mu_with_some_randomness() -> None:
    # 16 settled versions, mu 1 apart, sigma 1: a version's table-mates are mostly its
    # neighbours in mu, but far ones still turn up.
    pool = [cand(i, mu=float(i), sigma=1.0, games=100) for i in range(16)]
    by_gap: Counter[int] = Counter()
    for t in tables(pool, 4, 3000):
        for x in t:
            for y in t:
                if x.version_id < y.version_id:
                    by_gap[y.version_id - x.version_id] += 1
    pairs_at = {g: 16 - g for g in range(1, 16)}  # how many pairs have each gap
    rate = {g: by_gap[g] / pairs_at[g] for g in pairs_at}
    assert rate[1] > rate[2] > rate[4] > rate[8]
    assert rate[1] > 10 * rate[8]
    far = sum(by_gap[g] for g in range(6, 16))
    assert far > 0  # exploration keeps the ladder connected
    assert far < 0.1 * sum(by_gap.values())
    assert 0 < FILL_EXPLORE < 0.5


def test_new_ladder_tables_are_close_to_random() -> None:
    # Nothing known yet (all at the prior): every pair should meet about equally often.
    pool = [cand(i, mu=25.0, sigma=25 / 3, games=1) for i in range(8)]
    pairs: Counter[tuple[int, int]] = Counter()
    for t in tables(pool, 4, 2000):
        ids = sorted(c.version_id for c in t)
        pairs.update((a, b) for a in ids for b in ids if a < b)
    assert len(pairs) == 28
    assert max(pairs.values()) < 1.35 * min(pairs.values())


# --- seats ---------------------------------------------------------------------------------------


def test_seats_rotate_evenly() -> None:
    pool = field(8, sigma=1.5)
    seats: dict[int, Counter[int]] = {c.version_id: Counter() for c in pool}
    for t in tables(pool, 4, 4000):
        for seat, c in enumerate(t):
            seats[c.version_id][seat] += 1
    for vid, counts in seats.items():
        total = sum(counts.values())
        assert total > 500, vid
        for seat in range(4):
            assert abs(counts[seat] / total - 0.25) < 0.05, (vid, counts)


def test_the_placed_version_does_not_always_sit_first() -> None:
    pool = [*field(7, sigma=1.0, games=200), cand(99, games=0, last=None, sigma=25 / 3)]
    seat_of_new: Counter[int] = Counter()
    for s in range(400):
        t = pick_table(pool, 4, random.Random(s), NOW)
        assert t is not None
        seat_of_new[[c.version_id for c in t].index(99)] += 1
    assert all(seat_of_new[seat] > 60 for seat in range(4)), seat_of_new


# --- plan_matches --------------------------------------------------------------------------------


def test_plan_matches_spreads_a_refill_over_the_field() -> None:
    # 30 tables of 4 for 12 settled versions: 10 seats each on average.  The spread of the
    # seat counts (max - min), averaged over 40 refills, is smaller than uniformly random
    # tables give, and much smaller than the same picks without the queued accounting.
    pool = field(12, sigma=1.0, games=100)

    def spread(seats: Counter[int]) -> int:
        return max(seats[c.version_id] for c in pool) - min(seats[c.version_id] for c in pool)

    planned, naive, uniform = [], [], []
    for s in range(40):
        plan = plan_matches(pool, 4, 30, random.Random(s), NOW)
        assert len(plan) == 30
        planned.append(spread(Counter(c.version_id for t in plan for c in t)))
        rng = random.Random(s)
        picks = [pick_table(pool, 4, rng, NOW) or [] for _ in range(30)]
        naive.append(spread(Counter(c.version_id for t in picks for c in t)))
        uniform.append(
            spread(Counter(c.version_id for _ in range(30) for c in rng.sample(pool, 4)))
        )
    assert sum(planned) < 0.9 * sum(uniform) < 0.9 * sum(naive), (planned, uniform, naive)


def test_plan_matches_respects_already_queued_matches() -> None:
    # The same field and the same random draws; version 1 has 6 matches queued already (a
    # previous refill seated it a lot): this refill seats it far less often.
    def seats_of_one(queued: int) -> int:
        pool = [cand(1, mu=25, sigma=1.0, games=20, queued=queued)]
        pool += [cand(i, mu=25 + 0.2 * i, sigma=1.0, games=20) for i in range(2, 10)]
        return sum(
            1
            for s in range(20)
            for t in plan_matches(pool, 4, 4, random.Random(s), NOW)
            for c in t
            if c.version_id == 1
        )

    idle, busy = seats_of_one(0), seats_of_one(6)
    assert busy < 0.6 * idle, (busy, idle)


def test_plan_matches_returns_the_callers_candidates_and_is_reproducible() -> None:
    pool = field(9)
    plan = plan_matches(pool, 3, 10, random.Random(11), NOW)
    assert all(any(c is p for p in pool) for t in plan for c in t)
    assert all(c.queued == 0 for t in plan for c in t)
    again = plan_matches(pool, 3, 10, random.Random(11), NOW)
    assert [[c.version_id for c in t] for t in plan] == [[c.version_id for c in t] for t in again]


def test_the_scheduler_keeps_one_owner_to_one_seat_unless_the_ladder_allows_it() -> None:
    # What refill_ladder plans for a ladder: newcomers' placement tables included.
    fresh = [cand(i + 1, owner=i % 3, games=0, last=None) for i in range(9)]
    settled = [cand(i + 1, owner=i % 3, mu=20 + i) for i in range(9)]
    for pool in (fresh, settled):
        apart = plan_matches(
            pool, 3, 30, random.Random(5), NOW, distinct_owners=True, place_newcomers=True
        )
        assert len(apart) >= 30
        assert all(len({c.owner_id for c in t}) == 3 for t in apart)
        together = plan_matches(
            pool, 3, 30, random.Random(5), NOW, distinct_owners=False, place_newcomers=True
        )
        assert any(len({c.owner_id for c in t}) < 3 for t in together)
    # Too few owners for a table: no table at all, rather than a shared one.
    two_owners = [cand(i + 1, owner=i % 2) for i in range(6)]
    rng = random.Random(5)
    assert (
        plan_matches(two_owners, 3, 5, rng, NOW, distinct_owners=True, place_newcomers=True) == []
    )
