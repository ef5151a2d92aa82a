"""The batch equals N single environments under the same seeds, step for step."""

from __future__ import annotations

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402

from cow006 import log as match_log  # noqa: E402

OPPONENTS = ("builtin:greedy", "builtin:random", "builtin:lowest")


def test_the_batch_plays_what_n_single_environments_play() -> None:
    n, seed, steps = 4, 100, 200  # long enough for every environment to finish a match
    batch = rl.BatchEnv(n, opponents=OPPONENTS, seat=1)
    singles = [rl.Cow006Env(OPPONENTS, seat=1) for _ in range(n)]
    observations, masks, _ = batch.reset(seed=seed)
    single = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    finished = [0] * n
    for _ in range(steps):
        for i in range(n):
            assert np.array_equal(observations[i], single[i]["observation"])
            assert np.array_equal(masks[i], single[i]["action_mask"])
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        observations, masks, rewards, terminated, truncated, infos = batch.step(actions)
        assert not truncated.any()
        for i, env in enumerate(singles):
            obs_i, reward, done, _, info = env.step(int(actions[i]))
            assert rewards[i] == reward and terminated[i] == done
            if done:
                final = infos[i]["final_observation"]
                assert np.array_equal(final["observation"], obs_i["observation"])
                assert infos[i]["match_log"] == info["match_log"]
                match_log.verify(info["match_log"])
                finished[i] += 1
                obs_i, _ = env.reset()  # what the batch does: reset with no seed
            single[i] = obs_i
    assert all(finished), finished
    assert batch.match_logs() == [env.match_log() for env in singles]


def test_the_batch_refuses_a_wrong_number_of_actions() -> None:
    batch = rl.BatchEnv(2, opponents=("greedy",))
    batch.reset(seed=1)
    with pytest.raises(ValueError, match="expected 2 actions, one per environment"):
        batch.step([0, 1, 2])
    with pytest.raises(ValueError, match="at least one environment"):
        rl.BatchEnv(0)
