"""The PettingZoo parallel environment: PettingZoo's conformance test, seeds, rewards, logs."""

from __future__ import annotations

from typing import Any

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402
from pettingzoo.test import parallel_api_test  # noqa: E402

from cow006 import log as match_log  # noqa: E402
from cow006.cards import HEADS  # noqa: E402
from cow006.rl import obs  # noqa: E402


def _rollout(env: Any, seed: int, sample_seed: int = 0) -> list[object]:
    """Play a whole match with random legal actions; returns what each step gave."""
    rng = np.random.default_rng(sample_seed)
    observations, _ = env.reset(seed=seed)
    trace: list[object] = []
    while env.agents:
        actions = {
            a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents
        }
        observations, rewards, terms, _, infos = env.step(actions)
        trace.append((actions, rewards, terms, [infos[a]["view"] for a in infos]))
    return trace


@pytest.mark.parametrize("n_players", [2, 4, 10])
def test_parallel_api_test_passes(n_players: int, strict_warnings: None) -> None:
    parallel_api_test(rl.Cow006ParallelEnv(n_players), num_cycles=1000)


def test_a_seeded_rollout_log_verifies_and_the_seed_is_the_logs() -> None:
    env = rl.Cow006ParallelEnv(4)
    _rollout(env, seed=12345)
    log = env.match_log()
    match_log.verify(log)
    assert log["seed"] == 12345
    assert max(log["scores"]) >= 66
    assert [p["agent"] for p in log["players"]] == env.possible_agents
    assert log["faults"] == [] and log["forfeited"] == []


def test_the_same_seed_plays_the_same_match() -> None:
    a, b = rl.Cow006ParallelEnv(3), rl.Cow006ParallelEnv(3)
    assert _rollout(a, 7) == _rollout(b, 7)
    assert a.match_log() == b.match_log()
    c = rl.Cow006ParallelEnv(3)
    _rollout(c, 8)
    assert c.match_log()["rounds"][0]["hands"] != a.match_log()["rounds"][0]["hands"]


def test_heads_rewards_add_up_to_minus_the_scores() -> None:
    env = rl.Cow006ParallelEnv(5)
    trace = _rollout(env, 3)
    totals = dict.fromkeys(env.possible_agents, 0.0)
    for _, rewards, _, _ in trace:
        for a, r in rewards.items():
            totals[a] += r
    assert [-totals[a] for a in env.possible_agents] == env.match_log()["scores"]


def test_place_rewards_come_at_the_end_from_the_ranks() -> None:
    env = rl.Cow006ParallelEnv(4, reward="place")
    trace = _rollout(env, 5)
    *middle, last = trace
    assert all(set(r.values()) == {0.0} for _, r, _, _ in middle)
    ranks = env.match_log()["ranks"]
    got = [last[1][a] for a in env.possible_agents]
    assert got == [1.0 - 2.0 * (r - 1) / 3 for r in ranks]
    assert all(last[2].values())  # every seat terminates together


def test_the_row_phase_asks_only_the_seat_whose_card_is_below_every_end() -> None:
    env = rl.Cow006ParallelEnv(4)
    rng = np.random.default_rng(1)
    observations, infos = env.reset(seed=11)
    seen_row_phase = False
    while env.agents:
        phase = infos["player_0"]["phase"]
        asked = [a for a in env.agents if infos[a]["asked"]]
        if phase == "row":
            seen_row_phase = True
            assert len(asked) == 1
            (seat,) = asked
            view = infos[seat]["view"]
            assert view["card"] < min(r[-1] for r in view["rows"])
            for a in env.agents:
                legal = set(np.flatnonzero(observations[a]["action_mask"]))
                assert legal == ({104, 105, 106, 107} if a == seat else {obs.PASS})
        else:
            assert asked == env.agents
        actions = {
            a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents
        }
        observations, _, _, _, infos = env.step(actions)
    assert seen_row_phase
    taken = [t for r in env.match_log()["rounds"] for turn in r["turns"] for t in turn["takes"]]
    assert any(t["reason"] == "lowest" for t in taken)


def test_an_illegal_action_is_a_logged_fault_and_the_fallback_is_played() -> None:
    env = rl.Cow006ParallelEnv(2)
    _, infos = env.reset(seed=2)
    hand = infos["player_0"]["view"]["hand"]
    not_held = next(c for c in range(1, 105) if c not in hand)
    other = infos["player_1"]["view"]["hand"][-1]
    # player_0: a card it does not hold; player_1: a legal card
    env.step({"player_0": not_held - 1, "player_1": other - 1})
    game = env.game
    assert game is not None
    played = game.log["rounds"][0]["turns"][0]["cards"] if game.phase == "play" else None
    assert played in (None, [min(hand), other])
    assert game.log["faults"][0]["kind"] == "illegal_card"
    assert game.log["faults"][0]["seat"] == 0
    # a missing action and a garbage one are illegal too; the match still verifies
    while env.agents:
        env.step({"player_1": "<script>"})
    match_log.verify(env.match_log())
    faults = env.match_log()["faults"]
    assert {f["seat"] for f in faults} == {0, 1}
    assert {f["kind"] for f in faults if f["seat"] == 1} <= {"bad_type"}


def test_illegal_raise_refuses_an_action_the_mask_does_not_allow() -> None:
    env = rl.Cow006ParallelEnv(2, illegal="raise")
    _, infos = env.reset(seed=2)
    hand = infos["player_0"]["view"]["hand"]
    not_held = next(c for c in range(1, 105) if c not in hand)
    with pytest.raises(rl.IllegalActionError, match="plays no card of its hand"):
        env.step({"player_0": not_held - 1, "player_1": 0})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n_players": 1}, "2 to 10 players"),
        ({"n_players": 11}, "2 to 10 players"),
        ({"reward": "money"}, 'reward is "heads" or "place"'),
        ({"illegal": "ignore"}, 'illegal is "fallback" or "raise"'),
    ],
)
def test_bad_options_are_one_clear_sentence(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rl.Cow006ParallelEnv(**kwargs)


def test_a_bad_seed_is_refused() -> None:
    env = rl.Cow006ParallelEnv(2)
    with pytest.raises(ValueError, match="a seed is in 0"):
        env.reset(seed=-1)
    with pytest.raises(RuntimeError, match="no match has finished yet"):
        env.match_log()


def test_heads_of_the_takes_are_the_rewards_of_their_step() -> None:
    env = rl.Cow006ParallelEnv(4)
    rng = np.random.default_rng(3)
    observations, _ = env.reset(seed=21)
    game = env.game
    assert game is not None
    while env.agents:
        turns_before = sum(len(r["turns"]) for r in game.log["rounds"])
        actions = {
            a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents
        }
        observations, rewards, _, _, _ = env.step(actions)
        turns = [t for r in game.log["rounds"] for t in r["turns"]]
        expected = [0] * 4
        for turn in turns[turns_before:]:
            for t in turn["takes"]:
                expected[t["seat"]] += sum(HEADS[c] for c in t["cards"])
        assert [-rewards[a] for a in env.possible_agents] == expected


def test_every_seat_playing_as_lowest_makes_the_runners_log() -> None:
    """Seats that play as ``builtin:lowest`` does make the log the runner makes of them."""
    from cow006 import View, play_match
    from cow006.bots import make

    env = rl.Cow006ParallelEnv(5)
    _, infos = env.reset(seed=31)
    while env.agents:
        actions = {}
        for a in env.agents:
            view = View.from_dict(infos[a]["view"])
            if not infos[a]["asked"]:
                actions[a] = obs.PASS
            elif infos[a]["phase"] == "row":
                actions[a] = 104 + view.cheapest_row()
            else:
                actions[a] = min(view.hand) - 1
        _, _, _, _, infos = env.step(actions)
    log = env.match_log()
    again = play_match(
        [make("lowest") for _ in range(5)],
        31,
        names=env.possible_agents,
        agent_seeds=log["agent_seeds"],
    )
    assert again == log


def test_illegal_raise_refuses_a_card_from_a_seat_that_must_pass() -> None:
    env = rl.Cow006ParallelEnv(4, illegal="raise")
    observations, infos = env.reset(seed=11)
    rng = np.random.default_rng(1)
    while infos["player_0"]["phase"] != "row":
        actions = {
            a: int(rng.choice(np.flatnonzero(observations[a]["action_mask"]))) for a in env.agents
        }
        observations, _, _, _, infos = env.step(actions)
    other = next(a for a in env.agents if not infos[a]["asked"])
    actions = {a: obs.PASS for a in env.agents}
    actions[other] = 3
    with pytest.raises(rl.IllegalActionError, match=r"only player_\d takes a row"):
        env.step(actions)
