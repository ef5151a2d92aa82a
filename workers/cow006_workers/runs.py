"""A match run under a lease, from its claim to its stored result, and what follows it.

``run_match`` is the one way a match is played, by a Celery worker (``tasks``) and by the
embedded executors (``embedded``) alike:

1. ``lease.claim_match``: the match is taken for this run (see ``lease``).  A match that is
   settled, or held by a live lease, is left alone: the run just returns (a duplicate task).
2. ``play.play`` with the bots sandboxed, while a ``lease.Heartbeat`` renews the lease; a
   lost lease kills the match's bots and drops its result.
3. ``finish_claim``: the result is stored (and a ladder match rated,
   ``cow006_platform.results.store_result``) only while this run's attempt is still the
   match's, and only once.
4. what follows: held challenges admitted to a slot that came free
   (``cow006_platform.workclasses``), for a finished ladder match a refill of the ladder's
   queue once a quarter of it is missing (the scheduler's tick is the backstop, and places
   newcomers), and the next round of a league once its current one is settled.  For a
   finished match the first two are done in the transaction that stores it (``FollowUp``,
   in a savepoint), the league's round right after; otherwise ``follow_up`` does them.

Steps 3 and 4 (``settle``) may run on a worker process's write-behind thread
(``writebehind``) while its main thread plays the next match.

Each run logs one line on the ``cow006.runs`` logger when it starts and ends, with the
wall-clock time: a journal of who ran what when (the tests check that two runs of one match
never overlap).  Every step opens its own short transaction; the slow part (the match, for
seconds to minutes) runs with no transaction open.
"""

from __future__ import annotations

import functools
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent
from cow006 import sandbox as cow_sandbox
from cow006_platform import locks, results, workclasses
from cow006_platform.db import session_scope
from cow006_platform.models import Match, MatchKind
from cow006_platform.settings import Settings

from . import scheduler
from .human import HumanSeat
from .lease import Claim, Heartbeat, claim_match
from .play import Result, play, sandbox_for

if TYPE_CHECKING:
    from .writebehind import Writer

logger = logging.getLogger(__name__)
runs = logging.getLogger("cow006.runs")
# One structured line per match settled by this worker (finished or failed): with
# COW006_LOG_FORMAT=json, its extras (match_id, status, duration, faults) are JSON fields.
settled = logging.getLogger("cow006.matches")

# What stands in for a bot's text when the database refused to store it even cleaned.
REFUSED_TEXT = "[this text could not be stored]"

SendMatches = Callable[[list[int]], None]


@dataclass
class Outcome:
    """What one ``run_match`` did: ``status`` is one word, ``follow_ups`` the matches it
    created or admitted (a league's next round, a ladder's refill, held challenges), sent."""

    status: str
    follow_ups: list[int] = field(default_factory=list)


def error_sentence(exc: BaseException) -> str:
    """One line for an unexpected error (the traceback goes to the log, not the user)."""
    text = str(exc).strip().splitlines()
    what = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
    return f"The match could not be run ({what})."


# -- storing what a run played ------------------------------------------------------------------


def refused(exc: BaseException) -> bool:
    """Whether a database error refused the data (a value it cannot hold), as opposed to the
    database being away (a lost connection: try again later)."""
    if not isinstance(exc, DBAPIError) or isinstance(exc, OperationalError | InterfaceError):
        return False
    return not exc.connection_invalidated


def scrub_result(log: Mapping[str, Any], stderr: list[str | None]) -> Result:
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
    log: Mapping[str, Any],
    stderr: list[str | None],
    then: Callable[[Session, Match], None] | None = None,
) -> bool:
    """Store the result of a claimed run (``results.finish_match``), exactly once; False if
    it was not stored: the match is settled, or another run has taken it over since.
    ``then(session, match)`` runs in the same transaction once the result is in (what
    follows the match, ``FollowUp``), before the commit: again if the result is stored
    again.

    A failure to store a result is never the match's fault: if the database refuses the
    result (a value it cannot hold, which cleaning should have made impossible), it is stored
    again with the bots' text replaced (``scrub_result``), not played again.  A database
    that is away raises (DBAPIError): the caller leaves the match for a later run.
    """
    try:
        return _store_claim(session_factory, claim, (log, stderr), then)
    except DBAPIError as exc:
        if not refused(exc):
            raise
        logger.warning(
            "match %s: the database refused its result (%s); stored with the bots' text replaced",
            claim.match_id,
            type(exc.orig).__name__ if exc.orig is not None else type(exc).__name__,
        )
        return _store_claim(session_factory, claim, scrub_result(log, stderr), then)


def _store_claim(
    session_factory: sessionmaker[Session],
    claim: Claim,
    result: Result,
    then: Callable[[Session, Match], None] | None,
) -> bool:
    log, stderr = result
    with session_scope(session_factory) as session:
        # Only while this run's attempt is still the match's: a later run owns it otherwise,
        # and its result is the one to keep.
        match = results.store_result(session, claim.match_id, log, stderr, attempt=claim.attempt)
        if match is not None and then is not None:
            then(session, match)
        return match is not None


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


def _fail_unclaimed(session_factory: sessionmaker[Session], match_id: int, error: str) -> None:
    try:
        with session_scope(session_factory) as session:
            results.fail_match(session, match_id, error)
    except Exception:  # the database itself is gone: nothing more to do than say so
        logger.exception("cannot record the failure of match %s", match_id)


def _settled(
    match_id: int, status: str, started: float, faults: int = 0, error: str | None = None
) -> None:
    duration = round(time.monotonic() - started, 3)
    settled.log(
        logging.INFO if status == "finished" else logging.WARNING,
        "match %d %s in %.3f s (%d faults)",
        match_id,
        status,
        duration,
        faults,
        extra={
            "match_id": match_id,
            "status": status,
            "duration": duration,
            "faults": faults,
            "error": error,
        },
    )


# -- a run ---------------------------------------------------------------------------------------


def run_match(
    session_factory: sessionmaker[Session],
    settings: Settings,
    match_id: int,
    send_matches: SendMatches | None,
    *,
    worker: str | None = None,
    rng: random.Random | None = None,
    writer: Writer | None = None,
) -> Outcome:
    """Run one match under a lease (see the module), then ``follow_up`` with
    ``send_matches`` (None: this match alone, its follow-ups left to the scheduler's tick).

    With a ``writer`` (``writebehind``), what follows a played match (storing its result,
    the follow-ups) is handed to it and the outcome is ``played``: the caller may play the
    next match meanwhile.  Without one, all of it is done here.

    Never raises for the match's problems: they end up in ``Match.error`` as one sentence.
    Database errors are logged and the match left as it is: the reaper sends it again.
    """
    ran = _run(session_factory, settings, match_id, worker)
    if isinstance(ran, Played):
        if writer is not None:
            writer.submit(
                functools.partial(settle, session_factory, settings, ran, send_matches, rng)
            )
            return Outcome("played")
        return settle(session_factory, settings, ran, send_matches, rng)
    return _followed(session_factory, settings, match_id, ran, send_matches, rng)


@dataclass
class Played:
    """A match played under a claim, its result not stored yet."""

    claim: Claim
    log: Mapping[str, Any]
    stderr: list[str | None]
    started: float  # time.monotonic() when its run began


def settle(
    session_factory: sessionmaker[Session],
    settings: Settings,
    played: Played,
    send_matches: SendMatches | None,
    rng: random.Random | None = None,
) -> Outcome:
    """Store a played match's result (``finish_claim``) with what follows it
    (``FollowUp``) in the same transaction, and send the matches that created."""
    if send_matches is None:  # this match alone: its follow-ups are left to the scheduler
        return _store(session_factory, played)
    follow = FollowUp(settings, rng)
    outcome = _store(session_factory, played, follow)
    if outcome.status != "finished":
        return _followed(
            session_factory, settings, played.claim.match_id, outcome, send_matches, rng
        )
    if follow.league_id is not None:  # a league's next round: rare, in its own transaction
        try:
            follow.created += scheduler.advance_league(session_factory, follow.league_id)
        except Exception:  # the scheduler's next tick does the same work
            logger.exception("the work after match %s failed", played.claim.match_id)
    if follow.created:
        send_matches(follow.created)
    outcome.follow_ups = follow.created
    return outcome


class FollowUp:
    """What follows a finished match, done in the transaction that stored it (``then`` of
    ``finish_claim``): a ladder's refill once a quarter of its queue is missing, held
    challenges admitted to the slot that came free; a league's next round is left to the
    caller (``league_id``).  They run in a savepoint, so that their failure (logged; the
    scheduler's tick does the same work) never loses the stored result.  One transaction
    for the result and its follow-ups: a finished match pays one commit, not four, and the
    ladder's lock, taken to rate it, is the one its refill needs."""

    def __init__(self, settings: Settings, rng: random.Random | None) -> None:
        self.settings = settings
        self.rng = rng
        self.created: list[int] = []
        self.league_id: int | None = None

    def __call__(self, session: Session, match: Match) -> None:
        # What an earlier call made went with its transaction (a result stored again with
        # the bots' text replaced calls this again): only this call's work counts.
        self.created = []
        self.league_id = match.league_id if match.kind is MatchKind.league else None
        ladder_id = match.ladder_id if match.kind is MatchKind.ladder and match.rated else None
        created: list[int] = []
        try:
            with session.begin_nested():
                if ladder_id is not None:
                    created += self._refill(session, ladder_id)
                created += workclasses.admit_challenges(session, self.settings)
        except Exception:  # the scheduler's next tick does the same work
            logger.exception("the work after match %s failed", match.id)
            return
        self.created = created

    def _refill(self, session: Session, ladder_id: int) -> list[int]:
        depth = self.settings.ladder_queue_depth
        if not scheduler.refill_due(session, ladder_id, depth, refill_batch(depth)):
            return []
        return scheduler.fill_ladder(session, ladder_id, depth, self.rng)


def _followed(
    session_factory: sessionmaker[Session],
    settings: Settings,
    match_id: int,
    outcome: Outcome,
    send_matches: SendMatches | None,
    rng: random.Random | None,
) -> Outcome:
    if send_matches is not None and outcome.status in ("finished", "duplicate", "failed"):
        outcome.follow_ups = follow_up(
            session_factory,
            settings,
            match_id,
            send_matches,
            # A failed ladder match is not replaced at once: a table that fails fast must
            # not spin the workers (the tick refills at its own pace).
            refill=outcome.status != "failed",
            rng=rng,
        )
    return outcome


def _run(
    session_factory: sessionmaker[Session], settings: Settings, match_id: int, worker: str | None
) -> Outcome | Played:
    """Claim and play the match: what was played, or the outcome of a run that ended
    before there was a result to store."""
    started = time.monotonic()
    try:
        sb = sandbox_for(settings)
    except cow_sandbox.SandboxError as exc:  # fail closed: nothing runs
        _fail_unclaimed(session_factory, match_id, str(exc))
        _settled(match_id, "failed", started, error=str(exc))
        return Outcome("failed")
    try:
        claim = claim_match(
            session_factory,
            settings,
            match_id,
            worker=worker,
            lease_seconds=settings.lease_seconds,
            max_attempts=settings.max_attempts,
        )
    except DBAPIError:
        logger.exception("match %s: the database is unavailable; left for the reaper", match_id)
        return Outcome("deferred")
    except Exception as exc:  # files missing, ...: the match cannot be played
        logger.exception("match %s cannot be run", match_id)
        _fail_unclaimed(session_factory, match_id, error_sentence(exc))
        _settled(match_id, "failed", started, error=error_sentence(exc))
        return Outcome("failed")
    if claim is None:
        return Outcome("skipped")

    runs.info(
        "run start match=%d attempt=%d worker=%s t=%.6f",
        claim.match_id,
        claim.attempt,
        claim.worker,
        time.time(),
    )
    heartbeat = Heartbeat(
        session_factory, claim, settings.lease_seconds, settings.heartbeat_seconds
    )
    plan = claim.plan
    people: dict[int, Agent] = {}
    if plan.person is not None:  # a match against the bots: the person plays from the page
        seat, play_id = plan.person
        people[seat] = HumanSeat(session_factory, play_id, settings.play_decision_seconds)
    error: Exception | None = None
    log: Mapping[str, Any] = {}
    stderr: list[str | None] = []
    try:
        with heartbeat:
            log, stderr = play(
                plan.paths,
                plan.labels,
                plan.seed,
                plan.limits,
                sb,
                on_start=heartbeat.watch,
                cpu=plan.cpu,
                people=people,
            )
    except Exception as exc:
        error = exc
    runs.info(
        "run end match=%d attempt=%d worker=%s t=%.6f lost=%d",
        claim.match_id,
        claim.attempt,
        claim.worker,
        time.time(),
        int(heartbeat.lost),
    )
    if heartbeat.lost:
        return Outcome("lost")
    if error is not None:
        logger.error("match %s could not be played", match_id, exc_info=error)
        # An error while the bots played may be a bot's: it counts against the table's
        # versions (cow006_platform.suspension).
        fail_claim(session_factory, claim, error_sentence(error), blame=settings.suspend_after)
        _settled(match_id, "failed", started, error=error_sentence(error))
        return Outcome("failed")
    return Played(claim, log, stderr, started)


def _store(
    session_factory: sessionmaker[Session],
    played: Played,
    then: Callable[[Session, Match], None] | None = None,
) -> Outcome:
    claim, log, stderr = played.claim, played.log, played.stderr
    match_id = claim.match_id
    try:
        stored = finish_claim(session_factory, claim, log, stderr, then)
    except DBAPIError:
        # The database is away (a refused value is stored with the bots' text replaced by
        # finish_claim itself): the lease runs out and the match is run again.
        logger.exception("match %s: cannot store the result; left for the reaper", match_id)
        return Outcome("deferred")
    except Exception as exc:  # a log that does not replay, ...
        logger.exception("match %s: its result was refused", match_id)
        fail_claim(session_factory, claim, error_sentence(exc))
        _settled(match_id, "failed", played.started, error=error_sentence(exc))
        return Outcome("failed")
    if not stored:
        return Outcome("duplicate")
    _settled(match_id, "finished", played.started, faults=len(log.get("faults", [])))
    return Outcome("finished")


# -- what follows a match ------------------------------------------------------------------------


def refill_batch(depth: int) -> int:
    """How many matches a ladder's queue must miss before a worker refills it: a quarter of
    its depth (the beat's tick tops it up whatever is missing)."""
    return max(1, depth // 4)


def follow_up(
    session_factory: sessionmaker[Session],
    settings: Settings,
    match_id: int,
    send_matches: SendMatches,
    *,
    refill: bool = True,
    rng: random.Random | None = None,
) -> list[int]:
    """After a match: a league's next round, a ladder's refill (with ``refill``), held
    challenges admitted to a slot that came free; the matches created or admitted, sent."""
    created: list[int] = []
    try:
        with session_scope(session_factory) as session:
            match = session.get(Match, match_id)
            kind = match.kind if match is not None else None
            league_id = match.league_id if match is not None else None
            ladder_id = match.ladder_id if match is not None and match.rated else None
        if kind is MatchKind.league and league_id is not None:
            created += scheduler.advance_league(session_factory, league_id)
        if refill and kind is MatchKind.ladder and ladder_id is not None:
            depth = settings.ladder_queue_depth
            created += scheduler.refill_ladder(
                session_factory, ladder_id, depth, rng, min_batch=refill_batch(depth)
            )
    except Exception:  # the scheduler's next tick does the same work
        logger.exception("the work after match %s failed", match_id)
    try:
        created += workclasses.release_challenges(session_factory, settings)
    except Exception:  # the scheduler's next tick does the same work
        logger.exception("cannot admit held challenges after match %s", match_id)
    if created:
        send_matches(created)
    return created
