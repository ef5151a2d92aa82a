"""Agents and their versions: reads (with what only the owner sees), uploads, source files,
rating history and how two agents fared when they met.

An agent belongs to the user who created it.  Only the owner uploads versions
(``upload_version``: the checks and caps, then ``storage.store_version``); everybody sees a
version's status, only the owner and admins why validation rejected it, and its source.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import ColumnElement, and_, case, func, select
from sqlalchemy.orm import Session, aliased

from .. import ratings, storage, workclasses
from ..models import (
    Agent,
    AgentVersion,
    Ladder,
    Match,
    MatchSeat,
    MatchStatus,
    RatingPoint,
    User,
    VersionStatus,
    utcnow,
)
from ..schemas import (
    AgentOut,
    AgentUpdate,
    HeadToHead,
    Meetings,
    Page,
    RatingPointOut,
    SourceFile,
    SourceOut,
    VersionOut,
)
from ..settings import Settings
from . import validations
from ._errors import (
    Conflict,
    Forbidden,
    Invalid,
    NotFound,
    TooMany,
    commit,
    get,
    refusal,
    require_free_name,
    require_owner,
)
from ._rows import Paging, Query, count, page_json, paged, paged_counted

# A source file larger than this is listed without its text.
MAX_SOURCE_TEXT = 256 * 1024
MAX_NAME = 40  # characters of an agent's name (``Agent.name``)


# --- agents ------------------------------------------------------------------------------


def agents_query() -> Query:
    """Agents as ``AgentOut`` columns: owner's name and version counts in the same query
    (correlated subqueries: each an index lookup on agent_versions.agent_id)."""
    v = AgentVersion
    mine = v.agent_id == Agent.id
    return select(
        Agent.id,
        Agent.name,
        Agent.owner_id,
        User.name.label("owner"),
        Agent.disabled,
        Agent.accepts_challenges,
        Agent.created_at,
        select(func.count(v.id)).where(mine).scalar_subquery().label("versions"),
        select(func.max(v.number)).where(mine).scalar_subquery().label("latest_version"),
        select(func.max(v.number))
        .where(mine, v.status == VersionStatus.active)
        .scalar_subquery()
        .label("latest_active_version"),
    ).join(User, User.id == Agent.owner_id)


def get_agent(session: Session, agent_id: int) -> AgentOut:
    row = session.execute(agents_query().where(Agent.id == agent_id)).first()
    if row is None:
        raise NotFound("no such agent")
    return AgentOut.model_validate(row, from_attributes=True)


def list_agents(session: Session, paging: Paging, owner_id: int | None = None) -> Page[AgentOut]:
    """All agents (or one user's), oldest first."""
    query = agents_query().order_by(Agent.id)
    if owner_id is not None:
        query = query.where(Agent.owner_id == owner_id)
    return paged(session, AgentOut, query, paging)


def ids_by_name(session: Session, names: Sequence[str]) -> dict[str, int]:
    """The ids of the agents named in ``names`` (exactly, as stored) that exist."""
    wanted = [n for n in names if 0 < len(n) <= MAX_NAME]
    if not wanted:
        return {}
    rows = session.execute(select(Agent.name, Agent.id).where(Agent.name.in_(wanted)))
    return {str(name): int(aid) for name, aid in rows}


def version_ids_by_label(session: Session, labels: Sequence[str]) -> dict[str, int]:
    """The ids of the versions named ``agent@number`` in ``labels`` that exist."""
    wanted: dict[tuple[str, int], str] = {}
    for label in labels:
        name, at, number = label.rpartition("@")
        if at and 0 < len(name) <= MAX_NAME and number.isdigit() and len(number) <= 9:
            wanted[(name, int(number))] = label
    if not wanted:
        return {}
    rows = session.execute(
        select(Agent.name, AgentVersion.number, AgentVersion.id)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(Agent.name.in_({name for name, _ in wanted}))
    )
    out: dict[str, int] = {}
    for agent, seq, vid in rows:
        found = wanted.get((str(agent), int(seq)))
        if found is not None:
            out[found] = int(vid)
    return out


def challengeable(session: Session, user: User, limit: int) -> list[str]:
    """The names of agents ``user`` may seat in a challenge (not disabled, with an active
    version, their own or accepting challenges), the most recently created first: the
    challenge form's suggestions."""
    active = (
        select(AgentVersion.id)
        .where(AgentVersion.agent_id == Agent.id, AgentVersion.status == VersionStatus.active)
        .exists()
    )
    query = (
        select(Agent.name)
        .where(
            Agent.disabled.is_(False),
            active,
            (Agent.owner_id == user.id) | Agent.accepts_challenges.is_(True),
        )
        .order_by(Agent.id.desc())
        .limit(limit)
    )
    return [str(name) for name in session.scalars(query)]


def create_agent(session: Session, name: str, user: User) -> AgentOut:
    """A new agent owned by ``user`` (names are unique across the arena)."""
    require_free_name(session, Agent, name, "agent")
    agent = Agent(name=name, owner_id=user.id)
    session.add(agent)
    commit(session, f"the agent name {name!r} is taken")
    return get_agent(session, agent.id)


def update_agent(session: Session, agent_id: int, body: AgentUpdate, user: User) -> AgentOut:
    """``disabled`` by admins only; ``accepts_challenges`` by the owner (or an admin)."""
    agent = get(session, Agent, agent_id, "agent")
    if body.disabled is not None and not user.is_admin:
        raise Forbidden("admins only")
    if body.accepts_challenges is not None:
        require_owner(agent, user)
        agent.accepts_challenges = body.accepts_challenges
    if body.disabled is not None:
        agent.disabled = body.disabled
    session.commit()
    return get_agent(session, agent.id)


# --- versions ----------------------------------------------------------------------------


def _private(agent: Agent, user: User | None) -> dict[str, bool]:
    """The validation context of a version's answer: the owner and admins see its reasons."""
    return {"private": user is not None and (user.is_admin or user.id == agent.owner_id)}


def _version(session: Session, agent: Agent, number: int) -> AgentVersion:
    version = session.scalar(
        select(AgentVersion).where(AgentVersion.agent_id == agent.id, AgentVersion.number == number)
    )
    if version is None:
        raise NotFound("no such version")
    return version


def list_versions(
    session: Session, agent_id: int, user: User | None, paging: Paging
) -> Page[VersionOut]:
    """An agent's versions, oldest first (``reason`` only for the owner and admins)."""
    agent = get(session, Agent, agent_id, "agent")
    query = (
        select(AgentVersion).where(AgentVersion.agent_id == agent.id).order_by(AgentVersion.number)
    )
    found = paged(session, VersionOut, query, paging, _private(agent, user))
    with_validation(session, found.items)
    return found


def get_version(session: Session, agent_id: int, number: int, user: User | None) -> VersionOut:
    agent = get(session, Agent, agent_id, "agent")
    version = _version(session, agent, number)
    out = VersionOut.model_validate(version, from_attributes=True, context=_private(agent, user))
    with_validation(session, [out])
    return out


def latest_uploads(session: Session, user: User, limit: int) -> list[VersionOut]:
    """The versions ``user`` uploaded last, newest first, as their owner sees them (the
    reasons), with their validation (the queue place, the validation match)."""
    rows = session.scalars(
        select(AgentVersion)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(Agent.owner_id == user.id)
        .order_by(AgentVersion.id.desc())
        .limit(limit)
    ).all()
    context = {"private": True}
    out = [VersionOut.model_validate(v, from_attributes=True, context=context) for v in rows]
    with_validation(session, out)
    return out


def with_validation(session: Session, versions: Sequence[VersionOut]) -> None:
    """Fill in the pending versions' places in the validation queue and the others'
    validation matches (``crud.validations``)."""
    pending = [v.id for v in versions if v.status is VersionStatus.pending]
    places = validations.queue_places(session, pending)
    decided = [v.id for v in versions if v.status is not VersionStatus.pending]
    watched = validations.validation_matches(session, decided)
    for v in versions:
        place = places.get(v.id)
        if place is not None:
            v.queue_place, v.queue_seconds = place.place, place.seconds
        v.validation_match_id = watched.get(v.id)


def upload_version(
    session: Session,
    settings: Settings,
    agent_id: int,
    user: User,
    upload: tuple[str, bytes],
    address: str | None,
) -> AgentVersion:
    """Store an upload (file name, bytes) as the agent's next version, pending validation
    (committed: the caller sends it to be validated).

    The owner only, for an enabled agent, within the day's caps per user and per address
    (``workclasses``); an upload identical to a version is a Conflict naming that version.
    """
    filename, data = upload
    agent = get(session, Agent, agent_id, "agent")
    require_owner(agent, user, admin_too=False)
    if agent.disabled:
        raise Conflict("this agent is disabled")
    since = utcnow() - timedelta(days=1)
    recent = session.scalar(
        select(func.count(AgentVersion.id))
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .where(Agent.owner_id == user.id, AgentVersion.created_at >= since)
    )
    if (recent or 0) >= settings.uploads_per_day:
        raise TooMany(f"at most {settings.uploads_per_day} uploads a day; try again later")
    # The same cap per client address, whatever the accounts behind it.
    refused = workclasses.upload_refusal(session, settings, address)
    if refused is not None:
        raise refusal(refused)
    # Storage addresses uploads by the sha256 of their bytes: a duplicate is found unpacked.
    existing = session.scalar(
        select(AgentVersion).where(
            AgentVersion.agent_id == agent.id,
            AgentVersion.sha256 == hashlib.sha256(data).hexdigest(),
        )
    )
    if existing is not None:
        detail = {
            "message": f"this upload is identical to version {existing.label}",
            "version_id": existing.id,
            "number": existing.number,
        }
        raise Conflict(detail)
    try:
        version = storage.store_version(session, settings, agent.id, filename, data)
    except storage.UploadError as exc:
        raise Invalid(str(exc)) from exc
    version.uploaded_from = address
    commit(session, "another upload to this agent was being stored; try again")
    return version


def source(
    session: Session, settings: Settings, agent_id: int, number: int, user: User
) -> SourceOut:
    """A version's files, ``bot.py`` first (the owner and admins only)."""
    agent = get(session, Agent, agent_id, "agent")
    require_owner(agent, user)
    version = _version(session, agent, number)
    root = storage.bot_path(settings, version.sha256)
    if not root.is_dir():
        raise NotFound("this version's files are gone")
    return SourceOut(
        version_id=version.id,
        label=version.label,
        filename=version.filename,
        sha256=version.sha256,
        files=_source_files(root),
    )


def _source_files(root: Path) -> list[SourceFile]:
    """The stored folder's files (storage admits regular files only), bot.py first."""
    out = []
    for p in root.rglob("*"):
        if p.is_symlink() or not p.is_file():  # never follow a link, whatever put it there
            continue
        size = p.stat().st_size
        text = p.read_bytes().decode("utf-8", "replace") if size <= MAX_SOURCE_TEXT else None
        out.append(SourceFile(path=p.relative_to(root).as_posix(), size=size, text=text))
    out.sort(key=lambda f: (f.path != storage.BOT_FILE, f.path))
    return out


# --- ratings and meetings ----------------------------------------------------------------


def _points(agent_id: int) -> Query:
    """The agent's rating points (every version's), oldest first.  A subquery of its version
    ids keeps the (version_id, ladder_id, id) index usable."""
    version_ids = select(AgentVersion.id).where(AgentVersion.agent_id == agent_id)
    return (
        select(
            RatingPoint.match_id,
            RatingPoint.ladder_id,
            RatingPoint.version_id,
            AgentVersion.number.label("version"),
            RatingPoint.mu,
            RatingPoint.sigma,
            ratings.conservative(RatingPoint.mu, RatingPoint.sigma).label("conservative"),
            RatingPoint.created_at,
        )
        .join(AgentVersion, AgentVersion.id == RatingPoint.version_id)
        .where(RatingPoint.version_id.in_(version_ids))
        .order_by(RatingPoint.id)
    )


def rating_history(
    session: Session, agent_id: int, paging: Paging, ladder_id: int | None = None
) -> Page[RatingPointOut]:
    """The agent's rating after each rated match (all versions), oldest first."""
    get(session, Agent, agent_id, "agent")
    query = _points(agent_id)
    if ladder_id is not None:
        query = query.where(RatingPoint.ladder_id == ladder_id)
    return paged_counted(session, RatingPointOut, query, paging)


# A rating point's JSON by the values of its row: a pure function of them, so kept without
# tags or invalidation (a rerate writes other values; SQLite may even reuse the ids), at most
# this many (then forgotten at once; about 520 bytes each, measured: 26 MB at most).  A rating
# history rendered again after its agent played shows the same points but one: they are
# neither validated nor serialized again.
_POINT_JSON: dict[tuple[Any, ...], str] = {}
POINT_JSON_MAX = 50_000
_point_out = TypeAdapter(RatingPointOut)


def _point_json(keys: list[str], values: tuple[Any, ...]) -> str:
    text = _POINT_JSON.get(values)
    if text is None:
        point = _point_out.validate_python(dict(zip(keys, values, strict=True)))
        text = _point_out.dump_json(point).decode()
        if len(_POINT_JSON) >= POINT_JSON_MAX:
            _POINT_JSON.clear()
        _POINT_JSON[values] = text
    return text


def rating_history_json(
    session: Session, agent_id: int, paging: Paging, ladder_id: int | None = None
) -> bytes:
    """``rating_history``'s JSON (the same bytes) in one query: the page's points with
    their total (``count(*) OVER ()``), each point's JSON taken by its values where it was
    written before.  The agent is looked up only when the page is empty (a 404, or none)."""
    query = _points(agent_id)
    if ladder_id is not None:
        query = query.where(RatingPoint.ladder_id == ladder_id)
    total_col = func.count().over().label("_total")
    result = session.execute(query.add_columns(total_col).limit(paging.limit).offset(paging.offset))
    keys = list(result.keys())[:-1]
    rows = result.all()
    if rows:  # the agent exists: its versions have points
        total = int(rows[0][-1])
    else:
        get(session, Agent, agent_id, "agent")
        total = 0 if paging.offset == 0 else count(session, query)
    return page_json([_point_json(keys, tuple(r)[:-1]) for r in rows], total, paging)


class Rival(Meetings):
    """An agent (b) this one (a) met in finished matches, and how they fared: a line of the
    agent page's head-to-head table."""

    agent_id: int
    agent: str


_rivals = TypeAdapter(list[Rival])

# The two seats of a meeting: the agent's, and another one at the same table.
_ME, _OTHER = aliased(MatchSeat, name="me"), aliased(MatchSeat, name="other")


def _count_if(condition: ColumnElement[bool]) -> ColumnElement[int]:
    return func.coalesce(func.sum(case((condition, 1), else_=0)), 0)


def _met(agent_id: int, *other: ColumnElement[bool]) -> Query:
    """How ``agent_id`` (a) fared against the seats matching ``other`` (b) in its finished
    matches: meetings, a ahead, b ahead, ties, and both sides' mean totals (``_ME`` and
    ``_OTHER`` are a's and b's seats)."""
    return (
        select(
            func.count().label("matches"),
            _count_if(_ME.score < _OTHER.score).label("a_ahead"),
            _count_if(_ME.score > _OTHER.score).label("b_ahead"),
            _count_if(_ME.score == _OTHER.score).label("ties"),
            func.avg(_ME.score).label("a_mean_score"),
            func.avg(_OTHER.score).label("b_mean_score"),
        )
        .select_from(Match)
        .join(_ME, and_(_ME.match_id == Match.id, _ME.agent_id == agent_id))
        .join(_OTHER, and_(_OTHER.match_id == Match.id, *other))
        .where(Match.status == MatchStatus.finished)
    )


def head_to_head(
    session: Session, agent_a: int, agent_b: int, ladder_id: int | None = None
) -> HeadToHead:
    """How two agents fared in the finished matches they played together (all ladders, or
    one): matches, a ahead of b, b ahead of a, ties, and each one's mean total there (None
    when they never met)."""
    query = _met(agent_a, _OTHER.agent_id == agent_b, _OTHER.id != _ME.id)
    if ladder_id is not None:
        query = query.where(Match.ladder_id == ladder_id)
    met = session.execute(query).one()
    ids = {"agent_a": agent_a, "agent_b": agent_b, "ladder_id": ladder_id}
    return HeadToHead.model_validate({**ids, **met._mapping})


def compare(session: Session, agent_a: int, agent_b: int, ladder_id: int | None) -> HeadToHead:
    """``head_to_head`` of two existing agents (in an existing ladder, if one is given)."""
    if agent_a == agent_b:
        raise Invalid("pick two different agents")
    get(session, Agent, agent_a, "agent")
    get(session, Agent, agent_b, "agent")
    if ladder_id is not None:
        get(session, Ladder, ladder_id, "ladder")
    return head_to_head(session, agent_a, agent_b, ladder_id)


def rivals(session: Session, agent_id: int, limit: int) -> list[Rival]:
    """The agents this one met most in finished matches, most met first."""
    met = func.count()
    rows = session.execute(
        _met(agent_id, _OTHER.agent_id != agent_id)
        .add_columns(_OTHER.agent_id, Agent.name.label("agent"))
        .join(Agent, Agent.id == _OTHER.agent_id)
        .group_by(_OTHER.agent_id, Agent.name)
        .order_by(met.desc(), _OTHER.agent_id)
        .limit(limit)
    ).all()
    return _rivals.validate_python(rows, from_attributes=True)


class RatingSeries(BaseModel):
    """An agent's rating in one ladder: how many rated matches it has there, and the latest
    of them (match, version number, mu, sigma), oldest first (the agent page's plots)."""

    ladder_id: int
    ladder: str
    total: int
    points: list[tuple[int, int, float, float]]


def rating_series(session: Session, agent_id: int, limit: int) -> list[RatingSeries]:
    """Per ladder the agent was rated in, by ladder id: its latest ``limit`` rating points."""
    mine = RatingPoint.version_id.in_(
        select(AgentVersion.id).where(AgentVersion.agent_id == agent_id)
    )
    ladders = session.execute(
        select(Ladder.id, Ladder.name, func.count(RatingPoint.id))
        .join(RatingPoint, RatingPoint.ladder_id == Ladder.id)
        .where(mine)
        .group_by(Ladder.id, Ladder.name)
        .order_by(Ladder.id)
    ).all()
    out = []
    for ladder_id, name, total in ladders:
        latest = session.execute(
            select(RatingPoint.match_id, AgentVersion.number, RatingPoint.mu, RatingPoint.sigma)
            .join(AgentVersion, AgentVersion.id == RatingPoint.version_id)
            .where(mine, RatingPoint.ladder_id == ladder_id)
            .order_by(RatingPoint.id.desc())
            .limit(limit)
        ).all()
        points = [(r.match_id, r.number, r.mu, r.sigma) for r in reversed(latest)]
        out.append(RatingSeries(ladder_id=ladder_id, ladder=name, total=total, points=points))
    return out


def rating_changes(
    session: Session, agent_id: int, match_ids: Sequence[int]
) -> dict[tuple[int, int], float]:
    """How much each rated match of ``match_ids`` moved the conservative rating (mu - 3
    sigma, what ranks) of the agent's version in it, by (match, version): the rating point
    of that match against the version's point before it in the ladder (or the ladder's
    initial rating).  One query, by the points' match index."""
    if not match_ids:
        return {}
    before = aliased(RatingPoint)
    previous = (
        select(ratings.conservative(before.mu, before.sigma))
        .where(
            before.version_id == RatingPoint.version_id,
            before.ladder_id == RatingPoint.ladder_id,
            before.id < RatingPoint.id,
        )
        .order_by(before.id.desc())
        .limit(1)
        .scalar_subquery()
    )
    rows = session.execute(
        select(
            RatingPoint.match_id,
            RatingPoint.version_id,
            ratings.conservative(RatingPoint.mu, RatingPoint.sigma).label("after"),
            func.coalesce(previous, ratings.conservative(Ladder.mu, Ladder.sigma)).label("before"),
        )
        .join(Ladder, Ladder.id == RatingPoint.ladder_id)
        .join(AgentVersion, AgentVersion.id == RatingPoint.version_id)
        .where(RatingPoint.match_id.in_(list(match_ids)), AgentVersion.agent_id == agent_id)
    ).all()
    return {(r.match_id, r.version_id): float(r.after - r.before) for r in rows}
