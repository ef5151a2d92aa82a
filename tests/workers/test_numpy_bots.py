"""A trained bot (issue 19): numpy and a weights .npz, uploaded, validated, on the ladder.

The bot is a zip holding ``bot.py`` and ``weights.npz`` (made here with numpy: a tiny linear
scorer of the cards).  At import it loads numpy from the bot libraries (``/botlibs``), its
weights from its working directory (``/bot``, read-only: it checks that it cannot write
there) and their digest, and refuses to start if anything differs, so a version that becomes
active has done all of that in the sandbox.  It is uploaded through the API, validated by the
real worker code (a sandboxed match) and then plays a sandboxed ladder match beside the
Python starter.  The caps themselves: tests/platform/test_upload_caps.py.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient
from helpers.api import Api

from cow006 import launch, sandbox, verify
from cow006_platform import db, results
from cow006_platform.app import create_app
from cow006_platform.models import MatchKind
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor

pytestmark = pytest.mark.slow
STARTER = Path(__file__).resolve().parents[2] / "examples" / "starters" / "python" / "bot.py"

BOT = '''"""A linear scorer of the cards, its weights in weights.npz beside it."""

import hashlib
import os

import numpy as np

from cow006 import Agent

DIGEST = "{digest}"

if not np.__file__.startswith("/botlibs/"):
    raise RuntimeError(f"numpy from {{np.__file__}}, not the bot libraries")
with open("weights.npz", "rb") as f:
    if hashlib.sha256(f.read()).hexdigest() != DIGEST:
        raise RuntimeError("weights.npz is not the file uploaded")
WEIGHTS = np.load("weights.npz")
W, B = WEIGHTS["w"], float(WEIGHTS["b"][0])
try:
    with open("weights.npz", "ab") as f:
        f.write(b"x")
    raise RuntimeError("weights.npz is writable")
except OSError:
    pass
if len(os.listdir("/proc/self/task")) != 1:
    raise RuntimeError("numpy started threads")


class Bot(Agent):
    def play(self, view):
        hand = np.array(sorted(view.hand), dtype=np.float64)
        scores = W[hand.astype(np.int64) - 1] + B
        return int(hand[int(np.argmax(scores))])
'''


def _weights() -> bytes:
    rng = np.random.default_rng(19)
    buf = io.BytesIO()
    np.savez(buf, w=rng.standard_normal(104), b=np.array([0.5]))
    return buf.getvalue()


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def require_sandbox() -> None:
    status = sandbox.probe()
    required = os.environ.get("COW006_REQUIRE_SANDBOX") == "1"
    libs = launch.botlibs_dir()
    problem = None
    if not status.ok:
        problem = f"the sandbox does not work here: {status.reason}"
    elif libs is None or not os.path.isdir(os.path.join(libs, "numpy")):
        problem = "no bot libraries here (make venv installs them into .venv/botlibs)"
    if problem is not None:
        if required:
            pytest.fail(f"COW006_REQUIRE_SANDBOX=1 but {problem}")
        pytest.skip(problem)


def test_a_numpy_bot_with_weights_uploads_validates_and_plays_a_ladder_match(
    tmp_path: Path, require_sandbox: None
) -> None:
    weights = _weights()
    bot = BOT.format(digest=hashlib.sha256(weights).hexdigest())
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'n.db'}", data_dir=tmp_path / "d")
    executor = InProcessExecutor(settings)
    app = create_app(settings, executor)
    with closing(executor), TestClient(app) as client:
        api = Api(client, None, app.state.session_factory)  # type: ignore[arg-type]
        admin = api.user(admin=True)
        lid = api.ladder(admin, players=2)
        client.patch(f"/api/ladders/{lid}", json={"state": "paused"}, headers=admin)
        uploads = {
            "numpy": ("trained.zip", _zip({"bot.py": bot.encode(), "weights.npz": weights})),
            "starter": ("bot.py", STARTER.read_bytes()),
        }
        versions = api.enter_uploads(lid, uploads, lambda: executor.wait_idle(180))
        # The weights are stored beside bot.py, byte for byte.
        stored = settings.data_dir / "bots" / hashlib.sha256(uploads["numpy"][1]).hexdigest()
        assert (stored / "weights.npz").read_bytes() == weights
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
        log = client.get(f"/api/matches/{match_id}/log").json()
        verify(log)
        assert isinstance(log["sandbox"], dict) and log["sandbox"]["kind"] == "bwrap"
