"""A version's validation: a smoke match at a fair table, and its verdict.

``validate_version`` (the ``cow006.validate_version`` task, and the embedded executors) plays
a sandboxed match of a pending version against ``settings.validation_opponents`` and makes it
active (no fault at its seat) or rejected (with the reason for its owner: the faults, its
stderr).  The match is kept as a ``validation`` match (unrated, one seat: the version's;
``results.store_validation``) so its owner can watch it, in the verdict's transaction; a log
that cannot be kept changes nothing of the verdict.  Problems of the platform
(no sandbox, files missing, the database) leave the version pending, to be validated again.

**Fair tables.**  A bot must not be able to tell its validation (which decides whether the
version may play at all) from a real ladder match: one that can would behave in validation
and fault in the arena.  So the validation table copies the ladder the version would play
in, and nothing a bot is told differs:

* ``hello`` carries the same fields everywhere: the seat, the number of players, opaque seat
  labels (``cow006._runner.seat_labels``: never agent names or owners), the bot's own seed
  (independent randomness, ``cow006._runner.new_agent_seeds``), the limits and settings;
* the number of players and the time limits are those of ``validation_ladder``: the ladder
  the agent is entered in (the one entered most recently), else the first open ladder, else
  the platform's defaults (``validation_decision``, ``validation_bank``, one seat per
  configured opponent plus the bot);
* the seat is drawn at random (matchmaking shuffles seats too), and so is the match seed
  (it was the upload's sha256, which is also its storage folder's name: a bot could compute
  every hand of its validation);
* the opponents run as bot processes in the sandbox like any entrant (``opponent_paths``),
  from the same one-line ``bot.py`` as the demo ladder's built-ins (``demo.bot_source``), so
  even the timing of the other seats does not tell them apart from real entrants.

What cannot be hidden: the opponents *are* built-ins, and a bot may recognise their play
style over a match (so may it on a ladder where the demo built-ins play).  docs/web.md and
docs/bot-guide.md say so.

**Bounded.**  Each run is counted (``validation_attempts``) before its match starts, in its
own transaction, so a run that takes its worker down still counts; a version still pending
after ``max_validations`` runs is rejected with a reason instead of being tried forever.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006 import spec as cow_spec
from cow006.host import Limits
from cow006.untrusted import clean
from cow006_platform import locks, results, storage
from cow006_platform.db import session_scope
from cow006_platform.models import (
    AgentVersion,
    Ladder,
    LadderEntry,
    LadderState,
    VersionStatus,
    utcnow,
)
from cow006_platform.settings import Settings

from .demo import bot_source
from .play import bot_folder, limits_for, play, sandbox_for

logger = logging.getLogger(__name__)

BUILTIN_PREFIX = "builtin:"
STDERR_TAIL = 4000  # characters of a rejected bot's stderr shown in its rejection reason
MAX_REASON = 8000  # characters of a rejection reason kept
MAX_LISTED_FAULTS = 10


# -- the table ----------------------------------------------------------------------------------


def validation_ladder(session: Session, agent_id: int) -> Ladder | None:
    """The ladder whose tables a version of ``agent_id`` is validated like (see the module)."""
    entered = session.scalar(
        select(Ladder)
        .join(LadderEntry, LadderEntry.ladder_id == Ladder.id)
        .where(LadderEntry.agent_id == agent_id, LadderEntry.active.is_(True))
        .order_by(LadderEntry.entered_at.desc(), LadderEntry.id.desc())
        .limit(1)
    )
    if entered is not None:
        return entered
    return session.scalar(
        select(Ladder).where(Ladder.state == LadderState.open).order_by(Ladder.id).limit(1)
    )


def validation_players(ladder: Ladder | None, settings: Settings) -> int:
    """Seats at the validation table: the ladder's, else the bot and each configured opponent."""
    if ladder is not None:
        return int(ladder.players)
    return 1 + max(1, len(settings.validation_opponents))


def opponent_specs(settings: Settings, count: int, rng: random.Random) -> list[str]:
    """``count`` opponents drawn from ``settings.validation_opponents`` (repeated when the
    table has more seats than the list), in a random order."""
    pool = list(settings.validation_opponents) or ["builtin:random"]
    specs = [pool[i % len(pool)] for i in range(count)]
    rng.shuffle(specs)
    return specs


def opponent_paths(settings: Settings, specs: Sequence[str]) -> list[str]:
    """Each opponent spec as a bot folder to run as a process: a ``builtin:NAME`` is stored
    once (content-addressed) as its one-line ``bot.py``; any other spec is used as it is."""
    out = []
    for spec in specs:
        if spec.startswith(BUILTIN_PREFIX):
            name = cow_spec.check_builtin(spec)
            stored = storage.store_upload(settings, "bot.py", bot_source(name).encode())
            out.append(str(Path(storage.bot_path(settings, stored.sha256))))
        else:
            out.append(spec)
    return out


# -- the verdict --------------------------------------------------------------------------------


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
) -> str:
    """Validate a pending version (``validate``); one word back: its new status, or
    ``skipped`` (no longer pending: a duplicate task) or ``deferred`` (a platform problem,
    logged: it stays pending and the reaper sends it again)."""
    with session_scope(session_factory) as session:
        version = session.get(AgentVersion, version_id)
        if version is None or version.status is not VersionStatus.pending:
            return "skipped"
    try:
        validate(session_factory, settings, version_id)
    except Exception:
        logger.exception("version %s could not be validated; left pending", version_id)
        return "deferred"
    with session_scope(session_factory) as session:
        version = session.get(AgentVersion, version_id)
        return version.status.value if version is not None else "skipped"


def validate(session_factory: sessionmaker[Session], settings: Settings, version_id: int) -> None:
    """Play the version's smoke match at a fair table and store its verdict (see the module),
    whatever its status.  Problems of the platform (no sandbox, files missing) raise and
    leave the version as it was."""
    with session_scope(session_factory) as session:
        version = session.get(AgentVersion, version_id)
        if version is None:
            raise ValueError(f"no agent version {version_id}")
        label, sha = version.label, version.sha256
        ladder = validation_ladder(session, version.agent_id)
        players = validation_players(ladder, settings)
        limits = (
            limits_for(ladder)
            if ladder is not None
            else Limits(decision=settings.validation_decision, bank=settings.validation_bank)
        )
    path = bot_folder(settings, sha, label)
    sb = sandbox_for(settings)
    if not _count_validation(session_factory, settings, version_id):
        return
    # A random seat and seed (never the upload's digest, which names its storage folder: the
    # bot could compute every hand), built-in opponents run as bot processes.
    rng = random.SystemRandom()
    opponents = opponent_specs(settings, players - 1, rng)
    seat = rng.randrange(players)
    specs = opponent_paths(settings, opponents)
    specs.insert(seat, path)
    labels = [*opponents]
    labels.insert(seat, label)
    started = utcnow()
    log, stderr = play(specs, labels, rng.getrandbits(63), limits, sb)
    faults = [f for f in log.get("faults", []) if f.get("seat") == seat]
    with session_scope(session_factory) as session:
        version = locks.lock(session, AgentVersion, version_id)
        if version is None:
            return
        _keep_match(session, version, seat, log, stderr[seat], started)
        if faults:
            version.status = VersionStatus.rejected
            # Fault details and stderr are the bot's text: cleaned (again) before storing.
            version.reason = clean(rejection_reason(faults, stderr[seat]), MAX_REASON)
        else:
            version.status = VersionStatus.active
            version.reason = None
        version.validated_at = utcnow()


def _keep_match(
    session: Session,
    version: AgentVersion,
    seat: int,
    log: Mapping[str, Any],
    stderr: str | None,
    started: datetime,
) -> None:
    """Keep the validation match for its owner to watch, in a savepoint: a log that cannot
    be stored is logged and left out, the verdict stays the same."""
    try:
        with session.begin_nested():
            results.store_validation(session, version, seat, log, stderr, started)
    except Exception:
        logger.exception("the validation match of version %s was not kept", version.id)


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
