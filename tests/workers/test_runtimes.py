"""Bots in three runtimes: the starter kits (examples/starters) locally and on the platform.

The C++ starter is built static in the test with the system's g++ (``.ci/system-deps.sh``
installs g++ with its static libraries; without them the test skips, loudly, except in CI).
The three play a local sandboxed match, then are uploaded, validated by the real worker code
and play a ladder match together; a dynamically linked build and one for another machine are
refused at upload with one sentence.
"""

from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import zipfile
from contextlib import closing
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.api import Api

from cow006 import play_match, sandbox, verify
from cow006.host import Limits, RemoteAgent
from cow006_platform import db, results
from cow006_platform.app import create_app
from cow006_platform.models import MatchKind
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor

pytestmark = pytest.mark.slow
STARTERS = Path(__file__).resolve().parents[2] / "examples" / "starters"
ROOMY = Limits(startup=30.0, decision=5.0, bank=60.0)


def _need(ok: bool, reason: str) -> None:
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI installs it: .ci/system-deps.sh)")
    pytest.skip(reason)


def _build_cpp(out: Path, *, static: bool = True) -> Path:
    """The C++ starter folder with its executable built (static unless asked otherwise)."""
    _need(shutil.which("g++") is not None, "g++ is not installed: the C++ starter cannot be built")
    _need(
        Path("/usr/lib/x86_64-linux-gnu/libc.a").exists(),
        "the static C library (libc6-dev) is missing: the C++ starter cannot be linked static",
    )
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(STARTERS / "cpp" / "bot.cpp", out / "bot.cpp")
    shutil.copy(STARTERS / "cpp" / "cow006.toml", out / "cow006.toml")
    flags = ["-O2", "-static", "-s"] if static else ["-O2", "-s"]
    subprocess.run(["g++", *flags, "-o", str(out / "bot"), str(out / "bot.cpp")], check=True)
    return out


def _zip(folder: Path, names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in names:
            zf.write(folder / name, name)
    return buf.getvalue()


@pytest.fixture
def require_sandbox() -> None:
    status = sandbox.probe()
    if not status.ok and os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
        pytest.fail(f"COW006_REQUIRE_SANDBOX=1 but the sandbox does not work: {status}")
    _need(status.ok, f"the sandbox does not work here: {status.reason}")
    _need(shutil.which("node") is not None, "node is not installed")


def test_the_three_starters_play_a_sandboxed_match_locally(
    tmp_path: Path, require_sandbox: None
) -> None:
    cpp_bot = _build_cpp(tmp_path / "c")
    sb = sandbox.Sandbox()
    paths = [STARTERS / "python" / "bot.py", STARTERS / "javascript", cpp_bot]
    agents = [RemoteAgent(p, limits=ROOMY, launcher=sb.launch) for p in paths]
    try:
        log = play_match(agents, seed=4)
    finally:
        for agent in agents:
            agent.close()
    verify(log)
    assert log["faults"] == [], log["faults"]


def test_three_runtimes_upload_validate_and_play_a_ladder_match(
    tmp_path: Path, require_sandbox: None
) -> None:
    cpp_bot = _build_cpp(tmp_path / "c")
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'r.db'}", data_dir=tmp_path / "d")
    executor = InProcessExecutor(settings)
    app = create_app(settings, executor)
    with closing(executor), TestClient(app) as client:
        api = Api(client, None, app.state.session_factory)  # type: ignore[arg-type]
        admin = api.user(admin=True)
        lid = api.ladder(admin, players=3)
        client.patch(f"/api/ladders/{lid}", json={"state": "paused"}, headers=admin)
        uploads = {
            "py": ("bot.py", (STARTERS / "python" / "bot.py").read_bytes()),
            "js": ("js.zip", _zip(STARTERS / "javascript", ["bot.js", "cow006.toml"])),
            "cpp": ("cpp.zip", _zip(cpp_bot, ["bot", "cow006.toml"])),
        }
        versions = api.enter_uploads(lid, uploads, lambda: executor.wait_idle(180))
        with db.session_scope(app.state.session_factory) as session:
            match_id = results.create_match(
                session,
                kind=MatchKind.ladder,
                version_ids=[vid for _, _, vid in versions.values()],
                ladder_id=lid,
            ).id
        executor.submit_match(match_id, kind=MatchKind.ladder)
        assert executor.wait_idle(120)
        match = client.get(f"/api/matches/{match_id}").json()
        assert match["status"] == "finished", match["error"]
        assert all(p["faults"] == 0 for p in match["participants"]), match["participants"]
        verify(client.get(f"/api/matches/{match_id}/log").json())

        # What cannot run is refused at upload, in one sentence.
        owner = api.user("loader-fan")
        agent = api.agent(owner, "dynamic")
        dynamic = _build_cpp(tmp_path / "dyn", static=False)
        arm = tmp_path / "arm"
        arm.mkdir()
        shutil.copy(STARTERS / "cpp" / "cow006.toml", arm / "cow006.toml")
        image = bytearray((cpp_bot / "bot").read_bytes())
        struct.pack_into("<H", image, 18, 183)  # e_machine: aarch64
        (arm / "bot").write_bytes(bytes(image))
        for folder, needle in ((dynamic, "dynamically linked"), (arm, "another machine")):
            r = client.post(
                f"/api/agents/{agent}/versions",
                files={"file": ("b.zip", _zip(folder, ["bot", "cow006.toml"]), "application/zip")},
                headers=owner,
            )
            assert r.status_code == 400, r.text
            detail = r.json()["detail"]
            assert needle in detail and "\n" not in detail


def test_the_cpp_starter_answers_a_take_row_with_an_empty_hand(tmp_path: Path) -> None:
    """The last turn's take_row comes after the hand's last card: the hand is empty."""
    cpp_bot = _build_cpp(tmp_path / "cpp")
    view = (
        '{"seat":0,"n_players":2,"hand":[],"rows":[[10],[20,21],[30],[40]],"scores":[0,0],'
        '"penalties":[0,0],"revealed":[],"starters":[10,20,30,40],"round":0,"turn":9,'
        '"time_left":1.0,"card":5,"current":[5,50]}'
    )
    lines = [
        '{"type":"hello","protocol":1,"seat":0,"n_players":2,"seed":1,"names":["p0","p1"],'
        '"limits":{},"settings":{}}',
        '{"type":"take_row","id":7,"view":' + view + "}",
        '{"type":"match_end","scores":[0,0],"ranks":[1,1]}',
    ]
    out = subprocess.run(
        [str(cpp_bot / "bot")],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    ).stdout.splitlines()
    assert out == ['{"type":"ready","protocol":1,"name":"starter.cpp"}', '{"id":7,"row":0}']
