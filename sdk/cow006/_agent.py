"""The agent SDK: subclass ``Agent`` (or write a ``play(view)`` function) to make a bot.

```python
from cow006 import Agent

class Bot(Agent):
    def play(self, view):        # return one card from view.hand
        return max(view.hand)

    def take_row(self, view):    # only when your card is below every row end; return 0..3
        return min(range(4), key=view.row_heads)
```
"""

from __future__ import annotations

import os
import sys

from ._errors import AgentLoadError

# A bot process imports this module: names used only in annotations are the type checker's
# (no ``typing``, ``types`` or ``collections`` at run time; docs/sandbox.md, Start-up).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from types import ModuleType
    from typing import Any

    from ._view import View


class MatchInfo:
    """What an agent is told when a match starts (read-only).

    ``seat`` (0-based) and ``n_players``; ``seed``, for the agent's own randomness, drawn
    independently of the match seed for each seat and match (the log records it afterwards,
    so a match can be played again); ``names``, one opaque label per seat (``p0``, ``p1``,
    ...): never agent names or owners, which an agent is not told (the log has them);
    ``settings``, free-form match configuration.

    A plain class rather than a dataclass: ``dataclasses`` pulls in ``inspect`` and friends,
    about 10 ms at every bot process start.
    """

    __slots__ = ("n_players", "names", "seat", "seed", "settings")

    seat: int
    n_players: int
    seed: int  # a seed for this agent's own randomness, independent of the match seed
    names: tuple[str, ...]  # opaque per-seat labels ("p0", "p1", ...), not who plays there
    settings: dict[str, Any]

    def __init__(
        self,
        seat: int,
        n_players: int,
        seed: int,
        names: tuple[str, ...] = (),
        settings: dict[str, Any] | None = None,
    ) -> None:
        init = object.__setattr__  # past the read-only __setattr__; no loop: one per seat
        init(self, "seat", seat)
        init(self, "n_players", n_players)
        init(self, "seed", seed)
        init(self, "names", tuple(names))
        init(self, "settings", dict(settings or {}))

    def __setattr__(self, key: str, value: Any) -> None:
        raise AttributeError("MatchInfo is read-only")

    @classmethod
    def _for_seats(
        cls, n_players: int, seeds: Sequence[int], names: tuple[str, ...], settings: dict[str, Any]
    ) -> list[MatchInfo]:
        """``[MatchInfo(seat, n_players, seeds[seat], names, settings) for seat ...]``, every
        seat's at once (a runner tells every seat at every match's start): the slots set
        through their descriptors, with no ``__init__`` call per seat.  Each seat gets its own
        copy of ``settings``: an agent that changes its copy tells no other seat anything."""
        new = object.__new__
        slots = vars(MatchInfo)  # the slots' descriptors, past the read-only ``__setattr__``
        set_seat = slots["seat"].__set__
        set_n = slots["n_players"].__set__
        set_seed = slots["seed"].__set__
        set_names = slots["names"].__set__
        set_settings = slots["settings"].__set__
        names = tuple(names)
        infos = []
        for seat in range(n_players):
            info = new(cls)
            set_seat(info, seat)
            set_n(info, n_players)
            set_seed(info, seeds[seat])
            set_names(info, names)
            set_settings(info, dict(settings))
            infos.append(info)
        return infos

    def _key(self) -> tuple[Any, ...]:
        return (self.seat, self.n_players, self.seed, self.names, self.settings)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MatchInfo) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash((self.seat, self.n_players, self.seed, self.names))

    def __repr__(self) -> str:
        return (
            f"MatchInfo(seat={self.seat}, n_players={self.n_players}, seed={self.seed}, "
            f"names={self.names}, settings={self.settings})"
        )


class Agent:
    """Base class of every bot.  Override ``play``; the rest is optional.

    ``play(view)`` returns one card of ``view.hand``.  ``take_row(view)`` is called only when
    your card (``view.card``) is lower than every row end, after the lower cards of the same
    turn were placed; it returns the row index 0..3 to take.  The default takes the row with
    the fewest heads.  The ``on_*`` hooks are called at the start and end of rounds and of the
    match; ``self.rng`` can be seeded from ``info.seed`` in ``on_match_start`` so the bot's
    choices are reproducible (the log records every seat's seed as ``agent_seeds``).
    """

    name: str | None = None

    def play(self, view: View) -> int:
        raise NotImplementedError("an Agent must implement play(view) and return a card")

    def take_row(self, view: View) -> int:
        return view.cheapest_row()

    def on_match_start(self, info: MatchInfo) -> None:
        """Called once before the first round."""

    def on_round_start(self, view: View) -> None:
        """Called with the freshly dealt view at the start of each round."""

    def on_round_end(self, result: dict[str, Any]) -> None:
        """Called after each round with the round's log entry (its deal, turns and penalties)."""

    def on_match_end(self, result: dict[str, Any]) -> None:
        """Called once with the finished match's scores and ranks."""


class FunctionAgent(Agent):
    """An agent made of plain functions: ``play(view)`` and optionally ``take_row(view)``."""

    def __init__(
        self,
        play: Callable[[View], int],
        take_row: Callable[[View], int] | None = None,
        name: str | None = None,
    ) -> None:
        self._play = play
        self._take_row = take_row
        self.name = name or getattr(play, "__module__", None) or "function"

    def play(self, view: View) -> int:
        return self._play(view)

    def take_row(self, view: View) -> int:
        if self._take_row is None:
            return view.cheapest_row()
        return self._take_row(view)


def agent_from_module(module: ModuleType, name: str | None = None) -> Agent:
    """Find the bot in a module: an Agent subclass defined there (``Bot`` preferred), an
    ``agent`` instance, or a module-level ``play`` function (with an optional ``take_row``)."""
    label = name or module.__name__
    candidate = getattr(module, "agent", None)
    if isinstance(candidate, Agent):
        return candidate
    classes = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type)
        and issubclass(obj, Agent)
        and obj is not Agent
        and obj is not FunctionAgent
        and obj.__module__ == module.__name__
    ]
    chosen = getattr(module, "Bot", None)
    if not (isinstance(chosen, type) and issubclass(chosen, Agent)):
        if len(classes) > 1:
            names = ", ".join(sorted(c.__name__ for c in classes))
            raise AgentLoadError(
                f"{label} defines several Agent classes ({names}); name the bot's class Bot"
            )
        chosen = classes[0] if classes else None
    if chosen is not None:
        try:
            agent = chosen()
        except Exception as exc:
            raise AgentLoadError(f"{label}: {chosen.__name__}() failed: {exc!r}") from exc
        if agent.name is None:
            agent.name = label
        return agent
    play = getattr(module, "play", None)
    if callable(play):
        take_row = getattr(module, "take_row", None)
        return FunctionAgent(play, take_row if callable(take_row) else None, name=label)
    raise AgentLoadError(
        f"{label} has no bot: define a class derived from cow006.Agent or a function play(view)"
    )


def load_module(path: str | os.PathLike[str]) -> ModuleType:
    """Import a bot from a .py file, or from a folder holding bot.py (its folder on sys.path)."""
    # os.path rather than pathlib: this runs in every bot process, where start-up time counts.
    p = os.fspath(path)
    if os.path.isdir(p):
        p = os.path.join(p, "bot.py")
    if not os.path.isfile(p):
        raise AgentLoadError(f"no bot file at {path}")
    if not p.endswith(".py"):
        raise AgentLoadError(f"{path} is not a Python file (.py)")
    full = os.path.realpath(p)
    folder = os.path.dirname(full)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    module_name = f"cow006_bot_{abs(hash(full))}"
    spec_from_file_location, module_from_spec = _import_machinery()
    spec = spec_from_file_location(module_name, p)
    if spec is None or spec.loader is None:
        raise AgentLoadError(f"cannot import {path}")
    module: ModuleType = module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise AgentLoadError(f"{path} has a syntax error at line {exc.lineno}: {exc.msg}") from exc
    except Exception as exc:
        raise AgentLoadError(f"importing {path} failed: {type(exc).__name__}: {exc}") from exc
    return module


def _import_machinery() -> tuple[Any, Any]:
    """``importlib.util``'s ``spec_from_file_location`` and ``module_from_spec``, taken from
    the import system's own modules (always loaded) where they are defined: importing
    ``importlib.util`` would add ``importlib._abc`` and ``types`` to every bot's start."""
    boot, external = (
        sys.modules.get("_frozen_importlib"),
        sys.modules.get("_frozen_importlib_external"),
    )
    if boot is not None and external is not None:
        return external.spec_from_file_location, boot.module_from_spec
    import importlib.util  # another interpreter: the public names

    return importlib.util.spec_from_file_location, importlib.util.module_from_spec


def load_agent_file(path: str | os.PathLike[str]) -> Agent:
    """The agent defined in a bot file (see ``agent_from_module``)."""
    name = os.path.splitext(os.path.basename(os.fspath(path)))[0]
    return agent_from_module(load_module(path), name=name)
