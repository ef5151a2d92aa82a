"""cow006.sandbox without running a bot: the fail-closed rule, the bwrap command, the filter.

The real thing (bots under attack in a sandboxed match) is tests/hostile.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cow006 import Cow006Error, sandbox
from cow006.sandbox import Sandbox, SandboxError, SandboxStatus
from cow006.sandbox._command import bwrap_command
from cow006.sandbox._seccomp import seccomp_bpf
from cow006.sandbox._slots import acquire

# Bot processes in the sandbox: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

MISSING = Sandbox(bwrap="cow006-no-such-bwrap")


def _works() -> SandboxStatus:
    return sandbox.probe()


def test_import_needs_only_the_standard_library() -> None:
    import subprocess
    import sys

    code = (
        "import sys; import cow006.sandbox; "
        "bad = [m for m in ('pyseccomp', 'seccomp') if m in sys.modules]; "
        "sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_missing_bwrap_is_one_clear_reason() -> None:
    status = sandbox.probe(MISSING)
    assert not status.ok
    assert status.reason == "bubblewrap is not installed (apt-get install bubblewrap)"


def test_resolve_mode_fails_closed() -> None:
    with pytest.raises(SandboxError) as err:
        sandbox.resolve_mode(None, sandbox=MISSING, environ={})
    message = str(err.value)
    assert isinstance(err.value, Cow006Error)
    assert "bubblewrap is not installed" in message and "--no-sandbox" in message
    assert "\n" not in message
    with pytest.raises(SandboxError):
        sandbox.resolve_mode(True, sandbox=MISSING, environ={"COW006_SANDBOX": "off"})
    with pytest.raises(SandboxError, match="expected on or off"):
        sandbox.resolve_mode(None, sandbox=MISSING, environ={"COW006_SANDBOX": "maybe"})


def test_resolve_mode_only_explicit_choices_run_bare() -> None:
    assert sandbox.resolve_mode(False, sandbox=MISSING, environ={}) is None
    for word in ("off", "0", "false", "no", "OFF"):
        assert sandbox.resolve_mode(None, sandbox=MISSING, environ={"COW006_SANDBOX": word}) is None
    # Nothing to confine (only in-process agents): no sandbox unless asked for.
    assert sandbox.resolve_mode(None, needed=False, sandbox=MISSING, environ={}) is None
    with pytest.raises(SandboxError):
        sandbox.resolve_mode(True, needed=False, sandbox=MISSING, environ={})


def test_log_entry() -> None:
    assert sandbox.log_entry(None) is False
    if not _works().ok:
        pytest.skip(f"no sandbox here: {_works().reason}")
    entry = sandbox.log_entry(Sandbox())
    assert isinstance(entry, dict)
    assert entry["kind"] == "bwrap" and entry["seccomp"] is True
    assert entry["memory"] == 512 << 20 and entry["nproc"] == 32
    assert sandbox.resolve_mode(None, environ={}) == Sandbox()


def test_launcher_for_each_mode() -> None:
    from cow006 import launch

    assert sandbox.launcher(None) is launch.launch
    sb = Sandbox()
    assert sandbox.launcher(sb) == sb.launch


def test_filter_denies_what_it_should() -> None:
    try:
        f = sandbox.seccomp_filter()
    except ImportError:
        pytest.skip("no seccomp binding installed")
    import tempfile

    with tempfile.TemporaryFile("w+b") as out:
        f.export_pfc(out)
        out.seek(0)
        pfc = out.read().decode()
    for name in ("ptrace", "bpf", "unshare", "setns", "mount", "keyctl", "io_uring_setup"):
        assert f'"{name}"' in pfc, name
    assert '"socket"' in pfc and '"clone"' in pfc
    bpf = seccomp_bpf()
    assert bpf and len(bpf) % 8 == 0


def test_bwrap_command_confines() -> None:
    status = dataclasses.replace(
        SandboxStatus(True, bwrap="/usr/bin/bwrap", version="0.8.0"), disable_userns=True
    )
    if not _works().ok:
        pytest.skip(f"no sandbox here: {_works().reason}")
    sb = Sandbox()
    lease = acquire(sb)
    try:
        bot = Path(__file__).resolve()
        argv = ["python", "-c", "pass"]
        cmd = bwrap_command(sb, argv, lang="python", bot=bot, lease=lease, env=None, status=status)
    finally:
        lease.release()
    for flag in (
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--die-with-parent",
        "--new-session",
        "--clearenv",
        "--seccomp",
    ):
        assert flag in cmd, flag
    assert cmd[cmd.index("--cap-drop") + 1] == "ALL"
    assert "--share-net" not in cmd
    # /tmp is a sized tmpfs, the root and /dev are read-only, the bot is read-only at /bot.
    pairs = list(itertools.pairwise(cmd))
    tmp = pairs.index(("--tmpfs", "/tmp"))
    assert cmd[tmp - 2 : tmp] == ["--size", str(sb.tmp_size)]
    assert ("--remount-ro", "/") in pairs and ("--remount-ro", "/dev") in pairs
    assert f"/bot/{bot.name}" in cmd
    # Nothing from the host's /etc, /home, /run or the environment is bound or passed.
    binds = [cmd[i + 2] for i, c in enumerate(cmd) if c in ("--ro-bind", "--bind")]
    assert not [d for d in binds if d.startswith(("/etc", "/home", "/run", "/var"))], binds
    assert not any(c.startswith("--bind") or c == "--dev-bind" for c in cmd)
    setenv = {cmd[i + 1] for i, c in enumerate(cmd) if c == "--setenv"}
    from cow006.launch import BOT_ENV

    assert setenv == set(BOT_ENV) | {"TMPDIR", "HOME"}


def test_the_subreaper_helper_follows_the_process() -> None:
    """``cow006.subreaper`` (the sandbox's host and the workers' supervisor): ``ensure`` sets
    the flag again once something turned it off."""
    import ctypes
    import sys

    from cow006 import subreaper

    if not sys.platform.startswith("linux"):
        pytest.skip("prctl is Linux's")
    libc = ctypes.CDLL(None, use_errno=True)

    def is_subreaper() -> bool:
        flag = ctypes.c_int(-1)
        assert libc.prctl(37, ctypes.byref(flag), 0, 0, 0) == 0  # PR_GET_CHILD_SUBREAPER
        return flag.value == 1

    assert subreaper.become_subreaper() is True and is_subreaper()
    assert subreaper.become_subreaper(False) is True and not is_subreaper()
    subreaper.ensure()
    assert is_subreaper()


@pytest.mark.skipif(os.geteuid() != 0, reason="a process of another uid needs root to make")
def test_a_zombie_another_host_left_does_not_keep_a_slot_uid_busy() -> None:
    """A host that died (or never reaped) can leave zombies of a slot uid with another
    parent: they run nothing and this process cannot reap them, so they do not block the
    purge (they used to make every other host wait out the purge's timeout per slot)."""
    from cow006.sandbox._uids import purge_uid, uid_procs

    uid = 64999  # outside the default slots, so no sandbox of a parallel test is touched
    helper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import os, sys, time\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            f"    os.setuid({uid}); os._exit(0)\n"
            "print(pid, flush=True); time.sleep(60)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert helper.stdout is not None
        zombie = int(helper.stdout.readline())
        deadline = time.monotonic() + 10
        while (zombie, helper.pid, "Z") not in uid_procs(uid):
            assert time.monotonic() < deadline, uid_procs(uid)
            time.sleep(0.01)
        started = time.monotonic()
        killed, clear = purge_uid(uid, timeout=5.0)
        assert (killed, clear) == (0, True)
        assert time.monotonic() - started < 1.0
    finally:
        helper.kill()
        helper.wait()
