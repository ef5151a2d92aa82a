"""The contract between the platform and the workers: the names of the tasks and their queues.

The platform sends work by name (``executor.CeleryExecutor``, the admin commands); the workers
(``cow006_workers.tasks``) register their tasks under the same names and read the same
queues.  Both import this module, and nothing else carries these strings: the workers import
the platform, never the other way round.

=============================  ======================  =========================================
task                           queue                   work
=============================  ======================  =========================================
``cow006.validate_version``    ``cow006.validate``     validate a pending version (smoke match)
``cow006.run_match``           ``cow006.ladder``       play a ladder or league match
``cow006.run_match``           ``cow006.challenge``    play a challenge
``cow006.run_match``           ``cow006.evaluate``     play a match of an evaluation run
``cow006.run_match``           ``cow006.play``         play a person's match against bots
``cow006.schedule``            ``cow006.control``      the beat's tick: refills, league rounds
``cow006.reap``                ``cow006.control``      the beat's tick: send again what was lost
=============================  ======================  =========================================

Each work class has a queue of its own, so a flood in one never waits in front of another
(``workclasses``: how challenges are admitted).  ``cow006`` is the one queue of the releases
before the work classes: workers still read it (a task an older API process sent is not
stranded), nothing sends to it.
"""

from __future__ import annotations

from .models import MatchKind

RUN_MATCH_TASK = "cow006.run_match"
VALIDATE_TASK = "cow006.validate_version"
SCHEDULE_TASK = "cow006.schedule"
REAP_TASK = "cow006.reap"

VALIDATE_QUEUE = "cow006.validate"
LADDER_QUEUE = "cow006.ladder"
CHALLENGE_QUEUE = "cow006.challenge"
EVALUATE_QUEUE = "cow006.evaluate"
# A person's match against the bots waits on the person for minutes: a queue of its own, so
# the pool processes that read it are the only ones it holds.
PLAY_QUEUE = "cow006.play"
# The beat's ticks, worked off by the scheduler process itself (``cow006 beat``): a tick
# never waits for a match worker to be free.
CONTROL_QUEUE = "cow006.control"
LEGACY_QUEUE = "cow006"  # one queue for everything, before the work classes: read, not sent to
WORK_QUEUES = (VALIDATE_QUEUE, LADDER_QUEUE, CHALLENGE_QUEUE, EVALUATE_QUEUE, PLAY_QUEUE)
# What ``cow006 worker`` reads unless told otherwise (--queues): every class.
DEFAULT_WORKER_QUEUES = (*WORK_QUEUES, LEGACY_QUEUE)


def queue_for_match(kind: MatchKind | str | None) -> str:
    """The queue of a match of ``kind`` (None: a ladder or league match)."""
    if kind is not None and MatchKind(kind) is MatchKind.challenge:
        return CHALLENGE_QUEUE
    if kind is not None and MatchKind(kind) is MatchKind.evaluation:
        return EVALUATE_QUEUE
    if kind is not None and MatchKind(kind) is MatchKind.play:
        return PLAY_QUEUE
    return LADDER_QUEUE
