"""Корова 006 (6 nimmt!): the reference engine and the bot SDK, standard library only.

Write a bot by subclassing ``Agent``; play it locally with ``play_match`` or the ``cow006``
command; every match produces a ``cow006-match-1`` log that ``verify`` replays.

This top level is what a bot author needs, and only that (``__all__``).  Tools that host bots
or read logs use the documented host-side modules (``cow006.engine``, ``cow006.log``,
``cow006.host``, ``cow006.sandbox``, ...); a module whose name starts with an underscore is
private and may change without notice.  docs/sdk-surface.md lists both surfaces, and
tests/sdk/test_surface.py holds them to it.

The public names are loaded on first use (PEP 562): ``from cow006 import Agent`` imports
``cow006._agent`` and what it needs, not the runner, the log checker or the host.  A bot
process starts with only the modules of the bot side (see ``cow006.bot``), which keeps its
start-up short.
"""

from __future__ import annotations

# ``typing`` is not imported: a bot process imports this package, and typing costs it more
# start-up time than the SDK itself (docs/sandbox.md, Start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:  # what a type checker sees; at run time ``__getattr__`` loads them
    from typing import Any

    from ._agent import Agent, FunctionAgent, MatchInfo
    from ._errors import (
        AgentLoadError,
        BotFault,
        CardNotInHandError,
        Cow006Error,
        IllegalMoveError,
        InvalidRowError,
        LogError,
        SetupError,
    )
    from ._runner import play_match
    from ._view import View
    from .cards import HEADS, heads, heads_of
    from .log import verify

__version__ = "0.1.0"

# public name -> the submodule that defines it
_LAZY: dict[str, str] = {
    "Agent": "_agent",
    "FunctionAgent": "_agent",
    "MatchInfo": "_agent",
    "AgentLoadError": "_errors",
    "BotFault": "_errors",
    "CardNotInHandError": "_errors",
    "Cow006Error": "_errors",
    "IllegalMoveError": "_errors",
    "InvalidRowError": "_errors",
    "LogError": "_errors",
    "SetupError": "_errors",
    "play_match": "_runner",
    "View": "_view",
    "HEADS": "cards",
    "heads": "cards",
    "heads_of": "cards",
    "verify": "log",
}

# the bot author's names: docs/sdk-surface.md lists them, tests/sdk/test_surface.py checks both
__all__ = [
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
    "MatchInfo",
    "SetupError",
    "View",
    "__version__",
    "heads",
    "heads_of",
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
