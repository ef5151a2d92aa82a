"""What a bot process imports before the bot's own code: the documented minimum, no more.

A match starts a process per seat, so every module the bot side imports is paid for at every
seat of every match (docs/sandbox.md, Start-up).  The test starts a bot the way the host does
(``cow006.launch.command_for``: the real interpreter, ``-I -S -B``, the bootstrap program and
the compiled SDK) with ``-X importtime``, and takes the modules imported before the bot's own
module from the interpreter's report.  Whatever the bare interpreter imports by itself is the
interpreter's; every other module must be in ``BOT_SIDE`` below, each with its reason.  A new
import on the bot side (a ``typing`` in an annotation, a ``dataclass``) fails here: make it
lazy, or add it to the list with its reason and its cost.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cow006 import launch

# Every module a bot process imports before its bot, beyond the bare interpreter's own.
BOT_SIDE: dict[str, str] = {
    "__future__": "`from __future__ import annotations` in the SDK's modules is an import",
    "os": "the bot process's file descriptors, paths and exit (os._exit)",
    "os.path": "os",
    "posixpath": "os.path",
    "genericpath": "os.path",
    "stat": "os",
    "_stat": "stat",
    "_collections_abc": "os (os.environ is a MutableMapping)",
    "itertools": "built into the interpreter; the engine's helpers",
    "_bisect": "the engine's row search (a C function; bisect.py itself is not imported)",
    "_collections": "built in: _tuplegetter, the fields of the view's named tuple",
    "_json": "the protocol's JSON, its C encoder and scanner (json.py would bring re)",
    "cow006": "the package (its public names are loaded on first use)",
    "cow006.bot": "the bot process's program",
    "cow006.protocol": "the messages of the protocol",
    "cow006._agent": "loading the bot, Agent and MatchInfo",
    "cow006._errors": "AgentLoadError",
    "cow006._view": "View, built from each request",
    "cow006._tuples": "the view's named tuple without typing or collections",
    "cow006.engine": "the view's helpers (simulate, target_row, cheapest_row)",
    "cow006.cards": "the deck: heads of each card",
}
# Never on the bot side before the bot (the costly ones, named so a failure reads clearly).
NEVER = ("typing", "re", "json", "collections", "dataclasses", "contextlib", "enum", "inspect")

# The bot's first statement imports a marker module from its folder: what -X importtime lists
# before the marker was imported before the bot's own code ran.
MARKER = "zz_bot_starts_here"
BOT = f"import {MARKER}\n\n\ndef play(view):\n    return max(view.hand)\n"
_LINE = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|( *)(\S+)$")


def _imported(argv: list[str], cwd: str, stop: str | None = None) -> list[str]:
    """The modules ``argv`` imports (with -X importtime), in order, up to ``stop``."""
    exe, *rest = argv
    proc = subprocess.run(
        [exe, "-X", "importtime", *rest],
        cwd=cwd,
        input=b"",  # end of input at once: the bot exits after loading
        capture_output=True,
        env=dict(launch.BOT_ENV),
        timeout=60,
        check=False,
    )
    names: list[str] = []
    for line in proc.stderr.decode().splitlines():
        m = _LINE.match(line)
        if m is None:
            continue
        if stop is not None and m.group(2).startswith(stop):
            return names
        names.append(m.group(2))
    if stop is not None:
        pytest.fail(f"the bot was never imported:\n{proc.stderr.decode()[-2000:]}")
    return names


def test_a_bot_process_imports_only_the_documented_modules_before_the_bot(
    tmp_path: Path,
) -> None:
    bot = tmp_path / "tiny.py"
    bot.write_text(BOT)
    (tmp_path / f"{MARKER}.py").write_text("")
    argv = launch.command_for(bot)
    interpreter = set(_imported([argv[0], "-I", "-S", "-B", "-c", "pass"], str(tmp_path)))
    before_bot = _imported(argv, str(tmp_path), stop=MARKER)
    extra = [m for m in before_bot if m not in interpreter]
    assert not [m for m in extra if m.split(".")[0] in NEVER], extra
    unexpected = sorted(set(extra) - set(BOT_SIDE))
    assert not unexpected, (
        f"the bot side imports {unexpected} before the bot: make them lazy, or add them to "
        "BOT_SIDE with a reason (every module costs every seat of every match)"
    )
    # The list is the minimum: a module that is no longer imported leaves it.
    assert "cow006.bot" in extra and "cow006._view" in extra


def test_the_list_matches_a_plain_import_of_the_bot_side(tmp_path: Path) -> None:
    """``import cow006.bot`` alone (no bot, no bootstrap) stays within the list too."""
    sdk = launch.sdk_dir()
    python = launch.python_executable()
    interpreter = set(_imported([python, "-I", "-S", "-B", "-c", "pass"], str(tmp_path)))
    code = f"import sys; sys.path.insert(0, {sdk!r}); import cow006.bot"
    got = set(_imported([python, "-I", "-S", "-B", "-c", code], str(tmp_path))) - interpreter
    assert got <= set(BOT_SIDE), sorted(got - set(BOT_SIDE))
    assert os.path.basename(python).startswith("python")


# The rl extra's libraries (cow006.rl): never imported by the SDK unless cow006.rl is.
RL_LIBRARIES = ("numpy", "gymnasium", "pettingzoo")


def test_the_sdk_without_cow006_rl_imports_no_rl_library() -> None:
    """``import cow006`` and the host-side modules stay standard library only (bot side: the
    tests above), whether or not the rl extra is installed."""
    code = (
        "import sys, cow006, cow006.engine, cow006.log, cow006.spec, cow006.bots, cow006.host\n"
        "cow006.Agent, cow006.play_match, cow006.verify\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {RL_LIBRARIES!r}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60, check=True)
    assert proc.stdout.decode().strip() == "[]"


def test_cow006_rl_without_the_extra_says_how_to_install_it(tmp_path: Path) -> None:
    """Where numpy is missing (a stand-in here, which raises as a missing module does),
    ``import cow006.rl`` names it and the command that installs the extra."""
    fake = tmp_path / "numpy"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'numpy'\", name='numpy')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", "import cow006.rl"], capture_output=True, timeout=60, env=env
    )
    assert proc.returncode == 1
    last = proc.stderr.decode().strip().splitlines()[-1]
    assert last == (
        "ModuleNotFoundError: cow006.rl needs the rl extra (numpy is missing): "
        "pip install 'cow006[rl]'"
    )
