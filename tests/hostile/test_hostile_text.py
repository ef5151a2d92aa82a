"""Hostile bot text through the whole platform, and failures a bot must not be able to steer.

The bots in ``bots/text/`` write what no database or terminal should take raw: NUL and lone
surrogates on stderr (also as the invalid UTF-8 bytes of a surrogate), in error replies
(``{"id": N, "error": "\\ud800"}``), in a start-up error (so in a fault detail and in a
rejection reason), and terminal escapes (OSC 52, window title, clear screen, bidi override).
Each plays real sandboxed matches on SQLite and on PostgreSQL, stored the way the platform
stores every match; then the match must be finished and rated, with the text cleaned, and
every public page must answer 200.  A version whose matches keep failing is suspended from
ladder tables while the ladder goes on; a validation that never comes to a verdict is tried a
bounded number of times; and the CLI prints bot text escaped.

Needs the sandbox and (for the PostgreSQL half) the server at 127.0.0.1:5432: without them the
tests skip with the reason, unless COW006_REQUIRE_SANDBOX=1 / COW006_REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import hostile_api as pt
from helpers import servers, services
from helpers.hostile_api import GOOD_HIGH, GOOD_LOW, GOOD_MID, Arena, ladder, user, version
from sqlalchemy import create_engine, select, text
from typer.testing import CliRunner

from cow006 import verify
from cow006.untrusted import REPLACEMENT
from cow006_platform import db, results
from cow006_platform.models import (
    AgentVersion,
    Ladder,
    Match,
    MatchKind,
    MatchLog,
    MatchSeat,
    MatchStatus,
    Rating,
    VersionStatus,
)
from cow006_workers import lease, runs, validation

# Attacks in the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

TEXT_BOTS = pt.BOTS / "text"

SLOW = "import time\n\ndef play(view):\n    time.sleep(60)\n    return min(view.hand)\n"
HOSTILE = ("nul_stderr", "surrogate_stderr", "error_reply", "startup_error")


@pytest.fixture
def arena(db_url: str, tmp_path: Path) -> Iterator[Arena]:
    """The platform's app on a fresh database (schema made by its migrations at startup),
    bots sandboxed, short validation limits."""
    services.require_sandbox()
    yield from pt.arena(db_url, tmp_path, max_validations=2)


# -- data made the way the API makes it ------------------------------------------------------------


def hostile_source(name: str) -> str:
    return (TEXT_BOTS / f"{name}.py").read_text()


def ladder_match(a: Arena, lid: int, version_ids: list[int], seed: int) -> int:
    with db.session_scope(a.factory) as s:
        return results.create_match(
            s, kind=MatchKind.ladder, version_ids=version_ids, ladder_id=lid, seed=seed
        ).id


def storable(value: str | None) -> None:
    """What every database and encoder holds: no NUL, no lone surrogate."""
    if value is None:
        return
    assert "\x00" not in value
    value.encode("utf-8")


def all_strings(data: Any) -> Iterator[str]:
    if isinstance(data, str):
        yield data
    elif isinstance(data, dict):
        for k, v in data.items():
            yield k
            yield from all_strings(v)
    elif isinstance(data, list):
        for v in data:
            yield from all_strings(v)


def pages_answer(a: Arena, paths: list[str], headers: dict[str, str] | None = None) -> None:
    for path in paths:
        r = a.client.get(path, headers=headers or {})
        assert r.status_code == 200, (path, r.status_code, r.text[:300])
        body = r.content.decode("utf-8")  # encodable, so decodable
        assert "\x00" not in body, path


# -- 1 and 2: NUL and lone surrogates are stored, rated and shown ------------------------------


def test_hostile_text_is_stored_rated_and_every_page_answers(arena: Arena) -> None:
    a = arena
    mallory, mallory_auth = user(a, "mallory")
    alice, _ = user(a, "alice")
    good = [
        version(a, alice, "highbot", GOOD_HIGH),
        version(a, alice, "lowbot", GOOD_LOW),
    ]
    hostile = {
        name: version(a, mallory, name.replace("_", "-"), hostile_source(name)) for name in HOSTILE
    }
    lid = ladder(a, 3, [*good, *hostile.values()], time_bank=3.0)

    played: dict[str, int] = {}
    for i, (name, (_, vid)) in enumerate(hostile.items()):
        mid = ladder_match(a, lid, [vid, good[0][1], good[1][1]], seed=100 + i)
        runs.run_match(a.factory, a.cfg, mid, None)
        played[name] = mid

    with db.session_scope(a.factory) as s:
        for name, mid in played.items():
            m = s.get(Match, mid)
            assert m is not None
            assert m.status is MatchStatus.finished, (name, m.status, m.error)
            assert m.attempts == 1, name  # stored at once: never run again
            assert m.rating_applied, name
            log = results.read_log(s, mid)
            assert log is not None
            verify(log)
            for value in all_strings(log):
                storable(value)
            for value in all_strings(m.faults):
                storable(value)
            seats = sorted(m.seats, key=lambda x: x.seat)
            for seat in seats:
                storable(seat.stderr)
            rating = s.scalar(
                select(Rating).where(
                    Rating.ladder_id == lid, Rating.version_id == seats[0].version_id
                )
            )
            assert rating is not None and rating.matches == 1, name
            # The hostile seat's result stands as played: its loss is not voided.
            assert [x.rank for x in seats] == log["ranks"], name
            hostile_faults = [f for f in log["faults"] if f["seat"] == 0]
            if name == "nul_stderr":
                err = seats[0].stderr or ""
                assert "ATTACK nul_stderr" in err and "I lost" in err, err[:200]
                assert REPLACEMENT in err
                assert hostile_faults == []
            elif name == "surrogate_stderr":
                err = seats[0].stderr or ""
                assert "ATTACK surrogate_stderr" in err and REPLACEMENT in err
                assert "\\ud800" in err  # what the bot wrote as text stays text
            elif name == "error_reply":
                assert {f["kind"] for f in hostile_faults} == {"exception"}
                detail = hostile_faults[0]["detail"]
                assert detail.startswith("boom ") and detail.endswith(" end"), detail
                assert REPLACEMENT in detail
            else:
                assert [f["kind"] for f in hostile_faults] == ["startup"]
                assert "cannot start" in hostile_faults[0]["detail"]
                assert REPLACEMENT in hostile_faults[0]["detail"]
            # The good seats never faulted.
            assert all(f["seat"] == 0 for f in log["faults"]), name
            # The stored log is plain UTF-8 JSON with nothing to refuse.
            body = s.get(MatchLog, mid)
            assert body is not None
            json.loads(gzip.decompress(body.body).decode("utf-8"))

    agents = [aid for aid, _ in [*good, *hostile.values()]]
    paths = ["/", f"/ladders/{lid}", "/api/matches", f"/api/ladders/{lid}/leaderboard"]
    paths += [f"/agents/{aid}" for aid in agents]
    paths += [f"/api/agents/{aid}" for aid in agents]
    paths += [f"/api/agents/{aid}/versions" for aid in agents]
    for mid in played.values():
        paths += [f"/matches/{mid}", f"/api/matches/{mid}", f"/api/matches/{mid}/log"]
    paths += [f"/api/matches?agent_id={aid}" for aid in agents]
    pages_answer(a, paths)
    # The owner reads its bot's stderr: cleaned text, a 200.
    pages_answer(a, [f"/api/matches/{mid}/seats/0/stderr" for mid in played.values()], mallory_auth)

    # Validation: the fault details and the stderr quoted in a rejection reason are clean.
    for name in ("error_reply", "startup_error"):
        validation.validate(a.factory, a.cfg, hostile[name][1])
    with db.session_scope(a.factory) as s:
        for name in ("error_reply", "startup_error"):
            v = s.get(AgentVersion, hostile[name][1])
            assert v is not None and v.status is VersionStatus.rejected, name
            storable(v.reason)
            assert REPLACEMENT in (v.reason or ""), v.reason
    pages_answer(
        a,
        [f"/api/agents/{hostile[n][0]}/versions" for n in ("error_reply", "startup_error")],
        mallory_auth,
    )
    pages_answer(a, [f"/agents/{hostile[n][0]}" for n in ("error_reply", "startup_error")])


def test_a_refused_result_is_stored_with_the_bots_text_replaced(arena: Arena) -> None:
    """The fallback behind the cleaning: a value the database refuses (here the PostgreSQL
    error for NUL, raised for real) is a refusal, a lost connection is not; the result is then
    stored with the bots' text replaced, and it still replays."""
    from sqlalchemy.exc import DBAPIError

    from cow006 import bots, play_match

    a = arena
    if a.db_url.startswith("postgresql"):  # SQLite stores NUL: nothing to refuse there
        with pytest.raises(DBAPIError) as refused_exc, a.factory() as s:
            s.execute(text("select cast(:x as text)"), {"x": "a\x00b"})
        assert runs.refused(refused_exc.value)
    away = create_engine("postgresql+psycopg://root@127.0.0.1:1/none")
    with pytest.raises(DBAPIError) as away_exc, away.connect():
        pass
    assert not runs.refused(away_exc.value)

    mallory, _ = user(a, "mallory")
    _, v1 = version(a, mallory, "one", GOOD_HIGH)
    _, v2 = version(a, mallory, "two", GOOD_LOW)
    with db.session_scope(a.factory) as s:
        mid = results.create_match(s, kind=MatchKind.challenge, version_ids=[v1, v2], seed=9).id
    claim = lease.claim_match(a.factory, a.cfg, mid, lease_seconds=30)
    assert claim is not None

    class Faulty(bots.make("random").__class__):  # type: ignore[misc]
        def play(self, view: Any) -> int:
            raise RuntimeError("bad \x00 news")

    log = play_match([Faulty(), bots.make("random")], seed=9)
    scrubbed, stderr = runs.scrub_result(log, ["secret \x00", None])
    assert stderr == [runs.REFUSED_TEXT, None]
    assert {f["detail"] for f in scrubbed["faults"]} == {runs.REFUSED_TEXT}
    assert runs.finish_claim(a.factory, claim, scrubbed, stderr)
    with db.session_scope(a.factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.finished
        stored = results.read_log(s, mid)
    assert stored is not None
    verify(stored)


def test_the_upgrade_repairs_bot_text_stored_before_it_was_cleaned(tmp_path: Path) -> None:
    """A database of the old code holds a lone surrogate, JSON-escaped, in a match's faults
    and log (every page showing the match answered 500), and NUL in a seat's stderr: the
    upgrade (0003) replaces them with U+FFFD; the log still replays."""
    import sqlite3

    from cow006 import Agent as SdkAgent
    from cow006 import bots, play_match
    from cow006_platform import migrate

    url = f"sqlite:///{tmp_path / 'old.db'}"
    migrate.upgrade(url, "0002")

    class Raises(SdkAgent):
        def play(self, view: Any) -> int:
            raise RuntimeError("PLACEHOLDER")

    log = play_match([Raises(), bots.make("random")], seed=4)
    for f in log["faults"]:
        f["detail"] = "boom \ud800 \x00"  # what the old code stored
    body = gzip.compress(json.dumps(log, separators=(",", ":")).encode(), mtime=0)
    now = "2026-11-30 12:00:00.000000"
    with sqlite3.connect(tmp_path / "old.db") as conn:
        conn.execute(
            "INSERT INTO users (id, name, is_admin, token_hash, created_at) "
            "VALUES (1, 'mallory', 0, :h, :t)",
            {"h": "0" * 64, "t": now},
        )
        for aid, name in ((1, "hostile"), (2, "fair")):
            conn.execute(
                "INSERT INTO agents (id, owner_id, name, disabled, created_at) "
                "VALUES (?, 1, ?, 0, ?)",
                (aid, name, now),
            )
            conn.execute(
                "INSERT INTO agent_versions (id, agent_id, number, sha256, filename, size, "
                "unpacked_size, files, status, created_at) "
                "VALUES (?, ?, 1, ?, 'bot.py', 1, 1, 1, 'active', ?)",
                (aid, aid, f"{aid}" * 64, now),
            )
        conn.execute(
            "INSERT INTO matches (id, kind, rated, seed, status, rating_applied, scores, ranks, "
            "faults, attempts, created_at, started_at, finished_at) VALUES (1, 'challenge', 0, "
            "4, 'finished', 0, ?, ?, ?, 1, ?, ?, ?)",
            (
                json.dumps(log["scores"]),
                json.dumps(log["ranks"]),
                json.dumps(log["faults"]),  # ensure_ascii: the surrogate as \ud800
                now,
                now,
                now,
            ),
        )
        for seat in (0, 1):
            conn.execute(
                "INSERT INTO match_seats (match_id, seat, version_id, agent_id, score, rank, "
                "faults, forfeited, stderr) VALUES (1, ?, ?, ?, ?, ?, ?, 0, ?)",
                (
                    seat,
                    seat + 1,
                    seat + 1,
                    log["scores"][seat],
                    log["ranks"][seat],
                    len(log["faults"]) if seat == 0 else 0,
                    "nul \x00 here" if seat == 0 else None,
                ),
            )
        conn.execute("INSERT INTO match_logs (match_id, body) VALUES (1, ?)", (body,))
    assert "\\ud800" in json.dumps(json.loads(gzip.decompress(body)))  # dirty before

    migrate.upgrade(url, "0003")

    with sqlite3.connect(tmp_path / "old.db") as conn:
        faults_text, stored = conn.execute(
            "SELECT m.faults, l.body FROM matches m JOIN match_logs l ON l.match_id = m.id"
        ).fetchone()
        (stderr,) = conn.execute("SELECT stderr FROM match_seats WHERE seat = 0").fetchone()
    fixed = json.loads(gzip.decompress(stored))
    verify(fixed)
    for value in [*all_strings(json.loads(faults_text)), *all_strings(fixed), stderr]:
        storable(value)
    assert fixed["faults"][0]["detail"] == f"boom {REPLACEMENT} {REPLACEMENT}"
    assert stderr == f"nul {REPLACEMENT} here"


# -- retries and matchmaking that a bot cannot steer -----------------------------------------------


def _die_on(a: Arena, mid: int) -> None:
    """A run of ``mid`` whose worker dies (its lease runs out), then the next run's claim,
    which finds the match tried ``max_attempts`` (1) times and fails it."""
    claim = lease.claim_match(
        a.factory, a.cfg, mid, worker="doomed", lease_seconds=0.05, max_attempts=1
    )
    assert claim is not None
    time.sleep(0.15)
    again = lease.claim_match(
        a.factory, a.cfg, mid, worker="next", lease_seconds=30, max_attempts=1
    )
    assert again is None


def _failures(a: Arena, vid: int) -> tuple[int, bool]:
    with db.session_scope(a.factory) as s:
        v = s.get(AgentVersion, vid)
        assert v is not None
        return v.consecutive_failures, v.suspended_at is not None


def test_a_version_whose_matches_keep_failing_is_suspended_and_the_ladder_goes_on(
    arena: Arena,
) -> None:
    from cow006_platform.cli import build_app
    from cow006_workers import scheduler

    a = arena
    mallory, mallory_auth = user(a, "mallory")
    doom_agent, doom = version(a, mallory, "doom", hostile_source("nul_stderr"))
    # Three owners: a ladder may keep one owner's versions apart.
    fair = [
        version(a, user(a, f"fair{i}")[0], f"fair-{i}", source)
        for i, source in enumerate((GOOD_HIGH, GOOD_LOW, GOOD_MID))
    ]
    lid = ladder(a, 2, [(doom_agent, doom), *fair], time_bank=3.0)

    # Its first matches fail (every run ends with its worker): counted, not yet suspended.
    for i, (_, fair_vid) in enumerate(fair[:2]):
        _die_on(a, ladder_match(a, lid, [doom, fair_vid], seed=10 + i))
        assert _failures(a, doom) == (i + 1, False)
    with db.session_scope(a.factory) as s:
        failed = s.scalars(select(Match).where(Match.status == MatchStatus.failed)).all()
        assert len(failed) == 2
        assert all("given up after 1 attempts" in (m.error or "") for m in failed)
    # A version with failed matches is no newcomer: matchmaking does not place it first.
    with db.session_scope(a.factory) as s:
        lad = s.get(Ladder, lid)
        assert lad is not None
        pool = {c.version_id: c for c in scheduler.ladder_candidates(s, lad)}
    assert pool[doom].queued == 2
    # A fair version's finished match resets its own count.
    fin = ladder_match(a, lid, [fair[0][1], fair[2][1]], seed=20)
    runs.run_match(a.factory, a.cfg, fin, None)
    assert _failures(a, fair[0][1]) == (0, False)
    assert _failures(a, fair[1][1]) == (1, False)

    _die_on(a, ladder_match(a, lid, [doom, fair[2][1]], seed=12))
    assert _failures(a, doom) == (3, True)
    assert _failures(a, fair[2][1]) == (1, False)

    # The owner reads why (the API, owner only; the agent page answers); the public sees the flag.
    public = a.client.get(f"/api/agents/{doom_agent}/versions").json()["items"][0]
    assert public["suspended"] is True and public["suspended_reason"] is None
    own = a.client.get(f"/api/agents/{doom_agent}/versions", headers=mallory_auth).json()
    reason = own["items"][0]["suspended_reason"]
    assert "Suspended from ladder tables" in reason and "3 ladder matches failed" in reason
    pages_answer(a, [f"/agents/{doom_agent}", f"/ladders/{lid}", "/"])

    # Matchmaking leaves it out, and the ladder finishes its matches.
    created = scheduler.refill_ladder(a.factory, lid, 4, random.Random(3))
    assert len(created) == 4
    for mid in created:
        runs.run_match(a.factory, a.cfg, mid, None)
    with db.session_scope(a.factory) as s:
        for mid in created:
            m = s.get(Match, mid)
            assert m is not None and m.status is MatchStatus.finished, m.error
            assert doom not in {seat.version_id for seat in m.seats}
    for _, vid in fair:
        assert _failures(a, vid)[0] == 0 or vid not in _seated(a, created)

    # An admin lifts it: seated again.
    env = {"COW006_DATABASE_URL": a.db_url, "COW006_DATA_DIR": str(a.cfg.data_dir)}
    out = CliRunner().invoke(build_app(), ["admin", "unsuspend", "doom@1"], env=env)
    assert out.exit_code == 0, out.output
    assert "doom@1 was suspended: Suspended from ladder tables" in out.stdout
    assert "lifted: doom@1" in out.stdout
    assert _failures(a, doom) == (0, False)
    with db.session_scope(a.factory) as s:
        lad = s.get(Ladder, lid)
        assert lad is not None
        assert doom in {c.version_id for c in scheduler.ladder_candidates(s, lad)}


def _seated(a: Arena, match_ids: list[int]) -> set[int]:
    with db.session_scope(a.factory) as s:
        return set(
            s.scalars(select(MatchSeat.version_id).where(MatchSeat.match_id.in_(match_ids))).all()
        )


def test_a_challenge_cannot_suspend_a_fair_version(arena: Arena) -> None:
    """Only ladder tables count: a user picks a challenge's table, matchmaking a ladder's."""
    a = arena
    mallory, _ = user(a, "mallory")
    alice, _ = user(a, "alice")
    _, doom = version(a, mallory, "doom", hostile_source("nul_stderr"))
    _, fair = version(a, alice, "fair", GOOD_HIGH)
    for i in range(4):
        with db.session_scope(a.factory) as s:
            mid = results.create_match(
                s, kind=MatchKind.challenge, version_ids=[doom, fair], seed=i, requested_by=mallory
            ).id
        _die_on(a, mid)
    assert _failures(a, fair) == (0, False)
    assert _failures(a, doom) == (0, False)


def _validate_in_a_worker(a: Arena, vid: int) -> subprocess.Popen[bytes]:
    code = (
        "import sys\n"
        "from cow006_platform import db\n"
        "from cow006_platform.settings import Settings\n"
        "from cow006_workers import validation\n"
        "s = Settings()\n"
        "validation.validate_version(db.make_sessionmaker(db.make_engine(s.database_url)), s, "
        "int(sys.argv[1]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("COW006_")}
    env.update(
        COW006_DATABASE_URL=a.db_url,
        COW006_DATA_DIR=str(a.cfg.data_dir),
        COW006_SANDBOX="on",
        COW006_VALIDATION_DECISION="30",
        COW006_VALIDATION_BANK="60",
        COW006_MAX_VALIDATIONS=str(a.cfg.max_validations),
    )
    return subprocess.Popen(
        [sys.executable, "-c", code, str(vid)],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_revalidation_is_bounded(arena: Arena) -> None:
    """A validation whose worker dies every time (here: killed mid-match) is not tried
    forever: after ``max_validations`` runs the version is rejected, with a reason."""
    a = arena
    mallory, mallory_auth = user(a, "mallory")
    agent_id, vid = version(a, mallory, "sleeper", SLOW)
    with db.session_scope(a.factory) as s:
        v = s.get(AgentVersion, vid)
        assert v is not None
        v.status = VersionStatus.pending
    for run in range(1, a.cfg.max_validations + 1):
        worker = _validate_in_a_worker(a, vid)
        deadline = time.monotonic() + 60
        while True:
            attempts, _ = _attempts(a, vid)
            if attempts >= run:
                break
            assert worker.poll() is None, "the validation ended by itself"
            assert time.monotonic() < deadline, "the validation run was never counted"
            time.sleep(0.1)
        time.sleep(1.0)  # the match is under way (its bot sleeps in its first move)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(30)
        assert _attempts(a, vid) == (run, VersionStatus.pending)
    started = time.monotonic()
    validation.validate_version(a.factory, a.cfg, vid)  # the reaper's next try
    assert time.monotonic() - started < 10  # decided without playing again
    attempts, status = _attempts(a, vid)
    assert (attempts, status) == (a.cfg.max_validations, VersionStatus.rejected)
    own = a.client.get(f"/api/agents/{agent_id}/versions", headers=mallory_auth).json()
    assert "never came to a verdict" in own["items"][0]["reason"]


def _attempts(a: Arena, vid: int) -> tuple[int, VersionStatus]:
    with db.session_scope(a.factory) as s:
        v = s.get(AgentVersion, vid)
        assert v is not None
        return v.validation_attempts, v.status


# -- 3: terminal escapes -------------------------------------------------------------------------


def _cli(*args: str, **env: str) -> Any:
    from cow006.cli import app

    return CliRunner().invoke(app, list(args), env={"COLUMNS": "160", **env})


def _cow006(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m cow006 ARGS`` as a user runs it: its real stdout, encoded by the process
    itself (where a lone surrogate used to crash it), decoded here leniently to inspect."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("COW006_")}
    env.update(COLUMNS="160", PYTHONIOENCODING="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "cow006", *args], env=env, capture_output=True, timeout=300
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "backslashreplace"),
        proc.stderr.decode("utf-8", "backslashreplace"),
    )


def test_cow006_match_prints_bot_text_escaped_and_survives_hostile_text(tmp_path: Path) -> None:
    services.require_sandbox()
    out = _cow006("match", str(TEXT_BOTS / "escapes.py"), "builtin:random", "--seed", "3")
    assert out.returncode == 0, out.stderr
    for stream in (out.stdout, out.stderr):
        assert "\x1b" not in stream and "\x07" not in stream and "\u202e" not in stream
        assert "\x9b" not in stream
    assert "\\x1b]52;c;" in out.stdout  # shown, as a visible escape
    assert "\\x1b]0;pwned title\\x07" in out.stdout
    assert "\\u202e" in out.stdout and "\\x9b" in out.stdout
    for name in HOSTILE:
        path = tmp_path / f"{name}.json"
        res = _cow006("match", str(TEXT_BOTS / f"{name}.py"), "builtin:random", "--log", str(path))
        assert "Traceback" not in res.stderr, (name, res.stderr[-2000:])
        assert "\x00" not in res.stdout + res.stderr
        if name == "startup_error":
            # A bot that cannot start is refused before the match: one clean error line.
            assert res.returncode == 1 and res.stdout == "", res.stdout
            (line,) = res.stderr.splitlines()
            assert line.startswith("error: ") and "cannot start" in line, line
            continue
        assert res.returncode == 0, (name, res.stderr[-2000:])
        assert "Result (seed" in res.stdout
        assert _cow006("verify", str(path)).returncode == 0, name


def test_cow006_logs_and_status_print_bot_text_escaped(tmp_path: Path) -> None:
    services.require_sandbox()
    import uvicorn

    from cow006_platform.app import create_app

    cfg = pt.settings(f"sqlite:///{tmp_path / 'arena.db'}", tmp_path)
    app = create_app(cfg, pt.Recorder())
    port = servers.free_port()
    # log_config=None: uvicorn leaves the process's logging alone (other tests read it).
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
            time.sleep(0.05)
        a = Arena(None, app.state.session_factory, cfg, cfg.database_url)
        mallory, auth = user(a, "mallory")
        alice, _ = user(a, "alice")
        _, esc = version(a, mallory, "escapes", hostile_source("escapes"))
        _, fair = version(a, alice, "fair", GOOD_HIGH)
        with db.session_scope(a.factory) as s:
            mid = results.create_match(
                s, kind=MatchKind.challenge, version_ids=[esc, fair], seed=5, requested_by=mallory
            ).id
        runs.run_match(a.factory, cfg, mid, None)
        validation.validate(a.factory, cfg, esc)  # rejected: the reason quotes it
        env = {
            "COW006_URL": f"http://127.0.0.1:{port}",
            "COW006_TOKEN": auth["Authorization"].split()[1],
            "COW006_CONFIG": str(tmp_path / "credentials.json"),
        }
        logs = _cli("logs", str(mid), **env)
        assert logs.exit_code == 0, logs.output
        assert "stderr of seat 0 (escapes@1):" in logs.output
        assert "fault of seat 0" in logs.output
        status = _cli("status", **env)
        assert status.exit_code == 0, status.output
        assert "rejected" in status.output
        for out in (logs.output, status.output):
            assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
            assert "\\x1b]" in out
        assert "\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07" in logs.output
    finally:
        server.should_exit = True
        thread.join(30)
