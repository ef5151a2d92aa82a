"""What a worker does: play a queued match, or validate a new version, with real bot processes.

The HTTP API never calls this module: it queues work through an executor
(``cow006_platform.executor``), which calls ``run_match`` / ``validate_version`` on a worker
thread, or sends a task to the Celery workers (``cow006_workers.tasks``), which compose the
steps of ``run_match`` with a lease: ``claim_match`` (queued -> running, under the row lock),
``play`` (the heartbeat renews the lease with ``renew_lease`` meanwhile), ``finish_claim``
(the result counts only while the run's attempt is still the match's: the fencing token).
Every step opens its own short transaction around the slow part, which runs with no
transaction open: a match takes seconds to minutes.

Bots always run in the sandbox unless the operator set ``sandbox = "off"`` (fail closed: a
sandbox that is required but does not work fails the match with the sandbox's own sentence
and runs nothing).  Every bot process of a match is started before the match begins, so their
start-ups overlap.
"""

from __future__ import annotations

import logging
import os
import random
import socket
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from cow006 import sandbox as cow_sandbox
from cow006 import spec as cow_spec
from cow006.agent import Agent
from cow006.host import Limits, RemoteAgent
from cow006.runner import Match as Runner
from cow006.untrusted import clean

from . import fairness, leagues, locks, results, storage
from .db import session_scope
from .models import Agent as AgentRow
from .models import (
    AgentVersion,
    Ladder,
    League,
    Match,
    MatchKind,
    MatchSeat,
    MatchStatus,
    VersionStatus,
    utcnow,
)
from .settings import Settings

logger = logging.getLogger(__name__)

STDERR_TAIL = 4000  # characters of a rejected bot's stderr shown in its rejection reason
MAX_REASON = 8000  # characters of a rejection reason kept
# What stands in for a bot's text when the database refused to store it even cleaned.
REFUSED_TEXT = "[this text could not be stored]"
MAX_LISTED_FAULTS = 10


@dataclass
class _Plan:
    """What playing a match needs, read from the database before it starts."""

    seed: int
    paths: list[str]
    labels: list[str]
    limits: Limits
    cpu: float | None = None  # cores per bot (the ladder's cpu_share); None: the default


def worker_name() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"[:120]


def error_sentence(exc: BaseException) -> str:
    """One line for an unexpected error (the traceback goes to the log, not the user)."""
    text = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return f"The match could not be run ({what})."


def sandbox_for(settings: Settings) -> cow_sandbox.Sandbox | None:
    """The sandbox bots run in (None: bare processes, only with ``sandbox = "off"``).

    Raises ``cow006.sandbox.SandboxError`` (one sentence) when it is required and missing.
    """
    return cow_sandbox.resolve_mode(None if settings.sandbox != "off" else False)


def _limits(session: Session, match: Match) -> Limits:
    source: Ladder | League | None = None
    if match.league_id is not None:
        source = session.get(League, match.league_id)
    elif match.ladder_id is not None:
        source = session.get(Ladder, match.ladder_id)
    return limits_for(source)


def limits_for(source: Ladder | League | None) -> Limits:
    """The bots' limits at a table of ``source`` (a validation table copies its ladder's)."""
    if source is None:  # a challenge outside any ladder: the SDK's defaults
        return Limits()
    return Limits(decision=source.decision_time, bank=source.time_bank)


def _plan(session: Session, settings: Settings, match: Match) -> _Plan:
    paths: list[str] = []
    labels: list[str] = []
    # One query for every seat's version and agent name (a worker runs this per match).
    seats = session.execute(
        select(AgentVersion.sha256, AgentVersion.number, AgentRow.name)
        .join(MatchSeat, MatchSeat.version_id == AgentVersion.id)
        .join(AgentRow, AgentRow.id == AgentVersion.agent_id)
        .where(MatchSeat.match_id == match.id)
        .order_by(MatchSeat.seat)
    ).all()
    for sha256, number, agent_name in seats:
        label = f"{agent_name}@{number}"
        path = storage.bot_path(settings, sha256)
        if not (path / storage.BOT_FILE).is_file():
            raise FileNotFoundError(f"the files of {label} are missing from storage")
        paths.append(str(path))
        labels.append(label)
    ladder = session.get(Ladder, match.ladder_id) if match.ladder_id is not None else None
    cpu = ladder.cpu_share if ladder is not None else None
    return _Plan(match.seed, paths, labels, _limits(session, match), cpu)


def _stderr_of(agent: Agent) -> str | None:
    if not isinstance(agent, RemoteAgent):
        return None
    text = agent.stderr
    if agent.stderr_dropped:
        text += f"\n[{agent.stderr_dropped} more bytes of stderr were dropped]"
    return text


def play(
    specs: Sequence[str],
    labels: Sequence[str],
    seed: int,
    limits: Limits,
    sb: cow_sandbox.Sandbox | None,
    on_start: Callable[[list[Agent]], None] | None = None,
    cpu: float | None = None,
) -> tuple[dict[str, Any], list[str | None]]:
    """Play one match; (its log, each seat's stderr: None for in-process builtins).

    ``on_start`` is called with the seated agents once their processes are started: a worker
    keeps them to kill the match if it loses its lease.  ``cpu`` (cores, a ladder's
    ``cpu_share``) replaces the sandbox's CPU quota per bot.
    """
    if sb is not None and cpu is not None:
        sb = replace(sb, cpu=cpu)
    # cow006.spec.agents starts every bot process before the match asks the first for its
    # hello, and closes them all whatever happens.
    with cow_spec.agents(specs, limits, labels, sandbox=sb) as seated:
        if on_start is not None:
            on_start(seated)
        log = Runner(seated, seed, names=list(labels)).run()
    log["sandbox"] = cow_sandbox.log_entry(sb)
    return log, [_stderr_of(a) for a in seated]


def _fail(
    session_factory: sessionmaker[Session], match_id: int, error: str, blame: int | None = None
) -> None:
    try:
        with session_scope(session_factory) as session:
            results.fail_match(session, match_id, error, blame=blame)
    except Exception:  # the database itself is gone: nothing more to do than say so
        logger.exception("cannot record the failure of match %s", match_id)


def aware(moment: datetime | None) -> datetime | None:
    """A timestamp read back from the database, in UTC (SQLite returns them naive)."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)


@dataclass
class Claim:
    """A match taken by one run.  ``attempt`` (the match's ``attempts`` after the claim) is
    the fencing token: only the run whose attempt is still the match's may store a result."""

    match_id: int
    attempt: int
    worker: str
    plan: _Plan
    lease_expires_at: datetime | None


def claim_match(
    session_factory: sessionmaker[Session],
    settings: Settings,
    match_id: int,
    *,
    worker: str | None = None,
    lease_seconds: float | None = None,
    max_attempts: int | None = None,
) -> Claim | None:
    """Mark a match running for this run and read what playing it needs; None when there is
    nothing to do.

    Without ``lease_seconds`` (the in-process executors) any unfinished match is taken.
    With it (the workers), only a queued match, or a running one whose lease has run out
    (its worker died), is taken, under the row lock, with ``lease_expires_at`` set; a match
    that is finished, failed, or held by a live lease is left alone.  A match already tried
    ``max_attempts`` times is failed instead (it keeps killing its workers).
    Raises (FileNotFoundError, ...) for a match that cannot be played; nothing is changed.
    """
    with session_scope(session_factory) as session:
        match = locks.lock(session, Match, match_id)
        if match is None:
            raise ValueError(f"no match {match_id}")
        if match.status is MatchStatus.finished:
            return None
        now = utcnow()
        if lease_seconds is not None:
            if match.status is MatchStatus.failed:
                return None
            expires = aware(match.lease_expires_at)
            if match.status is MatchStatus.running and expires is not None and expires > now:
                return None  # another worker holds it and is alive
            if max_attempts is not None and (match.attempts or 0) >= max_attempts:
                # A bot may be what kills its workers (nobody can tell which seat): the
                # failure counts against every version at the table (``suspension``).
                results.fail_match(
                    session,
                    match_id,
                    f"The match was given up after {match.attempts} attempts: every run of it "
                    "ended with its worker.",
                    blame=settings.suspend_after,
                )
                return None
        plan = _plan(session, settings, match)
        match.status = MatchStatus.running
        match.started_at = now
        match.attempts = (match.attempts or 0) + 1
        match.worker = worker or worker_name()
        match.error = None
        match.lease_expires_at = (
            now + timedelta(seconds=lease_seconds) if lease_seconds is not None else None
        )
        return Claim(match_id, match.attempts, match.worker, plan, match.lease_expires_at)


def renew_lease(
    session_factory: sessionmaker[Session], claim: Claim, lease_seconds: float
) -> datetime | None:
    """Extend the claim's lease (the heartbeat); None if the match is no longer this run's
    (taken over after the lease ran out, requeued by the reaper, or settled)."""
    expires = utcnow() + timedelta(seconds=lease_seconds)
    with session_scope(session_factory) as session:
        done = session.execute(
            update(Match)
            .where(
                Match.id == claim.match_id,
                Match.attempts == claim.attempt,
                Match.status == MatchStatus.running,
            )
            .values(lease_expires_at=expires)
            .execution_options(synchronize_session=False)
        )
        renewed = getattr(done, "rowcount", 0) == 1
    if renewed:
        claim.lease_expires_at = expires
        return expires
    return None


def refused(exc: BaseException) -> bool:
    """Whether a database error refused the data (a value it cannot hold), as opposed to the
    database being away (a lost connection: try again later)."""
    if not isinstance(exc, DBAPIError) or isinstance(exc, OperationalError | InterfaceError):
        return False
    return not exc.connection_invalidated


def scrub_result(
    log: dict[str, Any], stderr: list[str | None]
) -> tuple[dict[str, Any], list[str | None]]:
    """The result with every piece of bot text (fault details, stderr) replaced by
    ``REFUSED_TEXT``: what is stored when the database refused the result as it was."""
    log = dict(log)
    log["faults"] = [
        {**f, "detail": REFUSED_TEXT} if isinstance(f, dict) and f.get("detail") else f
        for f in log.get("faults", [])
    ]
    return log, [None if err is None else REFUSED_TEXT for err in stderr]


def finish_claim(
    session_factory: sessionmaker[Session],
    claim: Claim,
    log: dict[str, Any],
    stderr: list[str | None],
) -> bool:
    """Store the result of a claimed run (``results.finish_match``), exactly once; False if
    it was not stored: the match is settled, or another run has taken it over since.

    A failure to store a result is never the match's fault: if the database refuses the
    result (a value it cannot hold, which cleaning should have made impossible), it is stored
    again with the bots' text replaced (``scrub_result``), not played again.  A database
    that is away raises (DBAPIError): the caller leaves the match for a later run.
    """
    try:
        return _store_claim(session_factory, claim, log, stderr)
    except DBAPIError as exc:
        if not refused(exc):
            raise
        logger.warning(
            "match %s: the database refused its result (%s); stored with the bots' text replaced",
            claim.match_id,
            type(exc.orig).__name__ if exc.orig is not None else type(exc).__name__,
        )
        return _store_claim(session_factory, claim, *scrub_result(log, stderr))


def _store_claim(
    session_factory: sessionmaker[Session],
    claim: Claim,
    log: dict[str, Any],
    stderr: list[str | None],
) -> bool:
    with session_scope(session_factory) as session:
        match = locks.lock(session, Match, claim.match_id)
        if match is None or match.status is MatchStatus.finished:
            return False
        if match.attempts != claim.attempt:
            return False  # a later run owns the match now: its result is the one to keep
        return results.finish_match(session, claim.match_id, log, stderr)


def fail_claim(
    session_factory: sessionmaker[Session], claim: Claim, error: str, *, blame: int | None = None
) -> bool:
    """Fail the match of a claimed run, unless another run has taken it over since
    (``blame``: see ``results.fail_match``)."""
    try:
        with session_scope(session_factory) as session:
            match = locks.lock(session, Match, claim.match_id)
            if match is None or match.attempts != claim.attempt:
                return False
            return results.fail_match(session, claim.match_id, error, blame=blame)
    except Exception:  # the database itself is gone: nothing more to do than say so
        logger.exception("cannot record the failure of match %s", claim.match_id)
        return False


def run_match(session_factory: sessionmaker[Session], settings: Settings, match_id: int) -> None:
    """Play a queued match and store its result (``results.finish_match``), or fail it.

    A match already finished is left alone (a duplicate task).  Never raises for the match's
    own problems: they end up in ``Match.error`` as one sentence.  This is the in-process
    executors' path (no lease); the workers compose the same steps with a lease
    (``claim_match``, ``play``, ``finish_claim``).  An error while the bots play may be a
    bot's: it counts against the table's versions (``suspension``).
    """
    playing = False
    try:
        with session_scope(session_factory) as session:
            match = session.get(Match, match_id)
            if match is None:
                raise ValueError(f"no match {match_id}")
            if match.status is MatchStatus.finished:
                return
            _plan(session, settings, match)  # missing files fail the match before anything
        try:
            sb = sandbox_for(settings)
        except cow_sandbox.SandboxError as exc:
            _fail(session_factory, match_id, str(exc))
            return
        claim = claim_match(session_factory, settings, match_id)
        if claim is None:
            return
        plan = claim.plan
        playing = True
        log, stderr = play(plan.paths, plan.labels, plan.seed, plan.limits, sb, cpu=plan.cpu)
        playing = False
        finish_claim(session_factory, claim, log, stderr)
    except Exception as exc:
        logger.exception("match %s could not be run", match_id)
        _fail(
            session_factory,
            match_id,
            error_sentence(exc),
            blame=settings.suspend_after if playing else None,
        )


def after_match(session_factory: sessionmaker[Session], match_id: int) -> list[int]:
    """What follows a match: for a league match, the next round once the current one is
    settled.  Returns the ids of the matches created (for the executor to run)."""
    with session_scope(session_factory) as session:
        match = session.get(Match, match_id)
        if match is None or match.kind is not MatchKind.league or match.league_id is None:
            return []
        league = session.get(League, match.league_id)
        if league is None:
            return []
        created = leagues.start_league(session, league)
        leagues.refresh_league_state(session, league)
        return [m.id for m in created]


def rejection_reason(faults: Sequence[dict[str, Any]], stderr: str | None) -> str:
    """Why a version is rejected, for its owner: what went wrong, the faults, its stderr
    (where a failed import leaves its traceback)."""
    kinds = {f.get("kind") for f in faults}
    if "startup" in kinds:
        head = "The bot did not start"
    elif "crash" in kinds:
        head = "The bot crashed during its validation match"
    elif "timeout" in kinds:
        head = "The bot timed out during its validation match"
    elif kinds & {"illegal_card", "illegal_row"}:
        head = "The bot played illegal moves in its validation match"
    else:
        head = "The bot's replies broke the protocol in its validation match"
    lines = [f"{head} ({len(faults)} fault{'s' if len(faults) != 1 else ''}):"]
    for f in faults[:MAX_LISTED_FAULTS]:
        if f.get("kind") == "startup":  # before the first deal: no round or turn to name
            lines.append(f"- startup: {f.get('detail', '')}")
            continue
        where = f"round {int(f.get('round', 0)) + 1}, turn {int(f.get('turn', 0)) + 1}"
        lines.append(f"- {where}: {f.get('kind')}: {f.get('detail', '')}")
    if len(faults) > MAX_LISTED_FAULTS:
        lines.append(f"- ... and {len(faults) - MAX_LISTED_FAULTS} more")
    text = (stderr or "").strip()
    if text:
        if len(text) > STDERR_TAIL:
            text = "[...]\n" + text[-STDERR_TAIL:]
        lines += ["", "Its stderr:", text]
    return "\n".join(lines)


def validate_version(
    session_factory: sessionmaker[Session], settings: Settings, version_id: int
) -> None:
    """Play a sandboxed smoke match of the version against ``settings.validation_opponents``
    and make it active (no fault at its seat) or rejected (with the reason for its owner).
    The table looks like a ladder's to the bot (``fairness``): the ladder's seats and limits,
    a random seat and seed, the opponents run as bot processes.

    The smoke match is not stored: it is a check, not a result.  Problems of the platform
    (no sandbox, files missing) raise and leave the version pending, to be validated again.
    """
    with session_scope(session_factory) as session:
        version = session.get(AgentVersion, version_id)
        if version is None:
            raise ValueError(f"no agent version {version_id}")
        label, sha = version.label, version.sha256
        # The table copies the ladder the version would play in (fairness: the bot cannot
        # tell its validation from a ladder match).
        ladder = fairness.validation_ladder(session, version.agent_id)
        players = fairness.validation_players(ladder, settings)
        limits = (
            limits_for(ladder)
            if ladder is not None
            else Limits(decision=settings.validation_decision, bank=settings.validation_bank)
        )
    path = storage.bot_path(settings, sha)
    if not (path / storage.BOT_FILE).is_file():
        raise FileNotFoundError(f"the files of {label} are missing from storage")
    sb = sandbox_for(settings)
    if not _count_validation(session_factory, settings, version_id):
        return
    # A random seat and seed (never the upload's digest, which names its storage folder: the
    # bot could compute every hand), built-in opponents run as bot processes: see fairness.
    rng = random.SystemRandom()
    opponents = fairness.opponent_specs(settings, players - 1, rng)
    seat = rng.randrange(players)
    specs = fairness.opponent_paths(settings, opponents)
    specs.insert(seat, str(Path(path)))
    labels = [*opponents]
    labels.insert(seat, label)
    seed = rng.getrandbits(63)
    log, stderr = play(specs, labels, seed, limits, sb)
    faults = [f for f in log.get("faults", []) if f.get("seat") == seat]
    with session_scope(session_factory) as session:
        version = locks.lock(session, AgentVersion, version_id)
        if version is None:
            return
        if faults:
            version.status = VersionStatus.rejected
            # Fault details and stderr are the bot's text: cleaned (again) before storing.
            version.reason = clean(rejection_reason(faults, stderr[seat]), MAX_REASON)
        else:
            version.status = VersionStatus.active
            version.reason = None
        version.validated_at = utcnow()


def _count_validation(
    session_factory: sessionmaker[Session], settings: Settings, version_id: int
) -> bool:
    """Count one more validation run of the version, in its own transaction, before the
    match: a run that never ends (it takes its worker down) still counts.  A pending version
    whose validation was started ``max_validations`` times without a verdict is rejected
    with a reason instead (False: nothing to play): re-validation is not forever."""
    with session_scope(session_factory) as session:
        version = locks.lock(session, AgentVersion, version_id)
        if version is None:
            return False
        tried = version.validation_attempts or 0
        if version.status is VersionStatus.pending and tried >= settings.max_validations:
            version.status = VersionStatus.rejected
            version.reason = (
                f"The bot's validation was started {tried} times and never came to a verdict: "
                "each run ended with an error or took its worker down."
            )
            version.validated_at = utcnow()
            logger.warning("version %s: rejected after %d validation runs", version_id, tried)
            return False
        version.validation_attempts = tried + 1
    return True
