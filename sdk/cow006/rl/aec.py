"""The AEC view of the parallel environment: seats act one after another, PettingZoo's way.

PettingZoo's own conversion (``parallel_to_aec``) turns ``Cow006ParallelEnv`` into an
``AECEnv``: each seat's action is stored until every seat has acted, then the parallel step
runs.  Nothing is revealed early: the seats of a phase decide on the same observations.
``env.unwrapped`` is the parallel environment (its ``match_log()``, its ``game``).
"""

from __future__ import annotations

from typing import Any

from pettingzoo.utils.conversions import parallel_to_aec

from .env import Cow006ParallelEnv, Illegal, Reward


def aec_env(
    n_players: int = 4,
    *,
    reward: Reward = "heads",
    illegal: Illegal = "fallback",
    names: list[str] | None = None,
) -> Any:
    """An AEC environment of a match (the arguments are ``Cow006ParallelEnv``'s)."""
    return parallel_to_aec(
        Cow006ParallelEnv(n_players, reward=reward, illegal=illegal, names=names)
    )
