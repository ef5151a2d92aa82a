"""The API process holds no match-playing code, and the platform never imports the workers.

Issue 15: "the API process contains no match-playing code".  An API process (``create_app``
with its executor, the pages and the API answering) is started in a fresh interpreter and
its ``sys.modules`` read: none of the SDK's match-playing modules (the runner, the bot
processes, the protocol, the sandbox) nor anything of ``cow006_workers`` may be loaded.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# What plays a match: the runner, bot processes and their protocol, the sandbox.
PLAYING = (
    "cow006._runner",
    "cow006.host",
    "cow006.protocol",
    "cow006.launch",
    "cow006.bot",
    "cow006.sandbox",
    "cow006.cgroups",
    "cow006.subreaper",
    "cow006_workers",
)

API_PROCESS = """
import json, sys, tempfile
from fastapi.testclient import TestClient
from cow006_platform.app import create_app
from cow006_platform.executor import CeleryExecutor
from cow006_platform.settings import Settings

data = tempfile.mkdtemp()
settings = Settings(data_dir=data, database_url=f"sqlite:///{data}/arena.sqlite3")
app = create_app(settings, executor=CeleryExecutor("memory://"))
with TestClient(app) as client:
    codes = [client.get(p).status_code for p in ("/", "/api/ladders", "/upload", "/docs")]
print(json.dumps({"codes": codes, "modules": sorted(sys.modules)}))
"""


@pytest.mark.slow
def test_an_api_process_loads_no_match_playing_module(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", API_PROCESS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=True,
    )
    found = json.loads(out.stdout.splitlines()[-1])
    assert found["codes"] == [200, 200, 200, 200]
    loaded = [m for m in found["modules"] if m.startswith(PLAYING)]
    assert loaded == []
    # The check sees what the process loads: the pages read logs with the SDK's log modules.
    assert "cow006.log" in found["modules"]


def test_the_platform_never_imports_the_workers() -> None:
    offenders = []
    for path in (ROOT / "platform" / "cow006_platform").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            offenders += [f"{path}:{node.lineno}" for n in names if n.startswith("cow006_workers")]
    assert offenders == []
