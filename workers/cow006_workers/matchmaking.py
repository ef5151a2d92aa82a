"""Ladder matchmaking: which versions play the next rated match, and in which seats.

Pure logic, standard library only: the caller reads a ladder's entrants into ``Candidate``
rows (rating, games played, last match, matches already queued), calls ``plan_matches`` to top
the ladder's queue up to its depth, and creates one match per returned table, seats in the
returned order.  Nothing here touches the database or the clock: ``now`` and the random
generator are arguments, so a plan is reproducible and the tests are exact.

A table is built in two steps, after the reference design of the Halite II/III coordinator
(``apiserver/coordinator/matchmaking.py``), adapted to TrueSkill ratings:

1. **The seed** is the version the table is for.  *Placement* first: a version with no game
   and none queued is the seed at once, in upload order, so a new upload gets its first rating
   within one queue refill.  Otherwise a lottery over three rules, Halite's mix:

   * 65 % ``uncertain``: weighted by ``sigma**2 / ((1 + games) (1 + queued)**2)``: high
     uncertainty, few games, and not already waiting in the queue;
   * 25 % ``idle``: uniformly among the stalest quarter of the still-uncertain half
     (``sigma`` at least the median): an uncertain version that has waited longest;
   * 10 % ``stale``: the single least recently played version, however settled: nobody starves,
     and an old rating gets rechecked against the newer field.

2. **The fill**: the other seats are drawn one by one without replacement, each with weight
   ``prod(closeness(m, c) for m in the table so far) / (1 + queued)**2``.  ``closeness`` is
   twice the probability, under the ratings, that the ladder has the two in the wrong order
   (1 for equal ``mu``, small once the gap is several posterior standard deviations), and the
   product asks it of *every* version already seated, not only the seed: a table of versions
   whose mutual order is still open, which is where a match can change the leaderboard (active
   ranking).  With probability ``FILL_EXPLORE`` a seat is drawn uniformly instead (still
   ``/ (1 + queued)**2``).  That and the lottery itself keep randomness in the tables, so the
   ladder never splits into islands that only play among themselves, and an outlier still
   meets the whole field now and then.  (Halite drew the fill from a random number of the
   seed's nearest neighbours in ``mu``.)

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

# The chance that a fill seat ignores closeness and is drawn uniformly: exploration against
# rating islands, and a check of the ratings against the whole field.  A probability rather than
# a floor added to every weight, so its share does not grow with the size of the ladder.
FILL_EXPLORE = 0.1

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
    """Weight of ``c`` in the ``uncertain`` seed lottery: ``sigma**2 / ((1 + games) q2)``.

    ``sigma**2`` is what a match can reduce; dividing by the games makes the rule sharp like
    Halite's ``1 / (games + 1)``: a version with twice the games gets well under half the
    chance (its sigma is smaller too), so the game counts of a field even out and a newcomer
    catches up.  ``q2 = queue_factor(c) = (1 + queued)**2``, as in the fill, spreads one refill
    of a deep queue over the field: after 100 games, 10 more queued would barely change
    ``1 + games``, but the version should still wait its turn.
    """
    return c.sigma * c.sigma / ((1 + max(0, c.games)) * queue_factor(c))


def queue_factor(c: Candidate) -> float:
    """``(1 + queued)**2``: what a version's matches already queued divide its weights by.

    Squared because the plain ``1 + queued`` proved too weak to keep a refill even: 30 tables
    of 4 for 12 settled versions (mu 15..35, sigma 1) spread their seats (max - min per
    version, mean of 200 refills) 8.3, no better than uniformly random tables (8.5); squared,
    7.0 (and 5.3 with sigma 3, where tables are less local).  One queued match quarters a
    version's chances, two divide them by nine.
    """
    return (1 + max(0, c.queued)) ** 2


def staleness(c: Candidate, now: float) -> float:
    """Seconds since ``c`` last played; infinite if never, 0 if a match is queued for it."""
    if c.queued > 0:
        return 0.0  # it is about to play: not idle
    if c.last_played is None:
        return math.inf
    return max(0.0, now - c.last_played)


def closeness(a: Candidate, b: Candidate) -> float:
    """How uncertain the ladder is about the order of ``a`` and ``b``, in (0, 1].

    ``erfc(|mu_a - mu_b| / sqrt(2 (sigma_a^2 + sigma_b^2)))``, which is twice the posterior
    probability ``Phi(-|mu_a - mu_b| / sqrt(sigma_a^2 + sigma_b^2))`` that their true skills
    are the other way round from their means: 1 when the means are equal (a coin flip which one
    is better), small once the gap is several posterior standard deviations (the leaderboard
    has them in a settled order and a match between them teaches little about it).  TrueSkill's
    ``beta`` is deliberately absent: it is the noise of one game's performance, not uncertainty
    about the order (with it, every pair of this game's narrow field looks alike, see
    docs/matchmaking.md).  The scale is the ratings' own uncertainty, not a fixed distance:
    while sigmas are wide (a new ladder, a newcomer's placement) every opponent is "near", so
    early tables are close to random, as they should be when nothing is known; as ratings
    settle, tables tighten around the pairs whose order is still open.
    """
    s = a.sigma * a.sigma + b.sigma * b.sigma
    d = abs(a.mu - b.mu)
    if s <= 0:
        return 1.0 if d == 0 else 0.0
    return math.erfc(d / math.sqrt(2 * s))


def fill_weight(table: Sequence[Candidate], c: Candidate) -> float:
    """Weight of ``c`` for the next seat of ``table``: ``prod closeness(m, c) / queue_factor(c)``.

    The product over every version already seated (the seed first) makes the table one whose
    *mutual* order is uncertain: a candidate close to the seed but clearly apart from another
    member adds a pair the ladder has already settled, and is down-weighted.  Measured on the
    convergence benchmark's surrogate (500 trials, docs/matchmaking.md) the product needed
    0.81 times the matches of random tables where closeness to the seed alone needed 0.88; on
    real games both are within the noise of random tables (0.99 and 1.06), and the surrogate's
    own bias is as large as the gap: kept for the reasoning, measured no worse.
    """
    w = 1.0
    for m in table:
        w *= closeness(m, c)
    return w / queue_factor(c)


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


def _fresh(c: Candidate) -> bool:
    """Whether ``c`` waits for its placement match: no game played, none queued."""
    return c.games <= 0 and c.queued <= 0


def pick_seed(pool: Sequence[Candidate], rng: random.Random, now: float) -> Candidate:
    """The version a table is built around: placement first, else Halite's 65/25/10 mix."""
    # Placement: a version that has neither played nor been queued waits for nothing.  Upload
    # order (version ids grow with uploads) so a burst of uploads is served first come, first
    # served; each gets its table in the same refill.
    fresh = [c for c in pool if _fresh(c)]
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
    distinct_owners: bool = False,
) -> list[Candidate] | None:
    """One table of ``players`` candidates in seat order, or None if too few distinct agents.

    The seed comes from ``pick_seed``; every other seat is drawn from the rest with weight
    ``fill_weight(table so far, c)`` (the product of ``closeness`` to each seated version, over
    ``(1 + c.queued)**2``), or with probability ``FILL_EXPLORE`` with weight
    ``1 / (1 + c.queued)**2``.  Candidates that share an agent (with ``distinct_owners``: an
    owner) never share a table.  The seats are shuffled.
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
        explore = rng.random() < FILL_EXPLORE
        # Queued matches divide the weight: a version already waiting for games is not the
        # first choice for yet another seat, so a deep queue spreads over the field.  If every
        # product underflows to 0 (a table far apart), ``_lottery`` draws uniformly.
        weights = [1.0 / queue_factor(c) if explore else fill_weight(table, c) for c in rest]
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
    distinct_owners: bool = False,
    place_newcomers: bool = False,
) -> list[list[Candidate]]:
    """Up to ``count`` tables to add to a ladder's queue (fewer only if ``pick_table`` gives
    None: too few distinct agents); with ``place_newcomers``, one more table at a time while
    a version still waits for its placement match (no game, nothing queued): what a refill
    plans, so that a newcomer waits for nothing even when the queue is full.

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
    # A newcomer is a seed first (pick_seed): each extra table places at least one of them.
    extra = len(candidates) if place_newcomers else 0
    while len(tables) < count or (extra > 0 and any(_fresh(c) for c in pool)):
        if len(tables) >= count:
            extra -= 1
        table = pick_table(pool, players, rng, now, distinct_owners=distinct_owners)
        if table is None:
            break
        tables.append([original[c.version_id] for c in table])
        seated = {c.version_id for c in table}
        pool = [replace(c, queued=c.queued + 1) if c.version_id in seated else c for c in pool]
    return tables


__all__ = [
    "FILL_EXPLORE",
    "IDLE_FRACTION",
    "SEED_MIX",
    "Candidate",
    "closeness",
    "fill_weight",
    "pick_seed",
    "pick_table",
    "plan_matches",
    "queue_factor",
    "seed_weight",
    "staleness",
]
