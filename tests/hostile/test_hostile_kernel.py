"""Hostile bots against the machine's shared kernel state, and crafted bot folders.

Each attack bot in ``bots/kernel/`` plays a real sandboxed match at seat 0 beside the
well-behaved bot and a builtin, as in ``test_hostile.py``: the AIO pool (``io_setup`` and
the other AIO calls, while the host watches the machine-wide ``/proc/sys/fs/aio-nr``),
inotify/fanotify on the shared files, and the host's global ``/proc`` files (which must read
as the neutral contents, not as the host reads them).

Crafted bot folders (issue 13, item 9) hold a symbolic link to a host directory, a named
pipe, a socket or a device node: the host refuses each with one sentence, through
``play_match`` (a ``startup`` fault naming it) and through ``cow006 match`` (one error
line), and never follows the link (the linked directory's mode is unchanged) or reads the
special file.  Both ways of binding a bot are covered: as it is (readable by the slot uid)
and the copy the host makes of a bot only root can read.

Without a working sandbox everything here skips with one reason, or fails when
``COW006_REQUIRE_SANDBOX=1``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import hostile as ht

from cow006 import sandbox, verify
from cow006.host import Limits, RemoteAgent
from cow006.sandbox._probe import _judge_probe
from cow006.sandbox._procfs import neutral_proc
from cow006.sandbox._staging import reachable_by_others
from cow006.sandbox._uids import uid_procs

# Attacks in the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
KERNEL_BOTS = HERE / "bots" / "kernel"
GOOD = HERE / "good_bot.py"
ROOT = HERE.parents[1]
SEED = 13
HOSTILE = Limits(startup=10.0, decision=1.0, bank=2.0, grace=0.3)
ROOMY = Limits(startup=20.0, decision=10.0, bank=60.0, grace=1.0)
UID_BASE = 64480  # slot uids of this file, apart from the other batteries' ranges
AIO_NR = Path("/proc/sys/fs/aio-nr")

_SB = sandbox.Sandbox(uid_base=UID_BASE, slots=4)
_STATUS = sandbox.probe(_SB)
if not _STATUS.ok and os.environ.get("COW006_REQUIRE_SANDBOX") != "1":
    pytest.skip(
        f"these attacks need the sandbox, which does not work here: {_STATUS.reason}",
        allow_module_level=True,
    )


@pytest.fixture(scope="module")
def sb() -> sandbox.Sandbox:
    status = sandbox.probe(_SB)
    if not status.ok:
        pytest.fail(f"the sandbox is required here but does not work: {status.reason}")
    return _SB


def _play(sb: sandbox.Sandbox, bot: Path) -> tuple[dict[str, Any], RemoteAgent, RemoteAgent]:
    hostile = RemoteAgent(bot, limits=HOSTILE, launcher=sb.launch)
    good = RemoteAgent(GOOD, name="good", limits=ROOMY, launcher=sb.launch)
    log, error = ht.play_beside(hostile, good, sb, seed=SEED)
    assert log is not None, error
    verify(log)
    return log, hostile, good


def _contained(log: dict[str, Any], hostile: RemoteAgent, name: str) -> None:
    """The attack ran, nothing it tried worked, and it cost nobody a fault."""
    assert f"ATTACK {name}" in hostile.stderr, hostile.stderr[-2000:]
    assert "ESCAPED" not in hostile.stderr, hostile.stderr[-2000:]
    assert log["faults"] == [], log["faults"]
    for lease in ht.leases(hostile):
        assert uid_procs(lease.uid) == []


# -- the kernel's machine-wide pools -------------------------------------------------------------


def test_the_aio_pool_is_out_of_reach(sb: sandbox.Sandbox) -> None:
    before = int(AIO_NR.read_text())
    peak = [before]
    done = threading.Event()

    def watch() -> None:  # the machine-wide count while the bot holds what it got
        while not done.is_set():
            peak[0] = max(peak[0], int(AIO_NR.read_text()))
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        log, hostile, _ = _play(sb, KERNEL_BOTS / "aio_pool.py")
    finally:
        done.set()
        watcher.join()
    _contained(log, hostile, "aio_pool")
    assert "io_setup: Operation not permitted" in hostile.stderr
    assert peak[0] == before, f"aio-nr went from {before} to {peak[0]} during the match"


def test_inotify_and_fanotify_are_denied(sb: sandbox.Sandbox) -> None:
    log, hostile, _ = _play(sb, KERNEL_BOTS / "inotify_watch.py")
    _contained(log, hostile, "inotify_watch")
    for call in ("inotify_init1", "inotify_add_watch", "fanotify_init", "fanotify_mark"):
        assert f"inotify_watch: {call}: Operation not permitted" in hostile.stderr


def test_the_hosts_global_proc_files_read_neutral(sb: sandbox.Sandbox) -> None:
    log, hostile, _ = _play(sb, KERNEL_BOTS / "proc_global.py")
    _contained(log, hostile, "proc_global")
    seen = {}
    for line in hostile.stderr.splitlines():
        if line.startswith("PROC "):
            _, name, digest = line.split(" ", 2)
            seen[name] = digest
    neutral = neutral_proc()
    assert {"loadavg", "stat", "cmdline", "sys/kernel/random/boot_id"} <= set(neutral)
    assert set(seen) == set(sandbox.PROC_MASKS)
    for name, data in neutral.items():
        assert seen[name] == hashlib.sha256(data).hexdigest(), name
    # What the host reads there is not what the bot read: the mask is really in force.
    for name in ("loadavg", "cmdline", "sys/kernel/random/boot_id", "stat"):
        host = Path(f"/proc/{name}").read_bytes()
        assert hashlib.sha256(host).hexdigest() != seen[name], name
    assert "load unobtainable" in hostile.stderr  # the C library asks sysinfo(), refused
    assert f"cpus {os.cpu_count()}" in hostile.stderr  # the C library still counts the CPUs


def test_the_probe_fails_closed_when_a_mask_or_the_filter_is_missing() -> None:
    """The startup probe's judgement of what it saw inside (a real probe's findings,
    changed as a sandbox without the masks or without the new filter rules would show)."""
    found = dict(sandbox.probe(_SB).details)
    assert _judge_probe(found) == []
    leaked = {**found, "proc": {**found["proc"], "loadavg": Path("/proc/loadavg").read_text()}}
    assert _judge_probe(leaked) == ["the host's /proc/loadavg shows in the sandbox"]
    for call in ("inotify", "aio", "sysinfo"):
        problems = _judge_probe({**found, call: "allowed"})
        assert problems == ["the seccomp filter lets inotify, the AIO calls or sysinfo through"]


# -- crafted bot folders -------------------------------------------------------------------------


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A directory every user can pass through (pytest's own is root's alone), so that a
    world-readable bot folder in it is bound as it is."""
    path = Path(tempfile.mkdtemp(prefix="cow006-kernel-"))
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def host_dir(tmp_path: Path) -> Iterator[Path]:
    """A private host directory a crafted bot folder links to."""
    target = tmp_path / "host-private"
    target.mkdir()
    (target / "secret.txt").write_text("host secret\n")
    os.chmod(target / "secret.txt", 0o600)
    os.chmod(target, 0o700)
    yield target


def _bot_folder(tmp_path: Path, private: bool) -> Path:
    """A bot folder (world-readable, so bound as it is; or its bot.py readable by root
    alone, so the host copies it for the slot uid: root hosts only, the test skips else)."""
    if private:
        _only_root()
    folder = tmp_path / ("private-bot" if private else "bot")
    folder.mkdir(parents=True)
    os.chmod(folder, 0o755)
    shutil.copy(GOOD, folder / "bot.py")
    os.chmod(folder / "bot.py", 0o600 if private else 0o644)
    (folder / "lib").mkdir()
    os.chmod(folder / "lib", 0o755)
    if os.geteuid() == 0:  # the way the host takes it (a non-root host binds it as it is)
        assert reachable_by_others(str(folder / "bot.py")) is not private
    return folder


# A bot that needs a file of a subfolder (an exception fault if the copy left it out).
READS_HELPER = """\
from cow006 import Agent


class Bot(Agent):
    def on_match_start(self, info):
        with open("/bot/lib/helper.py") as f:
            assert f.read() == "X = 1\\n"

    def play(self, view):
        return max(view.hand)
"""


def _refused_at_start(sb: sandbox.Sandbox, folder: Path, what: str, entry: str) -> None:
    _assert_refused(*_play(sb, folder)[:2], what, entry)


def _assert_refused(log: dict[str, Any], hostile: RemoteAgent, what: str, entry: str) -> None:
    mine = [f for f in log["faults"] if f["seat"] == 0]
    assert [f["kind"] for f in mine] == ["startup"], log["faults"]
    detail = mine[0]["detail"]
    assert f"holds {what} ({entry})" in detail, detail
    assert "a bot may hold only regular files and folders" in detail
    assert "\n" not in detail and "Traceback" not in detail
    assert hostile.process is None  # nothing was started
    assert all(f["seat"] == 0 for f in log["faults"])


@pytest.fixture(params=[False, True], ids=["bound", "copied"])
def linked_folder(request: pytest.FixtureRequest, open_tmp: Path, host_dir: Path) -> Path:
    """A bot folder (bound as it is, or copied) holding a symbolic link to a private host
    directory (``lib/data``)."""
    folder = _bot_folder(open_tmp, request.param)
    os.symlink(host_dir, folder / "lib" / "data")
    return folder


def _only_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the host copies a bot folder only when it runs as root")


def test_a_symlinked_directory_is_refused_and_never_followed(
    sb: sandbox.Sandbox, linked_folder: Path, host_dir: Path
) -> None:
    mode = host_dir.stat().st_mode
    log, hostile, _ = _play(sb, linked_folder)
    assert host_dir.stat().st_mode == mode  # root never chmods a link's target
    assert stat.S_IMODE(mode) == 0o700
    _assert_refused(log, hostile, "a symbolic link", "lib/data")


@pytest.mark.parametrize("private", [False, True], ids=["bound", "copied"])
def test_a_symlinked_file_is_refused(sb: sandbox.Sandbox, open_tmp: Path, private: bool) -> None:
    folder = _bot_folder(open_tmp, private)
    os.symlink("/etc/shadow", folder / "shadow.txt")
    _refused_at_start(sb, folder, "a symbolic link", "shadow.txt")


@pytest.mark.parametrize("private", [False, True], ids=["bound", "copied"])
def test_a_named_pipe_is_refused(sb: sandbox.Sandbox, open_tmp: Path, private: bool) -> None:
    folder = _bot_folder(open_tmp, private)
    os.mkfifo(folder / "lib" / "pipe", 0o666)
    _refused_at_start(sb, folder, "a named pipe", "lib/pipe")


@pytest.mark.parametrize("private", [False, True], ids=["bound", "copied"])
def test_a_device_node_is_refused_unread(
    sb: sandbox.Sandbox, open_tmp: Path, private: bool
) -> None:
    _only_root()  # mknod needs root
    folder = _bot_folder(open_tmp, private)
    # A character device that is safe to have around (/dev/null's numbers): the old copy read
    # any device's raw contents, a disk's as well.
    os.mknod(folder / "disk", 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    before = os.stat(folder / "disk").st_atime_ns
    log, hostile, _ = _play(sb, folder)
    assert os.stat(folder / "disk").st_atime_ns == before  # never opened: the old copy read it
    _assert_refused(log, hostile, "a device node", "disk")


def test_a_socket_is_refused(sb: sandbox.Sandbox, open_tmp: Path) -> None:
    folder = _bot_folder(open_tmp, False)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(folder / "host.sock"))
        listener.listen(1)
        _refused_at_start(sb, folder, "a socket", "host.sock")
    finally:
        listener.close()


def test_a_plain_bot_folder_still_plays_bound_and_copied(
    sb: sandbox.Sandbox, open_tmp: Path
) -> None:
    """Regular files and folders only (hidden ones too): bound as it is, and copied."""
    for private in (False, True) if os.geteuid() == 0 else (False,):
        folder = _bot_folder(open_tmp, private)
        (folder / "bot.py").write_text(READS_HELPER)
        (folder / "lib" / "helper.py").write_text("X = 1\n")
        os.chmod(folder / "lib" / "helper.py", 0o600 if private else 0o644)
        (folder / ".hidden").write_text("not copied\n")
        log, hostile, _ = _play(sb, folder)
        assert log["faults"] == [], (log["faults"], hostile.stderr[-1000:])
        proc = hostile.process
        assert isinstance(proc, sandbox.SandboxedProcess)
        assert (proc.lease.stage is not None) is private


# -- the local CLI -------------------------------------------------------------------------------


def _cow006(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).with_name("cow006")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "cow006"]
    env = {k: v for k, v in os.environ.items() if k != sandbox.ENV_MODE}
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=120, env=env, check=False
    )


def test_cow006_match_refuses_a_crafted_folder_in_one_line(
    sb: sandbox.Sandbox, linked_folder: Path, host_dir: Path
) -> None:
    folder = linked_folder
    os.mkfifo(folder / "pipe")
    mode = host_dir.stat().st_mode
    proc = _cow006("match", str(folder), "builtin:random", "--sandbox", "--seed", "3")
    assert proc.returncode != 0, proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert str(folder) in lines[0]
    assert "a bot may hold only regular files and folders" in lines[0]
    assert "a symbolic link (lib/data)" in lines[0] or "a named pipe (pipe)" in lines[0]
    assert host_dir.stat().st_mode == mode
