"""Ladders, their entries and leaderboards: what the API and the pages read, and the writes.

Every read of an entry goes through ``entries_query``: an entry with its agent, owner and
version and the current rating of that version in the ladder (the ladder's initial rating
until its first match).  The leaderboard ranks active entries of enabled agents by the
conservative rating ``ratings.conservative`` (mu - 3 sigma); a ladder's entries list them in
order of entry; an agent's page shows its entries in every ladder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from .. import ratings
from ..models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    LadderState,
    Rating,
    User,
    VersionStatus,
    version_label,
)
from ..schemas import (
    EntryCreate,
    EntryOut,
    LadderCreate,
    LadderOut,
    LeaderboardRow,
    Page,
    Timestamp,
)
from ._errors import Conflict, NotFound, commit, get, require_free_name, require_owner
from ._rows import (
    AGENT_FIELDS,
    Paging,
    Query,
    counted,
    page,
    page_json,
    paged,
    with_version,
)

if TYPE_CHECKING:
    from ..cache import Fragments


def _conservative(ladder: Ladder | None) -> Any:
    """The sort key as stored with the ratings (indexed), or the ladder's initial one before
    a version's first match (of ``ladder``, a parameter, or else of the joined ladders)."""
    of: Any = ladder if ladder is not None else Ladder
    return func.coalesce(Rating.conservative, ratings.conservative(of.mu, of.sigma))


# The figures kept per rating for the results view (``ratings.apply_match``): read with
# every entry, in the same row (null before the version's first match in the ladder).
_TALLIES = (
    Rating.last_played_at,
    Rating.previous_rank,
    Rating.tallied,
    Rating.heads,
    Rating.rounds.label("rounds"),
    Rating.faulted,
)


def figures(row: dict[str, Any]) -> dict[str, Any]:
    """An entry's derived figures from its row's: its label, win rate, mean heads per round
    and fault rate (None where nothing was counted yet)."""
    matches, rounds, tallied = row["matches"], row["rounds"], row["tallied"]
    return {
        "label": version_label(row["agent"], row["version"]),
        "win_rate": row["wins"] / matches if matches else None,
        "heads_per_round": row["heads"] / rounds if rounds else None,
        "fault_rate": row["faulted"] / tallied if tallied else None,
    }


def rank_change(previous: int | None, rank: int) -> int | None:
    """Places gained since just before the latest match (negative: lost)."""
    return None if previous is None else previous - rank


def entries_query(*columns: Any, ladder: Ladder | None = None) -> Query:
    """Ladder entries with their agent, owner, version and the current rating of the version
    each plays in its ladder (and ``columns``): the one query behind every list of entries.

    Given the ``ladder`` the entries are of, its initial rating is a parameter of the query
    and the ladders table is not joined (a smaller plan for the hot leaderboard); else each
    entry's ladder is joined (its name and state are columns then)."""
    of: Any = ladder if ladder is not None else Ladder  # where the initial rating comes from
    query = select(
        LadderEntry.agent_id,
        LadderEntry.version_id,
        AgentVersion.number.label("version"),
        *AGENT_FIELDS,
        func.coalesce(Rating.mu, of.mu).label("mu"),
        func.coalesce(Rating.sigma, of.sigma).label("sigma"),
        _conservative(ladder).label("conservative"),
        func.coalesce(Rating.matches, 0).label("matches"),
        func.coalesce(Rating.wins, 0).label("wins"),
        *_TALLIES,
        *columns,
    )
    if ladder is None:
        query = query.join(Ladder, Ladder.id == LadderEntry.ladder_id)
    return with_version(query, LadderEntry.version_id).outerjoin(
        Rating,
        (Rating.ladder_id == LadderEntry.ladder_id) & (Rating.version_id == LadderEntry.version_id),
    )


# What a list of entries shows besides the entrant and its rating.
_ENTRY = (LadderEntry.ladder_id, AgentVersion.label, LadderEntry.active, LadderEntry.entered_at)


# --- reads -------------------------------------------------------------------------------


def _ladders_query() -> Query:
    entries = (
        select(func.count(LadderEntry.id))
        .where(LadderEntry.ladder_id == Ladder.id, LadderEntry.active.is_(True))
        .scalar_subquery()
    )
    return select(*Ladder.__table__.columns, entries.label("entries"))


def list_ladders(session: Session, paging: Paging) -> Page[LadderOut]:
    return paged(session, LadderOut, _ladders_query().order_by(Ladder.id), paging)


def get_ladder(session: Session, ladder_id: int) -> LadderOut:
    row = session.execute(_ladders_query().where(Ladder.id == ladder_id)).first()
    if row is None:
        raise NotFound("no such ladder")
    return LadderOut.model_validate(row, from_attributes=True)


def entries(
    session: Session, ladder_id: int, paging: Paging, *, include_withdrawn: bool = False
) -> Page[EntryOut]:
    """The ladder's entries in order of entry (withdrawn ones on request)."""
    ladder = get(session, Ladder, ladder_id, "ladder")
    query = entries_query(*_ENTRY, ladder=ladder).where(LadderEntry.ladder_id == ladder_id)
    query = query.order_by(LadderEntry.id)
    if not include_withdrawn:
        query = query.where(LadderEntry.active.is_(True))
    return paged(session, EntryOut, query, paging)


def _board_query(ladder: Ladder) -> Query:
    """Active entries of enabled agents, best first: ranked by the conservative rating of the
    version each plays, earlier entries first among equals."""
    order = (_conservative(ladder).desc(), LadderEntry.id)
    return (
        entries_query(ladder=ladder)
        .where(
            LadderEntry.ladder_id == ladder.id,
            LadderEntry.active.is_(True),
            Agent.disabled.is_(False),
        )
        .order_by(*order)
    )


def _ranked(rows: Any, first: int) -> list[dict[str, Any]]:
    # The rank, the label and the win rate of the rows read alone: in SQL they would be
    # computed for every entry of the ladder (the total is counted over them all).
    out = []
    for rank, r in enumerate(rows, first):
        row = r._asdict()
        row.update(figures(row), rank=rank, rank_change=rank_change(r.previous_rank, rank))
        out.append(row)
    return out


def leaderboard(session: Session, ladder_id: int, paging: Paging) -> Page[LeaderboardRow]:
    """Active entries of enabled agents, best first (``_board_query``)."""
    ladder = get(session, Ladder, ladder_id, "ladder")
    rows, total = counted(session, _board_query(ladder), paging)
    return page(LeaderboardRow, _ranked(rows, paging.offset + 1), total, paging)


# What one row of a board held in memory costs, about (its JSON and the list's slot).
BOARD_ROW_BYTES = 400
# A leaderboard row's JSON after its rank (its first field), by the values of its row: a
# pure function of them, so kept without tags; at most this many (then forgotten at once).
_ROW_JSON: dict[tuple[Any, ...], str] = {}
ROW_JSON_MAX = 50_000
_UNRANKED = '{"rank":0,"rank_change":null,'


def _row_json(keys: list[str], values: tuple[Any, ...]) -> str:
    """A row's JSON after its rank: the rows of a board that one match did not change (all
    but four) are not validated and serialized again when the board is read again."""
    rest = _ROW_JSON.get(values)
    if rest is None:
        item = dict(zip(keys, values, strict=True))
        item.update(figures(item), rank=0, rank_change=None)
        text = LeaderboardRow.model_validate(item).model_dump_json()
        # ``rank`` and ``rank_change`` are the model's first fields: ``board`` writes them.
        assert text.startswith(_UNRANKED), text
        rest = text[len(_UNRANKED) :]
        if len(_ROW_JSON) >= ROW_JSON_MAX:
            _ROW_JSON.clear()
        _ROW_JSON[values] = rest
    return rest


def board(session: Session, ladder_id: int, parts: Fragments) -> list[str]:
    """The JSON of each row of the ladder's whole leaderboard, held in ``parts`` until the
    ladder's tag is announced: one finished match changes a few of its rows and the ranks
    between them, and every page of it is a slice (one query for the board, built once
    however many pages are rendered again, instead of one query per page)."""
    key, tags = f"board:{ladder_id}", frozenset({f"ladder:{ladder_id}"})
    held: list[str] | None = parts.get(key)
    if held is not None:
        return held
    with parts.building(key):  # one build at a time: the others wait and take it
        held = parts.get(key)
        if held is not None:
            return held
        since = parts.generation()  # before anything is read: ``put`` checks what came after
        ladder = get(session, Ladder, ladder_id, "ladder")
        result = session.execute(_board_query(ladder))
        keys = list(result.keys())
        previous = keys.index("previous_rank")
        built = []
        for rank, values in enumerate(result, 1):
            change = rank_change(values[previous], rank)
            head = f'{{"rank":{rank},"rank_change":{"null" if change is None else change},'
            built.append(head + _row_json(keys, tuple(values)))
        parts.put(key, built, tags, sum(map(len, built)) + BOARD_ROW_BYTES * len(built), since)
        return built


def leaderboard_json(session: Session, ladder_id: int, paging: Paging, parts: Fragments) -> bytes:
    """``leaderboard``'s JSON, a slice of the ladder's ``board``."""
    rows = board(session, ladder_id, parts)
    return page_json(rows[paging.offset : paging.offset + paging.limit], len(rows), paging)


class AgentEntry(BaseModel):
    """One of an agent's ladder entries with the current rating of the version it plays
    there (the agent's web page)."""

    ladder_id: int
    ladder: str
    state: LadderState
    active: bool
    version: int
    mu: float
    sigma: float
    conservative: float
    matches: int
    wins: int
    # The results view: its place on the board now (None: withdrawn, or the agent disabled),
    # the change since just before its latest match, and the figures the board shows.
    rank: int | None = None
    rank_change: int | None = None
    last_played_at: Timestamp | None = None
    heads_per_round: float | None = None
    fault_rate: float | None = None


_agent_entries = TypeAdapter(list[AgentEntry])


def _rank_of(session: Session, ladder_id: int, entry_id: int, key: float) -> int:
    """An entry's place on its ladder's board: 1 + the board's entries ahead of it (a higher
    conservative rating, or an equal one and entered earlier), counted in SQL."""
    ladder = get(session, Ladder, ladder_id, "ladder")
    own = _conservative(ladder)
    ahead = (
        select(func.count(LadderEntry.id))
        .join(Agent, Agent.id == LadderEntry.agent_id)
        .outerjoin(
            Rating,
            (Rating.ladder_id == LadderEntry.ladder_id)
            & (Rating.version_id == LadderEntry.version_id),
        )
        .where(
            LadderEntry.ladder_id == ladder_id,
            LadderEntry.active.is_(True),
            Agent.disabled.is_(False),
            (own > key) | ((own == key) & (LadderEntry.id < entry_id)),
        )
    )
    return 1 + (session.scalar(ahead) or 0)


def agent_entries(session: Session, agent_id: int) -> list[AgentEntry]:
    """The agent's entries (withdrawn ones too), by ladder, with its place on each board."""
    query = entries_query(
        *_ENTRY, Ladder.name.label("ladder"), Ladder.state, LadderEntry.id.label("entry_id")
    )
    rows = session.execute(query.where(LadderEntry.agent_id == agent_id).order_by(Ladder.id)).all()
    disabled = session.scalar(select(Agent.disabled).where(Agent.id == agent_id))
    out = []
    for r in rows:
        row = r._asdict()
        row.update(figures(row))
        if row["active"] and not disabled:
            rank = _rank_of(session, r.ladder_id, r.entry_id, r.conservative)
            row.update(rank=rank, rank_change=rank_change(r.previous_rank, rank))
        out.append(row)
    return _agent_entries.validate_python(out)


def warm_keys(session: Session, limit: int) -> list[str]:
    """The API pages most read, to render before anyone asks (the page cache's warming), at
    most ``limit``: every list of matches; for each ladder that is not closed, the ladder, its
    leaderboard pages (as the API's default page size and as the ladder web page reads them)
    and its latest matches; then, best first, the pages of its entered agents (the agent,
    its rating history, its matches)."""
    ladders = session.scalars(
        select(Ladder.id).where(Ladder.state != LadderState.closed).order_by(Ladder.id)
    ).all()
    entered: dict[int, list[int]] = {ladder: [] for ladder in ladders}
    rows = session.execute(
        entries_query()
        .with_only_columns(LadderEntry.ladder_id, LadderEntry.agent_id)
        .where(LadderEntry.ladder_id.in_(ladders), LadderEntry.active.is_(True))
        .order_by(
            LadderEntry.ladder_id,
            func.coalesce(Rating.conservative, -1e9).desc(),
            LadderEntry.agent_id,
        )
    )
    for ladder_id, agent_id in rows:
        entered[ladder_id].append(agent_id)
    keys = ["/api/matches"]
    for ladder, agents in entered.items():
        base = f"/api/ladders/{ladder}"
        keys += [base, f"{base}/leaderboard", f"{base}/leaderboard?limit=200"]
        keys.append(f"/api/matches?ladder_id={ladder}&limit=15")
        keys += [f"{base}/leaderboard?offset={k}" for k in range(50, len(agents), 50)]
    for agent in dict.fromkeys(a for agents in entered.values() for a in agents):
        keys += [f"/api/agents/{agent}", f"/api/agents/{agent}/ratings"]
        keys.append(f"/api/matches?agent_id={agent}")
    return keys[:limit]


# --- writes (each commits) ---------------------------------------------------------------


def create_ladder(session: Session, body: LadderCreate) -> LadderOut:
    """A new open ladder; the draw probability defaults to ``ratings.DEFAULT_DRAW_PROBABILITY``."""
    require_free_name(session, Ladder, body.name, "ladder")
    values = body.model_dump()
    if values["draw_probability"] is None:
        values["draw_probability"] = ratings.DEFAULT_DRAW_PROBABILITY
    ladder = Ladder(**values, state=LadderState.open)
    session.add(ladder)
    commit(session, f"the ladder name {body.name!r} is taken")
    return get_ladder(session, ladder.id)


def set_state(session: Session, ladder_id: int, state: LadderState) -> LadderOut:
    ladder = get(session, Ladder, ladder_id, "ladder")
    ladder.state = state
    session.commit()
    return get_ladder(session, ladder_id)


def _entry(session: Session, entry_id: int) -> EntryOut:
    row = session.execute(entries_query(*_ENTRY).where(LadderEntry.id == entry_id)).one()
    return EntryOut.model_validate(row, from_attributes=True)


def enter(session: Session, ladder_id: int, body: EntryCreate, user: User) -> tuple[EntryOut, bool]:
    """Enter the caller's agent with one of its active versions, or switch the version of its
    entry (earlier versions keep their ratings); the entry, and whether it is new."""
    ladder = get(session, Ladder, ladder_id, "ladder")
    agent = get(session, Agent, body.agent_id, "agent")
    require_owner(agent, user, admin_too=False)
    version = session.get(AgentVersion, body.version_id)
    if version is None or version.agent_id != agent.id:
        raise NotFound("no such version of this agent")
    if ladder.state == LadderState.closed:
        raise Conflict("this ladder is closed")
    if agent.disabled:
        raise Conflict("this agent is disabled")
    if version.status != VersionStatus.active:
        raise Conflict(f"version {version.label} is {version.status.value}, not active")
    entry = session.scalar(
        select(LadderEntry).where(
            LadderEntry.ladder_id == ladder.id, LadderEntry.agent_id == agent.id
        )
    )
    created = entry is None
    if entry is None:
        entry = LadderEntry(ladder_id=ladder.id, agent_id=agent.id, version_id=version.id)
        session.add(entry)
    else:
        entry.version_id = version.id
        entry.active = True
    commit(session, "this agent was being entered concurrently; try again")
    return _entry(session, entry.id), created


def withdraw(session: Session, ladder_id: int, agent_id: int, user: User) -> None:
    """Withdraw the caller's agent from the ladder; its ratings and matches stay."""
    get(session, Ladder, ladder_id, "ladder")
    require_owner(get(session, Agent, agent_id, "agent"), user, admin_too=False)
    entry = session.scalar(
        select(LadderEntry).where(
            LadderEntry.ladder_id == ladder_id,
            LadderEntry.agent_id == agent_id,
            LadderEntry.active.is_(True),
        )
    )
    if entry is None:
        raise NotFound("this agent is not entered here")
    entry.active = False
    session.commit()
