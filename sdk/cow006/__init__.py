"""Корова 006 (6 nimmt!): the reference engine and the bot SDK, standard library only.

Write a bot by subclassing ``Agent``; play it locally with ``play_match`` or the ``cow006``
command; every match produces a ``cow006-match-1`` log that ``verify`` replays.

The public names are loaded on first use (PEP 562): ``from cow006 import Agent`` imports
``cow006.agent`` and what it needs, not the runner, the log checker or the host.  A bot
process starts with only the modules of the bot side (see ``cow006.bot``), which keeps its
start-up short.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what a type checker sees; at run time ``__getattr__`` loads them
    from .agent import Agent, FunctionAgent, MatchInfo, agent_from_module, load_agent_file
    from .cards import HEADS, heads, heads_of
    from .engine import State
    from .errors import (
        AgentLoadError,
        CardNotInHandError,
        Cow006Error,
        IllegalMoveError,
        InvalidRowError,
        LogError,
        SetupError,
    )
    from .faults import BotFault
    from .log import FORMAT, verify
    from .runner import Match, MatchRunner, play_match
    from .view import View, observe

__version__ = "0.1.0"

# public name -> the submodule that defines it
_LAZY: dict[str, str] = {
    "Agent": "agent",
    "FunctionAgent": "agent",
    "MatchInfo": "agent",
    "agent_from_module": "agent",
    "load_agent_file": "agent",
    "HEADS": "cards",
    "heads": "cards",
    "heads_of": "cards",
    "State": "engine",
    "AgentLoadError": "errors",
    "CardNotInHandError": "errors",
    "Cow006Error": "errors",
    "IllegalMoveError": "errors",
    "InvalidRowError": "errors",
    "LogError": "errors",
    "SetupError": "errors",
    "BotFault": "faults",
    "FORMAT": "log",
    "verify": "log",
    "Match": "runner",  # the former name of MatchRunner, removed after this wave
    "MatchRunner": "runner",
    "play_match": "runner",
    "View": "view",
    "observe": "view",
}

__all__ = [
    "FORMAT",
    "HEADS",
    "Agent",
    "AgentLoadError",
    "BotFault",
    "CardNotInHandError",
    "Cow006Error",
    "FunctionAgent",
    "IllegalMoveError",
    "InvalidRowError",
    "LogError",
    "Match",
    "MatchInfo",
    "MatchRunner",
    "SetupError",
    "State",
    "View",
    "__version__",
    "agent_from_module",
    "heads",
    "heads_of",
    "load_agent_file",
    "observe",
    "play_match",
    "verify",
]


def __getattr__(name: str) -> Any:
    """Load a public name from its submodule on first use (then it is a plain global)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(__import__(f"{__name__}.{module}", fromlist=[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
