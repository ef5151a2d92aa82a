"""``cow006 logs --ladder L --out DIR`` against a real arena: 10,000 matches in one command.

The arena (uvicorn in a subprocess) serves a PostgreSQL database seeded with 10,000 finished
ladder matches; the command downloads them, every log passes ``cow006 verify``, running it
again goes on where it ended (nothing new: nothing written), and matches that finish later
are fetched by the next run.  What a hostile arena could send (a match id that is a path, a
line that is not a log) is refused before it touches the disk.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import data, servers, services
from typer.testing import CliRunner

from cow006 import _client as client
from cow006 import _export as export
from cow006.cli import app
from cow006_platform import db
from cow006_platform.app import prepare_database
from cow006_platform.models import LadderState
from cow006_platform.settings import Settings

pytestmark = pytest.mark.slow
N_MATCHES = 10_000
runner = CliRunner()


@dataclass
class Arena:
    url: str
    factory: object
    ladder_id: int
    versions: list[int]


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Arena]:
    services.require_pg()
    root = tmp_path_factory.mktemp("export-arena")
    with services.pg_schema("export") as url:
        settings = Settings(database_url=url, data_dir=root / "data")
        engine = db.make_engine(url)
        prepare_database(settings, engine)
        factory = db.make_sessionmaker(engine)
        with db.session_scope(factory) as session:
            # Closed: the arena schedules nothing here, the matches are the seeded ones.
            ladder = data.ladder(session, name="dataset", state=LadderState.closed, players=3)
            versions = [data.version(session).id for _ in range(3)]
            ladder_id = ladder.id
        data.finished_matches(factory, ladder_id, versions, N_MATCHES)
        env = servers.clean_env(COW006_DATABASE_URL=url, COW006_DATA_DIR=str(root / "data"))
        server = servers.serve(
            [*servers.EMBEDDED_APP, "--log-level", "warning"],
            cwd=root,
            env=env,
            out=root / "server.log",
        )
        try:
            servers.wait_http(server, "/api/ladders", 60)
            yield Arena(server.base, factory, ladder_id, versions)
        finally:
            servers.stop(server)
            engine.dispose()


def logs_command(arena: Arena, tmp: Path, *args: str) -> str:
    env = {"COW006_URL": arena.url, "COW006_TOKEN": None, "COW006_CONFIG": str(tmp / "c.json")}
    result = runner.invoke(app, ["logs", "--ladder", "dataset", *args], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_ten_thousand_matches_download_in_one_command_and_verify(
    arena: Arena, tmp_path: Path
) -> None:
    out = tmp_path / "dataset"
    said = logs_command(arena, tmp_path, "--out", str(out))
    assert f"{N_MATCHES} logs written" in said
    files = sorted((out / "matches").glob("*.json"))
    assert len(files) == N_MATCHES
    index = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    assert len(index) == N_MATCHES
    assert len({e["match_id"] for e in index}) == N_MATCHES
    assert all((out / e["file"]).exists() for e in index)
    # The arena's index entry, as `cow006 admin export` writes it.
    assert set(index[0]) == {
        "match_id",
        "file",
        "seed",
        "rated",
        "finished_at",
        "participants",
        "scores",
        "ranks",
    }
    assert [p["seat"] for p in index[0]["participants"]] == [0, 1, 2]
    checked = runner.invoke(app, ["verify", *map(str, files)])
    assert checked.exit_code == 0, checked.output[-2000:]
    assert checked.stdout.strip() == f"ok {N_MATCHES} logs"

    # Again: it goes on after the last match of the index, and there is nothing new.
    again = logs_command(arena, tmp_path, "--out", str(out))
    assert "no finished match after match" in again
    # Matches finished later come with the next run, and only they.
    later = data.finished_matches(arena.factory, arena.ladder_id, arena.versions, 7, distinct=3)
    more = logs_command(arena, tmp_path, "--out", str(out))
    assert "7 logs" in more
    index = [json.loads(line) for line in (out / "index.jsonl").read_text().splitlines()]
    assert [e["match_id"] for e in index[-7:]] == later
    assert len(index) == N_MATCHES + 7


def test_since_starts_after_a_given_match(arena: Arena, tmp_path: Path) -> None:
    api = client.Client(arena.url)
    last = api.get("/matches", ladder_id=arena.ladder_id, limit=1)["items"][0]["id"]
    out = tmp_path / "tail"
    said = logs_command(arena, tmp_path, "--out", str(out), "--since", str(last - 3))
    assert "3 logs" in said
    assert sorted(int(p.stem) for p in (out / "matches").glob("*.json")) == [
        last - 2,
        last - 1,
        last,
    ]


def test_wrong_combinations_are_one_error_line(tmp_path: Path) -> None:
    env = {"COW006_URL": "http://127.0.0.1:9", "COW006_CONFIG": str(tmp_path / "c.json")}
    for args in (["logs", "--ladder", "x"], ["logs", "5", "--ladder", "x", "--out", "d"], ["logs"]):
        result = runner.invoke(app, args, env=env)
        assert result.exit_code == 1, args
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


@pytest.mark.parametrize(
    "line",
    [
        b'{"match_id": "../../etc/passwd", "log": {}}',
        b'{"match_id": -1, "log": {}}',
        b'{"match_id": 1.5, "log": {}}',
        b'{"match_id": true, "log": {}}',
        b'{"match_id": 3, "log": "not a log"}',
        b"[1, 2]",
        b"not json",
    ],
)
def test_what_a_hostile_arena_sends_is_refused_before_the_disk(line: bytes) -> None:
    with pytest.raises(client.ClientError):
        list(export.parse_page(line + b"\n"))


def test_the_resume_point_skips_a_line_cut_short(tmp_path: Path) -> None:
    (tmp_path / "index.jsonl").write_text(
        '{"match_id": 4}\n{"match_id": 9}\n{"match_id": 12, "fi'  # interrupted mid-line
    )
    assert export.resume_point(tmp_path) == 9
    assert export.resume_point(tmp_path / "none") == 0
