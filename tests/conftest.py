"""Shared fixtures: seeded random agents and finished match logs."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from cow006 import Agent, MatchInfo, View, play_match


class RandomAgent(Agent):
    """Plays a random card and takes a random row, reproducibly from its agent seed."""

    def __init__(self) -> None:
        self.rng = random.Random(0)

    def on_match_start(self, info: MatchInfo) -> None:
        self.rng = random.Random(info.seed)

    def play(self, view: View) -> int:
        return self.rng.choice(view.hand)

    def take_row(self, view: View) -> int:
        return self.rng.randrange(4)


MakeAgents = Callable[[int], list[Agent]]


@pytest.fixture(scope="session")
def random_agents() -> MakeAgents:
    """A factory: ``random_agents(n)`` gives n fresh seeded random agents."""

    def make(n: int) -> list[Agent]:
        return [RandomAgent() for _ in range(n)]

    return make


@pytest.fixture(scope="session")
def match_log(random_agents: MakeAgents) -> Callable[[int, int], dict[str, Any]]:
    """A factory: ``match_log(n_players, seed)`` plays a random match and returns its log."""

    def make(n: int, seed: int) -> dict[str, Any]:
        return play_match(random_agents(n), seed=seed)

    return make
