"""The slot uids: which may be used, what each runs, and killing all of it.

A root host runs each concurrent bot as a uid of its own (``Sandbox.uid_base + n``).  Before
a slot's uid is used again, every process of it is killed with SIGKILL and those that are
our children are reaped (``purge_uid``): a double-forked daemon or a fork bomb of the last
bot leaves nothing behind.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import time

_reserved: dict[int, bool] = {}


def uid_usable(uid: int) -> bool:
    """A slot uid must be unused on the machine, or one of ours (cow006-sb*)."""
    if uid not in _reserved:
        try:
            name = pwd.getpwuid(uid).pw_name
            _reserved[uid] = name.startswith("cow006")
        except KeyError:
            _reserved[uid] = True
    return _reserved[uid]


def uid_procs(uid: int) -> list[tuple[int, int, str]]:
    """(pid, ppid, state) of every process whose real uid is ``uid`` (from /proc/*/status;
    the owner of /proc/PID is not reliable: a non-dumpable process shows as root).

    Every process's status is read, so this is kept lean (raw reads, a byte search for the
    first ``Uid:`` line: of what a process can set, only its name comes before, and the
    kernel escapes newlines in it): it runs at least twice per released slot."""
    out = []
    want = b"\t%d\t" % uid
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/status", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            head = os.read(fd, 1024)
        except OSError:
            continue
        finally:
            os.close(fd)
        at = head.find(b"\nUid:")
        if at < 0 or not head.startswith(want, at + 5):
            continue
        ppid, state = 0, "?"
        for line in head[:at].split(b"\n"):
            if line.startswith(b"State:"):
                state = line.split()[1].decode("ascii", "replace")
            elif line.startswith(b"PPid:"):
                ppid = int(line.split()[1])
        out.append((int(name), ppid, state))
    return out


def purge_uid(uid: int, timeout: float = 5.0) -> tuple[int, bool]:
    """SIGKILL every process of ``uid`` and reap those that are our children, until none is
    left alive.  Returns (how many live ones were killed, whether the uid is clear).

    A zombie that is another process's child (a host that left a sandbox unreaped) cannot
    be reaped here and can run nothing: it does not keep the uid from being clear, or one
    careless host would take a slot from every other host until it exits."""
    me = os.getpid()
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        procs = uid_procs(uid)
        if all(state in ("Z", "X") and ppid != me for _pid, ppid, state in procs):
            return len(killed), True
        reaped = False
        for pid, ppid, state in procs:
            if state not in ("Z", "X"):
                killed.add(pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            if ppid == me:
                with contextlib.suppress(ChildProcessError, OSError):
                    reaped = os.waitpid(pid, os.WNOHANG)[0] == pid or reaped
        if time.monotonic() >= deadline:
            return len(killed), False
        if not reaped:
            time.sleep(0.001)
