"""RemoteAgent against real bot processes: full matches, and one faulty bot per attack.

Every match here is played by ``cow006.play_match`` with one bot process and simple
in-process opponents; each test checks the log verifies, the fault kinds recorded, that the
fallback (lowest card / cheapest row) was played where the bot faulted and after it was
forfeited, and that no bot process is left behind.  Short limits keep the file fast.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from cow006 import Agent, AgentLoadError, MatchInfo, engine, play_match, verify
from cow006._faults import FATAL_KINDS, MAX_FAULTS, BotFault
from cow006._view import observe
from cow006.host import Limits, RemoteAgent, probe
from cow006.launch import BOT_ENV, command_for

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "bots"
FAULTY = Path(__file__).resolve().parent / "faulty_bots"

# Tight limits for the faulty bots (a timeout costs decision + bank at most once).
FAST = Limits(startup=2.0, decision=0.2, bank=0.3, grace=0.2)
# Roomy limits for well-behaved bots, so a loaded machine cannot fault them.
ROOMY = Limits(startup=5.0, decision=1.0, bank=5.0, grace=0.5)


class Lowest(Agent):
    name = "lowest"

    def play(self, view):
        return min(view.hand)


class Highest(Agent):
    name = "highest"

    def play(self, view):
        return max(view.hand)


def assert_gone(agent: RemoteAgent) -> None:
    """The bot process was reaped and nothing of its process group is left."""
    proc = agent.process
    assert proc is not None
    assert proc.returncode is not None, "the bot process was not reaped"
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)


def run(path: Path, limits: Limits = FAST, *, seat: int = 0, seed: int = 7) -> tuple[dict, Any]:
    """A 3-seat match: the bot at ``seat`` against a lowest-card and a highest-card agent."""
    agent = RemoteAgent(path, limits=limits)
    agents: list[Agent] = [Lowest(), Highest()]
    agents.insert(seat, agent)
    started = time.monotonic()
    try:
        log = play_match(agents, seed=seed)
    finally:
        agent.close()
    assert time.monotonic() - started < 20
    verify(log)
    assert_gone(agent)
    return log, agent


def decisions(log: dict) -> tuple[dict, dict]:
    """Replay a log: per (round, turn, seat), (card played, lowest card in hand) and, for row
    choices, (row taken, cheapest row at that moment)."""
    n = len(log["players"])
    state = engine.new_match(n)
    plays: dict[tuple[int, int, int], tuple[int, int]] = {}
    rows: dict[tuple[int, int, int], tuple[int, int]] = {}
    for r, rnd in enumerate(log["rounds"]):
        engine.start_round(state, rnd["hands"], rnd["rows"])
        for t, turn in enumerate(rnd["turns"]):
            for s in range(n):
                plays[r, t, s] = (turn["cards"][s], min(state.hands[s]))
            chosen = {tk["seat"]: tk["row"] for tk in turn["takes"] if tk["reason"] == "lowest"}

            def choose(seat: int, card: int, chosen=chosen, r=r, t=t) -> int:
                rows[r, t, seat] = (chosen[seat], engine.cheapest_row(state.rows))
                return chosen[seat]

            engine.play_turn(state, turn["cards"], choose)
        engine.finish_round(state)
    return plays, rows


def check_faults(log: dict, seat: int, kinds: set[str], where: str = "play") -> list[dict]:
    """The seat's faults are all of ``kinds`` (at least one), nobody else faulted, the
    fallback was played at each fault (``where``: in play, in take_row, or either), the seat
    was forfeited exactly when it had to be, and got fallbacks from then on."""
    faults = [f for f in log["faults"] if f["seat"] == seat]
    assert faults, "expected a fault"
    assert {f["kind"] for f in faults} <= kinds, faults
    assert all(f["seat"] == seat for f in log["faults"]), log["faults"]
    plays, rows = decisions(log)
    for f in faults:
        if f["round"] < 0:
            continue  # at match start: there was no decision to replace
        key = (f["round"], f["turn"], seat)
        card_ok = key in plays and plays[key][0] == plays[key][1]
        row_ok = key in rows and rows[key][0] == rows[key][1]
        ok = {"play": card_ok, "row": row_ok, "any": card_ok or row_ok}[where]
        assert ok, f"no fallback at {f}: play {plays.get(key)}, row {rows.get(key)}"
    fatal = [i for i, f in enumerate(faults) if f["kind"] in FATAL_KINDS]
    last = min([*fatal, MAX_FAULTS - 1]) if fatal or len(faults) >= MAX_FAULTS else None
    if last is None:
        assert seat not in log["forfeited"]
        return faults
    assert seat in log["forfeited"]
    assert len(faults) == last + 1, "faults recorded after the forfeit"
    point = (faults[last]["round"], faults[last]["turn"])
    for (r, t, s), (card, low) in plays.items():
        if s == seat and (r, t) > point:
            assert card == low, f"seat {seat} forfeited but played {card} at {(r, t)}"
    for (r, t, s), (row, cheapest) in rows.items():
        if s == seat and (r, t) >= point:
            assert row == cheapest, f"seat {seat} forfeited but took row {row} at {(r, t)}"
    return faults


# -- well-behaved bots ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "bot",
    # The JavaScript bot starts node for each match: over 1.5 s, slow.
    ["fewest_heads.py", "function_bot.py", pytest.param("random_bot.js", marks=pytest.mark.slow)],
    ids=lambda b: b,
)
def test_example_bots_play_full_matches(bot: str) -> None:
    log, agent = run(EXAMPLES / bot, ROOMY, seat=1)
    assert log["faults"] == [] and log["forfeited"] == []
    assert agent.returncode == 0, agent.stderr  # it exited by itself after match_end
    assert agent.startup_time is not None and agent.startup_time < ROOMY.startup
    assert agent.bank > 0


def test_two_bot_processes_against_each_other() -> None:
    with (
        RemoteAgent(EXAMPLES / "fewest_heads.py", limits=ROOMY) as a,
        RemoteAgent(EXAMPLES / "random_bot.js", limits=ROOMY) as b,
    ):
        a.start()
        b.start()  # both spawn now; each startup deadline runs from its own spawn
        log = play_match([a, b, Highest()], seed=11)
    verify(log)
    assert log["faults"] == []
    assert [p["agent"] for p in log["players"]] == ["fewest_heads", "random_bot", "highest"]
    assert (a.reported_name, b.reported_name) == ("fewest_heads", "random.js")
    assert_gone(a)
    assert_gone(b)


# A bot that speaks the protocol by hand through ``cow006.bot``'s channel: the lowest card
# and row 0 as raw lines, a count of the notices on stderr.
BY_HAND = """\
import sys

from cow006 import bot

print("sandboxed", bot.sandboxed(), file=sys.stderr, flush=True)


def lowest(msg):
    if msg["type"] == "take_row":
        return b'{"id": %d, "row": 0}\\n' % msg["id"]
    return b'{"id": %d, "card": %d}\\n' % (msg["id"], min(msg["view"]["hand"]))


def notice(msg):
    print("notice", msg["type"], file=sys.stderr, flush=True)


bot.channel.handshake("by hand")
bot.channel.answer(lowest, notice=notice)
"""


def test_a_bot_speaking_by_hand_is_read_as_it_writes(tmp_path: Path) -> None:
    path = tmp_path / "by_hand.py"
    path.write_text(BY_HAND)
    log, agent = run(path, ROOMY)
    assert log["faults"] == [] and agent.reported_name == "by hand"
    assert agent.returncode == 0, agent.stderr  # answer() ended the process at match_end
    assert agent.stderr.startswith("sandboxed False\n")  # a bare process, as root or not
    rounds = len(log["rounds"])
    for kind, count in (("round_start", rounds), ("round_end", rounds), ("match_end", 1)):
        assert agent.stderr.count(f"notice {kind}\n") == count, agent.stderr
    plays, _ = decisions(log)
    assert all(card == low for (_r, _t, seat), (card, low) in plays.items() if seat == 0)


def test_print_goes_to_stderr_which_is_bounded() -> None:
    limits = Limits(startup=2.0, decision=0.5, bank=2.0, stderr_cap=10_000, grace=0.2)
    log, agent = run(FAULTY / "stderr_flood.py", limits)
    assert log["faults"] == []
    assert len(agent.stderr) == 10_000
    assert agent.stderr_dropped > 1_000_000


def test_bot_sees_a_clean_environment_and_its_time(tmp_path: Path) -> None:
    (tmp_path / "helper.py").write_text("ANSWER = 4\n")
    (tmp_path / "bot.py").write_text(
        "import json, os, sys\n"
        "import helper\n"
        "def play(view):\n"
        "    info = {'env': sorted(os.environ), 'site': 'site' in sys.modules,\n"
        "            'path': [p for p in sys.path if 'packages' in p],\n"
        "            'time_left': view.time_left, 'cwd': os.getcwd()}\n"
        "    print(json.dumps(info), file=sys.stderr)\n"
        "    return view.hand[helper.ANSWER % len(view.hand)]\n"
    )
    os.environ["COW006_TEST_SECRET"] = "do-not-leak"
    try:
        log, agent = run(tmp_path, ROOMY)
    finally:
        del os.environ["COW006_TEST_SECRET"]
    assert log["faults"] == []
    info = json.loads(agent.stderr.splitlines()[0])
    assert info["env"] == sorted(BOT_ENV)
    assert info["site"] is False and info["path"] == []
    assert info["time_left"] == ROOMY.decision + ROOMY.bank
    assert Path(info["cwd"]) == tmp_path.resolve()


def test_python_bots_run_on_the_real_interpreter_isolated() -> None:
    argv = command_for(EXAMPLES / "fewest_heads.py")
    assert argv[0] == os.path.realpath(sys.executable)
    assert argv[1:3] == ["-I", "-S"]
    assert command_for(EXAMPLES / "random_bot.js")[1] == str(EXAMPLES / "random_bot.js")


# -- probe -------------------------------------------------------------------------------------
def test_probe_names_and_clean_errors(tmp_path: Path) -> None:
    assert probe(EXAMPLES / "fewest_heads.py", FAST) == "fewest_heads"
    assert probe(EXAMPLES / "random_bot.js", FAST) == "random.js"
    with pytest.raises(AgentLoadError) as err:
        probe(FAULTY / "import_error.py", FAST)
    assert str(err.value) == (
        "import_error.py failed to import: NameError: name 'undefined_name' is not defined (line 3)"
    )
    (tmp_path / "syntax.py").write_text("def play(view):\n    return min(view.hand\n")
    with pytest.raises(AgentLoadError, match=r"syntax.py has a syntax error: .* \(line 2\)"):
        probe(tmp_path / "syntax.py", FAST)
    (tmp_path / "empty.py").write_text("X = 1\n")
    with pytest.raises(AgentLoadError, match="no bot: define a class derived from"):
        probe(tmp_path / "empty.py", FAST)
    (tmp_path / "future.py").write_text(
        "from cow006 import bot\n"
        "bot.channel.recv()\n"
        "bot.channel.send({'type': 'ready', 'protocol': 2, 'name': 'v2'})\n"
        "bot.channel.recv()\n"
    )
    with pytest.raises(AgentLoadError, match="expected ready for protocol 1"):
        probe(tmp_path / "future.py", FAST)
    (tmp_path / "notes.txt").write_text("hi\n")
    with pytest.raises(AgentLoadError, match=r"a bot is a \.py or \.js file"):
        probe(tmp_path / "notes.txt", FAST)
    with pytest.raises(AgentLoadError, match="no bot at"):
        probe(tmp_path / "missing.py", FAST)


@pytest.mark.slow
def test_probe_of_a_bot_too_slow_to_start() -> None:
    started = time.monotonic()
    with pytest.raises(AgentLoadError, match=r"not ready within 0.5 s"):
        probe(FAULTY / "slow_import.py", Limits(startup=0.5))
    assert time.monotonic() - started < 3


# -- one faulty bot per attack ---------------------------------------------------------------
@pytest.mark.slow
def test_infinite_loop_times_out() -> None:
    log, _ = run(FAULTY / "loop_forever.py")
    faults = check_faults(log, 0, {"timeout"})
    assert len(faults) == 3 and log["forfeited"] == [0]


@pytest.mark.slow
def test_sleeping_past_the_deadline_drains_the_bank_and_late_replies_are_dropped() -> None:
    log, agent = run(FAULTY / "sleepy.py", seat=2)
    # Stale replies arrive after each timeout: they are dropped, never "unrequested".
    faults = check_faults(log, 2, {"timeout"})
    assert len(faults) == 3 and agent.bank == 0.0
    assert faults[0]["turn"] > 0, "the bank should have covered the first slow decisions"


@pytest.mark.slow
def test_slow_import_is_a_startup_fault() -> None:
    log, agent = run(FAULTY / "slow_import.py", Limits(startup=1.0, decision=0.2, bank=0.3))
    (fault,) = check_faults(log, 0, {"startup"})
    assert "not ready within 1 s" in fault["detail"]
    assert agent.returncode == -9


def test_import_error_is_a_startup_fault_with_the_bots_message() -> None:
    log, agent = run(FAULTY / "import_error.py")
    (fault,) = check_faults(log, 0, {"startup"})
    assert fault["detail"].startswith("import_error.py failed to import: NameError")
    assert "Traceback" in agent.stderr


@pytest.mark.parametrize(
    ("bot", "kind"),
    [
        ("malformed.py", "malformed_json"),
        ("nested.py", "nested_json"),
        ("nan.py", "nan"),
        ("true_card.py", "bad_type"),
        ("wrong_card.py", "illegal_card"),
        ("raises.py", "exception"),
    ],
)
def test_bad_replies(bot: str, kind: str) -> None:
    log, _ = run(FAULTY / bot, seat=1)
    faults = check_faults(log, 1, {kind})
    assert len(faults) == 3 and log["forfeited"] == [1]


def test_row_seven_is_an_illegal_row() -> None:
    log, _ = run(FAULTY / "row_seven.py")
    check_faults(log, 0, {"illegal_row"}, where="row")


def test_printing_before_being_asked_is_unrequested() -> None:
    log, _ = run(FAULTY / "chatty.py")
    faults = check_faults(log, 0, {"unrequested"})
    assert (faults[0]["round"], faults[0]["turn"]) == (0, 0)


def test_replying_twice_is_unrequested() -> None:
    log, _ = run(FAULTY / "double_reply.py")
    faults = check_faults(log, 0, {"unrequested"}, where="any")
    assert len(faults) == 3


def test_exit_mid_match_is_a_crash() -> None:
    log, agent = run(FAULTY / "exit_mid_match.py")
    (fault,) = check_faults(log, 0, {"crash"})
    assert (fault["round"], fault["turn"]) == (0, 3) and "exit status 3" in fault["detail"]
    assert agent.returncode == 3
    # stderr is for the seat's owner: in the agent's buffer, never in the public log
    assert "owner-only secret" in agent.stderr
    assert "owner-only secret" not in json.dumps(log)


@pytest.mark.slow
def test_closing_stdout_is_a_crash() -> None:
    log, agent = run(FAULTY / "close_stdout.py")
    (fault,) = check_faults(log, 0, {"crash"})
    assert (fault["round"], fault["turn"]) == (0, 2)
    assert agent.returncode == -9  # it was hanging: killed


@pytest.mark.slow
def test_a_bot_that_never_reads_times_out() -> None:
    log, _ = run(FAULTY / "deaf.py")
    check_faults(log, 0, {"timeout"})


@pytest.mark.slow
def test_the_host_never_blocks_writing_to_a_bot_that_does_not_read() -> None:
    state = engine.new_match(2)
    hands, rows = engine.deal(random.Random(1), 2)
    engine.start_round(state, hands, rows)
    view = observe(state, 0, [r[0] for r in rows])
    with RemoteAgent(FAULTY / "deaf.py", limits=FAST) as agent:
        agent.on_match_start(MatchInfo(0, 2, 1, ("deaf", "other")))
        started = time.monotonic()
        for _ in range(5):  # far more than the bot's one-page pipe holds
            agent.on_round_end({"padding": "x" * 100_000})
        assert time.monotonic() - started < 0.5
        with pytest.raises(BotFault) as fault:
            agent.play(view)
        assert fault.value.kind == "timeout"
        assert time.monotonic() - started < FAST.decision + FAST.bank + 0.5
    assert_gone(agent)


def test_a_huge_line_is_oversize() -> None:
    log, _ = run(FAULTY / "huge_line.py")
    (fault,) = check_faults(log, 0, {"oversize"})
    assert "65536" in fault["detail"]


def test_close_and_forfeit_are_idempotent() -> None:
    agent = RemoteAgent(EXAMPLES / "random_bot.js", limits=FAST)
    agent.close()  # never started: nothing to do
    assert agent.process is None
    agent = RemoteAgent(EXAMPLES / "fewest_heads.py", limits=FAST)
    agent.on_match_start(MatchInfo(0, 2, 5, ("a", "b")))  # starts lazily
    agent.forfeit()
    agent.forfeit()
    agent.close()
    assert_gone(agent)
    assert agent.returncode == -9
    with pytest.raises(BotFault) as fault:
        agent.play(observe(_dealt(), 0, (1, 2, 3, 4)))
    assert fault.value.kind == "crash"


def _dealt() -> engine.State:
    state = engine.new_match(2)
    engine.start_round(state, *engine.deal(random.Random(2), 2))
    return state


# On match_end, a bot marks its seat done and waits (up to 3 s) to see every seat done.
ENDS_TOGETHER = """
import os, time
from cow006 import Agent
HERE = os.path.dirname(os.path.abspath(__file__))


class Bot(Agent):
    def on_match_start(self, info):
        self.seat, self.n = info.seat, info.n_players

    def play(self, view):
        return max(view.hand)

    def on_match_end(self, result):
        open(os.path.join(HERE, f"end-{self.seat}"), "w").close()
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            if all(os.path.exists(os.path.join(HERE, f"end-{s}")) for s in range(self.n)):
                open(os.path.join(HERE, f"saw-{self.seat}"), "w").close()
                return
            time.sleep(0.01)
"""


@pytest.mark.slow
def test_every_bot_hears_the_end_before_any_is_waited_for(tmp_path: Path) -> None:
    """The runner sends match_end to every seat (``announce_end``) before it waits for the
    first bot process to exit, so their exits overlap: each bot sees all four ended."""
    bot = tmp_path / "ends.py"
    bot.write_text(ENDS_TOGETHER)
    limits = Limits(startup=10.0, decision=5.0, bank=30.0, grace=5.0)
    agents = [RemoteAgent(bot, limits=limits) for _ in range(4)]
    try:
        log = play_match(agents, seed=3)
    finally:
        for agent in agents:
            agent.close()
    assert log["faults"] == []
    assert sorted(p.name for p in tmp_path.glob("saw-*")) == [f"saw-{s}" for s in range(4)]
    assert all(agent.returncode == 0 for agent in agents)
