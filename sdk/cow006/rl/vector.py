"""A batch of single-agent environments stepped together, into stacked arrays.

``BatchEnv(n, **kwargs)`` holds ``n`` ``Cow006Env(**kwargs)``; ``reset(seed=s)`` seeds the
i-th with ``s + i``, so the batch plays exactly what ``n`` single environments seeded so
would.  Observations are written in place into one ``float32[n, 463]`` array and one
``int8[n, 109]`` mask (no dictionaries per environment and step): the arrays returned are the
batch's own, overwritten by the next step (copy what you keep).  A finished match is reset at
once (its last observation is in ``infos[i]["final_observation"]``, its log in
``infos[i]["match_log"]``), as a single environment reset with no seed would be.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import obs
from .gym import Cow006Env


class BatchEnv:
    """``n_envs`` ``Cow006Env`` (made from ``kwargs``) stepped as one."""

    def __init__(self, n_envs: int, *, infos: bool = False, **kwargs: Any) -> None:
        if type(n_envs) is not int or n_envs < 1:
            raise ValueError(f"a batch holds at least one environment, not {n_envs!r}")
        self.envs = [Cow006Env(**kwargs) for _ in range(n_envs)]
        self.n_envs = n_envs
        self.with_infos = infos  # the raw view of every environment each step (costs time)
        self.observations = np.zeros((n_envs, obs.N_OBS), dtype=np.float32)
        self.masks = np.zeros((n_envs, obs.N_ACTIONS), dtype=np.int8)
        self.rewards = np.zeros(n_envs, dtype=np.float32)
        self.terminated = np.zeros(n_envs, dtype=bool)
        self.truncated = np.zeros(n_envs, dtype=bool)

    def reset(
        self, seed: int | None = None
    ) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], list[dict[str, Any]]]:
        """Reset every environment (the i-th with ``seed + i``): observations, masks, infos."""
        infos: list[dict[str, Any]] = []
        for i, env in enumerate(self.envs):
            _, info = env.reset(seed=None if seed is None else seed + i)
            env.observe_into(self.observations[i], self.masks[i])
            infos.append(info if self.with_infos else {})
        return self.observations, self.masks, infos

    def step(
        self, actions: Any
    ) -> tuple[
        np.ndarray[Any, Any],
        np.ndarray[Any, Any],
        np.ndarray[Any, Any],
        np.ndarray[Any, Any],
        np.ndarray[Any, Any],
        list[dict[str, Any]],
    ]:
        """One action per environment: observations, masks, rewards, terminated, truncated,
        infos."""
        actions = np.asarray(actions)
        if actions.shape != (self.n_envs,):
            raise ValueError(f"expected {self.n_envs} actions, one per environment")
        infos: list[dict[str, Any]] = []
        for i, env in enumerate(self.envs):
            reward, done, info = env.advance(int(actions[i]), self.with_infos)
            self.rewards[i] = reward
            self.terminated[i] = done
            env.observe_into(self.observations[i], self.masks[i])
            if done:
                info["final_observation"] = {
                    "observation": self.observations[i].copy(),
                    "action_mask": self.masks[i].copy(),
                }
                env.reset()
                env.observe_into(self.observations[i], self.masks[i])
            infos.append(info)
        return self.observations, self.masks, self.rewards, self.terminated, self.truncated, infos

    def match_logs(self) -> list[Any]:
        """The last finished match's log of each environment (None where none finished)."""
        return [env._last_log for env in self.envs]

    def close(self) -> None:
        for env in self.envs:
            env.close()
