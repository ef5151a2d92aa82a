"""How a bot process is started: the one place that turns a bot path into a running process.

Kept apart from the host on purpose: the sandbox wraps exactly these two steps (the command
for a bot, and spawning it), so nothing else in the SDK knows how processes are made.

A Python bot runs on the real interpreter (not a venv shim) in isolated mode, without site
packages: it sees the standard library and ``cow006`` only, exactly as inside the sandbox,
and starts quickly.  A ``.js`` bot runs on node.  Every bot gets a clean, minimal
environment (nothing is inherited, so no secrets leak) and its own session, so the host can
kill the bot together with anything it started.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .errors import AgentLoadError

# The only environment a bot sees.  (-I makes Python ignore PYTHON* variables, so the
# interpreter flag -B is what actually stops .pyc writes; the variable is kept for bots
# that start Python themselves.)
BOT_ENV: dict[str, str] = {
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "MALLOC_ARENA_MAX": "2",
}


def sdk_dir() -> str:
    """The directory that contains the ``cow006`` package (put first on a bot's sys.path)."""
    return str(Path(__file__).resolve().parent.parent)


def python_executable() -> str:
    """The real interpreter behind ``sys.executable`` (a venv's python is only a symlink)."""
    return os.path.realpath(sys.executable)


def node_executable() -> str:
    return shutil.which("node") or shutil.which("node", path=BOT_ENV["PATH"]) or "/usr/bin/node"


def bootstrap(sdk: str | None = None) -> str:
    """The ``-c`` program of a Python bot: find cow006 at ``sdk``, then serve the protocol."""
    where = sdk if sdk is not None else sdk_dir()
    return (
        f"import sys; sys.path.insert(0, {where!r}); "
        "from cow006.bot import main; sys.exit(main(sys.argv[1:]))"
    )


def resolve(path: str | Path) -> tuple[str, Path]:
    """(language, file) for a bot path: a .py or .js file, or a folder with bot.py / bot.js."""
    p = Path(path)
    if p.is_dir():
        for name, lang in (("bot.py", "python"), ("bot.js", "node")):
            if (p / name).is_file():
                return lang, (p / name).resolve()
        raise AgentLoadError(f"{path} is a folder without bot.py or bot.js")
    if not p.is_file():
        raise AgentLoadError(f"no bot at {path}")
    if p.suffix == ".py":
        return "python", p.resolve()
    if p.suffix == ".js":
        return "node", p.resolve()
    raise AgentLoadError(f"{path}: a bot is a .py or .js file, or a folder with bot.py")


def command_for(path: str | Path) -> list[str]:
    """The argv that runs the bot at ``path`` (raises AgentLoadError if it is not a bot)."""
    lang, file = resolve(path)
    if lang == "node":
        return [node_executable(), str(file)]
    return [python_executable(), "-I", "-S", "-B", "-c", bootstrap(), str(file)]


def workdir(path: str | Path) -> Path:
    """The directory a bot runs in: its folder, or the folder holding its file."""
    p = Path(path).resolve()
    return p if p.is_dir() else p.parent


def spawn(argv: list[str], cwd: str | Path) -> subprocess.Popen[bytes]:
    """Start a bot process with pipes on stdin/stdout/stderr, a clean environment and its
    own session (its pid is the process group to kill)."""
    return subprocess.Popen(
        argv,
        cwd=str(cwd),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(BOT_ENV),
        start_new_session=True,
        close_fds=True,
        bufsize=0,
    )


def launch(path: str | Path) -> subprocess.Popen[bytes]:
    """The default launcher of ``RemoteAgent``: ``spawn(command_for(path), workdir(path))``."""
    return spawn(command_for(path), workdir(path))
