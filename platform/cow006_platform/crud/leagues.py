"""Leagues: a fixed field of frozen versions playing a schedule (``cow006_platform.leagues``
makes it), with their progress, schedule and standings.

A league is created with its entrants (version ids, frozen: later uploads do not change who
plays) and started once.  Its seed, from which every match seed of the league derives, is
shown to admins only until the league has finished (``schemas.LeagueOut``).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import leagues
from ..models import (
    AgentVersion,
    League,
    LeagueEntrant,
    LeagueState,
    Match,
    MatchStatus,
    VersionStatus,
)
from ..schemas import LeagueCreate, LeagueOut, MatchOut, Page, Standings
from ._errors import Conflict, commit, get, require_free_name
from ._rows import VERSION_FIELDS, Paging, Query, count, fields, page, with_version
from .matches import matches_page


def _leagues(session: Session, rows: Sequence[League]) -> list[dict[str, Any]]:
    """Leagues as LeagueOut's fields: entrants and progress, in two queries for the lot."""
    ids = [lg.id for lg in rows]
    entrants: dict[int, list[Any]] = {i: [] for i in ids}
    query = select(
        LeagueEntrant.league_id,
        LeagueEntrant.version_id,
        AgentVersion.agent_id,
        *VERSION_FIELDS,
    )
    for entrant in session.execute(
        with_version(query, LeagueEntrant.version_id)
        .where(LeagueEntrant.league_id.in_(ids))
        .order_by(LeagueEntrant.id)
    ):
        entrants[entrant.league_id].append(entrant)
    counts: dict[int, dict[MatchStatus, int]] = {i: {} for i in ids}
    rounds: dict[int, int] = {}
    for league_id, match_status, n, last_round in session.execute(
        select(Match.league_id, Match.status, func.count(Match.id), func.max(Match.league_round))
        .where(Match.league_id.in_(ids))
        .group_by(Match.league_id, Match.status)
    ):
        assert league_id is not None  # the league's matches only
        counts[league_id][match_status] = n
        rounds[league_id] = max(rounds.get(league_id, 0), last_round or 0)
    out = []
    for lg in rows:
        c = counts[lg.id]
        progress = {
            "round": rounds.get(lg.id, 0),
            "matches": sum(c.values()),
            **{s.value: c.get(s, 0) for s in MatchStatus},
        }
        out.append({**fields(lg), "entrants": entrants[lg.id], "progress": progress})
    return out


def list_leagues(session: Session, paging: Paging, *, admin: bool = False) -> Page[LeagueOut]:
    query = select(League).order_by(League.id)
    total = count(session, query)
    rows = session.scalars(query.limit(paging.limit).offset(paging.offset)).all()
    return page(LeagueOut, _leagues(session, rows), total, paging, {"admin": admin})


def get_league(session: Session, league_id: int, *, admin: bool = False) -> LeagueOut:
    (item,) = _leagues(session, [get(session, League, league_id, "league")])
    return LeagueOut.model_validate(item, from_attributes=True, context={"admin": admin})


def schedule(
    session: Session, league_id: int, paging: Paging, *, admin: bool = False
) -> Page[MatchOut]:
    """The league's matches, round by round."""
    get(session, League, league_id, "league")
    order = [Match.league_round, Match.id]
    ids: Query = select(Match.id).where(Match.league_id == league_id).order_by(*order)
    return matches_page(session, ids, order, paging, admin=admin)


def standings(session: Session, league_id: int) -> Standings:
    """The standings so far; ``final`` once the league has finished."""
    league = get(session, League, league_id, "league")
    return Standings.model_validate(
        {
            "league_id": league.id,
            "state": league.state,
            "final": league.state == LeagueState.finished,
            "standings": leagues.standings(session, league.id),
        }
    )


def create_league(session: Session, body: LeagueCreate) -> int:
    """A scheduled league of active versions (its seed drawn unless given); its id."""
    require_free_name(session, League, body.name, "league")
    for vid in body.entrants:
        version = get(session, AgentVersion, vid, f"version {vid}")
        if version.status != VersionStatus.active:
            raise Conflict(f"version {version.label} is {version.status.value}, not active")
    seed = body.seed if body.seed is not None else random.SystemRandom().getrandbits(63)
    league = League(
        **body.model_dump(exclude={"entrants", "seed"}), seed=seed, state=LeagueState.scheduled
    )
    session.add(league)
    session.flush()
    session.add_all(LeagueEntrant(league_id=league.id, version_id=v) for v in body.entrants)
    league_id = league.id
    commit(session, f"the league name {body.name!r} is taken")
    return league_id


def start_league(session: Session, league_id: int) -> list[int]:
    """Schedule the league's first round; the ids of its matches (to send to the workers)."""
    league = get(session, League, league_id, "league")
    if league.state != LeagueState.scheduled:
        raise Conflict(f"this league is {league.state.value} already")
    matches = leagues.start_league(session, league)
    ids = [m.id for m in matches]
    session.commit()
    return ids
