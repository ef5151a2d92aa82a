"""Who reaps what a host's children leave behind: the Linux ``prctl`` calls for it.

A process whose parent dies is handed to the nearest *child subreaper* among its ancestors,
else to pid 1.  The sandbox's host makes itself one (``ensure``), so that the orphaned pid 1
of a killed sandbox comes back to it and is reaped before its slot is reused; the workers'
supervisor is one for the whole worker (``cow006_workers.reaper``).  ``die_with_parent``
runs in a child between fork and exec: the child gets a signal when its parent dies.

Elsewhere than on Linux these do nothing (``become_subreaper`` returns False).
"""

from __future__ import annotations

import ctypes
import os
import signal
from typing import Any

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

_libc: list[Any] = []  # loaded once, in the parent: a child between fork and exec reuses it
_subreaper_pid: list[int] = []  # the process that is a subreaper now (not inherited by a fork)


def _prctl(option: int, value: int) -> bool:
    try:
        if not _libc:
            _libc.append(ctypes.CDLL(None, use_errno=True))
        return int(_libc[0].prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):  # not Linux
        return False


def become_subreaper(on: bool = True) -> bool:
    """Make this process (or stop it being) the child subreaper of its descendants; whether
    the kernel agreed."""
    ok = _prctl(PR_SET_CHILD_SUBREAPER, 1 if on else 0)
    _subreaper_pid[:] = [os.getpid()] if ok and on else []
    return ok


def ensure() -> None:
    """``become_subreaper()`` unless this very process already is one (cheap enough to call
    before every child: the setting is per process, so a forked worker sets it again)."""
    if not _subreaper_pid or _subreaper_pid[0] != os.getpid():
        become_subreaper()


def die_with_parent(signum: int = signal.SIGTERM) -> None:
    """For a child, between fork and exec: get ``signum`` when the parent dies (Linux)."""
    _prctl(PR_SET_PDEATHSIG, int(signum))
