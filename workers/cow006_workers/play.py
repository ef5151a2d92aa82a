"""Playing one match with real bot processes: its table read from the database, the sandbox,
the runner.

A match run (``runs``) and a validation (``validation``) both end here.  Bots always run in
the sandbox unless the operator set ``sandbox = "off"`` (fail closed: a sandbox that is
required but does not work raises ``SandboxError`` with its own sentence, and nothing runs).
Every bot process of a match is started before the match begins, so their start-ups overlap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from cow006 import Agent
from cow006 import sandbox as cow_sandbox
from cow006 import spec as cow_spec
from cow006.host import Limits, MatchRunner, RemoteAgent
from cow006_platform import storage
from cow006_platform.models import Agent as AgentRow
from cow006_platform.models import (
    AgentVersion,
    Evaluation,
    Ladder,
    League,
    Match,
    MatchKind,
    MatchSeat,
    Play,
    User,
    version_label,
)
from cow006_platform.settings import Settings

# What a match played leaves: its log, and each seat's stderr (None for an in-process agent).
# The log is a read-only JSON object: a played one is a ``cow006.log.MatchLog``, a scrubbed
# one (``runs.scrub_result``) a plain dict; the platform checks whatever it is given.
Result = tuple[Mapping[str, Any], list[str | None]]


@dataclass
class Plan:
    """What playing a match needs, read from the database before it starts."""

    seed: int
    paths: list[str]
    labels: list[str]
    limits: Limits
    cpu: float | None = None  # cores per bot (the ladder's cpu_share); None: the default
    # A match against the bots (``MatchKind.play``): the person's (seat, play id).
    person: tuple[int, int] | None = None


def sandbox_for(settings: Settings) -> cow_sandbox.Sandbox | None:
    """The sandbox bots run in (None: bare processes, only with ``sandbox = "off"``).

    Raises ``cow006.sandbox.SandboxError`` (one sentence) when it is required and missing.
    """
    return cow_sandbox.resolve_mode(None if settings.sandbox != "off" else False)


def limits_for(source: Ladder | League | Evaluation | None) -> Limits:
    """The bots' limits at a table of ``source`` (a validation table copies its ladder's, an
    evaluation run's were copied from its ladder when it was made)."""
    if source is None:  # a challenge outside any ladder: the SDK's defaults
        return Limits()
    return Limits(decision=source.decision_time, bank=source.time_bank)


def bot_folder(settings: Settings, sha256: str, label: str) -> str:
    """The stored folder of a version's files; FileNotFoundError (naming ``label``) if its
    bot is missing from storage."""
    path = storage.bot_path(settings, sha256)
    if not storage.has_bot(path):
        raise FileNotFoundError(f"the files of {label} are missing from storage")
    return str(path)


def read_plan(session: Session, settings: Settings, match: Match) -> Plan:
    """The seats' bot folders and labels, the seed and the limits of ``match``."""
    # One query for every seat's version and agent name (a worker runs this per match).
    seats = session.execute(
        select(AgentVersion.sha256, AgentVersion.number, AgentRow.name)
        .join(MatchSeat, MatchSeat.version_id == AgentVersion.id)
        .join(AgentRow, AgentRow.id == AgentVersion.agent_id)
        .where(MatchSeat.match_id == match.id)
        .order_by(MatchSeat.seat)
    ).all()
    labels = [version_label(agent_name, number) for _sha, number, agent_name in seats]
    paths = [bot_folder(settings, row[0], label) for row, label in zip(seats, labels, strict=True)]
    person = None
    if match.kind is MatchKind.play:
        # The person's seat plays through the database (``human.HumanSeat``), under the
        # user's name.
        play = session.scalar(select(Play).where(Play.match_id == match.id))
        if play is None:
            raise ValueError(f"match {match.id} against the bots has no player")
        user = session.get(User, play.user_id)
        labels[play.seat] = user.name if user is not None else "a person"
        person = (play.seat, play.id)
    ladder = session.get(Ladder, match.ladder_id) if match.ladder_id is not None else None
    source: Ladder | League | Evaluation | None = ladder
    if match.league_id is not None:
        source = session.get(League, match.league_id)
    if match.evaluation_id is not None:
        run = session.get(Evaluation, match.evaluation_id)
        source = run
        if run is not None and run.ladder_id is not None:
            ladder = session.get(Ladder, run.ladder_id)  # the pool's ladder: its CPU share
    cpu = ladder.cpu_share if ladder is not None else None
    return Plan(match.seed, paths, labels, limits_for(source), cpu, person)


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
    people: Mapping[int, Agent] | None = None,
) -> Result:
    """Play one match; (its log, each seat's stderr: None for in-process builtins).

    ``on_start`` is called with the seated agents once their processes are started: a worker
    keeps them to kill the match if it loses its lease.  ``cpu`` (cores, a ladder's
    ``cpu_share``) replaces the sandbox's CPU quota per bot.  ``people`` are in-process agents
    by seat (a person's ``human.HumanSeat``) that sit where their specs would: no process
    is started for those seats.
    """
    if sb is not None and cpu is not None:
        sb = replace(sb, cpu=cpu)
    people = people or {}
    bots = [i for i in range(len(specs)) if i not in people]
    # cow006.spec.agents starts every bot process before the match asks the first for its
    # hello, and closes them all whatever happens.
    with cow_spec.agents(
        [specs[i] for i in bots], limits, [labels[i] for i in bots], sandbox=sb
    ) as started:
        by_seat = dict(zip(bots, started, strict=True))
        seated = [people[i] if i in people else by_seat[i] for i in range(len(specs))]
        if on_start is not None:
            on_start(seated)
        log = MatchRunner(seated, seed, names=list(labels)).run()
    log["sandbox"] = cow_sandbox.log_entry(sb)
    return log, [_stderr_of(a) for a in seated]
