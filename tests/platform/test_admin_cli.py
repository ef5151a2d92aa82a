"""``cow006 admin`` and ``cow006 db``: the first admin, re-rating a ladder, the schema; and the
SDK's player commands mounted unchanged in the same ``cow006`` command."""

from __future__ import annotations

import pytest
from apitools import new_match, play_and_finish
from fastapi.testclient import TestClient
from sqlalchemy import select
from typer.testing import CliRunner

from cow006_platform import db, models
from cow006_platform.app import create_app
from cow006_platform.cli import build_app
from cow006_platform.settings import Settings

runner = CliRunner()


@pytest.fixture
def cli_env(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    monkeypatch.setenv("COW006_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("COW006_DATA_DIR", str(settings.data_dir))
    return settings


def test_create_user_prints_a_working_token_once(cli_env: Settings) -> None:
    app = build_app()
    r = runner.invoke(app, ["admin", "create-user", "boss", "--admin"])
    assert r.exit_code == 0, r.output
    token = r.stdout.strip()
    assert len(token) >= 40 and "\n" not in token
    assert "admin boss" in r.stderr and token not in r.stderr
    r = runner.invoke(app, ["admin", "create-user", "pleb"])
    assert r.exit_code == 0
    with TestClient(create_app(cli_env)) as client:
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
            owner = models.User(name="alice", token_hash="0" * 64)
            session.add(owner)
            session.flush()
            versions = []
            for i in range(3):
                agent = models.Agent(name=f"cow-{i}", owner_id=owner.id)
                session.add(agent)
                session.flush()
                version = models.AgentVersion(
                    agent_id=agent.id,
                    number=1,
                    sha256=f"{i:064x}",
                    filename="bot.py",
                    size=1,
                    unpacked_size=1,
                    files=1,
                    status=models.VersionStatus.active,
                )
                session.add(version)
                session.flush()
                versions.append(version.id)
            ladder = models.Ladder(name="main", players=3)
            session.add(ladder)
            session.flush()
            lid = ladder.id
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
    r = runner.invoke(app, ["match", "builtin:random", "builtin:safe", "--seed", "3", "-q"])
    assert r.exit_code == 0, r.output
    assert (
        r.stdout
        == runner.invoke(
            sdk_cli.app, ["match", "builtin:random", "builtin:safe", "--seed", "3", "-q"]
        ).stdout
    )
    # Bad input is still one "error:" line, not a traceback.
    r = runner.invoke(app, ["match", "builtin:random"])
    assert r.exit_code != 0 and r.stderr.startswith("error: ")
    assert not any(c.name in ("admin", "db") for c in sdk_cli.app.registered_groups)
