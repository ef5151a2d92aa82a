"""The API's request and response bodies (pydantic v2), kept apart from the ORM models.

Responses are validated from the rows the query layer reads (``crud``), with
``model_validate(row, from_attributes=True)``: each model lists what the API shows, so a
column it does not name (a user's token hash, a seat's stderr) never reaches an answer.  What
only some callers see is decided here, from the validation context the query layer passes:
``OwnerOnly`` fields (a version's rejection reason) need ``{"private": True}``, and a seed
not public yet (a match or league still being played) needs ``{"admin": True}``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Generic, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, model_validator

from .models import LadderState, LeagueState, MatchKind, MatchStatus, VersionStatus
from .security import NAME_PATTERN, TOKEN_NAME_PATTERN

T = TypeVar("T")

# Ids are 32-bit on both databases: anything beyond cannot exist, and SQLite would overflow
# on a 64-bit-plus integer, so the API refuses such values up front (422) instead of failing.
MAX_ID = 2**31 - 1
MAX_SEED = 2**63 - 1
MAX_OFFSET = 10**9
# Ladders and leagues are named by admins: a little more freedom than user and agent names.
TITLE_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9 ._-]{1,59}$"
MIN_PLAYERS, MAX_PLAYERS = 2, 10
MAX_TOKEN_DAYS = 3650


def as_utc(value: datetime) -> datetime:
    """SQLite hands back naive datetimes (stored as UTC): give them their zone back."""
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# Every timestamp in a response carries its offset (RFC 3339), whichever database stored it.
Timestamp = Annotated[datetime, AfterValidator(as_utc)]


def _context(info: ValidationInfo, key: str) -> bool:
    return bool(info.context and info.context.get(key))


def _owner_only(value: Any, info: ValidationInfo) -> Any:
    return value if _context(info, "private") else None


# A field shown to the agent's owner and admins only (validation context ``private``), else
# null: it may quote the bot, or say how the arena judged it.
OwnerOnly = AfterValidator(_owner_only)


def _seed_secret_until(over: Callable[[Any], bool]) -> Any:
    """A model's validator: its ``seed`` (which fixes the deals) shown to admins (validation
    context ``admin``) always, to everyone else once ``over(model)`` (its deals are then in
    the public logs anyway), else null."""

    def hide(model: Any, info: ValidationInfo) -> Any:
        if not over(model) and not _context(info, "admin"):
            model.seed = None
        return model

    return model_validator(mode="after")(hide)


class Page(BaseModel, Generic[T]):
    """One page of a list: ``items`` from ``offset`` on, ``total`` items in all."""

    items: list[T]
    total: int
    limit: int
    offset: int


class Message(BaseModel):
    """An error: ``detail`` is one sentence (FastAPI's own errors share the shape)."""

    detail: str


class DuplicateDetail(BaseModel):
    message: str
    version_id: int
    number: int


class DuplicateUpload(BaseModel):
    """409 on an upload identical to one of the agent's versions."""

    detail: DuplicateDetail


# --- users -----------------------------------------------------------------------------


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, examples=["alice"])
    # Needed when the arena registers by invitation (COW006_REGISTRATION=invite).
    invite: str | None = Field(default=None, min_length=1, max_length=100)


class UserPublic(BaseModel):
    id: int
    name: str
    is_admin: bool
    created_at: Timestamp


class UserCreated(UserPublic):
    """The new user with its API token: shown this once, stored only as a hash."""

    token: str
    # True when the arena approves new users (COW006_REGISTRATION=approval): the token is
    # refused (403) until an admin runs ``cow006 admin approve-user NAME``.
    pending: bool = False


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TOKEN_NAME_PATTERN, examples=["laptop"])
    # The token stops working this many days from now; without it, it works until revoked.
    expires_days: int | None = Field(default=None, ge=1, le=MAX_TOKEN_DAYS)


class TokenOut(BaseModel):
    """A token as its owner sees it in a list: never the secret, never its hash."""

    id: int
    name: str
    prefix: str | None  # the secret's first characters; null for a token made before names
    created_at: Timestamp
    last_used_at: Timestamp | None
    expires_at: Timestamp | None
    revoked_at: Timestamp | None
    current: bool  # the token this request was made with


class TokenCreated(TokenOut):
    """A new token with its secret: shown this once, stored only as a hash."""

    token: str


class TokenList(BaseModel):
    items: list[TokenOut]


# --- agents and versions -----------------------------------------------------------------


class AgentCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=NAME_PATTERN, examples=["my-bot"])


class AgentUpdate(BaseModel):
    """``disabled``: admins only; ``accepts_challenges``: the owner (or an admin)."""

    model_config = ConfigDict(extra="forbid")

    disabled: bool | None = None
    # False: other users may not seat the agent in their challenges (403 for them).
    accepts_challenges: bool | None = None

    @model_validator(mode="after")
    def _something(self) -> AgentUpdate:
        if self.disabled is None and self.accepts_challenges is None:
            raise ValueError("give disabled or accepts_challenges")
        return self


class AgentOut(BaseModel):
    id: int
    name: str
    owner_id: int
    owner: str
    disabled: bool
    accepts_challenges: bool = True  # may other users seat it in their challenges?
    created_at: Timestamp
    versions: int  # how many were uploaded
    latest_version: int | None  # number of the newest version
    latest_active_version: int | None  # number of the newest version that passed validation


class VersionOut(BaseModel):
    id: int
    agent_id: int
    number: int
    label: str  # agent@number
    sha256: str
    filename: str
    size: int
    unpacked_size: int
    files: int
    status: VersionStatus
    # Why validation rejected it: shown to the agent's owner and admins only, else null.
    reason: Annotated[str | None, OwnerOnly]
    created_at: Timestamp
    validated_at: Timestamp | None
    # Suspended from ladder tables because its matches kept failing (public: matchmaking
    # leaves it out); why, for the owner and admins only (it may quote the bot), else null.
    suspended: bool = False
    suspended_at: Timestamp | None = None
    suspended_reason: Annotated[str | None, OwnerOnly] = None
    # While pending: its place in the validation queue (1: next or being validated) and
    # about how many seconds until its verdict (``crud.validations``); else null.
    queue_place: int | None = None
    queue_seconds: int | None = None
    # The match its validation played (a replay at /matches/{id}), once it has one.
    validation_match_id: int | None = None


class SourceFile(BaseModel):
    path: str
    size: int
    # The file's text (undecodable bytes replaced); null for a file too large to show.
    text: str | None


class SourceOut(BaseModel):
    version_id: int
    label: str
    filename: str
    sha256: str
    files: list[SourceFile]


class RatingPointOut(BaseModel):
    match_id: int
    ladder_id: int
    version_id: int
    version: int  # the version's number
    mu: float
    sigma: float
    conservative: float
    created_at: Timestamp


# --- ladders -----------------------------------------------------------------------------


class LadderCreate(BaseModel):
    """A new ladder; the TrueSkill parameters default to the usual 25, 25/3, 25/6, 25/300."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TITLE_PATTERN, examples=["main"])
    players: int = Field(4, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    decision_time: float = Field(1.0, gt=0, le=60)
    time_bank: float = Field(10.0, ge=0, le=3600)
    mu: float = Field(25.0, ge=-1e6, le=1e6)
    sigma: float = Field(25.0 / 3, gt=0, le=1e6)
    beta: float = Field(25.0 / 6, gt=0, le=1e6)
    tau: float = Field(25.0 / 300, ge=0, le=1e6)
    # None means ratings.DEFAULT_DRAW_PROBABILITY.
    draw_probability: float | None = Field(None, ge=0, lt=1)
    # Seat versions of one owner at one table (off: they could collude).
    allow_same_owner: bool = False
    # CPU time per bot, in cores: its sandbox slot's cgroup quota (docs/sandbox.md).
    cpu_share: float = Field(1.0, ge=0.05, le=64)


class LadderUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: LadderState


class LadderOut(BaseModel):
    id: int
    name: str
    state: LadderState
    players: int
    decision_time: float
    time_bank: float
    mu: float
    sigma: float
    beta: float
    tau: float
    draw_probability: float
    allow_same_owner: bool  # one owner's versions may share a table
    cpu_share: float  # cores of CPU time per bot (its sandbox slot's quota)
    created_at: Timestamp
    entries: int  # agents entered now


class EntryCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    agent_id: int = Field(ge=1, le=MAX_ID)
    version_id: int = Field(ge=1, le=MAX_ID)


class _InLadder(BaseModel):
    ladder_id: int


class _Ranked(BaseModel):
    rank: int


class _Entrant(BaseModel):
    """An agent entered with one of its versions.  (The models below take these fields after
    their first: a pydantic model's fields come in the order of its bases, last base first.)"""

    agent_id: int
    agent: str
    owner_id: int
    owner: str
    version_id: int
    version: int  # the version's number
    label: str  # agent@number


class EntryOut(_Entrant, _InLadder):
    active: bool
    entered_at: Timestamp


class _BoardRanked(BaseModel):
    rank: int
    # previous_rank - rank: places gained (negative: lost) since just before the version's
    # latest match; null before its first match here (or when it was not on the board then).
    rank_change: int | None = None


class LeaderboardRow(_Entrant, _BoardRanked):
    mu: float
    sigma: float
    conservative: float  # mu - 3 sigma: the sort key
    matches: int
    wins: int
    win_rate: float | None  # wins / matches; null before the first match
    # Added for the results view (additive; each kept per rating when a match is rated):
    previous_rank: int | None = None  # the rank just before its latest match
    last_played_at: Timestamp | None = None  # its latest rated match here
    heads_per_round: float | None = None  # mean penalty heads per round over its matches
    fault_rate: float | None = None  # the share of its matches in which it faulted


# --- leagues -----------------------------------------------------------------------------


class LeagueCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=TITLE_PATTERN, examples=["spring-2025"])
    entrants: list[int] = Field(min_length=MIN_PLAYERS, max_length=1000)
    table_size: int = Field(4, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    rounds: int = Field(1, ge=1, le=100)
    decision_time: float = Field(1.0, gt=0, le=60)
    time_bank: float = Field(10.0, ge=0, le=3600)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _check(self) -> LeagueCreate:
        if any(not 1 <= v <= MAX_ID for v in self.entrants):
            raise ValueError("entrants are version ids")
        if len(set(self.entrants)) != len(self.entrants):
            raise ValueError("an entrant is listed twice")
        if len(self.entrants) < self.table_size:
            raise ValueError("fewer entrants than seats at a table")
        return self


class LeagueEntrantOut(BaseModel):
    version_id: int
    label: str
    agent_id: int
    owner_id: int
    owner: str


class LeagueProgress(BaseModel):
    round: int  # the league round being played (0 before the start); rounds are made one by one
    matches: int  # matches created so far
    finished: int
    failed: int
    queued: int
    running: int


class LeagueOut(BaseModel):
    id: int
    name: str
    state: LeagueState
    table_size: int
    rounds: int
    decision_time: float
    time_bank: float
    # Every league match's seed derives from it: null until the league has finished, except
    # for admins (as a match's seed).
    seed: int | None
    created_at: Timestamp
    entrants: list[LeagueEntrantOut]
    progress: LeagueProgress

    _seed_shown = _seed_secret_until(lambda league: league.state == LeagueState.finished)


class StandingRow(BaseModel):
    """One entrant's line in a league table (``leagues.standings``)."""

    position: int
    version_id: int
    agent_id: int
    agent: str
    number: int
    label: str
    matches: int
    wins: int
    mean_rank: float | None  # the sort key: lower is better
    mean_score: float | None
    mu: float  # TrueSkill over the league's matches alone (tau = 0)
    sigma: float
    conservative: float


class Standings(BaseModel):
    league_id: int
    state: LeagueState
    final: bool  # True once every match of the league has been played
    standings: list[StandingRow]


class Meetings(BaseModel):
    """The finished matches agent a played with agent b: who finished ahead (fewer heads in
    that match), and each one's mean total there (null when they never met)."""

    matches: int
    a_ahead: int
    b_ahead: int
    ties: int
    a_mean_score: float | None
    b_mean_score: float | None


class _Pair(BaseModel):
    agent_a: int
    agent_b: int
    ladder_id: int | None


class HeadToHead(Meetings, _Pair):
    """Finished matches two agents played together: who finished ahead (fewer heads)."""


# --- matches and challenges ----------------------------------------------------------------


class ChallengeCreate(BaseModel):
    """Either ``version_ids`` or ``agent_ids`` (each agent's newest active version)."""

    model_config = ConfigDict(extra="forbid")

    version_ids: list[int] | None = Field(None, min_length=MIN_PLAYERS, max_length=MAX_PLAYERS)
    agent_ids: list[int] | None = Field(None, min_length=MIN_PLAYERS, max_length=MAX_PLAYERS)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _check(self) -> ChallengeCreate:
        given = [ids for ids in (self.version_ids, self.agent_ids) if ids is not None]
        if len(given) != 1:
            raise ValueError("give either version_ids or agent_ids")
        ids = given[0]
        if any(not 1 <= i <= MAX_ID for i in ids):
            raise ValueError("ids are positive integers")
        if len(set(ids)) != len(ids):
            raise ValueError("a participant is listed twice")
        return self


class SeatOut(BaseModel):
    seat: int
    version_id: int
    label: str  # agent@number
    agent_id: int
    agent: str
    owner_id: int
    owner: str
    score: int | None
    rank: int | None
    faults: int
    forfeited: bool


class MatchOut(BaseModel):
    id: int
    kind: MatchKind
    status: MatchStatus
    rated: bool
    ladder_id: int | None
    league_id: int | None
    league_round: int | None
    requested_by: int | None
    # The match seed (it fixes the deals): null until the match has finished, except for
    # admins; a spectator or a bot's owner must not compute the hands of a match being played.
    seed: int | None
    created_at: Timestamp
    started_at: Timestamp | None
    finished_at: Timestamp | None
    duration: float | None  # seconds from start to finish
    scores: list[Any] | None
    ranks: list[Any] | None
    faults: list[Any] | None
    error: str | None
    participants: list[SeatOut]

    _seed_shown = _seed_secret_until(lambda match: match.status == MatchStatus.finished)


class StderrOut(BaseModel):
    match_id: int
    seat: int
    label: str
    stderr: str | None


# --- evaluation runs ---------------------------------------------------------------------


class EvaluationCreate(BaseModel):
    """Version ``version_id`` (B), optionally with ``baseline_id`` (A) on the same plan,
    against a pool: a ladder's ``top`` entries (``ladder_id``; the seats of its tables and
    its limits), or the named ``pool`` versions (``players`` seats)."""

    model_config = ConfigDict(extra="forbid")

    version_id: int = Field(ge=1, le=MAX_ID)
    baseline_id: int | None = Field(None, ge=1, le=MAX_ID)
    ladder_id: int | None = Field(None, ge=1, le=MAX_ID)
    top: int | None = Field(None, ge=1, le=50)
    pool: list[int] | None = Field(None, min_length=1, max_length=50)
    players: int | None = Field(None, ge=MIN_PLAYERS, le=MAX_PLAYERS)
    matches: int = Field(20, ge=2, le=1000)
    seed: int | None = Field(None, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _check(self) -> EvaluationCreate:
        if (self.ladder_id is None) == (self.pool is None):
            raise ValueError("give either ladder_id (with top) or pool")
        if self.pool is not None and any(not 1 <= i <= MAX_ID for i in self.pool):
            raise ValueError("pool holds version ids")
        if self.pool is not None and len(set(self.pool)) != len(self.pool):
            raise ValueError("a version is in the pool twice")
        if self.baseline_id is not None and self.baseline_id == self.version_id:
            raise ValueError("the baseline is another version")
        return self


class IntervalOut(BaseModel):
    """A mean and its 95 % interval (None where there are too few matches)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int


class SubjectOut(BaseModel):
    """How one version of the run did: over its finished matches."""

    version_id: int
    label: str
    finished: int
    mean_place: float | None
    heads_per_round: float | None
    win_rate: float | None
    faults: int


class ComparisonOut(BaseModel):
    """B - A, per figure: paired (slot by slot) and unpaired (Welch), 95 % intervals."""

    place: IntervalOut
    heads_per_round: IntervalOut
    place_unpaired: IntervalOut
    heads_per_round_unpaired: IntervalOut


class EvaluationOut(BaseModel):
    id: int
    owner_id: int
    ladder_id: int | None
    pool: list[int]
    players: int
    matches: int  # slots: matches per version
    seed: int
    decision_time: float
    time_bank: float
    status: str  # queued, running, finished
    queued: int
    running: int
    finished: int
    failed: int
    decision: str | None
    version: SubjectOut
    baseline: SubjectOut | None
    comparison: ComparisonOut | None
    created_at: Timestamp
    decided_at: Timestamp | None


class PromoteBody(BaseModel):
    """The ladders to enter the version in (default: the run's ladder and every ladder its
    agent is entered in)."""

    model_config = ConfigDict(extra="forbid")

    ladder_ids: list[int] | None = Field(None, min_length=1, max_length=50)
