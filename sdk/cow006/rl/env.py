"""The PettingZoo parallel environment: every seat of a match acts at once, as the game does.

Agents are ``player_0`` .. ``player_{n-1}`` (seat order).  A step is one phase of a turn
(``cow006.rl._game``): in the play phase every seat plays a card; in the row phase, which
comes only when the lowest card of the turn is below every row end, its seat takes a row
and the others pass.  Every observation holds the vector and the ``action_mask``
(``cow006.rl.obs``); ``infos[agent]["view"]`` is the raw view (``View.to_dict``).  An episode
is a whole match, to 66; its log is ``match_log()``.
"""

from __future__ import annotations

import random
from typing import Any, Literal

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from ..cards import MAX_PLAYERS, MIN_PLAYERS
from ..log import MatchLog
from . import obs
from ._game import Game, IllegalActionError, card_of, place_reward, row_of

Reward = Literal["heads", "place"]
Illegal = Literal["fallback", "raise"]
_MAX_SEED = 2**63 - 1


def _check_options(n_players: int, reward: str, illegal: str) -> None:
    """ValueError, in one sentence, for options an environment cannot be made with."""
    if type(n_players) is not int or not MIN_PLAYERS <= n_players <= MAX_PLAYERS:
        raise ValueError(f"a match has {MIN_PLAYERS} to {MAX_PLAYERS} players, not {n_players!r}")
    if reward not in ("heads", "place"):
        raise ValueError(f'reward is "heads" or "place", not {reward!r}')
    if illegal not in ("fallback", "raise"):
        raise ValueError(f'illegal is "fallback" or "raise", not {illegal!r}')


class _Seeds:
    """The environment's randomness: match seeds and agent seeds, from ``reset(seed=...)``."""

    def __init__(self) -> None:
        self.rng = random.Random()

    def match_seed(self, seed: int | None) -> int:
        """``seed`` itself when given (the log's seed, so ``--seed`` means one deal), and the
        generator is seeded from it; otherwise the generator's next seed."""
        if seed is not None:
            if type(seed) is not int and not isinstance(seed, np.integer):
                raise ValueError(f"a seed is an integer, not {seed!r}")
            seed = int(seed)
            if not 0 <= seed <= _MAX_SEED:
                raise ValueError(f"a seed is in 0 .. 2**63 - 1, not {seed}")
            self.rng.seed(seed)
            return seed
        return self.rng.getrandbits(63)

    def agent_seeds(self, n: int) -> list[int]:
        return [self.rng.getrandbits(63) for _ in range(n)]


class Cow006ParallelEnv(ParallelEnv):  # type: ignore[misc]  # pettingzoo has no type hints
    """A match of ``n_players`` seats, all of them learners (PettingZoo ``ParallelEnv``).

    ``reward="heads"``: each step, minus the heads a seat took in it (a deal's rewards add up
    to minus its penalty); ``reward="place"``: 0 until the match's end, then 1 for first
    place down to -1 for last.  ``illegal="fallback"`` plays an action the mask does not allow
    as the runner plays a fault (the lowest card, the cheapest row) and records a fault in the
    log; ``illegal="raise"`` raises ``IllegalActionError`` instead.  A missing action is an
    illegal one.
    """

    metadata: dict[str, Any] = {  # noqa: RUF012  # PettingZoo's attribute
        "name": "cow006_v0",
        "render_modes": [],
        "is_parallelizable": True,
    }

    def __init__(
        self,
        n_players: int = 4,
        *,
        reward: Reward = "heads",
        illegal: Illegal = "fallback",
        names: list[str] | None = None,
    ) -> None:
        _check_options(n_players, reward, illegal)
        self.n_players = n_players
        self.reward_kind: Reward = reward
        self.strict = illegal == "raise"
        self.possible_agents = [f"player_{i}" for i in range(n_players)]
        self.agents: list[str] = []
        self.names = list(names) if names is not None else list(self.possible_agents)
        if len(self.names) != n_players:
            raise ValueError(f"{len(self.names)} names given for {n_players} players")
        self.render_mode = None
        self._spaces = {a: obs.observation_space() for a in self.possible_agents}
        self._actions = {a: obs.action_space() for a in self.possible_agents}
        self._seeds = _Seeds()
        self.game: Game | None = None
        self._last_log: MatchLog | None = None

    # The same space object every time (PettingZoo's tests check it).
    def observation_space(self, agent: str) -> spaces.Space[Any]:
        return self._spaces[agent]

    def action_space(self, agent: str) -> spaces.Space[Any]:
        return self._actions[agent]

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        match_seed = self._seeds.match_seed(seed)
        if seed is not None:
            for i, a in enumerate(self.possible_agents):
                self._actions[a].seed(seed + i)
        self.game = Game(match_seed, self.names, self._seeds.agent_seeds(self.n_players))
        self.agents = list(self.possible_agents)
        return self._observe()

    def step(
        self, actions: dict[str, Any]
    ) -> tuple[dict[str, Any], dict[str, float], dict[str, bool], dict[str, bool], dict[str, Any]]:
        game = self.game
        if game is None or game.over:
            raise RuntimeError("the match is over (or not started): call reset()")
        if game.phase == "play":
            cards = [
                card_of(game, seat, actions.get(agent), self.strict)
                for seat, agent in enumerate(self.possible_agents)
            ]
            game.play(cards)
        else:
            agent = self.possible_agents[game.row_seat]
            if self.strict:  # the others may only pass (or send nothing): their masks say so
                for other, action in actions.items():
                    if other != agent and action is not None and action != obs.PASS:
                        raise IllegalActionError(
                            f"{other} chose action {action!r} in a row phase: only "
                            f"{agent} takes a row, the others pass ({obs.PASS})"
                        )
            game.take(row_of(game, game.row_seat, actions.get(agent), self.strict))
        rewards = self._rewards(game)
        done = game.over
        if done:
            self._last_log = game.log
        observations, infos = self._observe()
        terminations: dict[str, bool] = dict.fromkeys(self.agents, done)
        truncations = dict.fromkeys(self.agents, False)
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def _rewards(self, game: Game) -> dict[str, float]:
        taken = game.collect()
        if self.reward_kind == "heads":
            return {a: -float(taken[i]) for i, a in enumerate(self.possible_agents)}
        if not game.over:
            return dict.fromkeys(self.possible_agents, 0.0)
        ranks = game.ranks()
        n = self.n_players
        return {a: place_reward(ranks[i], n) for i, a in enumerate(self.possible_agents)}

    def _observe(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Every seat's observation and info (the raw view)."""
        game = self.game
        assert game is not None
        observations: dict[str, Any] = {}
        infos: dict[str, Any] = {}
        for seat, agent in enumerate(self.possible_agents):
            view = game.view(seat)
            asked = game.asked(seat)
            kind = game.phase if asked else "pass"
            observations[agent] = {
                "observation": obs.encode(view, kind == "row"),
                "action_mask": obs.mask(view.hand, kind),
            }
            infos[agent] = {"view": view.to_dict(), "phase": game.phase, "asked": asked}
        return observations, infos

    def match_log(self) -> MatchLog:
        """The log of the last finished match (cow006-match-1; ``cow006.log.verify`` it)."""
        if self._last_log is None:
            raise RuntimeError("no match has finished yet in this environment")
        return self._last_log

    def state(self) -> np.ndarray[Any, Any]:
        raise NotImplementedError("a global state is not part of this environment")

    def render(self) -> None:
        return None

    def close(self) -> None:
        return None
