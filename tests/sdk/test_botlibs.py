"""The bot libraries (issue 19): numpy, and only the documented set, for every Python bot.

``make venv`` installs requirements/botlibs.txt into ``.venv/botlibs`` (``launch.botlibs_dir``);
the sandbox binds that directory read-only at ``/botlibs``, last on the bot's sys.path.  The
tests run a program in the sandbox, through the zygote and through bwrap, and check that numpy
imports from there and computes under the seccomp filter, the memory cap and the pids cap
with one BLAS thread; that none of the host's other packages imports (they are in the venv's
site-packages, which a bot never sees); that the library directory cannot be written; and that
a bot that does not import numpy has nothing of it loaded.  Local runs without the sandbox
(``launch.command_for``) see the same set.

Without the sandbox, or without the library directory, the tests skip with the reason; in CI
(``COW006_REQUIRE_SANDBOX=1``, where ``make venv`` installs the libraries) they fail instead.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from cow006 import AgentLoadError, launch
from cow006.sandbox import Sandbox
from cow006.sandbox._runtime import BOTLIBS_DEST

pytestmark = pytest.mark.slow

# Installed in the host's virtualenv (requirements/dev.txt), never in the bot library set.
NOT_LISTED = ("fastapi", "sqlalchemy", "celery", "pydantic", "gymnasium", "typer", "pyseccomp")

# What a Python program sees of the bot libraries, as JSON on stdout.
PROBE = r"""
import json, os, sys
out = {"path": sys.path, "numpy_before": "numpy" in sys.modules}
import numpy as np
a = np.arange(40000, dtype=np.float64).reshape(200, 200) / 40000.0
out["numpy"] = np.__version__
out["file"] = np.__file__
out["matmul"] = float((a @ a.T).trace())
out["tasks"] = len(os.listdir("/proc/self/task"))
out["blas_env"] = {k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
blocked = {}
for name in NOT_LISTED:
    try:
        __import__(name)
        blocked[name] = "imported"
    except ImportError as exc:
        blocked[name] = type(exc).__name__
out["others"] = blocked
writes = {}
libs = os.path.dirname(os.path.dirname(np.__file__))
for rel in ("numpy/evil.py", "numpy/__init__.py", "evil.pth", "sitecustomize.py"):
    try:
        with open(os.path.join(libs, rel), "a") as f:
            f.write("import os  # planted\n")
        writes[rel] = "written"
    except OSError as exc:
        writes[rel] = exc.strerror
out["writes"] = writes
with open("/proc/self/mountinfo") as f:
    out["mounts"] = {ln.split()[4]: ln.split()[5].split(",") for ln in f}
print(json.dumps(out))
""".replace("NOT_LISTED", repr(NOT_LISTED))

BOT = "def play(view):\n    return min(view.hand)\n"


def _need_botlibs() -> str:
    """The host's library directory, or a skip (a failure in CI, which installs it)."""
    found = launch.botlibs_dir()
    if found is None or not os.path.isdir(os.path.join(found, "numpy")):
        reason = (
            "no bot libraries here (make venv installs requirements/botlibs.txt into .venv/botlibs)"
        )
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    """A trivial bot the slot uids can read where it is."""
    tmp_path.chmod(0o755)
    path = tmp_path / "bot.py"
    path.write_text(BOT)
    path.chmod(0o644)
    return path


def _run_sandboxed(sb: Sandbox, bot: Path, code: str) -> dict[str, Any]:
    argv = [launch.python_executable(), "-I", "-S", "-B", "-c", code]
    proc = sb.spawn(argv, bot=bot, env=None)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    seen: dict[str, Any] = json.loads(out)
    return seen


@pytest.mark.parametrize("zygote", [True, False], ids=["zygote", "bwrap"])
def test_numpy_imports_in_the_sandbox_and_nothing_else_does(
    sandbox_works: None, bot: Path, zygote: bool
) -> None:
    _need_botlibs()
    sb = Sandbox(zygote=zygote)
    # The bot's bootstrap puts the libraries on sys.path; a bare program does it as it does.
    code = f"import sys; sys.path.append({BOTLIBS_DEST!r})\n{PROBE}"
    seen = _run_sandboxed(sb, bot, code)
    assert seen["numpy_before"] is False
    assert seen["file"] == f"{BOTLIBS_DEST}/numpy/__init__.py"
    assert seen["numpy"] == _host_numpy_version()
    assert seen["matmul"] == pytest.approx(_host_matmul())
    # One thread: OpenBLAS starts no pool (the pids cap counts threads; a bot has one core).
    assert seen["tasks"] == 1
    assert seen["blas_env"] == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    assert seen["others"] == {name: "ModuleNotFoundError" for name in NOT_LISTED}
    # Refused (as the slot uid, a root host's files are not its own to write anyway), and
    # on a read-only bind whoever owns them.
    assert "written" not in seen["writes"].values(), seen["writes"]
    assert set(seen["writes"].values()) <= {"Read-only file system", "Permission denied"}
    assert "ro" in seen["mounts"][BOTLIBS_DEST], seen["mounts"]
    assert not any("site-packages" in p for p in seen["path"]), seen["path"]


def test_the_bots_bootstrap_puts_the_libraries_last(sandbox_works: None, bot: Path) -> None:
    """Through ``Sandbox.launch``'s bootstrap: /botlibs after the stdlib (it shadows nothing)."""
    _need_botlibs()
    sb = Sandbox()
    argv = launch.command_for(bot, sdk="/sdk", libs=BOTLIBS_DEST)
    program = argv[5].replace(
        "from cow006.bot import run; run(sys.argv[1:])", "import json; print(json.dumps(sys.path))"
    )
    proc = sb.spawn([*argv[:5], program], bot=bot, env=None)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    path = json.loads(out)
    assert path[0] == "/sdk" and path[-1] == BOTLIBS_DEST
    stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
    assert path.index(stdlib) < path.index(BOTLIBS_DEST), path


def test_a_bot_that_does_not_import_numpy_loads_none_of_it(
    sandbox_works: None, tmp_path: Path
) -> None:
    """The library directory on sys.path costs a bot that does not use it nothing."""
    _need_botlibs()
    tmp_path.chmod(0o755)
    folder = tmp_path / "lean"
    folder.mkdir(mode=0o755)
    (folder / "bot.py").write_text(
        "import sys\n"
        "from cow006 import Agent\n\n\n"
        "class Bot(Agent):\n"
        "    def on_match_start(self, info):\n"
        "        mods = sorted(m for m in sys.modules if m.split('.')[0] == 'numpy')\n"
        "        print('NUMPY', mods, file=sys.stderr, flush=True)\n\n"
        "    def play(self, view):\n"
        "        return min(view.hand)\n"
    )
    (folder / "bot.py").chmod(0o644)
    from cow006 import bots, play_match
    from cow006.host import Limits, RemoteAgent

    sb = Sandbox()
    agent = RemoteAgent(folder, limits=Limits(startup=30.0, decision=5.0), launcher=sb.launch)
    try:
        log = play_match([agent, bots.make("random")], seed=3)
    finally:
        agent.close()
    assert log["faults"] == []
    assert "NUMPY []" in agent.stderr, agent.stderr


def test_a_local_run_without_the_sandbox_sees_the_same_set(tmp_path: Path) -> None:
    """``cow006 match`` with --no-sandbox starts bots by ``launch.command_for``: the host's
    library directory last on sys.path, the venv's site-packages never."""
    libs = _need_botlibs()
    bot = tmp_path / "bot.py"
    bot.write_text(BOT)
    argv = launch.command_for(bot)
    assert argv[1:4] == ["-I", "-S", "-B"]
    code = argv[5].replace("from cow006.bot import run; run(sys.argv[1:])", PROBE)
    proc = subprocess.run(
        [*argv[:5], code],
        cwd=tmp_path,
        capture_output=True,
        env=dict(launch.BOT_ENV),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode()
    seen = json.loads(proc.stdout)
    assert seen["file"] == os.path.join(libs, "numpy", "__init__.py")
    assert seen["path"][-1] == libs
    assert seen["others"] == {name: "ModuleNotFoundError" for name in NOT_LISTED}
    assert seen["tasks"] == 1


def test_the_setting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(launch.ENV_BOTLIBS, "off")
    assert launch.botlibs_dir() is None
    assert "sys.path.append" not in launch.bootstrap()
    monkeypatch.setenv(launch.ENV_BOTLIBS, str(tmp_path))
    assert launch.botlibs_dir() == str(tmp_path.resolve())
    assert f"sys.path.append({str(tmp_path.resolve())!r})" in launch.bootstrap()
    # Inside the sandbox the bootstrap names the bind, never the host's path.
    assert str(tmp_path) not in launch.bootstrap("/sdk", BOTLIBS_DEST)
    for bad in (str(tmp_path / "missing"), "relative/dir"):
        monkeypatch.setenv(launch.ENV_BOTLIBS, bad)
        with pytest.raises(
            AgentLoadError, match=r"names no directory \(an absolute path, or off\)"
        ):
            launch.botlibs_dir()


def _host_numpy_version() -> str:
    import numpy

    return str(numpy.__version__)


def _host_matmul() -> float:
    import numpy as np

    a = np.arange(40000, dtype=np.float64).reshape(200, 200) / 40000.0
    return float((a @ a.T).trace())
