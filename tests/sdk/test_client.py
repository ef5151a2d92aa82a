"""``cow006 login/submit/status/logs/replay`` against a real arena: uvicorn in a subprocess.

The server is the embedded arena (``cow006_workers.embedded:embedded_app``) on a loopback
port, a temporary SQLite database and data folder, the workers' code in-process: uploads are
really validated and challenges really played.  Bots run in the sandbox where it works; where
it does not, they run as plain processes (they are this file's own trivial bots, as in
test_cli.py), except under COW006_REQUIRE_SANDBOX=1, where the missing sandbox fails the tests.
The commands run in-process through CliRunner, each with its own credentials file.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import servers
from typer.testing import CliRunner, Result

from cow006 import _client as client
from cow006 import log as match_log
from cow006 import sandbox
from cow006.cli import app

# A real arena in a subprocess, bots in the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

runner = CliRunner()

STARTUP_TIMEOUT = 60.0  # seconds for the server to answer (migrations run at startup)
MATCH_TIMEOUT = 90.0  # seconds for a challenge to be played

LOW = (
    "import sys\n\n"
    "def play(view):\n"
    "    print('low plays', min(view.hand), file=sys.stderr)\n"
    "    return min(view.hand)\n"
)
HIGH = (
    "import sys\n\n"
    "def play(view):\n"
    "    print('high secret', file=sys.stderr)\n"
    "    return max(view.hand)\n"
)
IMPORT_ERROR = "import no_such_module_for_cow006\n\ndef play(view):\n    return 1\n"


@dataclass
class Server:
    url: str
    db_url: str
    log: Path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("arena")
    status = sandbox.probe()
    if not status.ok and os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"the sandbox is required here but does not work: {status.reason}")
    db_url = f"sqlite:///{root / 'arena.db'}"
    env = servers.clean_env(
        COW006_DATABASE_URL=db_url,
        COW006_DATA_DIR=str(root / "data"),
        COW006_SANDBOX="on" if status.ok else "off",
    )
    log = root / "server.log"
    arena = servers.serve(
        [*servers.EMBEDDED_APP, "--log-level", "warning"], cwd=root, env=env, out=log
    )
    try:
        servers.wait_http(arena, "/api/ladders", STARTUP_TIMEOUT)
        yield Server(arena.base, db_url, log)
    finally:
        servers.stop(arena)


def cli(config: Path, *args: str, **env: str | None) -> Result:
    """Run ``cow006 ARGS`` with this credentials file and no COW006_URL/TOKEN unless given."""
    full: dict[str, str | None] = {
        "COW006_CONFIG": str(config),
        "COW006_URL": None,
        "COW006_TOKEN": None,
        "COLUMNS": "140",
    }
    full.update(env)
    return runner.invoke(app, list(args), env=full)


def ok(result: Result) -> str:
    assert result.exit_code == 0, result.output
    return result.stdout


def one_error_line(result: Result, *needles: str) -> str:
    """The failure was one ``error:`` line on stderr, exit status 1, no traceback."""
    assert result.exit_code == 1, result.output
    # Not our traceback (a rejected bot's own traceback may be on stdout: it is the reason).
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def token_of(config: Path) -> str:
    return str(json.loads(config.read_text())["token"])


@pytest.fixture(scope="module")
def alice(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alice's credentials file, from ``cow006 login URL --register alice``."""
    config = tmp_path_factory.mktemp("alice") / "credentials.json"
    out = ok(cli(config, "login", server.url, "--register", "alice"))
    assert f"logged in to {server.url} as alice" in out
    return config


@pytest.fixture(scope="module")
def bots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bots")
    (folder / "low.py").write_text(LOW)
    (folder / "high.py").write_text(HIGH)
    (folder / "broken.py").write_text(IMPORT_ERROR)
    return folder


@pytest.fixture(scope="module")
def low(alice: Path, bots: Path) -> Result:
    """alice's first submission: lowbot from low.py, waited for."""
    return cli(alice, "submit", str(bots / "low.py"), "--agent", "lowbot", "--timeout", "60")


@dataclass
class Played:
    match_id: int
    log: dict[str, Any]
    bob: Path


@pytest.fixture(scope="module")
def played(
    server: Server, alice: Path, low: Result, bots: Path, tmp_path_factory: pytest.TempPathFactory
) -> Played:
    """A challenge alice asked for: her lowbot (seat 0) against bob's highbot (seat 1)."""
    ok(low)
    bob = tmp_path_factory.mktemp("bob") / "credentials.json"
    ok(cli(bob, "login", server.url, "--register", "bob"))
    ok(cli(bob, "submit", str(bots / "high.py"), "--agent", "highbot", "--timeout", "60"))
    api = client.Client(server.url, token_of(alice))
    agents = {a["name"]: a["id"] for a in api.get("/agents")["items"]}
    match = api.post("/challenges", {"agent_ids": [agents["lowbot"], agents["highbot"]], "seed": 7})
    servers.wait_for(
        lambda: api.get(f"/matches/{match['id']}")["status"] in ("finished", "failed"),
        MATCH_TIMEOUT,
    )
    assert api.get(f"/matches/{match['id']}")["status"] == "finished"
    return Played(match["id"], api.get(f"/matches/{match['id']}/log"), bob)


# --- login ------------------------------------------------------------------------------------


def test_register_saves_private_credentials_and_login_checks_the_token(
    server: Server, tmp_path: Path
) -> None:
    config = tmp_path / "cfg" / "credentials.json"
    out = ok(cli(config, "login", server.url + "/api/", "--register", "carol"))
    assert f"logged in to {server.url} as carol" in out
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    saved = json.loads(config.read_text())
    assert saved["url"] == server.url and saved["user"] == "carol"
    assert saved["token"] in out  # shown once, for the web pages
    assert [p.name for p in config.parent.iterdir()] == ["credentials.json"]  # no temp left

    other = tmp_path / "other.json"
    out = ok(cli(other, "login", server.url, "--token", saved["token"]))
    assert out.strip() == f"logged in to {server.url} as carol"
    assert token_of(other) == saved["token"]

    # COW006_URL and COW006_TOKEN stand in for a credentials file.
    nowhere = tmp_path / "none.json"
    out = ok(cli(nowhere, "status", COW006_URL=server.url, COW006_TOKEN=saved["token"]))
    assert out.startswith(f"carol on {server.url}: 0 agents")
    assert not nowhere.exists()


def test_login_with_a_bad_token_is_one_clear_error(server: Server, tmp_path: Path) -> None:
    config = tmp_path / "credentials.json"
    result = cli(config, "login", server.url, "--token", "not-a-token")
    one_error_line(result, "does not accept this API token")
    assert not config.exists()


def test_login_refuses_a_bad_url_and_a_bad_name(server: Server, tmp_path: Path) -> None:
    config = tmp_path / "credentials.json"
    one_error_line(cli(config, "login", "localhost:8000", "--token", "x"), "http://host:port")
    # The API's 422 (a list of pydantic errors) becomes one sentence naming the field.
    one_error_line(cli(config, "login", server.url, "--register", "no spaces"), "name:")
    assert not config.exists()


def test_a_stale_token_is_refused_with_a_hint(server: Server, tmp_path: Path) -> None:
    config = tmp_path / "credentials.json"
    config.write_text(json.dumps({"url": server.url, "token": "stale-token", "user": "ghost"}))
    one_error_line(cli(config, "status"), "invalid API token", f"cow006 login {server.url}")


def test_not_logged_in_and_server_down_are_one_line_each(tmp_path: Path) -> None:
    config = tmp_path / "credentials.json"
    one_error_line(cli(config, "status"), "not logged in", "cow006 login URL")
    one_error_line(cli(config, "logs", "1"), "not logged in")
    down = f"http://127.0.0.1:{servers.free_port()}"  # nothing listens there
    config.write_text(json.dumps({"url": down, "token": "t", "user": "u"}))
    for args in (["status"], ["logs", "1"], ["replay", "1"], ["login", down, "--token", "t"]):
        one_error_line(cli(config, *args), f"cannot reach {down}: connection refused")


def test_credentials_file_is_written_atomically_with_mode_0600(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "deep" / "er" / "credentials.json"
    monkeypatch.setenv(client.CONFIG_ENV, str(path))
    monkeypatch.delenv(client.URL_ENV, raising=False)
    monkeypatch.delenv(client.TOKEN_ENV, raising=False)
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    path.chmod(0o644)  # an old file with loose permissions is replaced, not reused
    assert client.save_credentials("http://h:1", "tok", "me") == path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert client.load_credentials() == client.Credentials("http://h:1", "tok", "me")
    monkeypatch.setenv(client.TOKEN_ENV, "other")
    monkeypatch.setenv(client.URL_ENV, "http://elsewhere:2/api")
    # The environment wins, and the saved user name no longer applies.
    assert client.load_credentials() == client.Credentials("http://elsewhere:2", "other", None)
    path.write_text("not json")
    with pytest.raises(client.ClientError, match="not a credentials file"):
        client.load_credentials()


# --- submit -----------------------------------------------------------------------------------


def test_submit_waits_until_active_and_reports_a_duplicate(
    server: Server, alice: Path, low: Result, bots: Path
) -> None:
    out = ok(low)
    assert "created agent lowbot" in out
    assert "uploaded lowbot@1 (low.py" in out
    assert out.strip().endswith("active: lowbot@1 passed validation")

    again = ok(cli(alice, "submit", str(bots / "low.py"), "--agent", "lowbot"))
    assert "duplicate: this upload is identical to version lowbot@1 (active)" in again
    assert "uploaded lowbot" not in again and "created agent" not in again
    api = client.Client(server.url, token_of(alice))
    agent = next(a for a in api.get("/agents")["items"] if a["name"] == "lowbot")
    assert agent["versions"] == 1


def test_submit_of_a_bot_that_fails_to_import_shows_why(alice: Path, bots: Path) -> None:
    result = cli(alice, "submit", str(bots / "broken.py"), "--agent", "broken", "--timeout", "60")
    one_error_line(result, "validation rejected broken@1")
    assert "rejected: broken@1" in result.stdout
    assert "The bot did not start" in result.stdout
    # The owner sees the import's traceback from the bot's stderr.
    assert "ModuleNotFoundError: No module named 'no_such_module_for_cow006'" in result.stdout


def test_submit_no_wait_returns_pending_or_done(alice: Path, tmp_path: Path) -> None:
    bot = tmp_path / "quick.py"
    bot.write_text("def play(view):\n    return view.hand[0]\n")
    out = ok(cli(alice, "submit", str(bot), "--agent", "quick", "--no-wait"))
    assert re.search(r"quick@1 is (pending|active); `cow006 status` shows its verdict", out)
    one_error_line(
        cli(alice, "submit", str(bot), "--agent", "quick", "--no-wait", "--ladder", "x"),
        "--ladder",
    )


def test_submit_rejects_what_is_not_a_bot_before_uploading(alice: Path, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    one_error_line(cli(alice, "submit", str(tmp_path / "notes.txt"), "--agent", "x"), ".py")
    one_error_line(cli(alice, "submit", str(tmp_path / "nope.py"), "--agent", "x"), "no such")
    one_error_line(cli(alice, "submit", str(tmp_path), "--agent", "x"), "no bot.py")


def test_submit_a_folder_into_a_ladder_and_status_shows_the_rating(
    server: Server, alice: Path, tmp_path: Path
) -> None:
    from cow006_platform.cli import build_app

    made = runner.invoke(
        build_app(),
        ["admin", "create-user", "root", "--admin"],
        env={"COW006_DATABASE_URL": server.db_url},
    )
    assert made.exit_code == 0, made.output
    admin = client.Client(server.url, made.stdout.strip())
    admin.post("/ladders", {"name": "main", "players": 2})

    folder = tmp_path / "folderbot"
    (folder / "__pycache__").mkdir(parents=True)
    (folder / "__pycache__" / "junk.pyc").write_bytes(b"\0")
    (folder / ".hidden").write_text("left out")
    (folder / "helper.py").write_text("def pick(hand):\n    return hand[len(hand) // 2]\n")
    (folder / "bot.py").write_text(
        "from helper import pick\n\ndef play(view):\n    return pick(view.hand)\n"
    )
    one_error_line(
        cli(alice, "submit", str(folder), "--agent", "folderbot", "--ladder", "no-such-ladder"),
        "no ladder 'no-such-ladder'",
    )
    out = ok(cli(alice, "submit", str(folder), "--agent", "folderbot", "--ladder", "main"))
    assert "uploaded folderbot@1 (folderbot.zip" in out
    assert "active: folderbot@1 passed validation" in out
    assert "ladder main: folderbot@1 plays there now" in out
    # The folder is zipped the same way every time: unchanged, it is a duplicate.
    again = ok(cli(alice, "submit", str(folder), "--agent", "folderbot", "--ladder", "main"))
    assert "duplicate: this upload is identical to version folderbot@1" in again

    entries = admin.get("/ladders/1/entries")["items"]
    assert [e["label"] for e in entries] == ["folderbot@1"]
    out = ok(cli(alice, "status", "--agent", "folderbot"))
    assert "alice on" in out and "1 agent" in out
    row = next(line for line in out.splitlines() if "main (open)" in line)
    assert re.search(r"folderbot@1\s+main \(open\)\s+1 of 1\s+25\.00\s+8\.33\s+0\.00\s+0\s+0", row)
    assert "lowbot" not in out


# --- status, logs, replay of a played match -----------------------------------------------------


def test_status_shows_agents_versions_and_recent_matches(alice: Path, played: Played) -> None:
    out = ok(cli(alice, "status"))
    assert re.search(r"lowbot\s+1\s+active", out)
    assert re.search(r"broken\s+1\s+rejected\s+.*The bot did not start", out)
    rank, score = played.log["ranks"][0], played.log["scores"][0]
    line = next(ln for ln in out.splitlines() if "0: lowbot@1" in ln)
    assert re.search(
        rf"^\s*{played.match_id}\s+\S+ \S+\s+challenge\s+finished\s+0: lowbot@1\s+"
        rf"{rank} of 2\s+{score}\s+0\b",
        line,
    ), line
    assert "highbot" not in out  # bob's agent is not alice's


def test_logs_show_the_result_and_only_your_own_stderr(
    alice: Path, played: Played, tmp_path: Path
) -> None:
    saved = tmp_path / "out" / "m.json"
    out = ok(cli(alice, "logs", str(played.match_id), "--save", str(saved)))
    assert out.startswith(f"match {played.match_id}: challenge, finished, seed 7")
    for seat, label, owner in ((0, "lowbot@1", "alice"), (1, "highbot@1", "bob")):
        score, rank = played.log["scores"][seat], played.log["ranks"][seat]
        assert re.search(rf"^\s*{seat}\s+{label}\s+{owner}\s+{score}\s+{rank}\s+0\s*$", out, re.M)
    assert "stderr of seat 0 (lowbot@1):" in out
    assert "low plays" in out
    assert "high secret" not in out and "stderr of seat 1" not in out
    assert match_log.read(saved) == played.log
    match_log.verify(match_log.read(saved))

    one_error_line(
        cli(alice, "logs", str(played.match_id), "--seat", "1"), "only its owner reads its stderr"
    )
    bob = ok(cli(played.bob, "logs", str(played.match_id), "--seat", "1"))
    assert "stderr of seat 1 (highbot@1):" in bob and "high secret" in bob
    one_error_line(cli(alice, "logs", str(played.match_id), "--seat", "5"), "no seat 5")
    one_error_line(cli(alice, "logs", "99999"), "match 99999", "no such match")
    one_error_line(cli(alice, "replay", "99999"), "match 99999", "no such match")


def _assert_replay_matches(out: str, log: dict[str, Any], names: list[str]) -> None:
    """The replay's turns, running totals and final table agree with the log."""
    rounds = len(log["rounds"])
    assert len(re.findall(r"^turn\s+\d+ ", out, re.M)) == 10 * rounds
    assert len(re.findall(r"^─+ Round \d+ ─+$", out, re.M)) == rounds
    last_totals = re.findall(r"^totals: (.*)$", out, re.M)[-1]
    assert last_totals == ", ".join(f"{n} {s}" for n, s in zip(names, log["scores"], strict=True))
    final = out[out.index("Result (seed") :]
    for seat, name in enumerate(log["players"]):
        score, rank = log["scores"][seat], log["ranks"][seat]
        agent = re.escape(name["agent"])
        assert re.search(rf"^\s*{seat}\s+{agent}\s+{score}\s+{rank}\s", final, re.M), final
    # Every row line the replay prints after a turn is one of the log's rows.
    turn_rows = {
        f"row {i}  " + " ".join(map(str, row))
        for rnd in log["rounds"]
        for turn in rnd["turns"]
        for i, row in enumerate(turn["rows"])
    }
    shown = re.findall(r"^    (row \d  [\d ]+?)  \(", out, re.M)
    assert len(shown) == 4 * 10 * rounds
    assert set(shown) <= turn_rows


def test_replay_of_a_played_match(alice: Path, played: Played) -> None:
    out = ok(cli(alice, "replay", str(played.match_id), "--delay", "0"))
    assert out.startswith(f"Replay of match {played.match_id} on ")
    _assert_replay_matches(out, played.log, ["lowbot@1", "highbot@1"])
    # Each "lowest" take names the row its player chose, as the log records it.
    take = next(
        (t, turn["cards"][t["seat"]])
        for rnd in played.log["rounds"]
        for turn in rnd["turns"]
        for t in turn["takes"]
        if t["reason"] == "lowest"
    )
    assert f"{take[1]} → below every row, chose row {take[0]['row']}: takes" in out

    second = ok(cli(alice, "replay", str(played.match_id), "--round", "2"))
    assert "Round 2" in second and "Round 1" not in second and "Round 3" not in second
    assert len(re.findall(r"^turn\s+\d+ ", second, re.M)) == 10
    one_error_line(cli(alice, "replay", str(played.match_id), "--round", "99"), "--round")


def test_rerun_of_an_arena_match_by_its_id(alice: Path, played: Played, bots: Path) -> None:
    """The match is fetched from the arena; lowbot rerun as itself is the recorded match."""
    args = ["rerun", str(played.match_id), str(bots / "low.py"), "--seat", "0", "--json"]
    same = json.loads(ok(cli(alice, *args)))
    assert same["same"] is True and same["differences"] == []
    other = json.loads(ok(cli(alice, *args[:2], str(bots / "high.py"), *args[3:])))
    assert other["same"] is False
    assert other["recorded_score"] == played.log["scores"][0]
    one_error_line(cli(alice, "rerun", "99999", "builtin:random", "--seat", "0"), "match 99999")


def test_replay_of_a_local_log_from_cow006_match(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    args = ["builtin:random", "builtin:greedy", "builtin:safe", "--seed", "11", "-q"]
    made = runner.invoke(app, ["match", *args, "--log", str(path)])
    assert made.exit_code == 0, made.output
    config = tmp_path / "never-used.json"  # a local file needs no arena and no login
    out = ok(cli(config, "replay", str(path)))
    log = match_log.read(path)
    assert out.startswith(f"Replay of {path}: seed 11, 3 players")
    _assert_replay_matches(out, log, ["random", "greedy", "safe"])

    # A log that breaks the rules is refused with its first inconsistency, nothing replayed.
    bad = json.loads(path.read_text())
    bad["rounds"][0]["turns"][0]["rows"][0].append(200)
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    result = cli(config, "replay", str(tmp_path / "bad.json"))
    one_error_line(result, "not a valid match log", "rounds[0].turns[0].rows")
    assert result.stdout == ""
    one_error_line(cli(config, "replay", str(tmp_path / "missing.json")), "no such file")


def test_the_arena_command_has_the_client_commands() -> None:
    from cow006_workers.cli import build_app

    names = {c.name or c.callback.__name__ for c in build_app().registered_commands if c.callback}
    assert {"login", "submit", "status", "logs", "replay", "match", "serve"} <= names


# --- tokens (issue 14) ------------------------------------------------------------------------


def test_token_create_list_revoke_and_rotate(server: Server, tmp_path: Path) -> None:
    config = tmp_path / "credentials.json"
    ok(cli(config, "login", server.url, "--register", "dora"))
    first = token_of(config)
    made = cli(config, "token", "create", "laptop")
    secret = ok(made).strip()
    assert "created token laptop" in made.stderr and len(secret) >= 40
    laptop = tmp_path / "laptop.json"
    ok(cli(laptop, "login", server.url, "--token", secret))

    listed = ok(cli(config, "token", "list"))
    assert secret[:8] in listed and secret not in listed and first not in listed
    rows = {line[1:].split()[1]: line for line in listed.splitlines()[1:]}  # by name
    assert set(rows) == {"default", "laptop"}
    assert rows["default"].startswith("*") and not rows["laptop"].startswith("*")

    # Revoked: the other machine's next command is refused, with the hint to log in again.
    assert ok(cli(config, "token", "revoke", "laptop")).strip().startswith("revoked token laptop")
    one_error_line(cli(laptop, "status"), "revoked", f"cow006 login {server.url}")
    one_error_line(cli(config, "token", "revoke", "laptop"), "no live token named 'laptop'")

    # Rotating this CLI's own token saves the new one; the old one is refused.
    out = ok(cli(config, "token", "rotate"))
    assert "rotated token default" in out and "saved the new token" in out
    assert token_of(config) != first
    with pytest.raises(client.ClientError) as refused:
        client.Client(server.url, first).get("/users/me")
    assert refused.value.status == 401
    assert ok(cli(config, "status")).startswith(f"dora on {server.url}")


def test_the_arena_command_has_the_token_commands() -> None:
    from cow006_workers.cli import build_app

    groups = {g.typer_instance.info.name for g in build_app().registered_groups}
    assert {"token", "admin"} <= groups
