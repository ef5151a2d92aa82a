"""What v1 and v2 share: a slot's limits, the Slot and Hierarchy interface, emptying a slot.

A ``Hierarchy`` is where the slot cgroups are made (``slot(name)``); a ``Slot`` is the
cgroup(s) of one slot: one directory (v2), or one per controller (v1).  The sandbox uses a
slot the same way whatever its version: ``apply`` the limits before a lease's processes
join (``procs_files``), ``check`` them back, ``watch_oom``, ``kill`` at release.  What each
version writes is its own (``_v1``, ``_v2``).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._files import keyed, pids_in

PREFIX = "cow006-"  # a slot cgroup is <parent>/cow006-<name>, e.g. cow006-uid-64000
REQUIRED = ("memory", "pids", "cpu")  # without these, no cgroups
CPU_PERIOD = 100_000  # microseconds
OOM_SCORE_ADJ = 1000  # bot processes are the OOM killer's first choice, never the host
KILL_TIMEOUT = 5.0


@dataclass(frozen=True, slots=True)
class SlotLimits:
    """What a slot may use: ``memory`` bytes (everything its processes hold: heap, memfd,
    shmem, tmpfs, page cache), ``pids`` tasks (processes and threads), ``cpu`` cores of CPU
    time (0: no quota), ``io_bps`` bytes per second of disk reads and of disk writes on each
    of ``devices`` ((major, minor) of whole disks; 0: no cap)."""

    memory: int
    pids: int
    cpu: float = 1.0
    io_bps: int = 0
    devices: tuple[tuple[int, int], ...] = ()


def cpu_quota(cpu: float) -> int | None:
    """The CFS quota per ``CPU_PERIOD`` for ``cpu`` cores (None: no quota)."""
    return None if cpu <= 0 else max(1000, round(cpu * CPU_PERIOD))


class Slot:
    """The cgroup(s) of one slot: one directory (v2), or one per controller (v1)."""

    # The flat keyed file of the memory controller that counts OOM kills.
    _OOM_EVENTS = ""

    def __init__(self, hierarchy: Hierarchy, name: str, dirs: Mapping[str, Path]) -> None:
        self.hierarchy = hierarchy
        self.name = name
        self.dirs = dict(dirs)  # controller -> directory (v2: the same one for all)
        self.limits: SlotLimits | None = None
        self.oom_base = 0  # the OOM kill count when the current lease began
        self.io_devices: tuple[tuple[int, int], ...] = ()  # the devices really capped
        self._lock = threading.Lock()
        self.oom_seen = False  # the v1 watcher saw an OOM and killed the slot
        self._procs_key: tuple[Path, ...] = ()
        self._procs: list[str] = []

    @property
    def version(self) -> int:
        return self.hierarchy.version

    def _unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes itself into to join the slot."""
        # Built once per set of directories: they are read several times per lease (the
        # emptiness checks, the kill), and a Path join costs more than the read.
        key = tuple(self._unique_dirs())
        if self._procs_key != key:
            self._procs = [str(d / "cgroup.procs") for d in key]
            self._procs_key = key
        return list(self._procs)

    def members(self) -> dict[str, set[int]]:
        """The pids in the slot, per controller directory (they should all agree)."""
        return {c: pids_in(d / "cgroup.procs") for c, d in self.dirs.items()}

    def pids(self) -> set[int]:
        out: set[int] = set()
        for path in self.procs_files():
            out |= pids_in(path)
        return out

    def empty(self) -> bool:
        return not self.pids()

    # -- limits ----------------------------------------------------------------------------
    def apply(self, limits: SlotLimits) -> None:
        """Write the limits (before any process of a new lease joins) and note the OOM kill
        count they start from."""
        self._write_limits(limits)
        self.limits = limits
        self.oom_base = self.oom_kills()
        self.oom_seen = False

    def _write_limits(self, lim: SlotLimits) -> None:
        raise NotImplementedError

    def check(self, limits: SlotLimits) -> list[str]:
        """Read the limits back: what is not as written (one short phrase each)."""
        try:
            got, want = self._read_back(limits)
        except OSError as exc:
            return [f"the slot's cgroup limits cannot be read ({exc.strerror})"]
        return [
            f"{key} is {got[key]}, not {value}" for key, value in want.items() if got[key] != value
        ]

    def _read_back(self, limits: SlotLimits) -> tuple[dict[str, str], dict[str, str]]:
        """(what the limit files say, what they should say for ``limits``)."""
        raise NotImplementedError

    # -- what happened -----------------------------------------------------------------------
    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in this cgroup (ever)."""
        try:
            return keyed(self.dirs["memory"] / self._OOM_EVENTS).get("oom_kill", 0)
        except OSError:
            return 0

    def hit_memory_cap(self) -> bool:
        """Whether the slot ran out of memory since the limits were applied."""
        return self.oom_seen or self.oom_kills() > self.oom_base

    def watch_oom(self) -> None:
        """Kill the whole slot as soon as the kernel reports an OOM in it (v2's
        ``memory.oom.group`` does that by itself: nothing to watch)."""

    def unwatch(self) -> None:
        """Stop ``watch_oom``'s watch, if any."""

    # -- emptying it -------------------------------------------------------------------------
    def kill(self, timeout: float = KILL_TIMEOUT, reap: Callable[[], Any] | None = None) -> bool:
        """SIGKILL every process of the slot and wait until none is left (``reap`` is called
        meanwhile: the host reaps its own children).  v2: ``cgroup.kill``; v1: freeze, kill
        each, thaw.  Returns whether the slot is empty."""
        with self._lock:
            deadline = time.monotonic() + timeout
            while True:
                if self.empty():
                    return True
                self._kill_all()
                if reap is not None:
                    reap()
                end = min(deadline, time.monotonic() + 0.05)
                while time.monotonic() < end and not self.empty():
                    time.sleep(0.001)
                    if reap is not None:
                        reap()
                if time.monotonic() >= deadline:
                    return self.empty()

    def _kill_all(self) -> None:
        """SIGKILL every process of the slot, once."""
        raise NotImplementedError

    def remove(self) -> None:
        """Remove the slot's directories (they must be empty)."""
        self.unwatch()
        for d in self._unique_dirs():
            with contextlib.suppress(OSError):
                d.rmdir()

    def describe(self) -> dict[str, Any]:
        lim = self.limits
        return {
            "version": self.version,
            "memory": lim.memory if lim else None,
            "pids": lim.pids if lim else None,
            "cpu": lim.cpu if lim else None,
            "io_bps": lim.io_bps if lim and self.io_devices else None,
        }


class Hierarchy:
    """Where the slot cgroups are made; ``slot(name)`` gives one (created if needed)."""

    version = 0
    controllers: tuple[str, ...] = ()

    def slot(self, name: str) -> Slot:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "controllers": list(self.controllers)}
