"""TrueSkill ratings of ladder entrants: applied exactly once per match, replayable.

A match of N seats is a TrueSkill free-for-all of N one-player teams, ranked by the match
totals (fewer penalty heads is better; equal totals share a rank, i.e. a draw between them).
Each ladder carries its own TrueSkill parameters (mu, sigma, beta, tau, draw probability) and
``environment`` builds an explicit ``trueskill.TrueSkill`` from them: the package's global
environment is never used, so two ladders (or a league's tau=0 standings) cannot interfere.

Exactly once: ``apply_match`` runs inside the transaction that marks the match finished
(``results.finish_match``), under a lock on the ladder row, and sets ``rating_applied`` in
that same transaction; a result arriving twice finds the match finished and changes nothing.
``rerate`` rebuilds a ladder's ratings from its finished rated matches in id order, which
gives the very numbers the incremental path gave when results arrived in that order.

See docs/ratings.md, which also says how ``DEFAULT_DRAW_PROBABILITY`` was measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, overload

import trueskill
from sqlalchemy import ColumnElement, delete, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session
from sqlalchemy.orm.attributes import flag_modified

from . import locks
from .models import (
    Agent,
    Ladder,
    LadderEntry,
    Match,
    MatchKind,
    MatchStatus,
    Rating,
    RatingPoint,
    utcnow,
)

# The probability that two given players of a 4-player match of built-in bots finish on the
# same total, measured with ``python bench/draws.py --matches 5000 --seed 1``: 0.0108 (323 ties in
# 30000 pairs; a second seed gave 0.0111).  See docs/ratings.md.
DEFAULT_DRAW_PROBABILITY = 0.011

# Used where no ladder gives parameters (league standings): TrueSkill's usual defaults.
DEFAULT_PARAMS: dict[str, float] = {
    "mu": 25.0,
    "sigma": 25.0 / 3,
    "beta": 25.0 / 6,
    "tau": 25.0 / 300,
    "draw_probability": DEFAULT_DRAW_PROBABILITY,
}

_PARAMS = ("mu", "sigma", "beta", "tau", "draw_probability")

SQLNumber = ColumnElement[float] | InstrumentedAttribute[float]
# How many sigmas below mu the conservative rating is (the plots' band spans as many above).
SPREAD = 3


def _param(source: Any, name: str) -> float:
    value = source[name] if isinstance(source, Mapping) else getattr(source, name)
    return float(value)


def environment(ladder_or_params: Any, tau: float | None = None) -> trueskill.TrueSkill:
    """An explicit TrueSkill environment from a Ladder row (or any object or mapping with
    mu, sigma, beta, tau and draw_probability); ``tau`` overrides the ladder's."""
    p = {name: _param(ladder_or_params, name) for name in _PARAMS}
    if tau is not None:
        p["tau"] = float(tau)
    # backend=None: trueskill's own pure-Python math, identical on every machine.
    return trueskill.TrueSkill(
        mu=p["mu"],
        sigma=p["sigma"],
        beta=p["beta"],
        tau=p["tau"],
        draw_probability=p["draw_probability"],
        backend=None,
    )


def ranks_from_scores(scores: Sequence[int]) -> list[int]:
    """1 + the number of seats with a strictly lower total: equal totals share a rank."""
    return [1 + sum(1 for other in scores if other < s) for s in scores]


@overload
def conservative(mu: float, sigma: float) -> float: ...
@overload
def conservative(mu: SQLNumber, sigma: SQLNumber) -> ColumnElement[float]: ...
def conservative(mu: float | SQLNumber, sigma: float | SQLNumber) -> float | ColumnElement[float]:
    """The leaderboard's sort key: a rating the player is very likely above, mu - 3 sigma.

    The one definition, for numbers and for columns alike (``conservative(Rating.mu,
    Rating.sigma)`` is the SQL expression)."""
    return mu - SPREAD * sigma


# The columns of a rating that a match may leave as they were.
_COUNTED = ("wins", "previous_rank", "tallied", "heads", "rounds", "faulted")


def rate(
    env: trueskill.TrueSkill, ratings: Sequence[trueskill.Rating], ranks: Sequence[int]
) -> list[trueskill.Rating]:
    """New ratings after one free-for-all (one-player teams), in seat order."""
    groups = env.rate([(r,) for r in ratings], ranks=list(ranks))
    return [g[0] for g in groups]


def apply_match(session: Session, match: Match) -> bool:
    """Apply a finished rated ladder match to its seats' ratings, in the caller's transaction.

    Creates a Rating at the ladder's mu/sigma for a version's first match, appends one
    RatingPoint per seat, counts matches and wins (rank 1, shared or not), keeps the results
    view's figures (each rating's rank just before the match, and for a match whose rounds
    are known its heads, rounds and whether it faulted), and sets ``match.rating_applied``.
    Returns False, changing nothing, if it was applied already.
    """
    if match.rating_applied:
        return False
    if match.status is not MatchStatus.finished or match.ranks is None:
        raise ValueError(f"match {match.id} is not finished: no result to rate")
    if match.kind is not MatchKind.ladder or not match.rated or match.ladder_id is None:
        raise ValueError(f"match {match.id} is not a rated ladder match")
    # Set first: the match's row is then written once, with the flag, when the first query
    # below flushes it (and set back if rating it fails, as the rest is in the caller's
    # transaction, which a failure rolls back).
    match.rating_applied = True
    try:
        _rate(session, match, match.ladder_id, [int(r) for r in match.ranks])
    except BaseException:
        match.rating_applied = False
        raise
    session.flush()
    return True


def _rate(session: Session, match: Match, ladder_id: int, ranks: list[int]) -> None:
    """``apply_match``'s work: the ratings and rating points of ``match``'s seats (in
    ``ladder_id``, placed ``ranks``)."""
    # One rating update at a time per ladder: two matches sharing a version must not both
    # read its old rating (a lost update).  Held until the caller's transaction ends.
    ladder = locks.lock(session, Ladder, ladder_id)
    if ladder is None:
        raise ValueError(f"match {match.id} names ladder {ladder_id}, which does not exist")
    seats = sorted(match.seats, key=lambda s: s.seat)
    version_ids = [s.version_id for s in seats]
    if len(set(version_ids)) != len(version_ids):
        raise ValueError(f"match {match.id} seats a version twice: it cannot be rated")
    existing = {
        r.version_id: r
        for r in session.scalars(
            select(Rating)
            .where(Rating.ladder_id == ladder.id, Rating.version_id.in_(version_ids))
            .execution_options(populate_existing=True)
        )
    }
    existing_rows = set(existing.values())
    rows: list[Rating] = []
    for vid in version_ids:
        row = existing.get(vid)
        if row is None:
            row = Rating(
                ladder_id=ladder.id,
                version_id=vid,
                mu=ladder.mu,
                sigma=ladder.sigma,
                conservative=conservative(ladder.mu, ladder.sigma),
                matches=0,
                wins=0,
            )
            session.add(row)
        rows.append(row)
    before = board_ranks(session, ladder, version_ids)
    env = environment(ladder)
    new = rate(env, [env.create_rating(r.mu, r.sigma) for r in rows], ranks)
    when = match.finished_at or utcnow()
    scores = list(match.scores or [])
    for row, rating, rank, seat in zip(rows, new, ranks, seats, strict=True):
        row.mu = float(rating.mu)
        row.sigma = float(rating.sigma)
        row.conservative = conservative(row.mu, row.sigma)
        row.matches = (row.matches or 0) + 1
        row.wins = (row.wins or 0) + (1 if rank == 1 else 0)
        row.last_played_at = when
        row.previous_rank = before.get(seat.version_id)
        if match.rounds and seat.seat < len(scores):  # a match stored before rounds were kept
            row.tallied = (row.tallied or 0) + 1
            row.heads = (row.heads or 0) + int(scores[seat.seat])
            row.rounds = (row.rounds or 0) + int(match.rounds)
            row.faulted = (row.faulted or 0) + (1 if seat.faults else 0)
        if row in existing_rows:
            # Every row's UPDATE names the same columns, even those whose value stayed (a
            # loser's wins): the four rows then go in one statement instead of two or three.
            for name in _COUNTED:
                flag_modified(row, name)
        session.add(
            RatingPoint(
                ladder_id=ladder.id,
                version_id=row.version_id,
                match_id=match.id,
                mu=row.mu,
                sigma=row.sigma,
                created_at=when,
            )
        )


def board_ranks(session: Session, ladder: Ladder, version_ids: Sequence[int]) -> dict[int, int]:
    """The leaderboard rank now of each of ``version_ids`` that its agent's active entry plays
    in ``ladder`` (the board's order: ``crud.ladders``, mu - 3 sigma, then earlier entries).

    One query over the ladder's entries (their ids and conservative ratings, no names), under
    the ladder's lock in ``apply_match``: a place stored as it was before a match, so that the
    board shows the rank change without any history read per request."""
    key = func.coalesce(Rating.conservative, conservative(ladder.mu, ladder.sigma))
    place = func.row_number().over(order_by=(key.desc(), LadderEntry.id))
    board = (
        select(LadderEntry.version_id.label("version_id"), place.label("rank"))
        .join(Agent, Agent.id == LadderEntry.agent_id)
        .outerjoin(
            Rating,
            (Rating.ladder_id == LadderEntry.ladder_id)
            & (Rating.version_id == LadderEntry.version_id),
        )
        .where(
            LadderEntry.ladder_id == ladder.id,
            LadderEntry.active.is_(True),
            Agent.disabled.is_(False),
        )
        .subquery()
    )
    # Ranked in SQL, only the seats' rows sent back (not the whole board).
    rows = session.execute(
        select(board.c.version_id, board.c.rank).where(board.c.version_id.in_(list(version_ids)))
    )
    return {int(vid): int(rank) for vid, rank in rows}


def rerate(session: Session, ladder_id: int) -> int:
    """Recompute every rating of a ladder from its finished rated matches, in id order.

    Deletes the ladder's ratings and rating points and replays ``apply_match``; returns the
    number of matches replayed.  Runs in the caller's transaction, under the ladder's lock.
    """
    if locks.lock(session, Ladder, ladder_id) is None:
        raise ValueError(f"no ladder {ladder_id}")
    session.execute(
        delete(RatingPoint)
        .where(RatingPoint.ladder_id == ladder_id)
        .execution_options(synchronize_session=False)
    )
    session.execute(
        delete(Rating)
        .where(Rating.ladder_id == ladder_id)
        .execution_options(synchronize_session=False)
    )
    # Objects of the deleted rows may sit in the identity map: forget them.
    for obj in list(session.identity_map.values()):
        if isinstance(obj, Rating | RatingPoint) and obj.ladder_id == ladder_id:
            session.expunge(obj)
    matches = session.scalars(
        select(Match)
        .where(
            Match.ladder_id == ladder_id,
            Match.kind == MatchKind.ladder,
            Match.rated.is_(True),
            Match.status == MatchStatus.finished,
        )
        .order_by(Match.id)
        .execution_options(populate_existing=True)
    ).all()
    for match in matches:
        match.rating_applied = False
        apply_match(session, match)
    return len(matches)
