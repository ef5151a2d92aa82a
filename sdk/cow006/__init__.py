"""Корова 006 (6 nimmt!): the reference engine and the bot SDK, standard library only.

Write a bot by subclassing ``Agent``; play it locally with ``play_match`` or the ``cow006``
command; every match produces a ``cow006-match-1`` log that ``verify`` replays.
"""

from __future__ import annotations

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
from .runner import Match, play_match
from .view import View, observe

__version__ = "0.1.0"

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
