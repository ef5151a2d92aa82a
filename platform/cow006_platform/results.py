"""Matches from creation to result: queue one, store its result exactly once, or fail it.

``finish_match`` is the one place a result enters the database.  It locks the match row
(``locks.lock``: ``SELECT ... FOR UPDATE`` on PostgreSQL, the write lock on SQLite) and, if
the match is not finished yet, stores everything in the caller's one transaction: the
compressed log, scores, ranks and faults on the match and its seats, the status, and for a
rated ladder match the rating update.  A result delivered twice (a retried task, two workers
racing after a lease expired) finds the match finished and is ignored: ratings move once.
``store_validation`` keeps a version's validation match, already finished, as its replay.
"""

from __future__ import annotations

import gzip
import json
import random
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from cow006 import engine as cow_engine
from cow006 import log as cow_log
from cow006.untrusted import clean, clean_data, is_clean

from . import locks, ratings, suspension
from .models import AgentVersion, Match, MatchKind, MatchLog, MatchSeat, MatchStatus, utcnow

MAX_ERROR = 2000  # characters of a failure message kept
# Characters of a seat's stderr kept: the host keeps 64 KiB of bytes, plus its dropped-bytes note.
MAX_STDERR = 70000


def new_seed() -> int:
    """A random 63-bit match seed (fits a signed BIGINT)."""
    return random.SystemRandom().getrandbits(63)


def create_match(
    session: Session,
    *,
    kind: MatchKind,
    version_ids: list[int],
    ladder_id: int | None = None,
    league_id: int | None = None,
    league_round: int | None = None,
    rated: bool = True,
    seed: int | None = None,
    requested_by: int | None = None,
) -> Match:
    """Queue a match: one seat per version, in the order given (flushed, not committed).

    ``rated`` only means something for a ladder match (it then moves the ladder's ratings);
    it is stored as False for every other kind.
    """
    kind = MatchKind(kind)
    cow_engine.check_players(len(version_ids))
    versions = []
    for vid in version_ids:
        version = session.get(AgentVersion, vid)
        if version is None:
            raise ValueError(f"no agent version {vid}")
        versions.append(version)
    if seed is None:
        seed = new_seed()
    if not 0 <= seed < 2**63:
        raise ValueError(f"a match seed is in 0 .. 2**63 - 1, not {seed}")
    match = Match(
        kind=kind,
        ladder_id=ladder_id,
        league_id=league_id,
        league_round=league_round,
        requested_by=requested_by,
        rated=bool(rated) and kind is MatchKind.ladder and ladder_id is not None,
        seed=seed,
        status=MatchStatus.queued,
    )
    match.seats = [
        MatchSeat(seat=i, version_id=v.id, agent_id=v.agent_id) for i, v in enumerate(versions)
    ]
    session.add(match)
    session.flush()
    return match


def compress_log(log: Mapping[str, Any]) -> bytes:
    # mtime=0: the same log always compresses to the same bytes.
    return gzip.compress(json.dumps(log, separators=(",", ":")).encode("utf-8"), mtime=0)


def finish_match(
    session: Session, match_id: int, log: Mapping[str, Any], stderr: list[str | None]
) -> bool:
    """Store a match's result, exactly once; False (nothing changed) if it was finished.

    Call it first in a fresh transaction (``db.session_scope``) and commit: the lock taken
    here is what makes a second delivery wait for the first and then see it finished.
    Raises ``cow006.LogError`` for a log that does not replay, ValueError for one that does
    not fit the match (number of seats); nothing is stored then.
    """
    return store_result(session, match_id, log, stderr) is not None


def store_result(
    session: Session,
    match_id: int,
    log: Mapping[str, Any],
    stderr: list[str | None],
    *,
    attempt: int | None = None,
) -> Match | None:
    """``finish_match``, returning the match stored (None: nothing changed), and with
    ``attempt`` only while that is still the match's (a later run took it over otherwise:
    the fencing token of ``cow006_workers.lease``)."""
    match = locks.lock(session, Match, match_id)
    if match is None:
        raise ValueError(f"no match {match_id}")
    if match.status is MatchStatus.finished:
        return None
    if attempt is not None and match.attempts != attempt:
        return None
    seats = sorted(match.seats, key=lambda s: s.seat)
    players = log.get("players") if isinstance(log, dict) else None
    if not isinstance(players, list) or len(players) != len(seats):
        raise ValueError(f"the log of match {match_id} does not have {len(seats)} players")
    if len(stderr) != len(seats):
        raise ValueError(f"{len(stderr)} stderr entries for the {len(seats)} seats of {match_id}")
    # The platform is the last line: whatever the worker cleaned or not, bot text (stderr,
    # fault details) is stored only once no database can refuse it and no page can fail to
    # encode it (NUL, lone surrogates).  Clean strings are kept as they are: the log replays.
    # (A log with nothing to clean, nearly every one, is not walked: ``is_clean``.)
    if not is_clean(log):
        log = clean_data(log)
    stderr = [None if err is None else clean(err, MAX_STDERR) for err in stderr]
    # A worker may run elsewhere: only a log that replays is accepted as a result.
    cow_log.verify(log)
    if log["seed"] != match.seed:
        raise ValueError(f"the log of match {match_id} was played with another seed")
    faults = list(log.get("faults", []))
    forfeited = set(log.get("forfeited", []))
    now = utcnow()
    existing_log = session.get(MatchLog, match_id)
    if existing_log is None:
        session.add(MatchLog(match_id=match_id, body=compress_log(log)))
    else:  # left by an earlier, interrupted delivery: the new result replaces it
        existing_log.body = compress_log(log)
    match.scores = list(log["scores"])
    match.ranks = list(log["ranks"])
    match.faults = faults
    match.rounds = len(log["rounds"])
    match.status = MatchStatus.finished
    match.finished_at = now
    match.error = None
    match.lease_expires_at = None
    for seat, err in zip(seats, stderr, strict=True):
        seat.score = log["scores"][seat.seat]
        seat.rank = log["ranks"][seat.seat]
        seat.faults = sum(1 for f in faults if f.get("seat") == seat.seat)
        seat.forfeited = seat.seat in forfeited
        seat.stderr = err
    if match.kind is MatchKind.ladder and match.rated and match.ladder_id is not None:
        ratings.apply_match(session, match)
    suspension.record_finished(session, match)
    session.flush()
    return match


def store_validation(
    session: Session,
    version: AgentVersion,
    seat: int,
    log: Mapping[str, Any],
    stderr: str | None,
    started: datetime,
) -> Match:
    """Keep a version's validation match (kind ``validation``, unrated, finished): its log
    and one seat, the version's (the built-in opponents are no versions; the log names them).
    Its owner watches it like any match; nothing else reads it (no rating, no suspension).
    Raises ``cow006.LogError`` for a log that does not replay: nothing is added then."""
    if not is_clean(log):
        log = clean_data(log)
    cow_log.verify(log)
    faults = list(log.get("faults", []))
    match = Match(
        kind=MatchKind.validation,
        rated=False,
        seed=int(log["seed"]),
        status=MatchStatus.finished,
        scores=list(log["scores"]),
        ranks=list(log["ranks"]),
        faults=faults,
        attempts=1,
        started_at=started,
        finished_at=utcnow(),
    )
    match.seats = [
        MatchSeat(
            seat=seat,
            version_id=version.id,
            agent_id=version.agent_id,
            score=log["scores"][seat],
            rank=log["ranks"][seat],
            faults=sum(1 for f in faults if f.get("seat") == seat),
            forfeited=seat in set(log.get("forfeited", [])),
            stderr=None if stderr is None else clean(stderr, MAX_STDERR),
        )
    ]
    session.add(match)
    session.flush()
    session.add(MatchLog(match_id=match.id, body=compress_log(log)))
    session.flush()
    return match


def fail_match(session: Session, match_id: int, error: str, *, blame: int | None = None) -> bool:
    """Mark a match failed with one sentence saying why (in the caller's transaction).

    A finished match stays finished (a late failure report changes nothing): returns False.
    ``blame`` is given when the failure is not the platform's own (it may be a bot's): for a
    ladder match it counts one failure against each version at the table, and a version
    with ``blame`` failures in a row is suspended (``suspension``).
    """
    match = locks.lock(session, Match, match_id)
    if match is None:
        raise ValueError(f"no match {match_id}")
    if match.status is MatchStatus.finished:
        return False
    match.status = MatchStatus.failed
    match.error = clean((error or "the match failed").strip(), MAX_ERROR)
    match.finished_at = utcnow()
    match.lease_expires_at = None
    if blame is not None:
        suspension.record_failure(session, match, match.error, blame)
    session.flush()
    return True


def read_log(session: Session, match_id: int) -> dict[str, Any] | None:
    """The match's cow006-match-1 log, or None if it has none (not finished)."""
    row = session.get(MatchLog, match_id)
    if row is None:
        return None
    data: dict[str, Any] = json.loads(gzip.decompress(row.body))
    return data
