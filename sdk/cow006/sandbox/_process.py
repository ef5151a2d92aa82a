"""A sandboxed bot process: how one is started, and the Popen that holds its slot.

``start`` puts the pieces together, in order: the host is a child subreaper (so a killed
sandbox's orphans come back to it), a slot is leased (``_slots``), its cgroup gets this bot's
limits (``_slot_cgroup``), the bwrap command is built (``_command``) with the seccomp program
on a pipe (``_seccomp``), and the child confines itself between fork and exec (``_confine``)
before bwrap runs.  A Python bot gets its protocol pipes over a socket (``_handoff``).  The
``SandboxedProcess`` releases its slot as soon as it has been reaped (or is collected).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import subreaper
from . import _forkserver
from ._command import bwrap_command
from ._confine import Preexec, rlimits
from ._errors import SandboxError
from ._handoff import hand_off
from ._host import is_root
from ._seccomp import seccomp_bpf
from ._slot_cgroup import slot_cgroup
from ._slots import Lease, acquire

if TYPE_CHECKING:
    from ._config import Sandbox
    from ._probe import SandboxStatus


def start(
    sb: Sandbox,
    argv: Sequence[str],
    *,
    lang: str,
    bot: Path | None,
    env: Mapping[str, str] | None,
    status: SandboxStatus,
    handoff: bool = False,
    confirm: bool = False,
) -> SandboxedProcess:
    """Start ``argv`` in the sandbox as ``status`` found it (see ``Sandbox.spawn``).  With
    ``confirm`` (the probe), a process the zygote starts is in its slot's cgroup, as the slot
    uid, when this returns (as a bwrap process always is)."""
    if is_root():  # orphans of bot processes (bwrap's pid 1, once bwrap is killed) come here
        subreaper.ensure()
    lease = acquire(sb)
    opened: list[int] = []  # fds to close in this process once the child has its own
    try:
        # The slot's cgroup gets its limits before anything runs; the child joins it in
        # Preexec (or the zygote puts its child in it, before the child may go on), so no
        # bot code ever runs outside it.
        slot = slot_cgroup(sb, lease, lang, bot)
        if sb.zygote_on() and _forkserver.can_fork(argv, lang):
            # The sandbox's pid 1 is handed to this host (a subreaper, as for bwrap's).
            subreaper.ensure()
            req = _forkserver.request(
                sb, argv, bot=bot, lease=lease, env=env, slot=slot, confirm=confirm
            )
            return ZygoteProcess(
                list(argv),
                zygote=_forkserver.zygote(sb),
                request=req,
                lease=lease,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
            )
        argv = list(argv)
        ours = theirs = None
        if handoff:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
            opened.append(theirs.detach())
            argv[argv.index("{fd}")] = str(opened[-1])
        cmd = bwrap_command(sb, argv, lang=lang, bot=bot, lease=lease, env=env, status=status)
        rfd, wfd = os.pipe()
        opened.append(rfd)
        with os.fdopen(wfd, "wb") as w:
            w.write(seccomp_bpf())  # far below the pipe's capacity
        cmd[cmd.index("--seccomp") + 1] = str(rfd)
        pipe = subprocess.DEVNULL if handoff else subprocess.PIPE
        # The switch to the slot uid is Preexec's (not Popen's user=/group=, which
        # CPython applies before preexec_fn): joining the cgroup and raising
        # oom_score_adj need root, and come first.
        preexec = Preexec(
            rlimits(sb, lang),
            uid=lease.uid if is_root() else None,
            join=slot.procs_files() if slot is not None else (),
        )
        try:
            proc = SandboxedProcess(
                cmd,
                lease=lease,
                cwd="/",
                stdin=pipe,
                stdout=pipe,
                stderr=subprocess.PIPE,
                env={},
                start_new_session=True,
                close_fds=True,
                pass_fds=tuple(opened),
                bufsize=0,
                preexec_fn=preexec,
            )
        except subprocess.SubprocessError as exc:  # Preexec failed in the child
            raise SandboxError(
                f"a bot process could not join its slot's cgroup or drop to the slot uid ({exc})"
            ) from None
        if ours is not None:
            with ours:  # the host keeps its ends of the bot's protocol pipes
                proc.stdin, proc.stdout = hand_off(ours)
        return proc
    except BaseException:
        lease.release()
        raise
    finally:
        for fd in opened:
            with contextlib.suppress(OSError):
                os.close(fd)


class SandboxedProcess(subprocess.Popen[bytes]):
    """A bwrap process holding a slot.  The slot is released (its uid purged of every
    process) as soon as the process has been reaped by ``wait`` or ``poll``, or when the
    object is collected."""

    def __init__(self, args: Sequence[str], *, lease: Lease, **kwargs: Any) -> None:
        self.lease = lease
        super().__init__(list(args), **kwargs)
        self._release = weakref.finalize(self, lease.release)

    @property
    def limit_hit(self) -> str | None:
        """``"memory limit"`` when the bot's slot ran out of memory and was killed for it."""
        return self.lease.limit_hit()

    def poll(self) -> int | None:
        code = super().poll()
        if code is not None:
            self._release()
        return code

    def wait(self, timeout: float | None = None) -> int:
        code = super().wait(timeout)
        self._release()
        return code


class ZygoteProcess(SandboxedProcess):
    """A sandbox started by the zygote (``_forkserver``), held like a bwrap process: its pid
    is the sandbox's pid 1, a child of this host by the time the zygote answers."""

    def __init__(
        self,
        args: Sequence[str],
        *,
        zygote: _forkserver.Zygote,
        request: dict[str, Any],
        lease: Lease,
        **kwargs: Any,
    ) -> None:
        self._zygote = zygote
        self._request = request
        super().__init__(args, lease=lease, **kwargs)
        # The sandbox's pid 1 leads a session of its own (``setsid``): the lease's release
        # reaps that group instead of scanning /proc.
        lease.group = self.pid

    def _execute_child(
        self,
        args: Any,
        executable: Any,
        preexec_fn: Any,
        close_fds: Any,
        pass_fds: Any,
        cwd: Any,
        env: Any,
        startupinfo: Any,
        creationflags: Any,
        shell: Any,
        p2cread: int,
        p2cwrite: int,
        c2pread: int,
        c2pwrite: int,
        errread: int,
        errwrite: int,
        *rest: Any,
    ) -> None:
        """Popen's fork and exec, replaced by a request to the zygote with the child's ends
        of the pipes (closed here afterwards, as Popen does)."""
        try:
            self.pid = self._zygote.spawn(self._request, [p2cread, c2pwrite, errwrite])
            self._child_created = True
        finally:
            self._close_pipe_fds(  # type: ignore[attr-defined]
                p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite
            )
