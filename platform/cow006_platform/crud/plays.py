"""Playing against the bots: a person takes a seat at a match with built-ins or public versions.

The match is a normal one (``MatchKind.play``, unrated, played by a worker on the
``cow006.play`` queue with the same engine and sandbox as any match, its log stored as any).
Its rows need a version at every seat, so the person sits as the arena's ``(person)`` agent
(a version that never runs: rejected, so no ladder or challenge seats it) and a built-in as
the arena's ``builtin-NAME`` agent (the same stored ``bot.py`` as the demo ladder's).  The
``plays`` row says which seat is the person's: the worker's ``HumanSeat`` writes the decision
asked there and waits for the answer this module stores (``answer``), until the generous
``PLAY_DECISION_SECONDS``; the log names the seat after the user.

Caps, as for challenges: ``plays_per_day`` started in 24 hours,
``plays_unfinished_per_user`` waiting or being played, and ``plays_unfinished`` in all (a
play holds a worker's pool process while its person plays).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import locks, results, security, storage
from ..models import (
    Agent,
    AgentVersion,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    Play,
    User,
    VersionStatus,
    utcnow,
    version_label,
)
from ..schemas import MAX_ID, PlayCreate, PlayMove, PlayOut, as_utc
from ..settings import Settings
from ._errors import Conflict, Invalid, NotFound, TooMany

ARENA_USER = "arena"  # the system user owning the built-ins (cow006_workers.demo)
PERSON_AGENT = "(person)"  # no user can take it: agent names never hold parentheses
PERSON_SOURCE = b"# A person's seat in a match against the bots: never run as a bot.\n"
PERSON_REASON = "A person's seat in matches against the bots: it never runs as a bot."
BUILTIN = "builtin:"
UNFINISHED = (MatchStatus.queued, MatchStatus.running)
OPPONENTS_LISTED = 200  # public versions offered on the page
NEXT_POLL = 0.05  # seconds between two looks of ``wait_for_next``


def builtin_source(name: str) -> str:
    """The ``bot.py`` of a built-in bot (the demo ladder's and the validation tables' too)."""
    return f'from cow006.bots import make\n\nagent = make("{name}")\n'


# -- the seats ------------------------------------------------------------------------------


def _arena(session: Session) -> User:
    user = session.scalar(select(User).where(User.name == ARENA_USER))
    if user is None:
        user, _token = security.create_user(session, ARENA_USER)  # its token is thrown away
        session.flush()
    return user


def _arena_version(
    session: Session, settings: Settings, agent_name: str, source: bytes, *, person: bool
) -> AgentVersion:
    """The arena's agent ``agent_name`` and its version of ``source``, made if missing."""
    agent = session.scalar(select(Agent).where(Agent.name == agent_name))
    if agent is None:
        agent = Agent(name=agent_name, owner_id=_arena(session).id)
        agent.accepts_challenges = not person
        session.add(agent)
        session.flush()
    stored = storage.store_upload(settings, "bot.py", source)
    version = session.scalar(
        select(AgentVersion).where(
            AgentVersion.agent_id == agent.id, AgentVersion.sha256 == stored.sha256
        )
    )
    if version is None:
        version = storage.add_version(session, agent.id, stored)
        if person:
            version.status = VersionStatus.rejected
            version.reason = PERSON_REASON
        session.flush()
    return version


def person_version(session: Session, settings: Settings) -> AgentVersion:
    """The version the person's seat is stored with."""
    return _arena_version(session, settings, PERSON_AGENT, PERSON_SOURCE, person=True)


def builtin_version(session: Session, settings: Settings, spec: str) -> AgentVersion:
    """The arena's version of the built-in ``builtin:NAME`` (Invalid for an unknown name)."""
    # The names come from the settings: the API process loads no bot code (cow006.bots).
    name = spec.removeprefix(BUILTIN)
    known = settings.play_builtins
    if name not in known:
        raise Invalid(f"There is no built-in bot {name!r}; the built-ins are {', '.join(known)}.")
    source = builtin_source(name).encode()
    return _arena_version(session, settings, f"builtin-{name}", source, person=False)


def _opponent(session: Session, settings: Settings, spec: str, user: User) -> AgentVersion:
    if spec.startswith(BUILTIN):
        return builtin_version(session, settings, spec)
    # Ten digits may be past any id (and past a PostgreSQL integer): no such version then.
    version = session.get(AgentVersion, int(spec)) if int(spec) <= MAX_ID else None
    agent = version.agent if version is not None else None
    if version is None or agent is None or agent.name == PERSON_AGENT:
        raise NotFound(f"no version {spec}")
    if version.status is not VersionStatus.active:
        raise Conflict(f"version {version.label} is {version.status.value}, not active")
    if agent.disabled:
        raise Conflict(f"agent {agent.name} is disabled")
    if not agent.accepts_challenges and agent.owner_id != user.id:
        raise Conflict(f"the owner of {version.label} does not accept unrated matches")
    return version


def _caps(session: Session, settings: Settings, user: User) -> None:
    since = utcnow() - timedelta(days=1)
    today = session.scalar(
        select(func.count(Play.id)).where(Play.user_id == user.id, Play.created_at >= since)
    )
    if (today or 0) >= settings.plays_per_day:
        raise TooMany(
            f"You may start at most {settings.plays_per_day} matches against the bots a day; "
            "try again tomorrow.",
            retry_after=3600,
        )
    unfinished = session.scalar(
        select(func.count(Play.id))
        .join(Match, Match.id == Play.match_id)
        .where(Play.user_id == user.id, Match.status.in_(UNFINISHED))
    )
    everyone = session.scalar(
        select(func.count(Play.id))
        .join(Match, Match.id == Play.match_id)
        .where(Match.status.in_(UNFINISHED))
    )
    if (everyone or 0) >= settings.plays_unfinished and not unfinished:
        raise TooMany(
            "All the tables for playing against the bots are taken; try again in a few minutes.",
            retry_after=60,
        )
    if (unfinished or 0) >= settings.plays_unfinished_per_user:
        raise TooMany(
            "You already have a match against the bots going on; finish it before you start "
            "another.",
            retry_after=60,
        )


def create(session: Session, settings: Settings, body: PlayCreate, user: User) -> int:
    """Queue a match of ``user`` against ``body.opponents`` (committed); the play's id.

    The person's seat is drawn at random, as a ladder's seats are."""
    # The user's row locked first: two requests at once cannot both pass the caps.
    locks.lock(session, User, user.id)
    _caps(session, settings, user)
    players = body.players or len(body.opponents) + 1
    if players < len(body.opponents) + 1:
        raise Invalid(
            f"{len(body.opponents)} opponents and you need {len(body.opponents) + 1} seats, "
            f"not {players}"
        )
    chosen = [_opponent(session, settings, spec, user) for spec in body.opponents]
    versions = [chosen[i % len(chosen)] for i in range(players - 1)]
    seat = random.SystemRandom().randrange(players)
    versions.insert(seat, person_version(session, settings))
    match = results.create_match(
        session,
        kind=MatchKind.play,
        version_ids=[v.id for v in versions],
        rated=False,
        requested_by=user.id,
    )
    play = Play(user_id=user.id, match_id=match.id, seat=seat, decision=0, missed=0)
    session.add(play)
    session.commit()
    return play.id


# -- reading and answering --------------------------------------------------------------------


def _owned(session: Session, play_id: int, user: User) -> Play:
    play = session.get(Play, play_id)
    if play is None or play.user_id != user.id:  # another's play does not exist for you
        raise NotFound("no such match against the bots")
    return play


def seat_names(session: Session, play: Play, user_name: str) -> list[str]:
    """Every seat's name: the person's is the user's, a bot's its version's label."""
    rows = session.execute(
        select(MatchSeat.seat, Agent.name, AgentVersion.number)
        .join(AgentVersion, AgentVersion.id == MatchSeat.version_id)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(MatchSeat.match_id == play.match_id)
        .order_by(MatchSeat.seat)
    ).all()
    return [
        user_name if seat == play.seat else version_label(name, number)
        for seat, name, number in rows
    ]


def _out(session: Session, play: Play, user: User) -> PlayOut:
    match = session.get(Match, play.match_id)
    assert match is not None  # a play's match is deleted with it
    deadline = as_utc(play.deadline) if play.deadline is not None else None
    # Answered, the decision is the worker's to take: the player is not asked it again.
    waiting = play.asked is not None and play.answer is None and match.status is MatchStatus.running
    left = (deadline - utcnow()).total_seconds() if deadline is not None and waiting else None
    return PlayOut(
        id=play.id,
        match_id=play.match_id,
        status=match.status,
        seat=play.seat,
        names=seat_names(session, play, user.name),
        decision=play.decision,
        asked=play.asked if waiting else None,
        view=play.pending if waiting else None,
        deadline=deadline if waiting else None,
        seconds_left=max(0.0, left) if left is not None else None,
        missed=play.missed,
        scores=match.scores,
        ranks=match.ranks,
        error=match.error,
        created_at=play.created_at,
    )


def get(session: Session, play_id: int, user: User) -> PlayOut:
    """The play as its player sees it (NotFound for anyone else's)."""
    return _out(session, _owned(session, play_id, user), user)


@dataclass
class Current:
    """The caller's newest play, for the page that starts one."""

    id: int
    match_id: int
    status: MatchStatus


def latest(session: Session, user: User) -> Current | None:
    row = session.execute(
        select(Play.id, Play.match_id, Match.status)
        .join(Match, Match.id == Play.match_id)
        .where(Play.user_id == user.id)
        .order_by(Play.id.desc())
        .limit(1)
    ).first()
    return Current(row[0], row[1], MatchStatus(row[2])) if row is not None else None


def answer(session: Session, play_id: int, user: User, move: PlayMove) -> PlayOut:
    """Store the player's answer to the decision asked (once; committed), checked against
    it: a card of the hand, or a row when a row is asked."""
    _owned(session, play_id, user)
    play = locks.lock(session, Play, play_id)
    if play is None:
        raise NotFound("no such match against the bots")
    if play.asked is None or play.pending is None:
        raise Conflict("The match is not waiting for a move of yours now.")
    if move.decision is not None and move.decision != play.decision:
        raise Conflict("That decision is over; the match has moved on.")
    if play.answer is not None:
        raise Conflict("You have answered this decision already.")
    if play.asked == "card":
        hand = play.pending.get("hand") or []
        if move.card is None:
            raise Invalid("The match asks for a card from your hand, not a row.")
        if move.card not in hand:
            raise Invalid(f"Card {move.card} is not in your hand.")
        play.answer = move.card
    else:
        if move.row is None:
            raise Invalid("The match asks which row you take, not a card.")
        play.answer = move.row
    session.commit()
    return _out(session, play, user)


def wait_for_next(session: Session, play_id: int, decision: int, seconds: float) -> bool:
    """Wait up to ``seconds`` until play ``play_id`` asks a decision after ``decision``, or
    its match is over; whether it did.  Each look is a fresh read (no transaction kept)."""
    end = time.monotonic() + seconds
    while True:
        session.rollback()  # end the read: the next look sees the worker's commits
        row = session.execute(
            select(Play.decision, Play.asked, Play.answer, Match.status)
            .join(Match, Match.id == Play.match_id)
            .where(Play.id == play_id)
        ).first()
        if row is None or MatchStatus(row[3]) not in UNFINISHED:
            return True
        if row[0] > decision and row[1] is not None and row[2] is None:
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(NEXT_POLL)


def choices(
    session: Session, settings: Settings, user: User
) -> tuple[list[str], list[tuple[int, str]]]:
    """What a person may play against: the built-ins offered (``play_builtins``), and the
    newest active version of each enabled agent that accepts unrated matches (or is the
    user's own), by label."""
    newest = (
        select(AgentVersion.agent_id, func.max(AgentVersion.number).label("number"))
        .where(AgentVersion.status == VersionStatus.active)
        .group_by(AgentVersion.agent_id)
        .subquery()
    )
    rows = session.execute(
        select(AgentVersion.id, Agent.name, AgentVersion.number)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .join(
            newest,
            (newest.c.agent_id == AgentVersion.agent_id) & (newest.c.number == AgentVersion.number),
        )
        .where(
            Agent.disabled.is_(False),
            Agent.name != PERSON_AGENT,
            Agent.accepts_challenges.is_(True) | (Agent.owner_id == user.id),
        )
        .order_by(Agent.name)
        .limit(OPPONENTS_LISTED)
    ).all()
    versions = [(vid, version_label(name, number)) for vid, name, number in rows]
    return list(settings.play_builtins), versions
