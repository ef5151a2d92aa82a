"""Fair tables: what makes a validation match look like a ladder match to the bot.

A bot must not be able to tell its validation (a smoke match against built-ins, which decides
whether the version may play at all) from a real ladder match: one that can would behave in
validation and fault in the arena.  So the validation table copies the ladder the version
would play in, and nothing a bot is told differs:

* ``hello`` carries the same fields everywhere: the seat, the number of players, opaque seat
  labels (``cow006.runner.seat_labels``: never agent names or owners), the bot's own seed
  (independent randomness, ``cow006.runner.new_agent_seeds``), the limits and settings;
* the number of players and the time limits are those of ``validation_ladder``: the ladder
  the agent is entered in (the one entered most recently), else the first open ladder, else
  the platform's defaults (``validation_decision``, ``validation_bank``, one seat per
  configured opponent plus the bot);
* the seat is drawn at random (matchmaking shuffles seats too), and so is the match seed
  (it was the upload's sha256, which is also its storage folder's name: a bot could compute
  every hand of its validation);
* the opponents run as bot processes in the sandbox like any entrant (``opponent_paths``),
  from the same one-line ``bot.py`` as the demo ladder's built-ins, so even the timing of the
  other seats does not tell them apart from real entrants.

What cannot be hidden: the opponents *are* built-ins, and a bot may recognise their play
style over a match (so may it on a ladder where the demo built-ins play).  docs/web.md and
docs/bot-guide.md say so.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from cow006 import spec as cow_spec

from . import storage
from .models import Ladder, LadderEntry, LadderState
from .settings import Settings

BUILTIN_PREFIX = "builtin:"


def builtin_source(name: str) -> str:
    """The ``bot.py`` that runs built-in ``name`` as a bot process (the demo ladder's too)."""
    return f'from cow006.bots import make\n\nagent = make("{name}")\n'


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
            stored = storage.store_upload(settings, "bot.py", builtin_source(name).encode())
            out.append(str(Path(storage.bot_path(settings, stored.sha256))))
        else:
            out.append(spec)
    return out
