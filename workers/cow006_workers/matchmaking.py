"""Ladder matchmaking: which versions play the next rated match, and in which seats.

Pure logic, standard library only: the caller reads a ladder's entrants into ``Candidate``
rows (rating, games played, last match, matches already queued), calls ``plan_matches`` to top
the ladder's queue up to its depth, and creates one match per returned table, seats in the
returned order.  Nothing here touches the database or the clock: ``now`` and the random
generator are arguments, so a plan is reproducible and the tests are exact.

A table is built in two steps, after the reference design of the Halite II/III coordinator
(``apiserver/coordinator/matchmaking.py``), adapted to TrueSkill and to small ladders:

1. **The seed** is the version the table is for.  *Placement* first: a version with no game
   and none queued is the seed at once, in upload order, so a new upload gets its first rating
   within one queue refill.  Otherwise a lottery over three rules, Halite's mix:

   * 65 % ``uncertain``: weighted by ``sigma**2 / (1 + games + queued)``: high uncertainty and
     few games (queued matches count as games about to happen);
   * 25 % ``idle``: uniformly among the stalest quarter of the still-uncertain half
     (``sigma`` at least the median): an uncertain version that has waited longest;
   * 10 % ``stale``: the single least recently played version, however settled: nobody starves,
     and an old rating gets rechecked against the newer field.

2. **The fill**: the other seats are drawn without replacement, each with weight
   ``(FILL_FLOOR + quality(seed, c)) / (1 + c.queued)``, where ``quality`` is TrueSkill's
   two-player match quality (the draw-probability-like number that is high when the outcome is
   uncertain: close ``mu``, wide ``sigma``).  Near-``mu`` opponents are the informative ones;
   the floor and the lottery keep some randomness, so the ladder never splits into islands that
   only play among themselves and an outlier still meets the whole field now and then.

Never two versions of one agent at a table (an agent has one active version per ladder, but a
version switch while matches are queued must not create a self-match): candidates sharing an
``agent_id`` (or, with ``distinct_owners``, an ``owner_id``) exclude each other.  Seats are
shuffled, so over many tables every version sits in every seat equally often.

docs/matchmaking.md gives the reasoning at length and the measured convergence
(bench/convergence.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

# Halite's seed mix: (rule, probability).  The probabilities add up to 1.
SEED_MIX: tuple[tuple[str, float], ...] = (("uncertain", 0.65), ("idle", 0.25), ("stale", 0.10))

# TrueSkill's default performance spread (25 / 6); the fill's match quality is measured in it.
# A ladder with another beta passes its own to ``pick_table`` / ``plan_matches``.
DEFAULT_BETA = 25.0 / 6

# Added to every fill weight (a match quality is in (0, 1]): a far-off version keeps a small
# chance of a seat, about 1/20 of an evenly matched one.  Exploration against rating islands.
FILL_FLOOR = 0.05

# The ``idle`` rule picks among this fraction (at least one) of the uncertain versions,
# the stalest first; Halite took a random one of the 15 stalest.
IDLE_FRACTION = 0.25


@dataclass(frozen=True)
class Candidate:
    """One entrant of a ladder, as matchmaking sees it.

    ``games`` counts finished rated matches, ``last_played`` is the end of the latest one in
    epoch seconds (None: never played), ``queued`` the matches already queued or running for
    this version (they will add games soon, so they count against it being picked again).
    """

    version_id: int
    agent_id: int
    owner_id: int
    mu: float
    sigma: float
    games: int
    last_played: float | None
    queued: int = 0


def seed_weight(c: Candidate) -> float:
    """Weight of ``c`` in the ``uncertain`` seed lottery: ``sigma**2 / (1 + games + queued)``.

    ``sigma**2`` is what a match can reduce; dividing by the games (played or queued) makes
    the rule sharp like Halite's ``1 / (games + 1)``: a version with twice the games gets well
    under half the chance, so the game counts of a field even out and a newcomer catches up.
    """
    return c.sigma * c.sigma / (1 + max(0, c.games) + max(0, c.queued))


def staleness(c: Candidate, now: float) -> float:
    """Seconds since ``c`` last played; infinite if never, 0 if a match is queued for it."""
    if c.queued > 0:
        return 0.0  # it is about to play: not idle
    if c.last_played is None:
        return math.inf
    return max(0.0, now - c.last_played)


def quality(a: Candidate, b: Candidate, beta: float = DEFAULT_BETA) -> float:
    """TrueSkill's two-player match quality of ``a`` against ``b``, in (0, 1].

    ``sqrt(2 beta^2 / s) * exp(-(mu_a - mu_b)^2 / (2 s))`` with
    ``s = 2 beta^2 + sigma_a^2 + sigma_b^2``: the chance of a draw relative to the most even
    match possible.  It is high when the result is hard to predict, which is when a match
    teaches the ratings most.  While sigmas are wide (a new ladder, a newcomer) it is nearly
    flat, so early tables are close to random, as they should be when nothing is known yet.
    """
    s = 2 * beta * beta + a.sigma * a.sigma + b.sigma * b.sigma
    if s <= 0:
        return 1.0
    d = a.mu - b.mu
    return math.sqrt(2 * beta * beta / s) * math.exp(-d * d / (2 * s))


def _identity(distinct_owners: bool) -> Callable[[Candidate], int]:
    """What must differ between the seats of a table: the agent, or with the flag the owner."""
    if distinct_owners:
        return lambda c: c.owner_id
    return lambda c: c.agent_id


def _lottery(items: Sequence[Candidate], weights: Sequence[float], rng: random.Random) -> Candidate:
    """One item with probability proportional to its weight; uniform if no weight is positive."""
    total = sum(w for w in weights if w > 0)
    if total <= 0 or not math.isfinite(total):
        return rng.choice(items)
    x = rng.random() * total
    for item, w in zip(items, weights, strict=True):
        if w > 0:
            x -= w
            if x < 0:
                return item
    return items[-1]  # rounding: x landed exactly on the total


def _stalest(pool: Sequence[Candidate], k: int, rng: random.Random, now: float) -> list[Candidate]:
    """The ``k`` least recently played of ``pool``; equal staleness in random order."""
    shuffled = list(pool)
    rng.shuffle(shuffled)  # a stable sort then breaks ties at random
    shuffled.sort(key=lambda c: staleness(c, now), reverse=True)
    return shuffled[:k]


def pick_seed(pool: Sequence[Candidate], rng: random.Random, now: float) -> Candidate:
    """The version a table is built around: placement first, else Halite's 65/25/10 mix."""
    # Placement: a version that has neither played nor been queued waits for nothing.  Upload
    # order (version ids grow with uploads) so a burst of uploads is served first come, first
    # served; each gets its table in the same refill.
    fresh = [c for c in pool if c.games <= 0 and c.queued <= 0]
    if fresh:
        return min(fresh, key=lambda c: c.version_id)

    x = rng.random()
    rule = SEED_MIX[-1][0]
    for name, p in SEED_MIX:
        if x < p:
            rule = name
            break
        x -= p

    if rule == "uncertain":
        return _lottery(pool, [seed_weight(c) for c in pool], rng)
    if rule == "idle":
        # Halite's idle rule skipped bots with 400+ games (their rating is settled); the
        # TrueSkill way to say "settled" is a small sigma: keep the more uncertain half.
        sigmas = sorted(c.sigma for c in pool)
        median = sigmas[(len(sigmas) - 1) // 2]
        uncertain = [c for c in pool if c.sigma >= median]
        k = max(1, math.ceil(IDLE_FRACTION * len(uncertain)))
        return rng.choice(_stalest(uncertain, k, rng, now))
    return _stalest(pool, 1, rng, now)[0]


def pick_table(
    candidates: Sequence[Candidate],
    players: int,
    rng: random.Random,
    now: float,
    *,
    beta: float = DEFAULT_BETA,
    distinct_owners: bool = False,
) -> list[Candidate] | None:
    """One table of ``players`` candidates in seat order, or None if too few distinct agents.

    The seed comes from ``pick_seed``; every other seat is drawn from the rest with weight
    ``(FILL_FLOOR + quality(seed, c, beta)) / (1 + c.queued)``.  Candidates that share an agent
    (with ``distinct_owners``: an owner) never share a table.  The seats are shuffled.
    """
    if players < 2:
        raise ValueError(f"a table needs at least 2 players, not {players}")
    ident = _identity(distinct_owners)
    if len({ident(c) for c in candidates}) < players:
        return None

    seed = pick_seed(candidates, rng, now)
    table = [seed]
    taken = {ident(seed)}
    for _ in range(players - 1):
        rest = [c for c in candidates if ident(c) not in taken]
        # Queued matches divide the weight: a version already waiting for games is not the
        # first choice for yet another seat, so a deep queue spreads over the field.
        weights = [(FILL_FLOOR + quality(seed, c, beta)) / (1 + max(0, c.queued)) for c in rest]
        pick = _lottery(rest, weights, rng)
        table.append(pick)
        taken.add(ident(pick))

    # Seat order: uniformly random, so over many tables each version sits in each seat equally
    # often (the seed would otherwise always be seat 0).
    rng.shuffle(table)
    return table


def plan_matches(
    candidates: Sequence[Candidate],
    players: int,
    count: int,
    rng: random.Random,
    now: float,
    *,
    beta: float = DEFAULT_BETA,
    distinct_owners: bool = False,
) -> list[list[Candidate]]:
    """Up to ``count`` tables to add to a ladder's queue (fewer only if ``pick_table`` gives
    None: too few distinct agents).

    Each planned table adds one to the ``queued`` of its seats before the next is picked, so a
    refill spreads over the field as the real queue would: the same versions are not drawn
    over and over, and a newcomer placed by the first table is not placed again.  The tables
    hold the caller's own ``Candidate`` objects (with their original ``queued``).
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    ids = [c.version_id for c in candidates]
    if len(set(ids)) != len(ids):
        raise ValueError("each candidate must be a distinct version_id")
    original = {c.version_id: c for c in candidates}
    pool = list(candidates)
    tables: list[list[Candidate]] = []
    for _ in range(count):
        table = pick_table(pool, players, rng, now, beta=beta, distinct_owners=distinct_owners)
        if table is None:
            break
        tables.append([original[c.version_id] for c in table])
        seated = {c.version_id for c in table}
        pool = [replace(c, queued=c.queued + 1) if c.version_id in seated else c for c in pool]
    return tables


__all__ = [
    "DEFAULT_BETA",
    "FILL_FLOOR",
    "IDLE_FRACTION",
    "SEED_MIX",
    "Candidate",
    "pick_seed",
    "pick_table",
    "plan_matches",
    "quality",
    "seed_weight",
    "staleness",
]
