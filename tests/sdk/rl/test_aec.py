"""The AEC view: PettingZoo's ``api_test``, and the match it plays is the parallel one's."""

from __future__ import annotations

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402
from pettingzoo.test import api_test  # noqa: E402

from cow006 import log as match_log  # noqa: E402


@pytest.mark.parametrize("n_players", [2, 4, 10])
def test_api_test_passes(n_players: int, strict_warnings: None) -> None:
    api_test(rl.aec_env(n_players), num_cycles=1000)


def test_a_whole_match_through_the_aec_view_logs_and_verifies() -> None:
    env = rl.aec_env(3, reward="place")
    env.reset(seed=99)
    rng = np.random.default_rng(0)
    total = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        observation, reward, terminated, truncated, _ = env.last()
        total[agent] += reward
        if terminated or truncated:
            env.step(None)
            continue
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    log = env.unwrapped.match_log()
    match_log.verify(log)
    assert log["seed"] == 99
    assert [total[a] for a in env.possible_agents] == [1.0 - (r - 1) for r in log["ranks"]]
