"""Slots: one lease per running bot process, held with an flock, freed only when clean.

A root host has ``Sandbox.slots`` slots, each a uid (``uid_base + n``) and a lock file
``uid-N.lock`` in the state directory (root's, so the lock holds across processes: several
workers share the slots).  ``acquire`` takes the lowest free slot whose uid runs nothing;
``Lease.release`` kills and reaps whatever the slot still runs (its cgroup emptied, and its
uid purged, or for a sandbox the zygote built, its process group reaped: no scan of /proc)
and only then marks it clean.  A non-root host has one lease kind: its own uid.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from .. import cgroups
from ._errors import SandboxError
from ._host import is_root, safe_dir
from ._uids import purge_uid, uid_usable

if TYPE_CHECKING:
    from ._config import Sandbox

# What a slot's lock file says: both words have one length, so marking a slot is one pwrite
# over the other word (an ftruncate can cost milliseconds: freeing blocks, discard).
_CLEAN = b"clean"
_BUSY = b"busy\n"


class Lease:
    """One slot held by one bot process: its uid, its lock, and what was staged for it."""

    def __init__(self, uid: int, lock_fd: int) -> None:
        self.uid = uid
        self.lock_fd = lock_fd
        self.stage: Path | None = None
        self.killed = 0  # processes of the uid found alive and killed at release
        self.clean: bool | None = None  # whether none of them remained at release
        self.cgroup: cgroups.Slot | None = None  # the slot's cgroup (None: cgroups off)
        self.remove_cgroup = False  # a per-lease cgroup (non-root hosts), removed at release
        self.memory_hit = False  # the slot ran out of memory (known at release)
        # The process group every process of the lease outside its pid namespace is in,
        # when the sandbox is built so (the zygote's): see ``release``.
        self.group: int | None = None
        self._mutex = threading.Lock()
        self._released = False

    def limit_hit(self) -> str | None:
        """``"memory limit"`` when the slot's processes ran out of memory (the slot's cgroup
        had its processes killed for it), else None."""
        slot = self.cgroup
        if self.memory_hit or (slot is not None and not self._released and slot.hit_memory_cap()):
            return "memory limit"
        return None

    def release(self) -> None:
        """Kill and reap whatever the slot still runs (its cgroup emptied, its uid purged),
        drop the staged files, free the slot."""
        with self._mutex:
            if self._released:
                return
            self._released = True
        try:
            slot = self.cgroup
            emptied = True
            if slot is not None:
                slot.unwatch()
                emptied = slot.kill(reap=lambda: _reap_listed(slot.pids()))
                self.memory_hit = slot.hit_memory_cap()
            if is_root() and slot is not None and self.group is not None:
                # Every live process of the slot uid is in the slot's cgroup (it was put
                # there before it dropped to the uid, and cannot leave it), so an empty
                # cgroup leaves only zombies: those inside the sandbox's pid namespace are
                # reaped by the kernel before its pid 1 is, and pid 1, outside it, is this
                # host's child, leading the lease's process group.  No scan of /proc is needed.  The
                # group is reaped whatever the cgroup said: a slot not emptied at once (or a
                # group not reaped in time) falls back to the scan, which kills and reaps
                # what is left, so no zombie of the slot uid outlives its lease.
                self.clean = _reap_group(self.group) and emptied
                if not self.clean:
                    self.killed, self.clean = purge_uid(self.uid)
                    if not slot.empty():
                        emptied = slot.kill(reap=lambda: _reap_listed(slot.pids()))
                    self.clean = self.clean and slot.empty()
                if self.clean:
                    _mark(self.lock_fd, _CLEAN)
            elif is_root():
                self.killed, self.clean = purge_uid(self.uid)
                if slot is not None and not slot.empty():
                    emptied = slot.kill(reap=lambda: _reap_listed(slot.pids()))
                self.clean = self.clean and emptied
                if self.clean:
                    _mark(self.lock_fd, _CLEAN)
            else:
                self.clean = emptied
                if slot is not None and self.remove_cgroup and emptied:
                    slot.remove()
            if self.stage is not None:
                shutil.rmtree(self.stage, ignore_errors=True)
        finally:
            with contextlib.suppress(OSError):
                os.close(self.lock_fd)


def _reap_listed(pids: Iterable[int]) -> None:
    """Reap those of ``pids`` that are our children and have exited (the rest are not ours,
    or still running: left alone)."""
    for pid in pids:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)


def _reap_group(pgid: int, timeout: float = 5.0) -> bool:
    """Reap this process's children in process group ``pgid`` until none is left (they
    have all been killed: each is gone or dying); whether none is left."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid, _status = os.waitpid(-pgid, os.WNOHANG)
        except ChildProcessError:
            return True  # no child of ours in the group, exited or not
        except OSError:
            return False
        if pid == 0:  # one is still dying
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.0005)


def _mark(fd: int, word: bytes) -> None:
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_size > len(word):
            os.ftruncate(fd, len(word))
        os.pwrite(fd, word, 0)


def acquire(sb: Sandbox) -> Lease:
    """Take a free slot (an flock on its lock file) and make sure its uid runs nothing."""
    state = sb.state_path()
    safe_dir(state)
    if not is_root():
        fd = os.open(state / "host.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return Lease(os.getuid(), fd)
    deadline = time.monotonic() + sb.slot_wait
    order = range(sb.slots)  # the lowest free slot: a recently released one skips its purge
    while True:
        for n in order:
            uid = sb.uid_base + n
            if not uid_usable(uid):
                continue
            fd = os.open(state / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            # A slot released cleanly says so in its lock file; otherwise (a host that died
            # holding it, say) its uid is purged first.
            if os.pread(fd, 16, 0) == _CLEAN or purge_uid(uid)[1]:
                _mark(fd, _BUSY)
                return Lease(uid, fd)
            os.close(fd)  # something of that uid will not die: try another slot
        if time.monotonic() >= deadline:
            raise SandboxError(
                f"all {sb.slots} sandbox slots (uids {sb.uid_base}..{sb.uid_base + sb.slots - 1})"
                f" stayed busy for {sb.slot_wait:g} s"
            )
        time.sleep(0.02)
