"""A match held under a lease: the claim that takes it, the heartbeat that keeps it, and the
end of a run that lost it.

``claim_match`` takes a match for one run, under the row lock in one transaction: queued ->
running (or running with an expired lease -> running again), ``attempts + 1``, the worker's
name, ``lease_expires_at``.  A match that is settled, or held by a live lease, is left alone.
The run's attempt number is its fencing token (``Claim.attempt``): only the run whose attempt
is still the match's may store a result (``runs.finish_claim``).

While the match is played a thread renews the lease every ``heartbeat_seconds``
(``Heartbeat``, ``renew_lease``); when the worker dies the renewals stop, the lease runs out,
and the reaper (or any worker the match's task reaches) takes the match over.

The lease is lost when a renewal finds the match no longer this run's (another run took it
over, the reaper requeued it) or when the database cannot be reached until the lease is
about to run out.  The run then stops at once: its bot processes are killed (so two runs of
one match do not play at the same time) and its result is dropped (``lost``).  Dropping is
what makes results safe: the fencing token is checked anyway; killing is what keeps the
sandbox slots and the CPU for the run that counts.  This relies on the machines' clocks
agreeing to well under a heartbeat (NTP).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from types import TracebackType

from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent
from cow006.host import RemoteAgent
from cow006_platform import locks, results
from cow006_platform.db import aware, session_scope
from cow006_platform.models import Match, MatchStatus, utcnow
from cow006_platform.settings import Settings

from .human import HumanSeat
from .play import Plan, read_plan

logger = logging.getLogger(__name__)


def worker_name() -> str:
    return f"{socket.gethostname()}/{os.getpid()}"[:120]


@dataclass
class Claim:
    """A match taken by one run.  ``attempt`` (the match's ``attempts`` after the claim) is
    the fencing token: only the run whose attempt is still the match's may store a result."""

    match_id: int
    attempt: int
    worker: str
    plan: Plan
    lease_expires_at: datetime | None


def claim_match(
    session_factory: sessionmaker[Session],
    settings: Settings,
    match_id: int,
    *,
    worker: str | None = None,
    lease_seconds: float,
    max_attempts: int | None = None,
) -> Claim | None:
    """Mark a match running for this run, with a lease of ``lease_seconds``, and read what
    playing it needs; None when there is nothing to do.

    Only a queued match, or a running one whose lease has run out (its worker died), is
    taken; a match that is finished, failed, or held by a live lease is left alone.  A match
    already tried ``max_attempts`` times is failed instead (it keeps killing its workers).
    Raises (FileNotFoundError, ...) for a match that cannot be played; nothing is changed.
    """
    with session_scope(session_factory) as session:
        match = locks.lock(session, Match, match_id)
        if match is None:
            raise ValueError(f"no match {match_id}")
        if match.status in (MatchStatus.finished, MatchStatus.failed):
            return None
        now = utcnow()
        expires = aware(match.lease_expires_at)
        if match.status is MatchStatus.running and expires is not None and expires > now:
            return None  # another worker holds it and is alive
        if max_attempts is not None and (match.attempts or 0) >= max_attempts:
            # A bot may be what kills its workers (nobody can tell which seat): the failure
            # counts against every version at the table (``suspension``).
            results.fail_match(
                session,
                match_id,
                f"The match was given up after {match.attempts} attempts: every run of it "
                "ended with its worker.",
                blame=settings.suspend_after,
            )
            return None
        plan = read_plan(session, settings, match)
        match.status = MatchStatus.running
        match.started_at = now
        match.attempts = (match.attempts or 0) + 1
        match.worker = worker or worker_name()
        match.error = None
        match.lease_expires_at = now + timedelta(seconds=lease_seconds)
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


class Heartbeat:
    """Renews ``claim``'s lease in a thread while the ``with`` block runs (see the module)."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        claim: Claim,
        lease_seconds: float,
        heartbeat_seconds: float,
    ) -> None:
        self.session_factory = session_factory
        self.claim = claim
        self.lease_seconds = lease_seconds
        self.heartbeat_seconds = max(0.05, min(heartbeat_seconds, lease_seconds / 2))
        self.lost = False
        self.reason = ""
        self.renewals = 0
        self._agents: list[Agent] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"cow006-heartbeat-{claim.match_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()

    def watch(self, agents: Sequence[Agent]) -> None:
        """The match's seated agents (``play.play``'s ``on_start``): killed if the lease
        is lost."""
        with self._lock:
            self._agents = list(agents)
            if self.lost:
                self._kill()

    def _run(self) -> None:
        expires = aware(self.claim.lease_expires_at) or utcnow()
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                renewed = renew_lease(self.session_factory, self.claim, self.lease_seconds)
            except Exception as exc:  # the database is unreachable: hold on while we may
                left = (expires - utcnow()).total_seconds()
                logger.warning(
                    "match %s: cannot renew the lease (%s); %.1f s left",
                    self.claim.match_id,
                    type(exc).__name__,
                    left,
                )
                # Stop before the lease runs out: after it another worker may start the match.
                if left <= self.heartbeat_seconds:
                    self._lose("the lease could not be renewed before it ran out")
                    return
                continue
            if renewed is None:
                self._lose("the match was taken over or settled by someone else")
                return
            expires = renewed
            self.renewals += 1

    def _lose(self, reason: str) -> None:
        with self._lock:
            self.lost = True
            self.reason = reason
            logger.warning(
                "match %s attempt %s: lease lost (%s); stopping this run",
                self.claim.match_id,
                self.claim.attempt,
                reason,
            )
            self._kill()

    def _kill(self) -> None:
        """SIGKILL every bot process of the match (their process groups): the runner then
        sees them crash and ends the match quickly; its result is dropped."""
        for agent in self._agents:
            if isinstance(agent, HumanSeat):  # a person's seat: it stops waiting
                agent.stop()
            pid = agent.pid if isinstance(agent, RemoteAgent) else None
            if pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
