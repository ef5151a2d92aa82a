"""cgroup v2 (the unified hierarchy, what production Linux uses).

The slot's cgroup gets ``memory.max`` (and ``memory.swap.max`` 0), ``memory.oom.group`` 1 (a
slot that runs out of memory is killed whole), ``pids.max``, ``cpu.max`` and ``io.max``, and
is emptied with ``cgroup.kill``.  It needs a delegated subtree: by default the host's own
cgroup (systemd ``Delegate=yes``, or a container with a private cgroup namespace and a
writable cgroup2 mount) with the memory, pids and cpu controllers available.  The processes
of that cgroup are moved into a leaf (``HOST_LEAF``) so that controllers can be enabled for
the slots (cgroup v2 allows no processes in a cgroup that distributes controllers); the
slots are its children ``cow006-uid-N``.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Any

from ._files import CgroupError, kill_all, mkdir, pids_in, read, write
from ._slot import CPU_PERIOD, PREFIX, REQUIRED, Hierarchy, Slot, SlotLimits, cpu_quota

HOST_LEAF = "cow006-host"  # v2: where the host's own processes move to
V2_CONTROLLERS = ("memory", "pids", "cpu", "io")


class V2Slot(Slot):
    """A slot cgroup of a v2 hierarchy: one directory for every controller."""

    _OOM_EVENTS = "memory.events"

    def _write_limits(self, lim: SlotLimits) -> None:
        d = self.dirs["memory"]
        write(d / "memory.max", str(lim.memory))
        if (d / "memory.swap.max").exists():
            write(d / "memory.swap.max", "0")
        write(d / "memory.oom.group", "1")
        write(d / "pids.max", str(lim.pids))
        write(d / "cpu.max", f"{cpu_quota(lim.cpu) or 'max'} {CPU_PERIOD}")
        done = []
        if "io" in self.dirs and lim.io_bps > 0:
            for major, minor in lim.devices:
                with contextlib.suppress(OSError):  # a device without throttling support
                    write(d / "io.max", f"{major}:{minor} rbps={lim.io_bps} wbps={lim.io_bps}")
                    done.append((major, minor))
        self.io_devices = tuple(done)

    def _read_back(self, limits: SlotLimits) -> tuple[dict[str, str], dict[str, str]]:
        d = self.dirs["memory"]
        got = {
            "memory.max": read(d / "memory.max").strip(),
            "pids.max": read(d / "pids.max").strip(),
            "cpu.max": read(d / "cpu.max").split()[0],
        }
        want = {
            "memory.max": str(limits.memory),
            "pids.max": str(limits.pids),
            "cpu.max": str(cpu_quota(limits.cpu) or "max"),
        }
        return got, want

    def _kill_all(self) -> None:
        d = self.dirs["memory"]
        if (d / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                write(d / "cgroup.kill", "1")
            return
        freeze = d / "cgroup.freeze"
        frozen = False
        if freeze.exists():
            with contextlib.suppress(OSError):
                write(freeze, "1")
                frozen = True
        kill_all(pids_in(d / "cgroup.procs"))
        if frozen:
            with contextlib.suppress(OSError):
                write(freeze, "0")


class V2(Hierarchy):
    """A delegated cgroup v2 subtree at ``base`` (a directory of a cgroup2 mount whose
    ``mount`` is the mount point).  ``prepare`` enables the controllers for the slots."""

    version = 2

    def __init__(self, mount: Path, base: Path) -> None:
        self.mount = Path(mount)
        self.base = Path(base)
        self.controllers = ()

    def prepare(self) -> None:
        try:
            have = set(read(self.base / "cgroup.controllers").split())
        except OSError as exc:
            raise CgroupError(f"the cgroup {self.base} cannot be read ({exc.strerror})") from None
        missing = [c for c in REQUIRED if c not in have]
        if missing:
            raise CgroupError(
                f"the cgroup v2 subtree {self.base} lacks the {', '.join(missing)} "
                "controller(s) (delegate them: systemd Delegate=yes, or a container with "
                "its own cgroup namespace)"
            )
        want = [c for c in V2_CONTROLLERS if c in have]
        if not os.access(self.base / "cgroup.subtree_control", os.W_OK):
            raise CgroupError(
                f"the cgroup v2 subtree {self.base} is not delegated to this user "
                "(cgroup.subtree_control is not writable)"
            )
        self._enable(self.base, want)
        self.controllers = tuple(want)

    def _enable(self, d: Path, want: list[str]) -> None:
        """Enable ``want`` for the children of ``d``; the processes of ``d`` (the host's own,
        when ``d`` is the delegated cgroup) move to a leaf first: v2 refuses controllers in
        a cgroup that has processes, the root cgroup excepted."""
        enabled_now = set(read(d / "cgroup.subtree_control").split())
        todo = [c for c in want if c not in enabled_now]
        if not todo:
            return
        line = " ".join(f"+{c}" for c in todo)
        for _attempt in range(5):
            if (d / "cgroup.type").exists():  # the root cgroup has no cgroup.type
                procs = pids_in(d / "cgroup.procs")
                if procs:
                    leaf = d / HOST_LEAF
                    mkdir(leaf)
                    for pid in procs:
                        with contextlib.suppress(ProcessLookupError, OSError):
                            write(leaf / "cgroup.procs", str(pid))
            try:
                write(d / "cgroup.subtree_control", line)
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise CgroupError(
                        f"cannot enable the {', '.join(todo)} controller(s) in {d} ({exc.strerror})"
                    ) from None
        raise CgroupError(f"cannot enable controllers in {d}: it keeps getting new processes")

    def slot(self, name: str) -> Slot:
        d = self.base / f"{PREFIX}{name}"
        mkdir(d)
        return V2Slot(self, name, {c: d for c in self.controllers})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.base)}
