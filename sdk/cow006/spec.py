"""Agent specs: the strings the ``cow006`` command takes for agents, and the agents they make.

A spec is either ``builtin:NAME``, a bot shipped with the SDK that plays in-process, or a path
to a bot: a ``.py`` or ``.js`` file, or a folder holding ``bot.py`` (or ``bot.js``).  A path
becomes a ``cow006.host.RemoteAgent``: the bot runs in its own process under the given time
limits.

``check`` validates a whole list of specs before anything is played (the builtin exists, the
file exists, the bot starts) so that bad input is one clear ``AgentLoadError`` up front, not a
forfeited seat halfway through a tournament.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from . import bots, host, launch
from . import sandbox as sandbox_mod
from ._agent import Agent
from ._errors import AgentLoadError
from ._runner import MatchRunner
from .host import Limits, RemoteAgent
from .log import MatchLog
from .sandbox import Sandbox

BUILTIN = "builtin:"


def is_builtin(spec: str) -> bool:
    return spec.startswith(BUILTIN)


def builtin_names() -> list[str]:
    return list(bots.names())


def check_builtin(spec: str) -> str:
    """The NAME of a ``builtin:NAME`` spec; AgentLoadError if no builtin has that name."""
    name = spec[len(BUILTIN) :]
    known = builtin_names()
    if name not in known:
        what = f"unknown builtin {name!r}" if name else f"{spec!r} names no builtin"
        raise AgentLoadError(f"{what}; the builtins are {', '.join(known)}")
    return name


def bot_path(spec: str) -> Path:
    """The bot file or folder a path spec names; AgentLoadError if there is no bot there."""
    p = Path(spec)
    if not p.exists() and "/" not in spec and spec in builtin_names():
        raise AgentLoadError(f"no bot file at {spec}; for the builtin bot write builtin:{spec}")
    launch.resolve(p)  # the launcher's own rules: a .py or .js file, or a bot folder
    return p


def _limits(limits: Limits | None) -> Limits:
    return Limits() if limits is None else limits


def resolve(
    spec: str,
    limits: Limits | None = None,
    *,
    name: str | None = None,
    sandbox: Sandbox | None = None,
) -> Agent:
    """The agent a spec names: a builtin in-process, or a RemoteAgent running the bot file.

    A RemoteAgent holds a process: close it (``close()``) when the match is over, or use
    ``agents`` which does.
    """
    if is_builtin(spec):
        agent = bots.make(check_builtin(spec))
        if name is not None:
            agent.name = name
        return agent
    path = bot_path(spec)
    return RemoteAgent(
        str(path),
        name=name or spec,
        limits=_limits(limits),
        launcher=sandbox_mod.launcher(sandbox),
    )


def check(
    specs: Sequence[str],
    limits: Limits | None = None,
    *,
    probe: bool = True,
    sandbox: Sandbox | None = None,
) -> None:
    """Check every spec before playing: the builtin exists, the bot file exists and (with
    ``probe``) the bot starts.  Raises AgentLoadError naming the first bad spec."""
    probed: set[Path] = set()
    for spec in specs:
        if is_builtin(spec):
            check_builtin(spec)
            continue
        path = bot_path(spec)
        key = path.resolve()
        if not probe or key in probed:
            continue
        try:
            host.probe(str(path), limits=_limits(limits), launcher=sandbox_mod.launcher(sandbox))
        except AgentLoadError as exc:
            message = str(exc)
            raise AgentLoadError(message if spec in message else f"{spec}: {message}") from None
        probed.add(key)


@contextlib.contextmanager
def agents(
    specs: Sequence[str],
    limits: Limits | None = None,
    names: Sequence[str] | None = None,
    *,
    sandbox: Sandbox | None = None,
) -> Iterator[list[Agent]]:
    """The agents of ``specs``, in order; every one that holds a process is closed on exit.

    Bot processes are all started here, before the match asks the first of them for its
    hello, so their start-ups overlap instead of adding up.
    """
    with contextlib.ExitStack() as stack:
        out: list[Agent] = []
        for i, spec in enumerate(specs):
            agent = resolve(
                spec, limits, name=names[i] if names is not None else None, sandbox=sandbox
            )
            if isinstance(agent, RemoteAgent):
                stack.callback(agent.close)
                agent.start()
            out.append(agent)
        yield out


def play(
    specs: Sequence[str],
    seed: int | None = None,
    *,
    limits: Limits | None = None,
    names: Sequence[str] | None = None,
    sandbox: Sandbox | None = None,
    agent_seeds: Sequence[int] | None = None,
) -> MatchLog:
    """Play one match between the agents of ``specs`` and return its log.

    The log's ``sandbox`` field says what isolated the bot processes (false: nothing).
    ``agent_seeds`` (a log's ``agent_seeds``) replays a match; None draws fresh ones.
    """
    labels = list(names) if names is not None else list(specs)
    with agents(specs, limits, labels, sandbox=sandbox) as seated:
        log = MatchRunner(seated, seed, names=labels, agent_seeds=agent_seeds).run()
    log["sandbox"] = sandbox_mod.log_entry(sandbox)
    return log
