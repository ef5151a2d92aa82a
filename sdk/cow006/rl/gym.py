"""The Gymnasium single-agent environment: one learning seat, the others any cow006 agents.

The opponents are given as a list, one per other seat, each one of:

* a spec string, as the ``cow006`` command takes them: ``"builtin:greedy"`` (or ``"greedy"``),
  or the path of a bot file or folder, which runs in its own process (``cow006.spec``);
* an ``Agent`` object, reused from match to match (it is told each match's start);
* a function of no arguments returning a fresh ``Agent``, called at every reset.

A spec string makes a fresh agent for every match (a bot file's process lives for one match
and is closed at its end, or by ``close()``).  The opponents are asked as the runner asks them
(``play``, ``take_row`` and the ``on_*`` hooks, with the same views); an opponent that raises
or answers badly gets a fault in the log and the runner's fallback.

The learner only sees the decisions that are its own: ``step`` plays the opponents' cards with
its card, and asks them for their rows, until the learner has to decide again (its next card,
or a row when its card is below every row end) or the match is over.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium
import numpy as np

from .. import bots
from .._agent import Agent, MatchInfo
from .._errors import AgentLoadError, BotFault, IllegalMoveError, InvalidRowError
from .._faults import MAX_FAULTS, FaultKind
from .._runner import seat_labels
from ..host import RemoteAgent
from ..log import MatchLog
from ..sandbox import Sandbox, log_entry
from . import obs
from ._game import Game, card_of, place_reward, row_of
from .env import Illegal, Reward, _check_options, _Seeds

Opponent = str | Agent | Callable[[], Agent]


def _make(opponent: Opponent, sandbox: Sandbox | None) -> tuple[Agent, bool]:
    """A fresh agent for one match, and whether it is the environment's to close."""
    if isinstance(opponent, Agent):
        return opponent, False
    if isinstance(opponent, str):
        if ":" not in opponent and opponent in bots.names():
            return bots.make(opponent), True
        from .. import spec  # host side: bot processes

        agent = spec.resolve(opponent, sandbox=sandbox)
        start = getattr(agent, "start", None)
        if callable(start):
            start()
        return agent, True
    if callable(opponent):
        made = opponent()
        if not isinstance(made, Agent):
            raise AgentLoadError(f"an opponent factory returned {made!r}, not a cow006 Agent")
        return made, False
    raise AgentLoadError(f"an opponent is a spec string, an Agent or a factory, not {opponent!r}")


class Cow006Env(gymnasium.Env[dict[str, np.ndarray[Any, Any]], int]):
    """One learning seat (``seat``) against ``opponents``; an episode is a whole match.

    ``reward`` and ``illegal`` as for ``Cow006ParallelEnv``.  ``info["view"]`` is the raw view
    of the learner; the step that ends the match carries ``info["match_log"]``, the match's
    log (also ``match_log()``).
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012  # gymnasium's attribute

    def __init__(
        self,
        opponents: Sequence[Opponent] = ("builtin:greedy",) * 3,
        *,
        seat: int = 0,
        reward: Reward = "heads",
        illegal: Illegal = "fallback",
        name: str = "learner",
        sandbox: Sandbox | None = None,
    ) -> None:
        n = len(opponents) + 1
        _check_options(n, reward, illegal)
        if type(seat) is not int or not 0 <= seat < n:
            raise ValueError(f"the learner's seat is 0 to {n - 1}, not {seat!r}")
        for o in opponents:
            if not isinstance(o, str | Agent) and not callable(o):
                raise ValueError(f"an opponent is a spec string, an Agent or a factory, not {o!r}")
        specs = [o for o in opponents if isinstance(o, str)]
        if specs:  # a bad spec is one clear AgentLoadError now, not at the first reset
            from .. import spec

            spec.check(
                [s if ":" in s or s not in bots.names() else f"builtin:{s}" for s in specs],
                probe=False,
            )
        self.opponents = list(opponents)
        self.n_players = n
        self.seat = seat
        self.name = name
        # Bot files run as bare processes (``cow006 match --no-sandbox``: your own bots) unless
        # a sandbox is given (``cow006.sandbox.Sandbox()``, docs/sandbox.md).
        self.sandbox = sandbox
        self.reward_kind: Reward = reward
        self.strict = illegal == "raise"
        # gymnasium's Space generics do not spell a Dict's or a Discrete's values
        self.observation_space = obs.observation_space()  # type: ignore[assignment]
        self.action_space = obs.action_space()  # type: ignore[assignment]
        self._seeds = _Seeds()
        self.game: Game | None = None
        self._agents: list[Agent | None] = []  # by seat; None at the learner's seat
        self._owned: list[Agent] = []  # what close() must close
        self._faults = [0] * n
        self._last_log: MatchLog | None = None

    # -- gymnasium --------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray[Any, Any]], dict[str, Any]]:
        super().reset(seed=seed)
        self._close_agents()
        match_seed = self._seeds.match_seed(seed)
        if seed is not None:
            self.action_space.seed(seed)
        n = self.n_players
        names: list[str] = []
        agents: list[Agent | None] = []
        others = iter(self.opponents)
        for s in range(n):
            if s == self.seat:
                agents.append(None)
                names.append(self.name)
                continue
            opponent = next(others)
            agent, owned = _make(opponent, self.sandbox)
            if owned:
                self._owned.append(agent)
            agents.append(agent)
            names.append(opponent if isinstance(opponent, str) else _label(agent, s))
        self._agents = agents
        self._faults = [0] * n
        agent_seeds = self._seeds.agent_seeds(n)
        self.game = game = Game(match_seed, names, agent_seeds)
        if any(isinstance(a, RemoteAgent) for a in agents):  # what isolated them, as spec.play
            game.log["sandbox"] = log_entry(self.sandbox)
        labels = seat_labels(n)
        for s, seated in enumerate(agents):
            if seated is not None:
                info = MatchInfo(s, n, agent_seeds[s], labels, {})
                self._notify(s, "on_match_start", info)
        self._round_start()
        self._advance()
        game.collect()  # nothing is taken before the first decision
        return self._observation(), self._info()

    def step(
        self, action: Any
    ) -> tuple[dict[str, np.ndarray[Any, Any]], float, bool, bool, dict[str, Any]]:
        reward, done, info = self.advance(action)
        return self._observation(), reward, done, False, info

    def advance(self, action: Any, info: bool = True) -> tuple[float, bool, dict[str, Any]]:
        """``step`` without making the observation (``BatchEnv`` writes it into its arrays
        with ``observe_into``): the reward, whether the match is over, and the info (only
        ``match_log`` at the end, without ``info``)."""
        game = self.game
        if game is None or game.over:
            raise RuntimeError("the match is over (or not started): call reset()")
        if game.phase == "play":
            cards = [
                card_of(game, s, action, self.strict) if s == self.seat else self._card(s)
                for s in range(self.n_players)
            ]
            self._play(cards)
        else:
            self._take(row_of(game, self.seat, action, self.strict))
        self._advance()
        taken = game.collect()[self.seat]
        if self.reward_kind == "heads":
            reward = -float(taken)
        else:
            reward = place_reward(game.ranks()[self.seat], self.n_players) if game.over else 0.0
        out = self._info() if info else {}
        if game.over:
            self._last_log = game.log
            out["match_log"] = game.log
            self._match_end()
        return reward, game.over, out

    def observe_into(self, vector: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> None:
        """Write the learner's observation vector and mask into the given arrays."""
        game = self.game
        assert game is not None
        view = game.view(self.seat)
        kind = game.phase if game.asked(self.seat) else "pass"
        obs.encode(view, kind == "row", vector)
        obs.mask(view.hand, kind, mask)

    def close(self) -> None:
        self._close_agents()

    def match_log(self) -> MatchLog:
        """The log of the last finished match (cow006-match-1; ``cow006.log.verify`` it)."""
        if self._last_log is None:
            raise RuntimeError("no match has finished yet in this environment")
        return self._last_log

    def action_masks(self) -> np.ndarray[Any, Any]:
        """The current action mask (the name sb3-contrib's MaskablePPO asks for)."""
        return self._observation()["action_mask"]

    # -- the match between the learner's decisions -----------------------------------------
    def _advance(self) -> None:
        """Play on until the learner has a decision to make or the match is over."""
        game = self.game
        assert game is not None
        while not game.over:
            if game.phase == "row":
                if game.row_seat == self.seat:
                    return
                self._take(self._row(game.row_seat))
            else:
                return  # a play phase: the learner plays a card (opponents play in step)

    def _play(self, cards: list[int]) -> None:
        game = self.game
        assert game is not None
        game.play(cards)
        if game.phase == "play":  # the turn was placed
            self._after_turn()

    def _take(self, row: int) -> None:
        game = self.game
        assert game is not None
        game.take(row)
        self._after_turn()

    def _after_turn(self) -> None:
        game = self.game
        assert game is not None
        st = game.state
        if st.turn == 0 or game.over:  # a round ended (and, unless over, the next was dealt)
            rounds = game.log["rounds"]
            finished = rounds[-1] if game.over else rounds[-2]
            for s in range(self.n_players):
                self._notify(s, "on_round_end", finished)
            if not game.over:
                self._round_start()

    def _round_start(self) -> None:
        game = self.game
        assert game is not None
        for s, agent in enumerate(self._agents):
            if agent is not None:
                self._notify(s, "on_round_start", game.view(s))

    def _match_end(self) -> None:
        game = self.game
        assert game is not None
        result = {"scores": list(game.state.scores), "ranks": game.ranks()}
        for s in range(self.n_players):
            self._notify(s, "on_match_end", result)
        self._close_agents()

    # -- asking the opponents, as the runner does -------------------------------------------
    def _card(self, seat: int) -> int:
        game = self.game
        agent = self._agents[seat]
        assert game is not None and agent is not None
        hand = game.hand(seat)
        if self._faults[seat] < MAX_FAULTS:
            try:
                card = agent.play(game.view(seat))
                if type(card) is int and card in hand:
                    return card
                # the runner's two faults: not an integer, or not a card of the hand
                if type(card) is not int:
                    detail = f"seat {seat} played {card!r}, which is not an integer"
                    self._fault(seat, FaultKind.BAD_TYPE, detail)
                else:
                    detail = f"seat {seat} played {card!r}, which is not a card in its hand"
                    self._fault(seat, FaultKind.ILLEGAL_CARD, detail)
            except (Exception, SystemExit) as exc:
                self._guard(seat, exc)
        return min(hand)

    def _row(self, seat: int) -> int:
        game = self.game
        agent = self._agents[seat]
        assert game is not None and agent is not None
        if self._faults[seat] < MAX_FAULTS and type(agent).take_row is not Agent.take_row:
            try:
                row = agent.take_row(game.view(seat))
                if type(row) is int and 0 <= row < 4:
                    return row
                if type(row) is not int:
                    detail = f"seat {seat} chose row {row!r}, which is not an integer"
                    self._fault(seat, FaultKind.BAD_TYPE, detail)
                else:
                    detail = f"seat {seat} chose row {row!r}; rows are 0 to 3"
                    self._fault(seat, FaultKind.ILLEGAL_ROW, detail)
            except (Exception, SystemExit) as exc:
                self._guard(seat, exc)
        return game.state.cheapest_row()

    def _notify(self, seat: int, hook: str, arg: Any) -> None:
        agent = self._agents[seat] if seat < len(self._agents) else None
        if agent is None or self._faults[seat] >= MAX_FAULTS:
            return
        try:
            getattr(agent, hook)(arg)
        except (Exception, SystemExit) as exc:
            self._guard(seat, exc)

    def _guard(self, seat: int, exc: BaseException) -> None:
        """An opponent's error as the runner files it: a bot process's fault (a timeout, a
        crash...) by its kind, an illegal move, or an in-process agent's exception."""
        if isinstance(exc, BotFault):
            self._fault(seat, exc.kind, exc.detail, exc.fatal)
        elif isinstance(exc, IllegalMoveError):
            kind = (
                FaultKind.ILLEGAL_ROW
                if isinstance(exc, InvalidRowError)
                else FaultKind.ILLEGAL_CARD
            )
            self._fault(seat, kind, str(exc))
        else:
            self._fault(seat, FaultKind.EXCEPTION, f"{type(exc).__name__}: {exc}")

    def _fault(self, seat: int, kind: FaultKind, detail: str, fatal: bool = False) -> None:
        """A fault of an opponent: logged; after 3 (or a fatal one: a crash) it only gets
        fallbacks and is listed as forfeited, as the runner forfeits it."""
        game = self.game
        assert game is not None
        game.fault(seat, kind, detail)
        if self._faults[seat] >= MAX_FAULTS:
            return
        self._faults[seat] = MAX_FAULTS if fatal else self._faults[seat] + 1
        if self._faults[seat] >= MAX_FAULTS:
            game.log["forfeited"].append(seat)
            close = getattr(self._agents[seat], "forfeit", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    def _close_agents(self) -> None:
        owned, self._owned = self._owned, []
        for agent in owned:
            close = getattr(agent, "close", None)
            if callable(close):
                with contextlib.suppress(Exception):
                    close()

    # -- what the learner sees --------------------------------------------------------------
    def _observation(self) -> dict[str, np.ndarray[Any, Any]]:
        game = self.game
        assert game is not None
        view = game.view(self.seat)
        kind = game.phase if game.asked(self.seat) else "pass"
        return {
            "observation": obs.encode(view, kind == "row"),
            "action_mask": obs.mask(view.hand, kind),
        }

    def _info(self) -> dict[str, Any]:
        game = self.game
        assert game is not None
        return {"view": game.view(self.seat).to_dict(), "phase": game.phase}


def _label(agent: Agent, seat: int) -> str:
    name = getattr(agent, "name", None)
    return str(name) if name else f"{type(agent).__name__}#{seat}"
