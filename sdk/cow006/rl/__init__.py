"""Reinforcement learning on Корова 006: PettingZoo and Gymnasium environments (docs/rl.md).

Needs the ``rl`` extra (``pip install 'cow006[rl]'``: numpy, gymnasium, pettingzoo); the rest
of the SDK, and every bot process, stays standard library only and never imports this.

* ``Cow006ParallelEnv`` (``cow006.rl.env``): PettingZoo parallel, every seat a learner;
* ``aec_env`` (``cow006.rl.aec``): its AEC view;
* ``Cow006Env`` (``cow006.rl.gym``): Gymnasium, one learner against cow006 agents;
* ``BatchEnv`` (``cow006.rl.vector``): N of those stepped together into stacked arrays;
* ``cow006.rl.obs``: the action layout, the observation vector and the mask.
"""

from __future__ import annotations

try:
    import gymnasium as _gymnasium
    import numpy as _numpy  # noqa: F401
    import pettingzoo as _pettingzoo  # noqa: F401
except ModuleNotFoundError as exc:  # pragma: no cover - the message is the point
    raise ModuleNotFoundError(
        f"cow006.rl needs the rl extra ({exc.name} is missing): pip install 'cow006[rl]'",
        name=exc.name,
    ) from exc

from ._game import IllegalActionError
from .aec import aec_env
from .env import Cow006ParallelEnv
from .gym import Cow006Env
from .obs import N_ACTIONS, N_OBS, PASS
from .vector import BatchEnv

# ``gymnasium.make("cow006/Cow006-v0", opponents=...)``: the single-agent environment by id.
ENV_ID = "cow006/Cow006-v0"
if ENV_ID not in _gymnasium.registry:
    _gymnasium.register(id=ENV_ID, entry_point="cow006.rl.gym:Cow006Env")

__all__ = [
    "ENV_ID",
    "N_ACTIONS",
    "N_OBS",
    "PASS",
    "BatchEnv",
    "Cow006Env",
    "Cow006ParallelEnv",
    "IllegalActionError",
    "aec_env",
]
