"""The ``cow006`` command line, run for real: CliRunner in-process and the installed script."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cow006.cli import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _bare_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bot files run unsandboxed here; the sandbox has its own tests below and in tests/hostile."""
    monkeypatch.setenv("COW006_SANDBOX", "off")


SCRIPT = Path(sys.executable).with_name("cow006")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "cow006"]

TINY_BOT = """\
from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return max(view.hand)
"""

FUNCTION_BOT = """\
def play(view):
    return min(view.hand)
"""


def cow006(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run the installed ``cow006`` script."""
    return subprocess.run(
        [*COMMAND, *args], capture_output=True, text=True, timeout=120, cwd=cwd, check=False
    )


def assert_one_error_line(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


def assert_always_played(log: dict[str, Any], seat: int, pick: Callable[[list[int]], int]) -> None:
    """Every turn of the log, ``seat`` played ``pick`` of its hand (``max``, ``min``)."""
    for rnd in log["rounds"]:
        hand = list(rnd["hands"][seat])
        for turn in rnd["turns"]:
            assert turn["cards"][seat] == pick(hand)
            hand.remove(turn["cards"][seat])


# -- match -------------------------------------------------------------------------------------
def match_log(tmp_path: Path, name: str, seed: int, *extra: str) -> Path:
    """``cow006 match builtin:random builtin:greedy --seed SEED --log NAME EXTRA...``."""
    path = tmp_path / name
    argv = ["match", "builtin:random", "builtin:greedy", "--seed", str(seed), "--log", str(path)]
    result = runner.invoke(app, [*argv, *extra])
    assert result.exit_code == 0, result.output
    return path


@pytest.mark.slow
def test_match_with_seed_is_reproducible_and_verifies(tmp_path: Path) -> None:
    logs = []
    extra: list[str] = []
    for name in ("a.json", "b.json"):
        path = match_log(tmp_path, name, 42, *extra)
        logs.append(path.read_bytes())
        # --seed fixes the deal; the recorded agent seeds make the replay exact
        extra = ["--agent-seeds", ",".join(map(str, json.loads(logs[0])["agent_seeds"]))]
    assert logs[0] == logs[1]
    log = json.loads(logs[0])
    assert log["seed"] == 42
    assert log["sandbox"] is False
    assert [p["agent"] for p in log["players"]] == ["builtin:random", "builtin:greedy"]
    proc = cow006("verify", str(tmp_path / "a.json"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok 1 logs\n"


def test_match_prints_a_transcript_and_the_final_table(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    result = runner.invoke(
        app,
        [
            "match",
            "builtin:random",
            "builtin:safe",
            "builtin:random",
            "--seed",
            "7",
            "--log",
            str(path),
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    log = json.loads(path.read_text())
    assert "Round 1" in out and f"Round {len(log['rounds'])}" in out
    assert "turn  1" in out and "turn 10" in out
    assert "takes row" in out
    assert "Result (seed 7)" in out
    assert "builtin:random#2" in out  # repeated specs get distinct names
    first = log["rounds"][0]["turns"][0]
    assert all(str(c) in out for c in first["cards"])
    for take in (t for r in log["rounds"] for turn in r["turns"] for t in turn["takes"]):
        reason = "sixth card" if take["reason"] == "sixth" else "lowest card"
        assert reason in out
    for seat, score in enumerate(log["scores"]):
        assert str(score) in out, seat


def test_match_quiet_prints_only_the_table() -> None:
    result = runner.invoke(app, ["match", "builtin:random", "builtin:random", "--seed", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "Round" not in result.stdout
    assert "turn" not in result.stdout
    assert "Result (seed 1)" in result.stdout
    for column in ("seat", "agent", "score", "rank", "faults"):
        assert column in result.stdout


def test_match_of_builtins_needs_no_sandbox(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "dir" / "m.json"
    result = runner.invoke(
        app, ["match", "builtin:random", "builtin:random", "--seed", "3", "-q", "--log", str(path)]
    )
    assert result.exit_code == 0, result.output
    # only in-process agents: nothing to confine, and the log does not claim isolation
    assert json.loads(path.read_text())["sandbox"] is False


@pytest.mark.slow
def test_match_runs_bot_files_sandboxed_by_default(tmp_path: Path, sandbox_works: None) -> None:
    bot = tmp_path / "tiny.py"
    bot.write_text(TINY_BOT)
    path = tmp_path / "m.json"
    args = ["match", str(bot), "builtin:random", "--seed", "5", "-q", "--log", str(path)]
    result = runner.invoke(app, args, env={"COW006_SANDBOX": ""})
    assert result.exit_code == 0, result.output
    entry = json.loads(path.read_text())["sandbox"]
    assert entry["kind"] == "bwrap" and entry["seccomp"] is True
    bare = runner.invoke(app, [*args, "--no-sandbox"], env={"COW006_SANDBOX": ""})
    assert bare.exit_code == 0, bare.output
    log = json.loads(path.read_text())
    assert log["sandbox"] is False
    assert runner.invoke(app, ["verify", str(path)]).stdout.strip() == "ok 1 logs"


@pytest.mark.slow
def test_match_refuses_bot_files_when_the_sandbox_is_missing(tmp_path: Path) -> None:
    bot = tmp_path / "tiny.py"
    bot.write_text(TINY_BOT)
    env = {"COW006_BWRAP": "/nonexistent/bwrap", "COW006_SANDBOX": "on"}
    proc = subprocess.run(
        [*COMMAND, "match", str(bot), "builtin:random", "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **env},
    )
    assert_one_error_line(proc, "sandbox is required", "--no-sandbox")


@pytest.mark.slow
def test_match_with_a_python_bot_file(tmp_path: Path) -> None:
    bot = tmp_path / "tiny.py"
    bot.write_text(TINY_BOT)
    folder = tmp_path / "folder_bot"
    folder.mkdir()
    (folder / "bot.py").write_text(FUNCTION_BOT)
    path = tmp_path / "m.json"
    proc = cow006(
        "match", str(bot), "builtin:random", str(folder), "--seed", "5", "--log", str(path)
    )
    assert proc.returncode == 0, proc.stderr
    log = json.loads(path.read_text())
    assert [p["agent"] for p in log["players"]] == [str(bot), "builtin:random", str(folder)]
    assert log["faults"] == []
    # the bot file's choices are in the log: it always played its highest card
    assert_always_played(log, 0, max)
    assert "tiny" in proc.stdout and "Result (seed 5)" in proc.stdout
    assert cow006("verify", str(path)).stdout == "ok 1 logs\n"


def test_python_dash_m_runs_the_cli(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "cow006",
            "match",
            "builtin:random",
            "builtin:random",
            "--seed",
            "9",
            "-q",
            "--log",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(path.read_text())["seed"] == 9


# -- verify ------------------------------------------------------------------------------------
def _log(tmp_path: Path, name: str, seed: int) -> Path:
    return match_log(tmp_path, name, seed, "-q")


def test_verify_counts_logs(tmp_path: Path) -> None:
    paths = [_log(tmp_path, f"{i}.json", i) for i in range(3)]
    result = runner.invoke(app, ["verify", *map(str, paths)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok 3 logs\n"


def test_verify_names_the_first_tampered_log(tmp_path: Path) -> None:
    good = _log(tmp_path, "good.json", 1)
    bad = tmp_path / "bad.json"
    log = json.loads(good.read_text())
    log["rounds"][0]["turns"][3]["cards"][0], log["rounds"][0]["turns"][4]["cards"][0] = (
        log["rounds"][0]["turns"][4]["cards"][0],
        log["rounds"][0]["turns"][3]["cards"][0],
    )
    bad.write_text(json.dumps(log))
    proc = cow006("verify", str(good), str(bad), str(good))
    assert proc.returncode == 1
    assert "ok" not in proc.stdout
    line = assert_one_error_line(proc)
    assert line.startswith(f"{bad}: ")
    assert "rounds[0].turns[3]" in line


def test_verify_tampered_score(tmp_path: Path) -> None:
    good = _log(tmp_path, "good.json", 2)
    log = json.loads(good.read_text())
    log["scores"][1] += 1
    bad = tmp_path / "score.json"
    bad.write_text(json.dumps(log))
    result = runner.invoke(app, ["verify", str(bad)])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{bad}: scores: expected")


# -- bad input: one line on stderr, non-zero exit, no traceback --------------------------------
@pytest.mark.slow
def test_bad_inputs_give_one_clear_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("import no_such_module_for_cow006\n")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("def play(view) return 1\n")
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    not_json = tmp_path / "not.json"
    not_json.write_text("{this is not json")
    eleven = ["builtin:random"] * 11
    cases = [
        (["match", "builtin:random", str(tmp_path / "missing.py")], ["missing.py"]),
        (["match", "builtin:random", str(broken)], ["broken.py"]),
        (["match", "builtin:random", str(syntax)], ["syntax.py"]),
        (["match", "builtin:random", str(text)], ["notes.txt"]),
        (["match", "builtin:random", str(tmp_path)], ["bot.py"]),
        (["match", *eleven], ["2 to 10", "11"]),
        (["match", "builtin:random"], ["2 to 10", "1"]),
        (["match"], ["AGENTS"]),
        (["match", "builtin:random", "builtin:nosuchbot"], ["nosuchbot", "random"]),
        (["match", "builtin:random", "random"], ["builtin:random"]),
        (["match", "builtin:random", "builtin:random", "--seed", "-1"], ["--seed"]),
        (["match", "builtin:random", "builtin:random", "--decision", "0"], ["--decision"]),
        (["match", "builtin:random", "builtin:random", "--bogus"], ["--bogus"]),
        (["verify", str(not_json)], [str(not_json), "not JSON"]),
        (["verify", str(tmp_path / "nope.json")], ["nope.json"]),
        (
            ["tournament", "builtin:random", "builtin:safe", "--matches", "2", "--players", "11"],
            ["--players"],
        ),
        (
            ["tournament", "builtin:random", "builtin:safe", "--matches", "2", "--players", "x"],
            ["--players"],
        ),
        (["tournament", "builtin:random", str(broken), "--matches", "2"], ["broken.py"]),
    ]
    for args, needles in cases:
        proc = cow006(*args, cwd=tmp_path)
        line = assert_one_error_line(proc, *needles)
        if args[0] != "verify":
            assert line.startswith("error: "), (args, line)


JS_BOT = """\
const readline = require("readline");
const rl = readline.createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const msg = JSON.parse(line);
  let out = null;
  if (msg.type === "hello") out = { type: "ready", protocol: 1, name: "lowjs" };
  else if (msg.type === "play") out = { id: msg.id, card: Math.min(...msg.view.hand) };
  else if (msg.type === "take_row") out = { id: msg.id, row: 0 };
  if (out !== null) process.stdout.write(JSON.stringify(out) + "\\n");
});
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.slow
def test_match_with_a_js_bot_file(tmp_path: Path) -> None:
    js = tmp_path / "low.js"
    js.write_text(JS_BOT)
    path = tmp_path / "m.json"
    proc = cow006("match", "builtin:random", str(js), "--seed", "4", "-q", "--log", str(path))
    assert proc.returncode == 0, proc.stderr
    log = json.loads(path.read_text())
    assert log["faults"] == []
    assert_always_played(log, 1, min)


@pytest.mark.parametrize(
    "value", ["1,2,3", "1", "1,-2", "1,x", "1,9223372036854775808", "1,,2", " , "]
)
@pytest.mark.slow
def test_match_refuses_bad_agent_seeds_in_one_line(value: str) -> None:
    proc = cow006("match", "builtin:random", "builtin:greedy", "--agent-seeds", value)
    assert_one_error_line(proc, "--agent-seeds")
