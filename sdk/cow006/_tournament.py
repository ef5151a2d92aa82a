"""Tournaments: which agents sit at which table, in which seats, and the TrueSkill leaderboard.

The pure parts of ``cow006 tournament``, standard library only (``trueskill`` is imported
inside ``rate`` so the module stays importable without it):

* ``schedule`` samples the tables: with K seats and N >= K entrants each match takes the K
  entrants that have played least so far (ties broken by a seeded shuffle), so appearance
  counts never differ by more than one, and the seat order rotates from match to match;
* ``match_seeds`` derives every match seed (the deals) from the tournament seed;
* ``plan`` turns both into picklable ``Job`` s (specs, not agent objects) that ``run_job``
  plays in any process; each job also carries the agents' own seeds, drawn independently of
  every seed above (``runner.new_agent_seeds``), so a plan plays the same whatever the number
  of jobs, and each log records them for a replay;
* ``rate`` and ``standings`` aggregate the finished matches, in schedule order whatever order
  they finished in, into a leaderboard sorted by the conservative rating mu - 3 sigma.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ._errors import SetupError
from ._runner import new_agent_seeds
from .cards import MAX_PLAYERS, MIN_PLAYERS
from .host import Limits
from .log import MatchLog
from .sandbox import Sandbox
from .spec import play

# The TrueSkill environment of the leaderboard (the package's own defaults, made explicit).
MU = 25.0
SIGMA = MU / 3
BETA = MU / 6
TAU = MU / 300
# Equal totals are uncommon but real in Корова 006 (a shared place); 5% is a round estimate.
DRAW_PROBABILITY = 0.05


def match_seeds(seed: int, matches: int) -> list[int]:
    """The seed of every match of a tournament, fixed by the tournament seed."""
    rng = random.Random(f"cow006-tournament/{seed}")
    return [rng.getrandbits(63) for _ in range(matches)]


def check_table(n_entrants: int, players: int) -> None:
    """SetupError unless ``players`` seats can be filled from ``n_entrants`` distinct entrants."""
    if n_entrants < MIN_PLAYERS:
        raise SetupError(f"a tournament needs at least {MIN_PLAYERS} agents, not {n_entrants}")
    if type(players) is not int or not MIN_PLAYERS <= players <= MAX_PLAYERS:
        raise SetupError(
            f"--players must be {MIN_PLAYERS} to {MAX_PLAYERS} (seats at one table), not {players}"
        )
    if players > n_entrants:
        raise SetupError(f"--players {players} is more than the {n_entrants} agents given")


def schedule(n_entrants: int, matches: int, players: int, seed: int) -> list[tuple[int, ...]]:
    """The tables of a tournament: per match, the entrant index in each seat.

    Each match seats the ``players`` entrants with the fewest appearances so far (ties broken
    at random, seeded), so after every match the appearance counts differ by at most one.
    Seats rotate: the chosen entrants, in index order, are rotated by the match number, so
    with every entrant at every table each one sits in each seat in turn.
    """
    check_table(n_entrants, players)
    if type(matches) is not int or matches < 1:
        raise SetupError(f"--matches must be at least 1, not {matches}")
    rng = random.Random(f"cow006-tables/{seed}")
    played = [0] * n_entrants
    tables: list[tuple[int, ...]] = []
    for m in range(matches):
        order = list(range(n_entrants))
        rng.shuffle(order)
        order.sort(key=played.__getitem__)  # stable: the shuffle breaks ties
        chosen = sorted(order[:players])
        for e in chosen:
            played[e] += 1
        shift = m % players
        tables.append(tuple(chosen[shift:] + chosen[:shift]))
    return tables


def labels(specs: Sequence[str]) -> list[str]:
    """One distinct display name per entrant: the spec, with #2, #3 ... on repeats."""
    seen: dict[str, int] = {}
    out = []
    for spec in specs:
        seen[spec] = seen.get(spec, 0) + 1
        out.append(spec if seen[spec] == 1 else f"{spec}#{seen[spec]}")
    return out


@dataclass(frozen=True, slots=True)
class Job:
    """One match to play, as plain picklable data: a worker builds the agents from the specs."""

    index: int  # 0-based position in the schedule
    seed: int
    entrants: tuple[int, ...]  # entrant index per seat
    specs: tuple[str, ...]  # agent spec per seat
    names: tuple[str, ...]  # display name per seat (recorded in the log)
    limits: Limits | None = None
    sandbox: Sandbox | None = None
    agent_seeds: tuple[int, ...] | None = None  # per seat; None: drawn when it is played


def plan(
    specs: Sequence[str],
    matches: int,
    players: int,
    seed: int,
    limits: Limits | None = None,
    sandbox: Sandbox | None = None,
) -> list[Job]:
    """Every match of a tournament: tables and deals fixed by ``seed``, the agents' own seeds
    drawn independently (never from ``seed``, which a bot may guess)."""
    names = labels(specs)
    seeds = match_seeds(seed, matches)
    return [
        Job(
            index=i,
            seed=seeds[i],
            entrants=table,
            specs=tuple(specs[e] for e in table),
            names=tuple(names[e] for e in table),
            limits=limits,
            sandbox=sandbox,
            agent_seeds=tuple(new_agent_seeds(len(table))),
        )
        for i, table in enumerate(schedule(len(specs), matches, players, seed))
    ]


def run_job(job: Job) -> MatchLog:
    """Play one scheduled match (in whatever process runs this) and return its log."""
    return play(
        job.specs,
        job.seed,
        limits=job.limits,
        names=job.names,
        sandbox=job.sandbox,
        agent_seeds=job.agent_seeds,
    )


@dataclass(frozen=True, slots=True)
class Result:
    """What the leaderboard needs from one finished match."""

    entrants: tuple[int, ...]  # entrant index per seat
    scores: tuple[int, ...]
    ranks: tuple[int, ...]  # 1 = lowest total; equal totals share a rank
    faults: tuple[int, ...]  # faults per seat


def result_of(job: Job, log: MatchLog) -> Result:
    """The leaderboard's summary of a match log played for ``job``."""
    n = len(job.entrants)
    faults = [0] * n
    for f in log.get("faults", []):
        faults[f["seat"]] += 1
    return Result(job.entrants, tuple(log["scores"]), tuple(log["ranks"]), tuple(faults))


@dataclass(frozen=True, slots=True)
class Rating:
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu - 3 sigma: a rating the agent is very likely to be at least as good as."""
        return self.mu - 3 * self.sigma


def rate(
    results: Sequence[Result], n_entrants: int, draw_probability: float = DRAW_PROBABILITY
) -> list[Rating]:
    """TrueSkill ratings of every entrant after ``results``, applied in the order given.

    Uses an explicit ``trueskill.TrueSkill`` environment (never the package's globals); each
    seat is a team of one and the ranks come from the match totals, so equal totals are a draw.
    A match the package cannot compute (a numerical failure) leaves the ratings unchanged.
    """
    import trueskill

    env = trueskill.TrueSkill(
        mu=MU, sigma=SIGMA, beta=BETA, tau=TAU, draw_probability=draw_probability
    )
    ratings = [env.create_rating() for _ in range(n_entrants)]
    for res in results:
        groups = [(ratings[e],) for e in res.entrants]
        try:
            rated = env.rate(groups, ranks=list(res.ranks))
        except (FloatingPointError, ZeroDivisionError):
            continue
        for e, (new,) in zip(res.entrants, rated, strict=True):
            ratings[e] = new
    return [Rating(float(r.mu), float(r.sigma)) for r in ratings]


@dataclass(frozen=True, slots=True)
class Standing:
    """One line of the leaderboard."""

    entrant: int
    name: str
    mu: float
    sigma: float
    conservative: float  # mu - 3 sigma: the sort key
    mean_score: float
    win_rate: float  # share of its matches ranked 1 (a shared first place counts)
    matches: int
    faults: int


def standings(
    names: Sequence[str],
    results: Sequence[Result],
    draw_probability: float = DRAW_PROBABILITY,
) -> list[Standing]:
    """The leaderboard: every entrant, best conservative rating (mu - 3 sigma) first."""
    n = len(names)
    ratings = rate(results, n, draw_probability)
    played = [0] * n
    total = [0] * n
    wins = [0] * n
    faults = [0] * n
    for res in results:
        for seat, e in enumerate(res.entrants):
            played[e] += 1
            total[e] += res.scores[seat]
            wins[e] += res.ranks[seat] == 1
            faults[e] += res.faults[seat]
    rows = [
        Standing(
            entrant=e,
            name=names[e],
            mu=ratings[e].mu,
            sigma=ratings[e].sigma,
            conservative=ratings[e].conservative,
            mean_score=total[e] / played[e] if played[e] else 0.0,
            win_rate=wins[e] / played[e] if played[e] else 0.0,
            matches=played[e],
            faults=faults[e],
        )
        for e in range(n)
    ]
    rows.sort(key=lambda s: (-s.conservative, s.entrant))
    return rows
