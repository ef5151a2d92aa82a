"""Orphaned processes: who reaps the bot processes of a worker that died.

The sandbox runs each bot as a slot's uid, and a slot is reused only once no process of that
uid is left, zombies included (``cow006.sandbox``).  When a worker's pool process is killed
mid-match, its bwrap processes die with it (``--die-with-parent``), and the dead become
orphans: the kernel hands them to the nearest *child subreaper* among their ancestors, else
to pid 1.  An init that reaps is usual (systemd), but a container's pid 1 often reaps nothing:
the zombies then keep their slots busy for good, and after a few kills no bot can start.

So ``cow006 worker`` runs the Celery worker under ``supervise``: a small parent that is a
child subreaper and reaps every process handed to it (like ``tini``), forwards SIGTERM /
SIGINT / SIGHUP to the worker (a second one forces the shutdown) and exits with the worker's
status.  ``cow006 serve`` is a subreaper too, for what its children leave.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType

from cow006.subreaper import become_subreaper, die_with_parent  # used by serve.py, too


def zombie_children() -> list[int]:
    """The pids of this process's children that are zombies (from /proc)."""
    me = os.getpid()
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                out.append(int(name))
    return out


def reap_orphans(keep: Callable[[int], bool] = lambda pid: False) -> int:
    """Reap this process's zombie children except those ``keep`` claims (children some
    ``Popen`` object will wait for itself); how many were reaped."""
    n = 0
    for pid in zombie_children():
        if keep(pid):
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
            n += 1
    return n


def supervise(argv: Sequence[str]) -> int:
    """Run ``argv`` under this process as its reaping parent (see the module); its status.

    The child gets a process group of its own (the terminal's Ctrl-C reaches only this
    process, which forwards one SIGTERM: Celery's warm shutdown, running matches finish) and
    SIGTERM if this process dies.
    """
    become_subreaper()
    child = subprocess.Popen(list(argv), process_group=0, preexec_fn=die_with_parent)
    asked = 0

    def forward(signum: int, _frame: FrameType | None) -> None:
        nonlocal asked
        asked += 1
        # The first request is a warm shutdown; another one is a cold one (SIGQUIT).
        with contextlib.suppress(ProcessLookupError):
            os.kill(child.pid, signal.SIGTERM if asked == 1 else signal.SIGQUIT)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    while True:
        try:
            pid, status = os.wait()  # any child: the worker, or an orphan handed to us
        except ChildProcessError:
            return child.returncode if child.returncode is not None else 1
        if pid == child.pid:
            child.returncode = os.waitstatus_to_exitcode(status)
            # Orphans may still be dying: reap what is left, briefly.
            with contextlib.suppress(ChildProcessError):
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            code = child.returncode
            return code if code >= 0 else 128 - code
