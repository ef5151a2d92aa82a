"""The data model (SQLAlchemy 2, typed ``Mapped``): the platform's source of truth.

Users own agents; an agent has numbered versions (uploaded code); ladders rate the version
each entrant has made active there; leagues play a fixed field of frozen versions; every
match, whatever its kind, has one seat per participating version.  Logs are stored apart
from the match rows (compressed) so that listing matches stays cheap.
"""

from __future__ import annotations

import enum
from datetime import UTC, datetime
from typing import Any, ClassVar, overload

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ColumnElement,
    DateTime,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
    cast,
)
from sqlalchemy.ext.hybrid import hybrid_property
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def utcnow() -> datetime:
    return datetime.now(UTC)


@overload
def version_label(agent: str, number: int) -> str: ...
@overload
def version_label(agent: Any, number: Any) -> ColumnElement[str]: ...
def version_label(agent: Any, number: Any) -> str | ColumnElement[str]:
    """How every answer and message names a version: ``agent@number``.  The one definition,
    for values and for columns alike (``AgentVersion.label`` is it in Python and in SQL)."""
    if isinstance(number, int):
        return f"{agent}@{number}"
    return agent + "@" + cast(number, String)


class Base(DeclarativeBase):
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSON, list[Any]: JSON}


def _enum(cls: type[enum.Enum]) -> Enum:
    # Stored as plain strings (no native PostgreSQL enum), so adding a state is a code change.
    return Enum(cls, native_enum=False, length=16, values_callable=lambda e: [m.value for m in e])


# The states and kinds of rows.  Each member's value is its name (``enum.auto`` of a StrEnum),
# stored as that string (``_enum``).
VersionStatus = enum.StrEnum("VersionStatus", "pending active rejected")
LadderState = enum.StrEnum("LadderState", "open paused closed")
LeagueState = enum.StrEnum("LeagueState", "scheduled running finished")
# A ``validation`` match is the smoke match a version played to be validated, kept (unrated,
# one seat: the built-in opponents are no versions) so its owner can watch it.
MatchKind = enum.StrEnum("MatchKind", "ladder league challenge evaluation validation")
EvaluationDecision = enum.StrEnum("EvaluationDecision", "promoted discarded")
MatchStatus = enum.StrEnum("MatchStatus", "queued running finished failed")


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # sha256 of the token the user was created with, kept for the record: what authenticates
    # is ``api_tokens`` (revocable, several per user), which holds that same token too.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # A disabled user's tokens are refused (``cow006 admin disable-user``); a pending one
    # registered under COW006_REGISTRATION=approval and waits for ``cow006 admin approve-user``.
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    pending: Mapped[bool] = mapped_column(Boolean, default=False)

    agents: Mapped[list[Agent]] = relationship(back_populates="owner")
    tokens: Mapped[list[ApiToken]] = relationship(
        back_populates="user", order_by="ApiToken.id", passive_deletes=True
    )


class ApiToken(Base):
    """One named API token of a user: its sha256 is stored, the secret is shown once.

    Revoking sets ``revoked_at`` (the row stays, for the owner's list and the record); every
    request looks its token up here, so a revocation holds at once in every API process.
    """

    __tablename__ = "api_tokens"
    __table_args__ = (Index("ix_api_tokens_user", "user_id", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(40))
    # The secret's first characters, shown in lists so the owner can tell tokens apart; None
    # for a token made before tokens were named (migration 0005 moved it from users.token_hash).
    prefix: Mapped[str | None] = mapped_column(String(12), default=None)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # Written at most once a minute per token (security.TOUCH_SECONDS): a hint, not an audit.
    last_used_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)

    user: Mapped[User] = relationship(back_populates="tokens")


class WebSession(Base):
    """A browser's signed-in session (``cow006_platform.websession``): the sha256 of the
    secret in its HttpOnly cookie, the API token it was opened with (revoking that token, or
    its expiry, ends the session too) and when it ends.  Signing out deletes the row."""

    __tablename__ = "web_sessions"
    __table_args__ = (
        Index("ix_web_sessions_user", "user_id"),
        Index("ix_web_sessions_expires", "expires_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    token_id: Mapped[int] = mapped_column(ForeignKey("api_tokens.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))


class Invite(Base):
    """An invite code (COW006_REGISTRATION=invite): stored hashed, good for ``uses_left``
    more registrations until ``expires_at``."""

    __tablename__ = "invites"

    id: Mapped[int] = mapped_column(primary_key=True)
    code_hash: Mapped[str] = mapped_column(String(64), unique=True)
    prefix: Mapped[str] = mapped_column(String(12))
    uses: Mapped[int] = mapped_column(Integer)
    uses_left: Mapped[int] = mapped_column(Integer)
    note: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class RateCounter(Base):
    """A fixed-window counter shared by every API process (``cow006_platform.throttle``):
    registrations and failed sign-ins per client address."""

    __tablename__ = "rate_counters"

    # "KIND:ADDRESS:WINDOW", e.g. "register:203.0.113.7:493912".
    bucket: Mapped[str] = mapped_column(String(120), primary_key=True)
    count: Mapped[int] = mapped_column(Integer, default=0)
    # When the window ends (Unix seconds): rows past it are deleted as new ones are written.
    expires: Mapped[int] = mapped_column(BigInteger, index=True)


class Agent(Base):
    __tablename__ = "agents"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(40), unique=True)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    # Its owner's choice: may other users seat it in their challenges (work classes, 0006)?
    accepts_challenges: Mapped[bool] = mapped_column(Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    owner: Mapped[User] = relationship(back_populates="agents")
    versions: Mapped[list[AgentVersion]] = relationship(
        back_populates="agent", order_by="AgentVersion.number"
    )


class AgentVersion(Base):
    __tablename__ = "agent_versions"
    __table_args__ = (
        UniqueConstraint("agent_id", "number"),
        UniqueConstraint("agent_id", "sha256"),
        Index("ix_agent_versions_uploaded_from", "uploaded_from", "created_at"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, ... per agent
    sha256: Mapped[str] = mapped_column(String(64))
    filename: Mapped[str] = mapped_column(String(255))  # as uploaded: bot.py or NAME.zip
    size: Mapped[int] = mapped_column(Integer)  # bytes uploaded
    unpacked_size: Mapped[int] = mapped_column(Integer)
    files: Mapped[int] = mapped_column(Integer)
    status: Mapped[VersionStatus] = mapped_column(
        _enum(VersionStatus), default=VersionStatus.pending
    )
    # Why a version was rejected (import error with traceback, timeout, illegal moves): owner only.
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    validated_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    # Bot-caused failures (cow006_platform.suspension): matches of this version that failed in
    # a row (a finished one resets it), validation runs started (bounded: re-validation is not
    # forever), and the suspension from ladder tables with its reason (owner and admins only).
    consecutive_failures: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    validation_attempts: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    suspended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    suspended_reason: Mapped[str | None] = mapped_column(Text, default=None)
    # The client address (an IPv6 one as its /64) it was uploaded from: per-address caps.
    uploaded_from: Mapped[str | None] = mapped_column(String(64), default=None)

    agent: Mapped[Agent] = relationship(back_populates="versions")

    @hybrid_property
    def label(self) -> str:
        """How every answer and message names a version (``version_label``)."""
        return version_label(self.agent.name, self.number)

    @label.inplace.expression
    @classmethod
    def _label_sql(cls) -> ColumnElement[str]:
        # In SQL, for a query that joins the version's agent.
        return version_label(Agent.name, cls.number)

    @property
    def suspended(self) -> bool:
        """Left out of ladder tables (``suspension``) until an admin lifts it."""
        return self.suspended_at is not None


class Ladder(Base):
    __tablename__ = "ladders"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(60), unique=True)
    state: Mapped[LadderState] = mapped_column(_enum(LadderState), default=LadderState.open)
    players: Mapped[int] = mapped_column(Integer, default=4)
    decision_time: Mapped[float] = mapped_column(Float, default=1.0)
    time_bank: Mapped[float] = mapped_column(Float, default=10.0)
    mu: Mapped[float] = mapped_column(Float, default=25.0)
    sigma: Mapped[float] = mapped_column(Float, default=25.0 / 3)
    beta: Mapped[float] = mapped_column(Float, default=25.0 / 6)
    tau: Mapped[float] = mapped_column(Float, default=25.0 / 300)
    # ratings.DEFAULT_DRAW_PROBABILITY: the measured tie rate of two players' totals (a test
    # keeps the two equal; docs/ratings.md says how it was measured).
    draw_probability: Mapped[float] = mapped_column(Float, default=0.011)
    # Whether one owner's versions may sit at one table of this ladder.  Off by default: two
    # bots of one owner at a table could collude (feed each other heads, share the deal).
    allow_same_owner: Mapped[bool] = mapped_column(Boolean, default=False, server_default="0")
    # The CPU time each bot of this ladder's matches may use, in cores (its sandbox slot's
    # cgroup quota, ``cow006.sandbox.Sandbox.cpu``): its children compete with it alone.
    cpu_share: Mapped[float] = mapped_column(Float, default=1.0, server_default="1.0")
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class LadderEntry(Base):
    """An agent entered in a ladder, with the version its owner made active there."""

    __tablename__ = "ladder_entries"
    __table_args__ = (UniqueConstraint("ladder_id", "agent_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"), index=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id"))
    active: Mapped[bool] = mapped_column(Boolean, default=True)  # False once withdrawn
    entered_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    agent: Mapped[Agent] = relationship()
    version: Mapped[AgentVersion] = relationship()


class Rating(Base):
    """TrueSkill rating of one agent version in one ladder (or league)."""

    __tablename__ = "ratings"
    __table_args__ = (
        UniqueConstraint("ladder_id", "version_id"),
        Index("ix_ratings_ladder_conservative", "ladder_id", "conservative"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id", ondelete="CASCADE"))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    conservative: Mapped[float] = mapped_column(Float)  # mu - 3 sigma, indexed for the leaderboard
    matches: Mapped[int] = mapped_column(Integer, default=0)
    wins: Mapped[int] = mapped_column(Integer, default=0)
    last_played_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    # Kept by ``ratings.apply_match`` for the leaderboard (never aggregated per request): the
    # rated matches whose rounds are known, the heads and rounds over them, how many of them
    # it faulted in, and its entry's rank just before its latest match (None: not on the
    # board then).
    tallied: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    heads: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    rounds: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    faulted: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    previous_rank: Mapped[int | None] = mapped_column(Integer, default=None)

    version: Mapped[AgentVersion] = relationship()


class RatingPoint(Base):
    """One point of rating history: a version's rating right after one match."""

    __tablename__ = "rating_points"
    __table_args__ = (
        Index("ix_rating_points_version", "version_id", "ladder_id", "id"),
        # A match's rating changes (an agent's results: ``crud.agents.rating_changes``).
        Index("ix_rating_points_match", "match_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    ladder_id: Mapped[int] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id", ondelete="CASCADE"))
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    mu: Mapped[float] = mapped_column(Float)
    sigma: Mapped[float] = mapped_column(Float)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class League(Base):
    __tablename__ = "leagues"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(60), unique=True)
    state: Mapped[LeagueState] = mapped_column(_enum(LeagueState), default=LeagueState.scheduled)
    table_size: Mapped[int] = mapped_column(Integer, default=4)
    rounds: Mapped[int] = mapped_column(Integer, default=1)
    decision_time: Mapped[float] = mapped_column(Float, default=1.0)
    time_bank: Mapped[float] = mapped_column(Float, default=10.0)
    seed: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    entrants: Mapped[list[LeagueEntrant]] = relationship(
        back_populates="league", order_by="LeagueEntrant.id"
    )


class LeagueEntrant(Base):
    """A league's entrant: an agent version frozen at entry."""

    __tablename__ = "league_entrants"
    __table_args__ = (UniqueConstraint("league_id", "version_id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    league_id: Mapped[int] = mapped_column(ForeignKey("leagues.id", ondelete="CASCADE"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id"))

    league: Mapped[League] = relationship(back_populates="entrants")
    version: Mapped[AgentVersion] = relationship()


class Evaluation(Base):
    """An evaluation run: version B (and optionally A, on the same plan) against a pool.

    Its matches (kind ``evaluation``, unrated, held until ``workclasses`` admits them) carry
    ``evaluation_id`` and ``evaluation_slot``: the slot's seed, seats and opponents are the
    same for A and B.  The limits are copied from the ladder the pool came from (or the
    SDK's defaults) when the run is made.
    """

    __tablename__ = "evaluations"

    id: Mapped[int] = mapped_column(primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id"))
    baseline_id: Mapped[int | None] = mapped_column(ForeignKey("agent_versions.id"), default=None)
    ladder_id: Mapped[int | None] = mapped_column(
        ForeignKey("ladders.id", ondelete="SET NULL"), default=None
    )
    pool: Mapped[list[Any]] = mapped_column(JSON)  # the opponents' version ids
    players: Mapped[int] = mapped_column(Integer)
    slots: Mapped[int] = mapped_column(Integer)  # matches per subject
    seed: Mapped[int] = mapped_column(BigInteger)  # the plan's seed (the slots' seeds)
    decision_time: Mapped[float] = mapped_column(Float)
    time_bank: Mapped[float] = mapped_column(Float)
    decision: Mapped[EvaluationDecision | None] = mapped_column(
        _enum(EvaluationDecision), default=None
    )
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    decided_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)


class Match(Base):
    __tablename__ = "matches"
    __table_args__ = (
        Index("ix_matches_ladder_status", "ladder_id", "status", "id"),
        Index("ix_matches_status_id", "status", "id"),
        # A league's schedule and progress (API pages, leagues.start_league).
        Index("ix_matches_league", "league_id", "league_round", "id"),
        # The per-user hourly cap on challenges (POST /api/challenges).
        Index("ix_matches_requested_by", "requested_by", "created_at"),
        # The per-address caps on challenges, and the challenges' share of recent match time
        # (cow006_platform.workclasses).
        Index("ix_matches_requested_from", "requested_from", "created_at"),
        Index("ix_matches_started_at", "started_at"),
        Index("ix_matches_evaluation", "evaluation_id", "evaluation_slot"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[MatchKind] = mapped_column(_enum(MatchKind))
    ladder_id: Mapped[int | None] = mapped_column(ForeignKey("ladders.id", ondelete="CASCADE"))
    league_id: Mapped[int | None] = mapped_column(ForeignKey("leagues.id", ondelete="CASCADE"))
    league_round: Mapped[int | None] = mapped_column(Integer, default=None)
    # A plain reference (SQLite keeps no ON DELETE for a column added to a table): a run is
    # never deleted while its matches are kept.
    evaluation_id: Mapped[int | None] = mapped_column(ForeignKey("evaluations.id"), default=None)
    evaluation_slot: Mapped[int | None] = mapped_column(Integer, default=None)
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    # The client address a challenge was requested from (an IPv6 one as its /64).
    requested_from: Mapped[str | None] = mapped_column(String(64), default=None)
    # A challenge waiting in the database for admission to the broker (workclasses): the
    # reaper does not send it; ``release_challenges`` does, a few at a time.
    held: Mapped[bool] = mapped_column(Boolean, default=False)
    rated: Mapped[bool] = mapped_column(Boolean, default=True)
    seed: Mapped[int] = mapped_column(BigInteger)
    status: Mapped[MatchStatus] = mapped_column(_enum(MatchStatus), default=MatchStatus.queued)
    # Set in the same transaction as status=finished: the rating update happened exactly once.
    rating_applied: Mapped[bool] = mapped_column(Boolean, default=False)
    scores: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    ranks: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    faults: Mapped[list[Any] | None] = mapped_column(JSON, default=None)
    rounds: Mapped[int | None] = mapped_column(Integer, default=None)  # once finished
    error: Mapped[str | None] = mapped_column(Text, default=None)
    # Execution bookkeeping (the workers' lease; attempts counts runs started and is the
    # fencing token of a run).  lease_expires_at: for a running match, when its worker's lease
    # runs out; for a queued one, when the reaper sends its task again (cow006_workers).
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker: Mapped[str | None] = mapped_column(String(120), default=None)
    lease_expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), default=None)

    seats: Mapped[list[MatchSeat]] = relationship(back_populates="match", order_by="MatchSeat.seat")


class MatchSeat(Base):
    __tablename__ = "match_seats"
    __table_args__ = (
        UniqueConstraint("match_id", "seat"),
        Index("ix_match_seats_version", "version_id", "match_id"),
        Index("ix_match_seats_agent", "agent_id", "match_id"),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    match_id: Mapped[int] = mapped_column(ForeignKey("matches.id", ondelete="CASCADE"))
    seat: Mapped[int] = mapped_column(Integer)
    version_id: Mapped[int] = mapped_column(ForeignKey("agent_versions.id"))
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id"))  # denormalised for filters
    score: Mapped[int | None] = mapped_column(Integer, default=None)
    rank: Mapped[int | None] = mapped_column(Integer, default=None)
    faults: Mapped[int] = mapped_column(Integer, default=0)
    forfeited: Mapped[bool] = mapped_column(Boolean, default=False)
    # The bot's stderr for this match (bounded by the host): readable by the agent's owner alone.
    stderr: Mapped[str | None] = mapped_column(Text, default=None)

    match: Mapped[Match] = relationship(back_populates="seats")
    version: Mapped[AgentVersion] = relationship()


class MatchLog(Base):
    """The cow006-match-1 log of a finished match, gzip-compressed JSON."""

    __tablename__ = "match_logs"

    match_id: Mapped[int] = mapped_column(
        ForeignKey("matches.id", ondelete="CASCADE"), primary_key=True
    )
    body: Mapped[bytes] = mapped_column(LargeBinary)


class Change(Base):
    """One entry of the change feed: a tag naming public data that a commit changed.

    Written in the committing transaction (``cache.track_changes``) and read by every API
    process, which drops the cached answers that depend on the tag (``cache.PublicCache``).
    The reaper deletes old entries.
    """

    __tablename__ = "changes"

    # BIGINT on PostgreSQL; INTEGER on SQLite, where only that type is an autoincrementing rowid.
    id: Mapped[int] = mapped_column(
        BigInteger().with_variant(Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    tag: Mapped[str] = mapped_column(String(64))
