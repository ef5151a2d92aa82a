"""The built-in bots, by name: ``make("greedy")`` or ``make("builtin:greedy")``.

=================  =======================================================================
``random``         a uniformly random card; takes the cheapest row
``lowest``         always its lowest card, the cheapest row (what a faulted seat plays)
``greedy``         the card that costs least on the current rows, snuggest fit first
``safe``           the card with the lowest expected cost this turn, counting the risk that
                   other seats' cards land before it
``montecarlo-v1``  samples the unseen cards into the other hands and plays every candidate
                   out to the end of the round; least expected penalty wins (the ``best`` of
                   issue 19's day, kept unchanged)
``montecarlo``     an alias of ``montecarlo-v1``: logs naming it rerun as they were
``best``           the strongest built-in: ``montecarlo-v1``'s search, whose sampled
                   opponents play greedily as far as they are seen to, holding only the
                   cards they can still hold (``_best.py``)
=================  =======================================================================

Every bot's randomness comes from a generator seeded in ``on_match_start`` from its agent
seed (``MatchInfo.seed``), so a match of built-ins is reproducible from the match seed and
the agent seeds its log records.  No built-in looks at ``MatchInfo.names`` (opaque labels).
"""

from __future__ import annotations

from collections.abc import Callable

from .._agent import Agent
from .._errors import AgentLoadError
from ._best import BestBot
from ._montecarlo import MonteCarloBot
from ._simple import GreedyBot, LowestBot, RandomBot, SafeBot

PREFIX = "builtin:"


def _montecarlo_v1() -> Agent:
    bot = MonteCarloBot()
    bot.name = PREFIX + "montecarlo-v1"
    return bot


# name -> factory of a fresh agent (agents keep per-match state: one per seat).
BUILTINS: dict[str, Callable[[], Agent]] = {
    "random": RandomBot,
    "lowest": LowestBot,
    "greedy": GreedyBot,
    "safe": SafeBot,
    "montecarlo-v1": _montecarlo_v1,
    "montecarlo": MonteCarloBot,
    "best": BestBot,
}


def names() -> list[str]:
    """The built-in names, without the ``builtin:`` prefix, in the order of the table above."""
    return list(BUILTINS)


def make(name: str) -> Agent:
    """A fresh built-in agent from ``"NAME"`` or ``"builtin:NAME"``; AgentLoadError if unknown."""
    key = name[len(PREFIX) :] if name.startswith(PREFIX) else name
    factory = BUILTINS.get(key)
    if factory is None:
        known = ", ".join(names())
        raise AgentLoadError(f"unknown built-in bot {name!r}; the built-ins are: {known}")
    return factory()


__all__ = [
    "BUILTINS",
    "PREFIX",
    "BestBot",
    "GreedyBot",
    "MonteCarloBot",
    "RandomBot",
    "SafeBot",
    "make",
    "names",
]
