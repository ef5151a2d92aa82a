"""The Gymnasium single-agent environment: ``check_env``, opponents of every kind, logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

rl = pytest.importorskip(
    "cow006.rl", reason="the rl extra is not installed (pip install 'cow006[rl]')"
)

import numpy as np  # noqa: E402
from gymnasium.utils.env_checker import check_env  # noqa: E402

from cow006 import Agent, View  # noqa: E402
from cow006 import log as match_log  # noqa: E402
from cow006.bots import GreedyBot  # noqa: E402


def _play(env: Any, seed: int, sample_seed: int = 0) -> list[tuple[int, float]]:
    """A whole match with random legal actions: (action, reward) of each step."""
    rng = np.random.default_rng(sample_seed)
    observation, _ = env.reset(seed=seed)
    out: list[tuple[int, float]] = []
    done = False
    while not done:
        action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        observation, reward, done, truncated, _ = env.step(action)
        assert not truncated
        out.append((action, reward))
    return out


@pytest.mark.parametrize("opponents", [("builtin:greedy",) * 3, ("random",), ("safe",) * 9])
def test_check_env_passes(opponents: tuple[str, ...]) -> None:
    env = rl.Cow006Env(opponents)
    check_env(env, skip_render_check=True)


def test_a_seeded_rollout_against_builtins_verifies_and_repeats() -> None:
    env = rl.Cow006Env(("builtin:greedy", "builtin:safe", "builtin:random"), seat=2)
    first = _play(env, 2026)
    log = env.match_log()
    match_log.verify(log)
    assert log["seed"] == 2026
    agents = [p["agent"] for p in log["players"]]
    assert agents == ["builtin:greedy", "builtin:safe", "learner", "builtin:random"]
    assert sum(r for _, r in first) == -log["scores"][2]
    again = rl.Cow006Env(("builtin:greedy", "builtin:safe", "builtin:random"), seat=2)
    assert _play(again, 2026) == first
    assert again.match_log() == log


def test_the_cli_verifies_a_rollouts_log(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cow006.cli import app

    env = rl.Cow006Env(("greedy",))
    _play(env, 4)
    path = tmp_path / "match.json"
    match_log.write(env.match_log(), path)
    result = CliRunner().invoke(app, ["verify", str(path)])
    assert result.exit_code == 0, result.output
    assert "ok 1" in result.output


class Counting(Agent):
    """Counts the hooks it hears and plays its highest card; takes row 3 when asked."""

    def __init__(self) -> None:
        self.heard: list[str] = []

    def on_match_start(self, info: object) -> None:
        self.heard.append("match_start")

    def on_round_start(self, view: View) -> None:
        self.heard.append("round_start")

    def on_round_end(self, result: dict[str, object]) -> None:
        self.heard.append("round_end")

    def on_match_end(self, result: dict[str, object]) -> None:
        self.heard.append("match_end")

    def play(self, view: View) -> int:
        return max(view.hand)

    def take_row(self, view: View) -> int:
        assert view.card is not None and view.card < min(view.row_ends)
        self.heard.append("take_row")
        return 3


def test_agent_objects_and_factories_hear_the_runners_hooks() -> None:
    kept = Counting()
    made: list[Counting] = []

    def factory() -> Agent:
        made.append(Counting())
        return made[-1]

    env = rl.Cow006Env((kept, factory))
    _play(env, 8)
    _play(env, 9)
    assert len(made) == 2  # a fresh agent per match from the factory, the object kept
    log = env.match_log()
    match_log.verify(log)
    rounds = len(log["rounds"])
    heard = made[-1].heard
    assert heard[0] == "match_start" and heard[-1] == "match_end"
    assert heard.count("round_start") == heard.count("round_end") == rounds
    assert kept.heard.count("match_start") == 2
    assert log["faults"] == []


class Broken(Agent):
    def play(self, view: View) -> int:
        raise RuntimeError("<b>boom</b>")


def test_an_opponent_that_raises_gets_faults_then_fallbacks() -> None:
    env = rl.Cow006Env((Broken(), GreedyBot))
    _play(env, 5)
    log = env.match_log()
    match_log.verify(log)
    assert [f["kind"] for f in log["faults"]] == ["exception"] * 3
    assert log["faults"][0]["detail"] == "RuntimeError: <b>boom</b>"
    assert log["forfeited"] == [1]


def test_a_bot_file_plays_in_its_own_process(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text("def play(view):\n    return min(view.hand)\n")
    env = rl.Cow006Env((str(bot), "builtin:greedy"))
    try:
        _play(env, 6)
    finally:
        env.close()
    log = env.match_log()
    match_log.verify(log)
    assert log["faults"] == []
    assert log["players"][1]["agent"] == str(bot)
    assert log["sandbox"] is False


def test_the_learner_is_asked_its_row_when_its_card_is_below_every_end() -> None:
    env = rl.Cow006Env(("builtin:greedy",) * 3)
    observation, info = env.reset(seed=1)
    rows_asked = 0
    done = False
    while not done:
        mask = observation["action_mask"]
        assert np.array_equal(env.action_masks(), mask)
        if info["phase"] == "row":
            rows_asked += 1
            assert set(np.flatnonzero(mask)) == {104, 105, 106, 107}
            assert info["view"]["card"] < min(r[-1] for r in info["view"]["rows"])
            action = 104 + int(np.argmin([sum(1 for _ in r) for r in info["view"]["rows"]]))
        else:
            assert set(np.flatnonzero(mask) + 1) == set(info["view"]["hand"])
            action = int(np.flatnonzero(mask)[0])  # the lowest card: often below every end
        observation, _, done, _, info = env.step(action)
    assert rows_asked > 0
    match_log.verify(env.match_log())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": ()}, "2 to 10 players"),
        ({"opponents": ("greedy",) * 10}, "2 to 10 players"),
        ({"opponents": ("greedy",), "seat": 2}, "the learner's seat is 0 to 1"),
        ({"opponents": (42,)}, "an opponent is a spec string, an Agent or a factory"),
    ],
)
def test_bad_options_are_one_clear_sentence(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        rl.Cow006Env(**kwargs)


def test_an_unknown_builtin_or_a_missing_bot_file_is_refused_at_once(tmp_path: Path) -> None:
    from cow006 import AgentLoadError

    with pytest.raises(AgentLoadError, match="unknown builtin 'nobody'"):
        rl.Cow006Env(("builtin:nobody",))
    with pytest.raises(AgentLoadError, match=r"no_such_bot\.py"):
        rl.Cow006Env((str(tmp_path / "no_such_bot.py"),))


def test_a_bot_file_that_crashes_is_a_crash_fault_and_forfeits(tmp_path: Path) -> None:
    bot = tmp_path / "bot.py"
    bot.write_text("import os\n\n\ndef play(view):\n    os._exit(3)\n")
    env = rl.Cow006Env((str(bot),))
    try:
        _play(env, 6)
    finally:
        env.close()
    log = env.match_log()
    match_log.verify(log)
    assert [f["kind"] for f in log["faults"]] == ["crash"]
    assert log["forfeited"] == [1]


def test_gymnasium_make_knows_the_environment_by_its_id() -> None:
    import gymnasium

    env = gymnasium.make(rl.ENV_ID, opponents=("builtin:greedy",) * 2, reward="place")
    _play(env, 3)
    log = env.unwrapped.match_log()
    match_log.verify(log)
    assert len(log["players"]) == 3


@pytest.mark.slow
def test_a_bot_file_plays_in_the_sandbox_when_one_is_given(
    tmp_path: Path, sandbox_works: None
) -> None:
    from cow006.sandbox import Sandbox

    bot = tmp_path / "bot.py"
    bot.write_text("def play(view):\n    return max(view.hand)\n")
    env = rl.Cow006Env((str(bot),), sandbox=Sandbox())
    try:
        _play(env, 10)
    finally:
        env.close()
    log = env.match_log()
    match_log.verify(log)
    assert log["faults"] == []
    assert isinstance(log["sandbox"], dict)


@pytest.mark.parametrize("seed", [0, 17, 2**40])
def test_the_environment_plays_the_runners_match(seed: int) -> None:
    """A learner that plays as ``builtin:lowest`` does (its lowest card, the cheapest row)
    makes the very log the runner makes of that match, from the log's seed and agent seeds:
    the environment asks the opponents, deals and places exactly as the runner does."""
    from cow006 import play_match
    from cow006.bots import make

    opponents = ("builtin:random", "builtin:greedy", "builtin:safe")
    env = rl.Cow006Env(opponents, seat=1)
    _, info = env.reset(seed=seed)
    done = False
    while not done:
        view = View.from_dict(info["view"])
        action = 104 + view.cheapest_row() if info["phase"] == "row" else min(view.hand) - 1
        _, _, done, _, info = env.step(action)
    log = env.match_log()
    seated = [make("random"), make("lowest"), make("greedy"), make("safe")]
    names = [p["agent"] for p in log["players"]]
    again = play_match(seated, log["seed"], names=names, agent_seeds=log["agent_seeds"])
    assert again == log


class Hostile(Agent):
    """Answers a long text with a NUL and a lone surrogate instead of a card or a row."""

    def play(self, view: View) -> Any:
        return "<script>\x00\ud800" * 10_000

    def take_row(self, view: View) -> Any:
        return -1


def test_a_hostile_opponents_answers_are_bounded_clean_faults() -> None:
    env = rl.Cow006Env((Hostile(),))
    _play(env, 12)
    log = env.match_log()
    match_log.verify(log)
    kinds = [f["kind"] for f in log["faults"]]  # as the runner files them
    assert len(kinds) == 3 and kinds[0] == "bad_type" and set(kinds) <= {"bad_type", "illegal_row"}
    for f in log["faults"]:
        assert len(f["detail"]) <= 600
        assert "\x00" not in f["detail"] and "\ud800" not in f["detail"]
    match_log.dumps(log).encode("utf-8")  # a log that is valid UTF-8 JSON
    assert log["forfeited"] == [1]
