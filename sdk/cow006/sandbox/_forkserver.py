"""The host's side of the zygote (``cow006._zygote``): one fork server per host process and
configuration, and the ``SandboxedProcess`` it starts.

A Python bot's sandbox costs a bwrap start and a cold interpreter importing the runtime;
the zygote has imported the runtime once and forks a child per bot that builds the same
sandbox itself (see ``cow006._zygote``).  The host asks it over a socket: one request per
bot, the sandbox's description (what ``_command`` gives bwrap: the binds, the masks, the
limits, the slot uid and cgroup, the seccomp program) and the bot's three stdio pipes
(``SCM_RIGHTS``).  The zygote answers with the pid of the sandbox's pid 1, which is the
host's own child (the zygote clones it with ``CLONE_PARENT``), so ``ZygoteProcess`` is an
ordinary ``Popen`` of the host:
``wait``, ``poll``, ``kill`` and the process group work as with bwrap.

The zygote is started lazily by the first bot, from the real interpreter with ``-I -S -B``
and an empty environment (no secret of the host is in it), on the host's compiled SDK; it
dies with the host, or when the host closes its socket.  A forked host starts its own.
Used only for Python bots when ``Sandbox.zygote_on()``; node bots, and everything when the
setting is off, go through bwrap (``_command``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import cgroups, launch
from ..bot import ZYGOTE_MARKER
from ._botfiles import BOT_DEST, bot_source
from ._confine import rlimits
from ._errors import SandboxError
from ._host import is_root
from ._procfs import mask_binds
from ._runtime import SDK_DEST, runtime_binds, sdk_source, top_symlinks
from ._seccomp import seccomp_bpf

if TYPE_CHECKING:
    from ._config import Sandbox
    from ._slots import Lease

_PREFIX = ["-I", "-S", "-B", "-c"]  # the only argv the zygote runs: python -I -S -B -c CODE


def can_fork(argv: Sequence[str], lang: str) -> bool:
    """Whether the zygote can run ``argv``: a Python ``-I -S -B -c`` program."""
    return (
        lang == "python"
        and len(argv) >= 6
        and argv[0] == launch.python_executable()
        and list(argv[1:5]) == _PREFIX
    )


class Zygote:
    """One running fork server (``cow006._zygote``) and the host's end of its socket."""

    def __init__(self, sb: Sandbox) -> None:
        sdk = os.path.dirname(sdk_source(sb))  # the host's compiled copy (as bound at /sdk)
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        boot = (
            f"# {ZYGOTE_MARKER}: the sandbox's fork server (cow006._zygote)\n"
            f"import sys; sys.path.insert(0, {sdk!r}); import cow006.bot\n"
            "from cow006._zygote import main; main(int(sys.argv[1]), sys.argv[2])\n"
        )
        with theirs:
            self.proc = subprocess.Popen(
                [launch.python_executable(), *_PREFIX, boot, str(theirs.fileno()), SDK_DEST],
                cwd="/",
                env={},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
                close_fds=True,
            )
        self.sock = ours
        self.host = os.getpid()
        self.lock = threading.Lock()

    def alive(self) -> bool:
        return self.host == os.getpid() and self.proc.poll() is None

    def spawn(self, request: Mapping[str, Any], fds: Sequence[int]) -> int:
        """Send one request with the bot's stdio; the pid of its sandbox (the host's child)."""
        data = json.dumps({**request, "type": "spawn", "host": os.getpid()}).encode()
        with self.lock:
            try:
                socket.send_fds(self.sock, [data], list(fds))
                reply = self.sock.recv(65536).decode("utf-8", "replace")
            except OSError as exc:
                raise SandboxError(f"the sandbox's fork server is gone ({exc})") from None
        kind, _, rest = reply.partition(" ")
        if kind != "ok" or not rest.isdigit():
            raise SandboxError(f"the sandbox's fork server failed: {rest or 'no answer'}")
        return int(rest)

    def close(self) -> None:
        self.sock.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


_lock = threading.Lock()
_zygotes: dict[tuple[str, ...], Zygote] = {}


def zygote(sb: Sandbox) -> Zygote:
    """The fork server for ``sb`` in this process (started, or started again, as needed)."""
    key = sb._key()
    with _lock:
        z = _zygotes.get(key)
        if z is None or not z.alive():
            if z is not None and z.host == os.getpid():
                z.close()
            z = _zygotes[key] = Zygote(sb)
        return z


def zygote_pids() -> list[int]:
    """The pids of this process's live zygotes (a benchmark adds their CPU time to a
    match's: their forks are the parent's side of every Python bot's start)."""
    with _lock:
        return [z.proc.pid for z in _zygotes.values() if z.alive()]


def request(
    sb: Sandbox,
    argv: Sequence[str],
    *,
    bot: Path | None,
    lease: Lease,
    env: Mapping[str, str] | None,
    slot: cgroups.Slot | None,
    confirm: bool = False,
) -> dict[str, Any]:
    """What the zygote's child builds for this bot: the same sandbox as ``bwrap_command``.
    With ``confirm`` the zygote answers only once the child is in its cgroup as the slot uid
    (the probe checks that), else at once (the child confines itself before any bot code)."""
    bot_bind = None
    if bot is not None:
        files = bot_source(sb, bot, lease)
        bot_bind = [str(files), BOT_DEST if bot.is_dir() else f"{BOT_DEST}/{bot.name}"]
    return {
        "code": argv[5],
        "args": list(argv[6:]),
        "uid": lease.uid if is_root() else None,
        "join": list(slot.procs_files()) if slot is not None else [],
        "oom": cgroups.OOM_SCORE_ADJ,
        "rlimits": rlimits(sb, "python"),
        "binds": runtime_binds(sb, "python"),
        "symlinks": top_symlinks(),
        "bot": bot_bind,
        "masks": mask_binds(sb),
        "tmp_size": sb.tmp_size,
        "env": {
            **(env if env is not None else launch.BOT_ENV),
            "TMPDIR": "/tmp",
            "HOME": "/tmp",
            "PWD": BOT_DEST,  # bwrap's --chdir sets it
        },
        "hostname": "cow006",
        "cwd": BOT_DEST,
        "bpf": seccomp_bpf().hex(),
        "confirm": confirm,
    }
