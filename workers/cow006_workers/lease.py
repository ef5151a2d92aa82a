"""The heartbeat that keeps a worker's lease on the match it plays, and ends the match when
the lease is lost.

A worker that takes a match (``execution.claim_match``) holds it until ``lease_expires_at``.
While the match is played a thread renews the lease every ``heartbeat_seconds``; when the
worker dies the renewals stop, the lease runs out, and the reaper (or any worker the match's
task reaches) takes the match over.

The lease is lost when a renewal finds the match no longer this run's (another run took it
over, the reaper requeued it) or when the database cannot be reached until the lease is
about to run out.  The run then stops at once: its bot processes are killed (so two runs of
one match do not play at the same time) and its result is dropped (``lost``).  Dropping is
what makes results safe: ``execution.finish_claim`` checks the run's attempt number (the
fencing token) anyway; killing is what keeps the sandbox slots and the CPU for the run that
counts.  This relies on the machines' clocks agreeing to well under a heartbeat (NTP).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Sequence
from types import TracebackType

from sqlalchemy.orm import Session, sessionmaker

from cow006.agent import Agent
from cow006.host import RemoteAgent
from cow006_platform import execution
from cow006_platform.models import utcnow

logger = logging.getLogger(__name__)


class Heartbeat:
    """Renews ``claim``'s lease in a thread while the ``with`` block runs (see the module)."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        claim: execution.Claim,
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
        """The match's seated agents (``execution.play``'s ``on_start``): killed if the lease
        is lost."""
        with self._lock:
            self._agents = list(agents)
            if self.lost:
                self._kill()

    def _run(self) -> None:
        expires = execution.aware(self.claim.lease_expires_at) or utcnow()
        while not self._stop.wait(self.heartbeat_seconds):
            try:
                renewed = execution.renew_lease(
                    self.session_factory, self.claim, self.lease_seconds
                )
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
            pid = agent.pid if isinstance(agent, RemoteAgent) else None
            if pid:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
