"""``cow006 admin`` and ``cow006 db``: the first admin, re-rating a ladder, the schema; and the
SDK's player commands mounted unchanged in the same ``cow006`` command."""

from __future__ import annotations

import json
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import data as dt
from helpers.api import RecordingExecutor, new_match, play_and_finish
from sqlalchemy import func, select
from typer.testing import CliRunner

from cow006_platform import db, models, results, tasknames
from cow006_platform.app import create_app
from cow006_platform.cli import build_app
from cow006_platform.settings import Settings

runner = CliRunner()
ACTIVE = models.VersionStatus.active


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("COW006_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("COW006_DATA_DIR", str(settings.data_dir))
    return settings


@pytest.mark.slow
def test_create_user_prints_a_working_token_once(cli_env: Settings) -> None:
    app = build_app()
    r = runner.invoke(app, ["admin", "create-user", "boss", "--admin"])
    assert r.exit_code == 0, r.output
    token = r.stdout.strip()
    assert len(token) >= 40 and "\n" not in token
    assert "admin boss" in r.stderr and token not in r.stderr
    r = runner.invoke(app, ["admin", "create-user", "pleb"])
    assert r.exit_code == 0
    with TestClient(create_app(cli_env, RecordingExecutor())) as client:
        me = client.get("/api/users/me", headers={"Authorization": f"Bearer {token}"}).json()
        assert me["name"] == "boss" and me["is_admin"] is True
        r = client.post(
            "/api/ladders", json={"name": "main"}, headers={"Authorization": f"Bearer {token}"}
        )
        assert r.status_code == 201
    for args, message in [
        (["admin", "create-user", "boss"], "taken"),
        (["admin", "create-user", "no spaces"], "2 to 40"),
    ]:
        r = runner.invoke(app, args)
        assert r.exit_code == 1 and r.stderr.startswith("error: ") and message in r.stderr


def test_rerate_rebuilds_a_ladders_ratings(cli_env: Settings) -> None:
    app = build_app()
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0
    engine = db.make_engine(cli_env.database_url)
    factory = db.make_sessionmaker(engine)
    try:
        with db.session_scope(factory) as session:
            owner = dt.user(session, "alice")
            versions = [
                dt.version(session, dt.agent(session, owner, f"cow-{i}"), status=ACTIVE).id
                for i in range(3)
            ]
            lid = dt.ladder(session, name="main", players=3).id
        for _ in range(3):
            mid = new_match(factory, kind="ladder", version_ids=versions, ladder_id=lid)
            play_and_finish(factory, mid)
        with factory() as session:
            before = sorted(
                session.execute(select(models.Rating.version_id, models.Rating.mu)).all()
            )
        with db.session_scope(factory) as session:  # damage the ratings
            for rating in session.scalars(select(models.Rating)):
                rating.mu = 0.0
        for ref in ("main", str(lid)):
            r = runner.invoke(app, ["admin", "rerate", ref])
            assert r.exit_code == 0, r.output
            assert "rerated ladder main: 3 matches" in r.stdout
        with factory() as session:
            after = sorted(
                session.execute(select(models.Rating.version_id, models.Rating.mu)).all()
            )
            points = session.scalars(select(models.RatingPoint)).all()
        assert after == before and len(points) == 9
        r = runner.invoke(app, ["admin", "rerate", "nope"])
        assert r.exit_code == 1 and "no ladder" in r.stderr
    finally:
        engine.dispose()


def test_db_upgrade_is_idempotent(cli_env: Settings) -> None:
    app = build_app()
    for _ in range(2):
        r = runner.invoke(app, ["db", "upgrade"])
        assert r.exit_code == 0 and "up to date" in r.stdout


def test_the_sdk_commands_are_mounted_unchanged() -> None:
    from cow006 import cli as sdk_cli

    app = build_app()
    r = runner.invoke(app, ["--help"])
    assert r.exit_code == 0
    for command in ("match", "tournament", "verify", "admin", "db"):
        assert command in r.stdout
    # --seed fixes the deal; the same agent seeds make the same match.
    argv = ["match", "builtin:random", "builtin:safe", "--seed", "3", "--agent-seeds", "1,2", "-q"]
    r = runner.invoke(app, argv)
    assert r.exit_code == 0, r.output
    assert r.stdout == runner.invoke(sdk_cli.app, argv).stdout
    # Bad input is still one "error:" line, not a traceback.
    r = runner.invoke(app, ["match", "builtin:random"])
    assert r.exit_code != 0 and r.stderr.startswith("error: ")
    assert not any(c.name in ("admin", "db") for c in sdk_cli.app.registered_groups)


# -- ladders, agents, failed matches, exports ---------------------------------------------------


@pytest.fixture
def engines(cli_env: Settings) -> Iterator[list[Any]]:
    """Engines a test opens on the CLI's database, disposed after it (before the schema goes)."""
    made: list[Any] = []
    yield made
    for engine in made:
        engine.dispose()


def _arena(
    settings: Settings, engines: list[Any], players: int = 3, agents: int = 3
) -> tuple[Any, list[int], int]:
    """The CLI's database with ``agents`` active versions (one per agent, owner alice) and a
    ladder ``main`` of ``players`` seats they are all entered in: (factory, versions, id)."""
    assert runner.invoke(build_app(), ["db", "upgrade"]).exit_code == 0
    engine = db.make_engine(settings.database_url)
    engines.append(engine)
    factory = db.make_sessionmaker(engine)
    with db.session_scope(factory) as session:
        owner = dt.user(session, "alice")
        # alice's agents share tables: the ladder allows one owner's versions together
        lid = dt.ladder(session, name="main", players=players, allow_same_owner=True).id
        versions = []
        for i in range(agents):
            version = dt.version(session, dt.agent(session, owner, f"cow-{i}"), status=ACTIVE)
            session.add(
                models.LadderEntry(ladder_id=lid, agent_id=version.agent_id, version_id=version.id)
            )
            versions.append(version.id)
    return factory, versions, lid


def _state(factory: Any, model: Any, ident: int, column: str) -> Any:
    with factory() as session:
        return getattr(session.get(model, ident), column)


@pytest.mark.slow
def test_pause_and_resume_a_ladder(cli_env: Settings, engines: list[Any]) -> None:
    from cow006_workers import scheduler

    app = build_app()
    factory, _versions, lid = _arena(cli_env, engines)
    r = runner.invoke(app, ["admin", "pause", "main"])
    assert r.exit_code == 0 and "paused ladder main" in r.stdout, r.output
    assert _state(factory, models.Ladder, lid, "state") is models.LadderState.paused
    # A paused ladder gets no new matches from the scheduler.
    assert scheduler.refill_ladder(factory, lid, 4) == []
    r = runner.invoke(app, ["admin", "pause", str(lid)])
    assert r.exit_code == 0 and "already paused" in r.stdout
    r = runner.invoke(app, ["admin", "resume", "main"])
    assert r.exit_code == 0 and "resumed ladder main" in r.stdout
    assert _state(factory, models.Ladder, lid, "state") is models.LadderState.open
    assert len(scheduler.refill_ladder(factory, lid, 4)) == 4
    with db.session_scope(factory) as session:
        session.get(models.Ladder, lid).state = models.LadderState.closed  # type: ignore[union-attr]
    for command in ("pause", "resume"):
        r = runner.invoke(app, ["admin", command, "main"])
        assert r.exit_code == 1 and r.stderr.startswith("error: ladder main is closed")
    assert _state(factory, models.Ladder, lid, "state") is models.LadderState.closed
    r = runner.invoke(app, ["admin", "pause", "nope"])
    assert r.exit_code == 1 and r.stderr == "error: no ladder named 'nope'\n"


@pytest.mark.slow
def test_a_disabled_agent_is_left_out(cli_env: Settings, engines: list[Any]) -> None:
    from cow006_platform import security
    from cow006_workers import scheduler

    app = build_app()
    factory, versions, lid = _arena(cli_env, engines, players=2, agents=3)
    with db.session_scope(factory) as session:
        owner = session.scalar(select(models.User).where(models.User.name == "alice"))
        assert owner is not None
        # A token of alice's (what authenticates is api_tokens, issue 14).
        digest = security.hash_token("alice-token-" + "x" * 40)
        session.add(models.ApiToken(user_id=owner.id, name="test", hash=digest))
    r = runner.invoke(app, ["admin", "disable-agent", "cow-1"])
    assert r.exit_code == 0 and "disabled agent cow-1" in r.stdout, r.output
    disabled_id = _state(factory, models.AgentVersion, versions[1], "agent_id")
    assert _state(factory, models.Agent, disabled_id, "disabled") is True
    with factory() as session:
        ladder = session.get(models.Ladder, lid)
        seen = {c.version_id for c in scheduler.ladder_candidates(session, ladder)}
    assert seen == {versions[0], versions[2]}
    created = scheduler.refill_ladder(factory, lid, 6)
    assert created
    with factory() as session:
        seated = set(
            session.scalars(
                select(models.MatchSeat.version_id).where(models.MatchSeat.match_id.in_(created))
            )
        )
    assert versions[1] not in seated
    with TestClient(create_app(cli_env, RecordingExecutor())) as client:
        auth = {"Authorization": "Bearer alice-token-" + "x" * 40}
        r = client.post(
            f"/api/agents/{disabled_id}/versions",
            files={"file": ("bot.py", b"def play(view):\n    return min(view.hand)\n")},
            headers=auth,
        )
        assert r.status_code == 409 and "disabled" in r.json()["detail"]
    r = runner.invoke(app, ["admin", "disable-agent", str(disabled_id)])
    assert r.exit_code == 0 and "already disabled" in r.stdout
    r = runner.invoke(app, ["admin", "enable-agent", "cow-1"])
    assert r.exit_code == 0 and "enabled agent cow-1" in r.stdout
    with factory() as session:
        ladder = session.get(models.Ladder, lid)
        seen = {c.version_id for c in scheduler.ladder_candidates(session, ladder)}
    assert seen == set(versions)
    for command in ("disable-agent", "enable-agent"):
        r = runner.invoke(app, ["admin", command, "ghost"])
        assert r.exit_code == 1 and r.stderr == "error: no agent named 'ghost'\n"


def _sent(broker_url: str) -> list[int]:
    """The match ids of the run_match tasks waiting in the (embedded) broker's queue of ladder
    and league matches, consumed."""
    from kombu import Connection

    out = []
    with Connection(broker_url) as conn:
        queue = conn.SimpleQueue(tasknames.LADDER_QUEUE)
        while True:
            try:
                message = queue.get(timeout=0.5)
            except queue.Empty:
                break
            assert message.headers["task"] == "cow006.run_match"
            out.append(int(message.payload[0][0]))
            message.ack()
        queue.close()
    return out


@pytest.mark.slow
def test_requeue_failed_matches_are_played_and_rated_once(
    cli_env: Settings, engines: list[Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite'}"
    monkeypatch.setenv("COW006_BROKER_URL", broker)
    app = build_app()
    factory, versions, lid = _arena(cli_env, engines)
    with db.session_scope(factory) as session:
        other = models.Ladder(name="other", players=3)
        session.add(other)
        session.flush()
        other_id = other.id
    done = new_match(factory, kind="ladder", version_ids=versions, ladder_id=lid)
    play_and_finish(factory, done)
    failed = [new_match(factory, kind="ladder", version_ids=versions, ladder_id=lid) for _ in "ab"]
    elsewhere = new_match(factory, kind="ladder", version_ids=versions, ladder_id=other_id)
    with db.session_scope(factory) as session:
        for mid in (*failed, elsewhere):
            match = session.get(models.Match, mid)
            assert match is not None
            match.attempts = 5
            results.fail_match(session, mid, "The match was given up after 5 attempts.")

    r = runner.invoke(app, ["admin", "requeue-failed", "--ladder", "main", "--limit", "1"])
    assert r.exit_code == 0 and "requeued 1 failed matches of ladder main" in r.stdout, r.output
    r = runner.invoke(app, ["admin", "requeue-failed", "--ladder", "main"])
    assert r.exit_code == 0 and "requeued 1 failed matches" in r.stdout
    assert sorted(_sent(broker)) == failed  # each sent once, after its row was queued
    with factory() as session:
        for mid in failed:
            match = session.get(models.Match, mid)
            assert match is not None
            assert match.status is models.MatchStatus.queued and match.attempts == 0
            assert match.error is None and match.finished_at is None
            assert not match.rating_applied
        assert session.get(models.Match, elsewhere).status is models.MatchStatus.failed  # type: ignore[union-attr]
        assert session.get(models.Match, done).status is models.MatchStatus.finished  # type: ignore[union-attr]

    for mid in failed:  # a worker plays them now; a duplicate delivery changes nothing
        play_and_finish(factory, mid)
        with db.session_scope(factory) as session:
            stored = results.read_log(session, mid)
            assert stored is not None
            assert results.finish_match(session, mid, stored, [None] * 3) is False
    with factory() as session:
        for mid in (done, *failed):
            points = session.scalar(select(func.count()).where(models.RatingPoint.match_id == mid))
            assert points == 3, mid  # one per seat: rated exactly once
        assert session.scalar(select(func.sum(models.Rating.matches))) == 3 * 3
    r = runner.invoke(app, ["admin", "requeue-failed", "--ladder", "main"])
    assert r.exit_code == 0 and "requeued 0 failed matches" in r.stdout
    r = runner.invoke(app, ["admin", "requeue-failed"])  # every ladder: the one left
    assert r.exit_code == 0 and "requeued 1 failed matches" in r.stdout
    assert _sent(broker) == [elsewhere]
    r = runner.invoke(app, ["admin", "requeue-failed", "--ladder", "nope"])
    assert r.exit_code == 1 and r.stderr == "error: no ladder named 'nope'\n"


def test_export_writes_every_finished_log_and_an_index(
    cli_env: Settings, engines: list[Any], tmp_path: Path
) -> None:
    from cow006 import log as cow_log

    app = build_app()
    factory, versions, lid = _arena(cli_env, engines)
    played, agents = {}, {}
    for i in range(3):
        seats = versions[i:] + versions[:i]
        mid = new_match(factory, kind="ladder", version_ids=seats, ladder_id=lid)
        played[mid] = play_and_finish(factory, mid)
        agents[mid] = [f"cow-{versions.index(v)}" for v in seats]
    new_match(factory, kind="ladder", version_ids=versions, ladder_id=lid)  # queued: left out
    failed = new_match(factory, kind="ladder", version_ids=versions, ladder_id=lid)
    with db.session_scope(factory) as session:
        results.fail_match(session, failed, "no")
    with factory() as session:
        seeds = {mid: session.get(models.Match, mid).seed for mid in played}  # type: ignore[union-attr]

    def check(files: dict[str, bytes]) -> None:
        index = [json.loads(line) for line in files["index.jsonl"].decode().splitlines()]
        assert [e["match_id"] for e in index] == sorted(played)
        for entry in index:
            mid = entry["match_id"]
            log = json.loads(files[entry["file"]])
            assert log == played[mid] and log["format"] == "cow006-match-1"
            cow_log.verify(log)
            assert entry["seed"] == seeds[mid] == log["seed"]
            assert entry["scores"] == log["scores"] and entry["ranks"] == log["ranks"]
            assert [p["agent"] for p in entry["participants"]] == agents[mid]
            assert [p["seat"] for p in entry["participants"]] == [0, 1, 2]
            assert [p["score"] for p in entry["participants"]] == log["scores"]
        assert set(files) == {"index.jsonl", *(f"matches/{m}.json" for m in played)}

    out = tmp_path / "export"
    r = runner.invoke(app, ["admin", "export", "main", str(out)])
    assert r.exit_code == 0 and "exported 3 matches of ladder main" in r.stdout, r.output
    check({str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()})

    tarball = tmp_path / "main.tar.gz"
    r = runner.invoke(app, ["admin", "export", str(lid), str(tarball)])
    assert r.exit_code == 0, r.output
    with tarfile.open(tarball) as tar:
        check({m.name: tar.extractfile(m).read() for m in tar.getmembers()})  # type: ignore[union-attr]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers

    r = runner.invoke(app, ["admin", "export", "main", str(out)])  # not empty any more
    assert r.exit_code == 1 and "not an empty directory" in r.stderr
    r = runner.invoke(app, ["admin", "export", "nope", str(tmp_path / "x.tar.gz")])
    assert r.exit_code == 1 and r.stderr == "error: no ladder named 'nope'\n"
    assert not (tmp_path / "x.tar.gz").exists()
