"""The mask never allows an illegal action: random masked actions, many seeds, never raise.

With ``illegal="raise"`` an action the engine refused, or one the environment's own checks
call illegal, would raise; every masked action over whole matches, 2 to 10 players, plays
through, the mask is exactly the legal set, and every match's log verifies.
"""

from __future__ import annotations

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from cow006 import log as match_log  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(
    n_players=st.integers(2, 10),
    seed=st.integers(0, 2**63 - 1),
    sample_seed=st.integers(0, 2**32 - 1),
)
def test_masked_random_actions_never_raise_in_the_parallel_env(
    n_players: int, seed: int, sample_seed: int
) -> None:
    env = rl.Cow006ParallelEnv(n_players, illegal="raise")
    rng = np.random.default_rng(sample_seed)
    observations, infos = env.reset(seed=seed)
    while env.agents:
        actions = {}
        for a in env.agents:
            legal = set(np.flatnonzero(observations[a]["action_mask"]).tolist())
            view = infos[a]["view"]
            if not infos[a]["asked"]:
                assert legal == {rl.PASS}
            elif infos[a]["phase"] == "row":
                assert legal == {104, 105, 106, 107}
            else:
                assert legal == {c - 1 for c in view["hand"]}
            actions[a] = int(rng.choice(sorted(legal)))
        observations, _, _, _, infos = env.step(actions)
    match_log.verify(env.match_log())


@settings(max_examples=25, deadline=None)
@given(
    n_opponents=st.integers(1, 9),
    seat=st.integers(0, 9),
    seed=st.integers(0, 2**63 - 1),
    opponent=st.sampled_from(["random", "lowest", "greedy", "safe"]),
)
def test_masked_random_actions_never_raise_in_the_gym_env(
    n_opponents: int, seat: int, seed: int, opponent: str
) -> None:
    env = rl.Cow006Env((opponent,) * n_opponents, seat=seat % (n_opponents + 1), illegal="raise")
    rng = np.random.default_rng(seed % 2**32)
    observation, _ = env.reset(seed=seed)
    done = False
    while not done:
        legal = np.flatnonzero(observation["action_mask"])
        assert len(legal) > 0
        observation, _, done, _, _ = env.step(int(rng.choice(legal)))
    log = env.match_log()
    match_log.verify(log)
    assert log["faults"] == []
