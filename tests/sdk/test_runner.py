"""The local runner: the play_match contract, faults with their fallbacks, forfeits, explicit
deals, plain-function bots and the number of players."""

from __future__ import annotations

import math
import types
from collections.abc import Callable
from typing import Any

import pytest

from cow006 import (
    Agent,
    FunctionAgent,
    MatchInfo,
    SetupError,
    View,
    _runner,
    engine,
    heads_of,
    play_match,
    verify,
)
from cow006._agent import agent_from_module
from cow006._runner import seat_labels
from cow006.cards import HAND_SIZE
from cow006.log import FORMAT

Log = dict[str, Any]
MakeAgents = Callable[[int], list[Agent]]
LOG_KEYS = {
    "format",
    "seed",
    "players",
    "rounds",
    "scores",
    "ranks",
    "faults",
    "forfeited",
    "agent_seeds",
}

# A deal where seat 0 holds 1 (below every row end) and plays it first when playing low.
LOW_DEAL = (
    [list(range(1, 11)), list(range(11, 21))],
    [[30], [44], [52], [60]],  # 3, 5, 1 and 3 heads: the cheapest row is row 2
)


class Max(Agent):
    def play(self, view: View) -> int:
        return max(view.hand)


class Min(Agent):
    def play(self, view: View) -> int:
        return min(view.hand)


class Scripted(Agent):
    """Plays its lowest card and takes the cheapest row, except for scripted replies:
    ``plays``/``rows`` map (round, turn) to a value to return or an exception to raise."""

    def __init__(
        self,
        plays: dict[tuple[int, int], Any] | None = None,
        rows: dict[tuple[int, int], Any] | None = None,
    ) -> None:
        self.plays = plays or {}
        self.rows = rows or {}
        self.asked: list[tuple[str, int, int]] = []
        self.forfeits = 0

    def _reply(self, script: dict[tuple[int, int], Any], view: View, default: int) -> Any:
        reply = script.get((view.round, view.turn), default)
        if isinstance(reply, BaseException):
            raise reply
        return reply(view) if callable(reply) else reply

    def play(self, view: View) -> int:
        self.asked.append(("play", view.round, view.turn))
        return self._reply(self.plays, view, min(view.hand))

    def take_row(self, view: View) -> int:
        self.asked.append(("take_row", view.round, view.turn))
        return self._reply(self.rows, view, view.cheapest_row())

    def forfeit(self) -> None:
        self.forfeits += 1


def hand_at(log: Log, seat: int, r: int, t: int) -> list[int]:
    rnd = log["rounds"][r]
    played = {turn["cards"][seat] for turn in rnd["turns"][:t]}
    return sorted(set(rnd["hands"][seat]) - played)


def rows_before(log: Log, r: int, t: int) -> list[list[int]]:
    rnd = log["rounds"][r]
    return rnd["rows"] if t == 0 else rnd["turns"][t - 1]["rows"]


def table_at(log: Log, seat: int, r: int, t: int) -> dict[str, Any]:
    """What the view of ``seat`` at round ``r``, turn ``t`` must hold, from the log."""
    rounds, rnd = log["rounds"], log["rounds"][r]
    penalties = [0] * len(log["players"])
    for turn in rnd["turns"][:t]:
        for take in turn["takes"]:
            penalties[take["seat"]] += heads_of(take["cards"])
    return {
        "hand": tuple(hand_at(log, seat, r, t)),
        "rows": tuple(map(tuple, rows_before(log, r, t))),
        "scores": tuple(sum(x["penalties"][s] for x in rounds[:r]) for s in range(len(penalties))),
        "penalties": tuple(penalties),
        "revealed": tuple(tuple(turn["cards"]) for turn in rnd["turns"][:t]),
        "starters": tuple(row[0] for row in rnd["rows"]),
        "round": r,
        "turn": t,
        "seat": seat,
        "card": None,
        "current": None,
        "time_left": None,
    }


def view_fields(view: View) -> dict[str, Any]:
    return {
        k: getattr(view, k)
        for k in (
            *("hand", "rows", "scores", "penalties", "revealed", "starters", "round", "turn"),
            *("seat", "card", "current", "time_left"),
        )
    }


class Keeper(Agent):
    """Keeps every view, reads only its hand (so nothing else is made until later)."""

    def __init__(self) -> None:
        self.kept: list[View] = []

    def play(self, view: View) -> int:
        self.kept.append(view)
        return min(view.hand)


class Reader(Agent):
    """Reads the whole view at once and lets it go, then scribbles on it."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def play(self, view: View) -> int:
        self.seen.append(view_fields(view))
        card = max(view.hand)
        view.seat, view.card, view.current, view.time_left, view.hand = 7, 5, (1,), 2.0, ()
        return card


@pytest.mark.parametrize("counted", [True, False])
def test_every_view_holds_its_moment_kept_or_let_go_read_now_or_later(
    counted: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Seats 0 and 2 keep their views unread, seats 1 and 3 read them at once and let them go
    # (after changing them: the next seat's view must not show it); the views are checked
    # against the log, the kept ones only once the match is over.  Not ``counted``: as on an
    # interpreter without reference counts, where no view is made again in place.
    if not counted:
        monkeypatch.setattr(_runner, "_getrefcount", lambda obj: math.nan)
    agents: list[Agent] = [Keeper(), Reader(), Keeper(), Reader()]
    log = play_match(agents, seed=11)
    for seat in (1, 3):
        reader = agents[seat]
        assert isinstance(reader, Reader)
        moments = [(r, t) for r in range(len(log["rounds"])) for t in range(HAND_SIZE)]
        assert reader.seen == [table_at(log, seat, r, t) for r, t in moments]
    for seat in (0, 2):
        keeper = agents[seat]
        assert isinstance(keeper, Keeper)
        assert len(keeper.kept) == len(log["rounds"]) * HAND_SIZE
        for i, view in enumerate(keeper.kept):
            assert view_fields(view) == table_at(log, seat, *divmod(i, HAND_SIZE))
    # No agent reads the table while it plays: every view makes its own, as late as this.
    quiet: list[Agent] = [Keeper(), Keeper()]
    log = play_match(quiet, seed=12)
    for seat, keeper in enumerate(quiet):
        assert isinstance(keeper, Keeper)
        kept = keeper.kept
        for i in reversed(range(len(kept))):  # the last first: nothing read in match order
            assert view_fields(kept[i]) == table_at(log, seat, *divmod(i, HAND_SIZE))


class Vandal(Min):
    """Empties every row of the round's log entry it is handed."""

    def on_round_end(self, result: dict[str, Any]) -> None:
        for rows in [result["rows"], *(turn["rows"] for turn in result["turns"])]:
            for row in rows:
                row.clear()


def test_a_round_end_hook_that_changes_the_log_does_not_change_kept_views() -> None:
    keeper = Keeper()
    play_match([keeper, Vandal()], seed=5, agent_seeds=[1, 2])
    clean = play_match([Keeper(), Min()], seed=5, agent_seeds=[1, 2])  # the same match
    for i, view in enumerate(keeper.kept):
        assert view_fields(view) == table_at(clean, 0, *divmod(i, HAND_SIZE))


# -- the contract ---------------------------------------------------------------------------


def test_play_match_returns_a_cow006_match_1_log(random_agents: MakeAgents) -> None:
    log = play_match(random_agents(4), seed=123)
    assert set(log) == LOG_KEYS
    assert log["format"] == FORMAT == "cow006-match-1"
    assert log["seed"] == 123
    assert log["players"] == [{"seat": i, "agent": f"RandomAgent#{i}"} for i in range(4)]
    assert log["faults"] == [] and log["forfeited"] == []
    assert len(log["scores"]) == len(log["ranks"]) == 4
    assert max(log["scores"]) >= 66
    assert log["ranks"] == engine.ranks(log["scores"])
    for rnd in log["rounds"]:
        assert set(rnd) == {"rows", "hands", "turns", "penalties"}
        assert len(rnd["turns"]) == 10
        for turn in rnd["turns"]:
            assert set(turn) == {"cards", "takes", "rows"}
            for take in turn["takes"]:
                assert set(take) == {"seat", "row", "cards", "reason"}
                assert take["reason"] in {"sixth", "lowest"}
    verify(log)


def test_a_match_without_a_seed_records_the_one_it_drew(random_agents: MakeAgents) -> None:
    log = play_match(random_agents(3))
    assert type(log["seed"]) is int and log["seed"] >= 0
    again = play_match(random_agents(3), seed=log["seed"], agent_seeds=log["agent_seeds"])
    assert again == log


def test_the_seed_and_the_agent_seeds_replay_the_same_match(random_agents: MakeAgents) -> None:
    first = play_match(random_agents(5), seed=9)
    assert play_match(random_agents(5), seed=9, agent_seeds=first["agent_seeds"]) == first
    other = play_match(random_agents(5), seed=10, agent_seeds=first["agent_seeds"])
    assert other["rounds"][0]["hands"] != first["rounds"][0]["hands"]


def test_the_match_seed_fixes_the_deal_and_not_the_agent_seeds(
    random_agents: MakeAgents,
) -> None:
    logs = [play_match(random_agents(4), seed=9) for _ in range(3)]
    assert [log["rounds"][0]["hands"] for log in logs] == [logs[0]["rounds"][0]["hands"]] * 3
    seeds = [s for log in logs for s in log["agent_seeds"]]
    assert len(set(seeds)) == len(seeds) == 12  # fresh per seat and per match


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        ([1], "1 agent seeds given for 2 agents"),
        ([1, -1], "agent seed"),
        ([1, 2**63], "agent seed"),
        ([1, 2.0], "agent seed"),
        ([1, True], "agent seed"),
    ],
)
def test_bad_agent_seeds_are_a_setup_error(seeds: list[Any], message: str) -> None:
    with pytest.raises(SetupError, match=message):
        play_match([Max(), Min()], seed=1, agent_seeds=seeds)


def test_names_and_settings_are_recorded() -> None:
    log = play_match([Max(), Min()], seed=1, names=["alice", "bob"], settings={"time": 1.0})
    assert log["players"] == [{"seat": 0, "agent": "alice"}, {"seat": 1, "agent": "bob"}]
    assert log["settings"] == {"time": 1.0}
    verify(log)
    with pytest.raises(SetupError, match="1 names given for 2 agents"):
        play_match([Max(), Min()], seed=1, names=["alice"])


def test_agents_without_names_are_named_by_type_and_seat() -> None:
    named = Min()
    named.name = "lowest-first"
    log = play_match([Max(), named, Max()], seed=2)
    assert [p["agent"] for p in log["players"]] == ["Max#0", "lowest-first", "Max#2"]


def test_each_seat_is_told_its_own_copy_of_the_settings() -> None:
    class Meddler(Min):
        def on_match_start(self, info: MatchInfo) -> None:
            self.info = info
            self.settings_seen = dict(info.settings)
            info.settings["meddled"] = info.seat  # its own copy: no other seat sees it
            with pytest.raises(AttributeError, match="read-only"):
                info.seat = 5  # type: ignore[misc]

    agents = [Meddler(), Meddler(), Meddler()]
    log = play_match(agents, seed=4, settings={"time": 2.0})
    assert [a.settings_seen for a in agents] == [{"time": 2.0}] * 3
    assert [a.info.settings for a in agents] == [{"time": 2.0, "meddled": s} for s in range(3)]
    assert [a.info.seat for a in agents] == [0, 1, 2]
    assert {a.info.n_players for a in agents} == {3}
    assert [a.info.seed for a in agents] == log["agent_seeds"]
    assert log["settings"] == {"time": 2.0}


def test_hooks_are_called_on_the_agents_whose_type_has_them_only() -> None:
    class Ends(Min):
        def __init__(self) -> None:
            self.ends = 0

        def on_round_end(self, result: dict[str, Any]) -> None:
            self.ends += 1

    class NotAnAgent:  # duck-typed: what the runner calls, and an on_match_end hook
        def __init__(self) -> None:
            self.result: dict[str, Any] | None = None

        def play(self, view: View) -> int:
            return view.hand[-1]

        def take_row(self, view: View) -> int:
            return 0

        def on_match_start(self, info: MatchInfo) -> None:
            pass

        def on_round_end(self, result: dict[str, Any]) -> None:
            pass  # asked for, as another seat's type has it (and a missing hook is a fault)

        def on_match_end(self, result: dict[str, Any]) -> None:
            self.result = result  # the only type with this hook: the runner must see it

    ends, duck = Ends(), NotAnAgent()
    log = play_match([Min(), ends, duck], seed=9)  # type: ignore[list-item]
    verify(log)
    assert log["faults"] == []
    assert ends.ends == len(log["rounds"])
    assert duck.result == {"scores": log["scores"], "ranks": log["ranks"]}


def test_an_unknown_option_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="nmes"):
        play_match([Min(), Max()], seed=1, nmes=["a", "b"])  # type: ignore[call-arg]


@pytest.mark.parametrize("seed", [-1, 1.5, "7", True])
def test_a_bad_seed_is_a_setup_error(seed: Any) -> None:
    with pytest.raises(SetupError, match="seed"):
        play_match([Max(), Min()], seed=seed)


@pytest.mark.parametrize("n", [0, 1, 11])
def test_one_or_eleven_players_is_a_setup_error(n: int) -> None:
    with pytest.raises(SetupError, match="2 to 10 players"):
        play_match([Max() for _ in range(n)], seed=1)


@pytest.mark.parametrize("n", [2, 10])
def test_two_and_ten_players_play_whole_matches(random_agents: MakeAgents, n: int) -> None:
    log = play_match(random_agents(n), seed=77)
    verify(log)
    assert len(log["players"]) == n
    for rnd in log["rounds"]:
        dealt = [c for h in rnd["hands"] for c in h] + [row[0] for row in rnd["rows"]]
        assert len(set(dealt)) == len(dealt) == 10 * n + 4
        if n == 10:
            assert sorted(dealt) == list(range(1, 105))


def test_hooks_get_the_match_info_rounds_and_result() -> None:
    class Hooked(Min):
        def __init__(self) -> None:
            self.events: list[tuple[str, Any]] = []

        def on_match_start(self, info: MatchInfo) -> None:
            self.events.append(("start", info))

        def on_round_start(self, view: View) -> None:
            self.events.append(("round", (view.round, view.turn, len(view.hand))))

        def on_round_end(self, result: dict[str, Any]) -> None:
            self.events.append(("round_end", result["penalties"]))

        def on_match_end(self, result: dict[str, Any]) -> None:
            self.events.append(("end", result))

    agents = [Hooked(), Hooked(), Hooked()]
    log = play_match(agents, seed=31, names=["a", "b", "c"])
    seeds = log["agent_seeds"]
    assert len(set(seeds)) == 3
    assert seat_labels(3) == ("p0", "p1", "p2")
    for seat, agent in enumerate(agents):
        kind, info = agent.events[0]
        assert kind == "start"
        # opaque labels, never the names the log records
        assert info == MatchInfo(seat, 3, seeds[seat], ("p0", "p1", "p2"), {})
        rounds = [e for e in agent.events if e[0] == "round"]
        assert rounds == [("round", (r, 0, 10)) for r in range(len(log["rounds"]))]
        ends = [e[1] for e in agent.events if e[0] == "round_end"]
        assert ends == [rnd["penalties"] for rnd in log["rounds"]]
        assert agent.events[-1] == ("end", {"scores": log["scores"], "ranks": log["ranks"]})


# -- explicit deals ---------------------------------------------------------------------------


def test_explicit_deals_are_played_first_then_the_seed_deals() -> None:
    second = ([list(range(95, 105)), list(range(85, 95))], [[1], [2], [3], [4]])
    log = play_match([Max(), Min()], seed=3, deals=[LOW_DEAL, second])
    assert log["rounds"][0]["hands"] == LOW_DEAL[0]
    assert log["rounds"][0]["rows"] == LOW_DEAL[1]
    assert log["rounds"][1]["hands"] == [list(range(95, 105)), list(range(85, 95))]
    assert log["rounds"][1]["rows"] == [[1], [2], [3], [4]]
    verify(log)


def test_explicit_deal_hands_are_sorted() -> None:
    hands = [list(range(10, 0, -1)), list(range(20, 10, -1))]
    log = play_match([Max(), Min()], seed=3, deals=[(hands, [[30], [40], [50], [60]])])
    assert log["rounds"][0]["hands"] == [list(range(1, 11)), list(range(11, 21))]


@pytest.mark.parametrize(
    "deal",
    [
        ([list(range(1, 11)), list(range(1, 11))], [[30], [40], [50], [60]]),
        ([list(range(1, 11)), list(range(11, 21))], [[30], [40], [50]]),
        ([list(range(1, 11))], [[30], [40], [50], [60]]),
    ],
)
def test_an_impossible_explicit_deal_is_a_setup_error(deal: Any) -> None:
    with pytest.raises(SetupError):
        play_match([Max(), Min()], seed=3, deals=[deal])


# -- faults and fallbacks ---------------------------------------------------------------------


def test_an_agent_that_raises_gets_an_exception_fault_and_plays_its_lowest_card() -> None:
    bot = Scripted(plays={(0, 0): RuntimeError("boom"), (0, 4): ValueError("bad")})
    log = play_match([Max(), bot], seed=5)
    assert log["faults"] == [
        {"seat": 1, "round": 0, "turn": 0, "kind": "exception", "detail": "RuntimeError: boom"},
        {"seat": 1, "round": 0, "turn": 4, "kind": "exception", "detail": "ValueError: bad"},
    ]
    assert log["forfeited"] == []
    for t in (0, 4):
        assert log["rounds"][0]["turns"][t]["cards"][1] == min(hand_at(log, 1, 0, t))
    verify(log)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [
        (lambda view: 105, "illegal_card"),
        (lambda view: 0, "illegal_card"),
        (lambda view: 20, "illegal_card"),  # in the other seat's hand
        (lambda view: True, "bad_type"),
        (lambda view: str(max(view.hand)), "bad_type"),
        (lambda view: float(max(view.hand)), "bad_type"),
        (lambda view: None, "bad_type"),
        (lambda view: [max(view.hand)], "bad_type"),
    ],
    ids=["105", "0", "other-hand", "True", "str", "float", "None", "list"],
)
def test_a_bad_card_is_a_fault_and_the_lowest_card_is_played(
    reply: Callable[[View], Any], kind: str
) -> None:
    bot = Scripted(plays={(0, 2): reply})
    log = play_match([bot, Max()], seed=5, deals=[LOW_DEAL])
    assert [(f["seat"], f["round"], f["turn"], f["kind"]) for f in log["faults"]] == [
        (0, 0, 2, kind)
    ]
    assert log["faults"][0]["detail"].startswith("seat 0 ")
    assert log["rounds"][0]["turns"][2]["cards"][0] == min(hand_at(log, 0, 0, 2))
    assert log["forfeited"] == []
    verify(log)


@pytest.mark.parametrize(
    ("reply", "kind"),
    [(7, "illegal_row"), (-1, "illegal_row"), ("1", "bad_type"), (True, "bad_type")],
)
def test_a_bad_row_is_a_fault_and_the_cheapest_row_is_taken(reply: Any, kind: str) -> None:
    bot = Scripted(rows={(0, 0): reply})
    log = play_match([bot, Max()], seed=5, deals=[LOW_DEAL])
    assert [(f["seat"], f["round"], f["turn"], f["kind"]) for f in log["faults"]] == [
        (0, 0, 0, kind)
    ]
    assert ("take_row", 0, 0) in bot.asked
    turn = log["rounds"][0]["turns"][0]
    assert turn["takes"][0] == {"seat": 0, "row": 2, "cards": [52], "reason": "lowest"}
    verify(log)


def test_a_take_row_that_raises_falls_back_to_the_cheapest_row() -> None:
    bot = Scripted(rows={(0, 0): KeyError("x")})
    log = play_match([bot, Max()], seed=5, deals=[LOW_DEAL])
    assert [(f["turn"], f["kind"], f["detail"]) for f in log["faults"]] == [
        (0, "exception", "KeyError: 'x'")
    ]
    assert log["rounds"][0]["turns"][0]["takes"][0]["row"] == 2


def test_three_faults_forfeit_the_seat_and_fallbacks_continue() -> None:
    boom = RuntimeError("boom")
    bot = Scripted(plays={(0, 0): boom, (0, 1): 999, (0, 2): "x"})
    log = play_match([Max(), bot, Max()], seed=8)
    assert [(f["seat"], f["turn"], f["kind"]) for f in log["faults"]] == [
        (1, 0, "exception"),
        (1, 1, "illegal_card"),
        (1, 2, "bad_type"),
    ]
    assert log["forfeited"] == [1]
    assert bot.forfeits == 1
    # The bot is never asked again, yet the match completes with its lowest cards played.
    assert [a for a in bot.asked if a[0] == "play"] == [("play", 0, t) for t in range(3)]
    assert bot.asked[-1] == ("play", 0, 2)
    for r, rnd in enumerate(log["rounds"]):
        for t, turn in enumerate(rnd["turns"]):
            assert turn["cards"][1] == min(hand_at(log, 1, r, t))
            for take in turn["takes"]:
                if take["seat"] == 1 and take["reason"] == "lowest":
                    assert take["row"] == engine.cheapest_row(rows_before(log, r, t))
    assert max(log["scores"]) >= 66
    verify(log)


def test_a_hook_that_raises_is_an_exception_fault() -> None:
    class BadStart(Min):
        def on_round_start(self, view: View) -> None:
            raise ZeroDivisionError("nope")

    log = play_match([BadStart(), Max()], seed=2)
    starts = [f for f in log["faults"] if f["seat"] == 0]
    assert starts[0] == {
        "seat": 0,
        "round": 0,
        "turn": 0,
        "kind": "exception",
        "detail": "ZeroDivisionError: nope",
    }
    # One fault per round start until the third forfeits the seat.
    assert len(starts) == min(3, len(log["rounds"]))


# -- plain-function bots ----------------------------------------------------------------------


def test_a_plain_function_module_is_an_agent() -> None:
    module = types.ModuleType("lowbot")
    asked: list[int] = []

    def play(view: View) -> int:
        return min(view.hand)

    def take_row(view: View) -> int:
        assert view.card is not None
        asked.append(view.card)
        return 3

    module.play = play  # type: ignore[attr-defined]
    module.take_row = take_row  # type: ignore[attr-defined]
    agent = agent_from_module(module)
    assert isinstance(agent, FunctionAgent)
    log = play_match([agent, Max()], seed=4, deals=[LOW_DEAL])
    assert log["players"][0]["agent"] == "lowbot"
    assert log["faults"] == []
    assert asked and asked[0] == 1
    assert log["rounds"][0]["turns"][0]["takes"][0] == {
        "seat": 0,
        "row": 3,
        "cards": [60],
        "reason": "lowest",
    }
    verify(log)


def test_a_module_with_only_play_takes_the_cheapest_row() -> None:
    module = types.ModuleType("onlyplay")
    module.play = lambda view: min(view.hand)  # type: ignore[attr-defined]
    agent = agent_from_module(module)
    log = play_match([agent, Max()], seed=4, deals=[LOW_DEAL])
    assert log["rounds"][0]["turns"][0]["takes"][0]["row"] == 2
    assert log["faults"] == []


def test_a_log_from_before_agent_seeds_still_loads_and_verifies(
    random_agents: MakeAgents, tmp_path: Any
) -> None:
    from cow006 import log as match_log

    log = play_match(random_agents(3), seed=4)
    older = {k: v for k, v in log.items() if k != "agent_seeds"}
    path = tmp_path / "old.json"
    match_log.write(older, path)
    again = match_log.read(path)
    assert "agent_seeds" not in again
    verify(again)
