"""Leagues: a fixed field of frozen versions playing a balanced schedule, round by round.

``schedule`` is deterministic from the league's seed.  Each league round splits the entrants
into tables of at most ``table_size`` seats, as equal in size as possible (so never a table of
one; with ``table_size`` 2 and an odd field, one entrant sits the round out, the one with
fewest byes so far).  Tables are built greedily to balance pair meetings: for each round a few
dozen random orders are tried; in each, a table is filled by repeatedly adding the free
entrant who has met the table's members least so far, then a hill-climb swaps entrants
between tables while that helps, and the round whose new meetings add least to the sum of
squared pair counts wins (sitting at a smaller table too often counts as a cost as well).
Seats are then given within each table by an exact minimum-cost assignment (over subsets of
seats; a table has at most 10) against how often each entrant already sat in each position,
so positions rotate.

Round by round: ``start_league`` creates the matches of the next round once every match of
the current one is settled (finished or failed: a failed match counts for nobody), and the
league is finished when its last round is settled (``refresh_league_state``).  League matches
are never rated on a ladder; ``standings`` ranks entrants by mean rank and also reports a
TrueSkill rating computed from the league's matches alone (tau = 0: a frozen field does not
drift).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from . import locks, ratings, results
from .models import (
    AgentVersion,
    League,
    LeagueEntrant,
    LeagueState,
    Match,
    MatchKind,
    MatchStatus,
)

MIN_TABLE = 2
MAX_TABLE = 10
_PASSES = 20  # at most, of the whole-league refinement
_WORK = 400  # random restarts per round of the table builder: _WORK // entrants, 3 to 40
SETTLED = (MatchStatus.finished, MatchStatus.failed)

Round = list[tuple[int, ...]]


def table_sizes(n_entrants: int, table_size: int) -> list[int]:
    """Sizes of one round's tables: as few tables as fit, sizes differing by one at most."""
    if table_size == 2:
        return [2] * (n_entrants // 2)  # an odd field: one bye
    tables = math.ceil(n_entrants / table_size)
    base, extra = divmod(n_entrants, tables)
    return [base + 1] * extra + [base] * (tables - extra)


def _assign_seats(
    table: Sequence[int], seat_count: list[list[int]], rng: random.Random
) -> tuple[int, ...]:
    """The members of a table in seat order, minimising sum of squared position counts.

    Exact: a DP over subsets of seats (size <= 10, so at most 1024 states per member).
    """
    size = len(table)
    # A tiny random jitter breaks ties without changing any optimum.
    jitter = [[rng.random() * 1e-3 for _ in range(size)] for _ in range(size)]
    cost = [
        [2 * seat_count[e][p] + 1 + jitter[i][p] for p in range(size)] for i, e in enumerate(table)
    ]
    full = (1 << size) - 1
    best: dict[int, tuple[float, tuple[int, ...]]] = {0: (0.0, ())}
    for i in range(size):
        nxt: dict[int, tuple[float, tuple[int, ...]]] = {}
        for mask, (c, seats) in best.items():
            for p in range(size):
                if mask & (1 << p):
                    continue
                m2 = mask | (1 << p)
                c2 = c + cost[i][p]
                if m2 not in nxt or c2 < nxt[m2][0]:
                    nxt[m2] = (c2, (*seats, p))
        best = nxt
    seats = best[full][1]  # seats[i]: the position of table[i]
    order = [0] * size
    for i, p in enumerate(seats):
        order[p] = table[i]
    return tuple(order)


def _improve(
    tables: list[list[int]], meet: list[list[int]], small: list[int], biggest: int
) -> float:
    """Hill-climb one round's tables by swapping two entrants of different tables while that
    lowers the round's cost; returns how much it went down.

    ``near[e][t]``: how often ``e`` met the members of table ``t`` (kept up to date on each
    swap), so a candidate swap costs O(1) and a pass O(n^2).
    """
    n = len(meet)
    near = [[sum(meet[e][m] for m in t) for t in tables] for e in range(n)]
    penalty = [len(t) < biggest for t in tables]
    gained = 0.0
    improved = True
    while improved:
        improved = False
        for a, t1 in enumerate(tables):
            for b in range(a + 1, len(tables)):
                t2 = tables[b]
                for i in range(len(t1)):
                    for j in range(len(t2)):
                        x, y = t1[i], t2[j]
                        # 2 per earlier meeting: the growth of the sum of squared counts.
                        before = 2 * (near[x][a] + near[y][b])
                        after = 2 * (near[y][a] - meet[y][x] + near[x][b] - meet[x][y])
                        if penalty[a] != penalty[b]:
                            sx, sy = 2 * small[x] + 1, 2 * small[y] + 1
                            before += sx if penalty[a] else sy
                            after += sy if penalty[a] else sx
                        if after < before:
                            t1[i], t2[j] = y, x
                            for e in range(n):
                                d = meet[e][y] - meet[e][x]
                                near[e][a] += d
                                near[e][b] -= d
                            gained += before - after
                            improved = True
    return gained


def schedule(n_entrants: int, table_size: int, rounds: int, seed: int) -> list[Round]:
    """Per league round, its tables: tuples of entrant indices (0-based) in seat order.

    Deterministic from ``seed``.  Every pair of entrants meets about equally often over the
    league and every entrant's seat positions are spread (see the module docstring).
    """
    if n_entrants < MIN_TABLE:
        raise ValueError(f"a league needs at least {MIN_TABLE} entrants, not {n_entrants}")
    if not MIN_TABLE <= table_size <= MAX_TABLE:
        raise ValueError(f"a table has {MIN_TABLE} to {MAX_TABLE} seats, not {table_size}")
    if rounds < 1:
        raise ValueError(f"a league has at least one round, not {rounds}")
    rng = random.Random(f"cow006-league/{seed}/{n_entrants}/{table_size}")
    n = n_entrants
    sizes = table_sizes(n, table_size)
    biggest = max(sizes)
    meet = [[0] * n for _ in range(n)]
    small = [0] * n  # rounds spent at a table smaller than the biggest (or on a bye)
    byes = [0] * n
    plan: list[list[list[int]]] = []
    for _ in range(rounds):
        seated = sum(sizes)
        everyone = list(range(n))
        rng.shuffle(everyone)
        # Byes (table_size 2, odd field) go to those with fewest byes so far: they sort last.
        everyone.sort(key=lambda e: -byes[e])
        sitting_out = everyone[seated:]
        pool = everyone[:seated]
        best_cost = math.inf
        best_tables: list[list[int]] = []
        for _try in range(max(3, min(40, _WORK // n))):
            order = pool[:]
            rng.shuffle(order)
            free = order[:]
            tables: list[list[int]] = []
            cost = 0.0
            for size in sizes:
                table = [free.pop(0)]
                while len(table) < size:
                    pick = min(
                        range(len(free)),
                        key=lambda j: (
                            sum(meet[free[j]][m] for m in table)
                            + (small[free[j]] if size < biggest else 0),
                            j,
                        ),
                    )
                    table.append(free.pop(pick))
                for i, a in enumerate(table):
                    for b in table[i + 1 :]:
                        cost += 2 * meet[a][b] + 1  # growth of the sum of squared counts
                    if size < biggest:
                        cost += 2 * small[a] + 1
                tables.append(table)
            cost -= _improve(tables, meet, small, biggest)
            if cost < best_cost:
                best_cost, best_tables = cost, tables
        _count(best_tables, meet, small, biggest, +1)
        for e in sitting_out:
            byes[e] += 1
            small[e] += 1
        plan.append(best_tables)
    # Refine the whole league: each round in turn is re-optimised against all the others
    # (its own meetings taken out), until a pass gains nothing.
    for _pass in range(_PASSES):
        gained = 0.0
        for tables in plan:
            _count(tables, meet, small, biggest, -1)
            gained += _improve(tables, meet, small, biggest)
            _count(tables, meet, small, biggest, +1)
        if not gained:
            break
    # Seats last, once the tables are final.
    seat_count = [[0] * biggest for _ in range(n)]
    out: list[Round] = []
    for tables in plan:
        this_round: Round = []
        for table in tables:
            seated_order = _assign_seats(table, seat_count, rng)
            for p, e in enumerate(seated_order):
                seat_count[e][p] += 1
            this_round.append(seated_order)
        out.append(this_round)
    return out


def _count(
    tables: list[list[int]], meet: list[list[int]], small: list[int], biggest: int, sign: int
) -> None:
    """Add (sign +1) or take out (-1) one round's meetings and small-table seats."""
    for table in tables:
        for i, a in enumerate(table):
            for b in table[i + 1 :]:
                meet[a][b] += sign
                meet[b][a] += sign
            if len(table) < biggest:
                small[a] += sign


def match_seed(league: League, league_round: int, table: int) -> int:
    """The seed of one league match, fixed by the league's seed (a league can be replayed)."""
    return random.Random(f"cow006-league-match/{league.seed}/{league_round}/{table}").getrandbits(
        63
    )


def _round_progress(session: Session, league_id: int) -> dict[int, tuple[int, int]]:
    """league_round -> (matches, settled matches)."""
    settled = func.sum(case((Match.status.in_(SETTLED), 1), else_=0))
    rows = session.execute(
        select(Match.league_round, func.count(), settled)
        .where(Match.league_id == league_id, Match.kind == MatchKind.league)
        .group_by(Match.league_round)
    ).all()
    return {int(r): (int(n), int(s or 0)) for r, n, s in rows if r is not None}


def refresh_league_state(session: Session, league: League) -> LeagueState:
    """Set and return the league's state from its matches: scheduled before any, finished
    once every match of its last round is settled, running in between."""
    progress = _round_progress(session, league.id)
    if not progress:
        state = league.state  # no round created yet
    elif max(progress) >= league.rounds and all(n == s for n, s in progress.values()):
        state = LeagueState.finished
    else:
        state = LeagueState.running
    league.state = state
    session.flush()
    return state


def start_league(session: Session, league: League) -> list[Match]:
    """Create the matches of the league's next round (flushed, not committed); [] when the
    current round is still being played or the league is over.

    Rounds are numbered from 1 (``Match.league_round``).  Safe to call concurrently (it locks
    the league row): a round is never created twice.
    """
    locked = locks.lock(session, League, league.id)
    if locked is None:
        raise ValueError(f"no league {league.id}")
    league = locked
    entrants = sorted(league.entrants, key=lambda e: e.id)
    if len(entrants) < MIN_TABLE:
        raise ValueError(f"league {league.name!r} needs at least {MIN_TABLE} entrants")
    progress = _round_progress(session, league.id)
    current = max(progress, default=0)
    if current and progress[current][0] != progress[current][1]:
        return []  # the current round is still being played
    if current >= league.rounds:
        refresh_league_state(session, league)
        return []
    plan = schedule(len(entrants), league.table_size, league.rounds, league.seed)
    league_round = current + 1
    matches = [
        results.create_match(
            session,
            kind=MatchKind.league,
            version_ids=[entrants[i].version_id for i in table],
            league_id=league.id,
            league_round=league_round,
            rated=False,
            seed=match_seed(league, league_round, t),
        )
        for t, table in enumerate(plan[league_round - 1])
    ]
    league.state = LeagueState.running
    session.flush()
    return matches


def standings(session: Session, league_id: int) -> list[dict[str, Any]]:
    """The league table: entrants by mean rank (lower is better), with matches played, mean
    total, wins, and a TrueSkill rating (tau = 0) from the league's finished matches in id
    order.  Entrants without a finished match come last."""
    league = session.get(League, league_id)
    if league is None:
        raise ValueError(f"no league {league_id}")
    entrants = session.scalars(
        select(LeagueEntrant).where(LeagueEntrant.league_id == league_id).order_by(LeagueEntrant.id)
    ).all()
    env = ratings.environment(ratings.DEFAULT_PARAMS, tau=0.0)
    stats: dict[int, dict[str, Any]] = {}
    rating: dict[int, Any] = {}
    for e in entrants:
        stats[e.version_id] = {"ranks": [], "scores": [], "wins": 0}
        rating[e.version_id] = env.create_rating()
    matches = session.scalars(
        select(Match)
        .where(
            Match.league_id == league_id,
            Match.kind == MatchKind.league,
            Match.status == MatchStatus.finished,
        )
        .order_by(Match.id)
    ).all()
    for m in matches:
        seats = sorted(m.seats, key=lambda s: s.seat)
        vids = [s.version_id for s in seats]
        if m.ranks is None or any(v not in stats for v in vids):
            continue
        for s in seats:
            st = stats[s.version_id]
            st["ranks"].append(s.rank)
            st["scores"].append(s.score)
            st["wins"] += 1 if s.rank == 1 else 0
        if len(set(vids)) == len(vids):
            new = ratings.rate(env, [rating[v] for v in vids], [int(r) for r in m.ranks])
            for v, r in zip(vids, new, strict=True):
                rating[v] = r
    rows: list[dict[str, Any]] = []
    for e in entrants:
        version = session.get(AgentVersion, e.version_id)
        assert version is not None
        st = stats[e.version_id]
        played = len(st["ranks"])
        r = rating[e.version_id]
        rows.append(
            {
                "version_id": version.id,
                "agent_id": version.agent_id,
                "agent": version.agent.name,
                "number": version.number,
                "label": version.label,
                "matches": played,
                "wins": st["wins"],
                "mean_rank": sum(st["ranks"]) / played if played else None,
                "mean_score": sum(st["scores"]) / played if played else None,
                "mu": float(r.mu),
                "sigma": float(r.sigma),
                "conservative": ratings.conservative(float(r.mu), float(r.sigma)),
            }
        )
    rows.sort(
        key=lambda row: (
            row["mean_rank"] is None,
            row["mean_rank"] if row["mean_rank"] is not None else 0.0,
            -row["conservative"],
            row["version_id"],
        )
    )
    for i, row in enumerate(rows):
        row["position"] = i + 1
    return rows
