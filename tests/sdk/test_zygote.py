"""The zygote (``cow006._zygote``, ``cow006.sandbox._forkserver``): a Python bot forked from a
warm fork server gets the very sandbox bwrap gives it, and a zygote that cannot build it
fails the probe (nothing runs).

The attacks themselves run in tests/hostile, through the zygote (the default) as well.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from cow006 import MatchInfo, launch, sandbox
from cow006.host import Limits, RemoteAgent
from cow006.sandbox import Sandbox, SandboxError, _forkserver
from cow006.sandbox._process import ZygoteProcess

# What a process sees of its sandbox (everything but its interpreter's modules and its
# pid 1, which differ by design: the zygote's child has the runtime imported already).
INSPECT = r"""
import json, os
out = {"uid": [os.getuid(), os.getgid(), os.getgroups()], "pid": os.getpid(),
       "host": os.uname().nodename, "cwd": os.getcwd(), "root": sorted(os.listdir("/")),
       "env": dict(os.environ), "fds": sorted(os.listdir("/proc/self/fd"))}
with open("/proc/self/status") as f:
    out["status"] = {k: v.strip() for k, v in (ln.split(":", 1) for ln in f)
                     if k.startswith("Cap") or k in ("NoNewPrivs", "Seccomp")}
with open("/proc/self/cgroup") as f:
    out["cgroup"] = f.read().split()
with open("/proc/self/mountinfo") as f:
    out["mounts"] = [(ln.split()[4], ln.split()[5], ln.split()[ln.split().index("-") + 1])
                     for ln in f]
writes = {}
for p in ("/x", "/bot/x", "/sdk/x", "/tmp/x", "/dev/x", "/dev/null"):
    try:
        with open(p, "w") as f:
            f.write("x")
        writes[p] = "written"
    except OSError as exc:
        writes[p] = exc.strerror
out["writes"] = writes
print(json.dumps(out))
"""
BOT = """from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return max(view.hand)
"""


@pytest.fixture
def bot(tmp_path: Path) -> Path:
    """A trivial bot the slot uids can read where it is."""
    tmp_path.chmod(0o755)
    path = tmp_path / "bot.py"
    path.write_text(BOT)
    path.chmod(0o644)
    return path


def _inspect(sb: Sandbox, bot: Path) -> dict[str, Any]:
    proc = sb.spawn(
        [launch.python_executable(), "-I", "-S", "-B", "-c", INSPECT], bot=bot, env=None
    )
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err.decode()
    seen: dict[str, Any] = json.loads(out)
    return seen


def test_the_setting() -> None:
    assert Sandbox(zygote=False).zygote_on() is False
    assert Sandbox(zygote=True).zygote_on() is True
    for word, on in (("", True), ("on", True), ("off", False), ("0", False), ("OFF", False)):
        os.environ["COW006_SANDBOX_ZYGOTE"] = word
        try:
            assert Sandbox().zygote_on() is on
        finally:
            del os.environ["COW006_SANDBOX_ZYGOTE"]
    os.environ["COW006_SANDBOX_ZYGOTE"] = "maybe"
    try:
        with pytest.raises(SandboxError, match="expected on or off"):
            Sandbox().zygote_on()
    finally:
        del os.environ["COW006_SANDBOX_ZYGOTE"]
    assert not _forkserver.can_fork(["node", "bot.js"], "node")
    assert not _forkserver.can_fork([launch.python_executable(), "-c", "pass"], "python")
    assert _forkserver.can_fork(
        [launch.python_executable(), "-I", "-S", "-B", "-c", "pass"], "python"
    )


def test_the_zygote_child_sees_the_sandbox_bwrap_gives(sandbox_works: None, bot: Path) -> None:
    forked = _inspect(Sandbox(zygote=True), bot)
    bwrap = _inspect(Sandbox(zygote=False), bot)
    # Each got a slot of its own (which one depends on what else runs): the same kind of uid.
    for seen in (forked, bwrap):
        uid, gid, groups = seen.pop("uid")
        assert uid == gid and groups == []
        assert uid >= Sandbox().uid_base if os.geteuid() == 0 else uid == os.getuid()
    assert forked == bwrap
    assert forked["status"]["CapEff"].strip("0") == "" and forked["status"]["Seccomp"] == "2"
    assert forked["pid"] == 2 and forked["host"] == "cow006" and forked["cwd"] == "/bot"
    assert forked["writes"]["/tmp/x"] == "written" and forked["writes"]["/x"] != "written"


def test_a_bot_plays_from_the_zygote(sandbox_works: None, bot: Path) -> None:
    sb = Sandbox(zygote=True)
    agent = RemoteAgent(bot, limits=Limits(startup=10.0), launcher=sb.launch)
    with agent:
        agent.on_match_start(MatchInfo(seat=0, n_players=2, seed=1, names=("p0", "p1")))
        assert isinstance(agent._proc, ZygoteProcess)
        assert agent.reported_name == "bot"
    assert agent.returncode == 0
    assert sandbox.log_entry(sb)["zygote"] is True  # type: ignore[index]


def test_a_dead_zygote_is_started_again(sandbox_works: None, bot: Path) -> None:
    sb = Sandbox(zygote=True)
    first = _forkserver.zygote(sb)
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    assert _inspect(sb, bot)["pid"] == 2
    assert _forkserver.zygote(sb) is not first


def test_a_zygote_that_cannot_build_the_sandbox_fails_the_probe(
    sandbox_works: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = _forkserver.request

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        req = real(*args, **kwargs)
        req["binds"] = [*req["binds"], ["/cow006-no-such-directory", "/nowhere"]]
        return req

    monkeypatch.setattr(_forkserver, "request", broken)
    sb = Sandbox(zygote=True)
    try:
        status = sandbox.probe(sb, refresh=True)
        assert not status.ok
        assert "a sandboxed probe process does not run" in status.reason
        assert "cow006-no-such-directory" in status.reason
        with pytest.raises(SandboxError, match="the sandbox is required but not available"):
            sandbox.resolve_mode(None, sandbox=sb, environ={})
    finally:
        monkeypatch.undo()
        assert sandbox.probe(sb, refresh=True).ok


# A bot that starts a daemon in its own session (out of pid 1's process group) and then
# waits to be killed.
DAEMON = r"""
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
print("up", flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="slot uids need a root host")
@pytest.mark.parametrize("how", ["pid1", "group"])
def test_a_released_zygote_slot_leaves_nothing_of_its_uid(
    sandbox_works: None, bot: Path, how: str
) -> None:
    """The release reaps the lease's process group instead of scanning /proc: killing only
    the sandbox's pid 1 (this host's child) or the whole group, with a daemon inside, leaves
    no process of the slot uid, not even a zombie (/proc scanned)."""
    from cow006.sandbox._uids import uid_procs

    # A slot uid of this test's own: a default slot, once released, may at once be another
    # test's (xdist runs other files beside this one), whose processes the scan would see.
    sb = Sandbox(zygote=True, uid_base=64496, slots=1)
    proc = sb.spawn([launch.python_executable(), "-I", "-S", "-B", "-c", DAEMON], bot=bot, env=None)
    assert isinstance(proc, ZygoteProcess) and proc.lease.group == proc.pid
    assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
    uid = proc.lease.uid
    assert len(uid_procs(uid)) >= 3  # pid 1, the bot, its daemon
    if how == "pid1":
        os.kill(proc.pid, signal.SIGKILL)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.lease.clean is True
    assert uid_procs(uid) == []
    proc.communicate()
