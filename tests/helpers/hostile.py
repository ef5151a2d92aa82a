"""Helpers of the hostile test files: a match with the attacker at seat 0, in the sandbox.

Each attack bot plays beside a well-behaved (or a CPU-bound) sandboxed bot and an in-process
builtin; the tests then look at the log, the bots' stderr and their slots.
"""

from __future__ import annotations

from typing import Any

from cow006 import bots, play_match, sandbox
from cow006.host import RemoteAgent
from cow006.sandbox._slots import Lease


def play_beside(
    hostile: RemoteAgent,
    other: RemoteAgent,
    sb: sandbox.Sandbox,
    *,
    seed: int,
    settings: dict[str, Any] | None = None,
) -> tuple[dict[str, Any] | None, str | None]:
    """Play ``hostile`` at seat 0, ``other`` and a builtin, then close both bots: (the log,
    with its sandbox entry; None), or (None; the error, for the test to report with the
    bot's stderr)."""
    try:
        log = play_match([hostile, other, bots.make("random")], seed=seed, settings=settings)
        log["sandbox"] = sandbox.log_entry(sb)
        return log, None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        hostile.close()
        other.close()


def leases(*agents: RemoteAgent) -> list[Lease]:
    """The slot leases of those of ``agents`` that ran sandboxed."""
    return [
        agent.process.lease
        for agent in agents
        if isinstance(agent.process, sandbox.SandboxedProcess)
    ]
