"""cgroup v1: separate ``memory``, ``pids``, ``cpu``, ``blkio`` and ``freezer`` hierarchies.

Writable by root: the slot's cgroups get ``memory.limit_in_bytes`` (and ``memory.memsw.*``
where swap accounting exists), ``pids.max``, ``cpu.cfs_quota_us``/``cpu.cfs_period_us`` and
``blkio.throttle.{read,write}_bps_device``; the freezer stops every process of a slot before
it is killed, and since v1 has no ``memory.oom.group``, a watcher thread (``memory.oom_control``
through ``cgroup.event_control``) kills the whole slot as soon as the kernel reports an OOM in
it.  Slots are ``cow006-uid-N`` at the root of each hierarchy.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._files import keyed, kill_all, mkdir, read, write
from ._slot import CPU_PERIOD, PREFIX, Hierarchy, Slot, SlotLimits, cpu_quota

V1_CONTROLLERS = ("memory", "pids", "cpu", "blkio", "freezer")


class V1Slot(Slot):
    """A slot cgroup of v1: one directory per controller hierarchy."""

    _OOM_EVENTS = "memory.oom_control"

    def __init__(self, hierarchy: Hierarchy, name: str, dirs: Mapping[str, Path]) -> None:
        super().__init__(hierarchy, name, dirs)
        self._watch: _OomWatch | None = None

    def _write_limits(self, lim: SlotLimits) -> None:
        mem = self.dirs["memory"]
        limit, memsw = mem / "memory.limit_in_bytes", mem / "memory.memsw.limit_in_bytes"
        # memsw (memory + swap) may never be below the memory limit: raise it first when
        # growing, lower it last when shrinking.
        try:
            write(limit, str(lim.memory))
            if memsw.exists():
                write(memsw, str(lim.memory))
        except OSError as exc:
            if exc.errno != errno.EINVAL or not memsw.exists():
                raise
            write(memsw, str(lim.memory))
            write(limit, str(lim.memory))
        write(self.dirs["pids"] / "pids.max", str(lim.pids))
        cpu = self.dirs["cpu"]
        write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD))
        quota = cpu_quota(lim.cpu)
        write(cpu / "cpu.cfs_quota_us", str(-1 if quota is None else quota))
        done = []
        if "blkio" in self.dirs:
            blk = self.dirs["blkio"]
            old = {
                line.split()[0]
                for name in ("read", "write")
                for line in read(blk / f"blkio.throttle.{name}_bps_device").splitlines()
                if line.strip()
            }
            want = {f"{a}:{b}" for a, b in lim.devices} if lim.io_bps > 0 else set()
            for dev in old - want:  # a device no longer bound: its cap is lifted
                for name in ("read", "write"):
                    with contextlib.suppress(OSError):
                        write(blk / f"blkio.throttle.{name}_bps_device", f"{dev} 0")
            for major, minor in lim.devices if lim.io_bps > 0 else ():
                try:
                    for name in ("read", "write"):
                        write(
                            blk / f"blkio.throttle.{name}_bps_device",
                            f"{major}:{minor} {lim.io_bps}",
                        )
                except OSError:  # a device without throttling support
                    continue
                done.append((major, minor))
        self.io_devices = tuple(done)

    def _read_back(self, limits: SlotLimits) -> tuple[dict[str, str], dict[str, str]]:
        got = {
            "memory.limit_in_bytes": read(self.dirs["memory"] / "memory.limit_in_bytes").strip(),
            "pids.max": read(self.dirs["pids"] / "pids.max").strip(),
            "cpu.cfs_quota_us": read(self.dirs["cpu"] / "cpu.cfs_quota_us").strip(),
        }
        quota = cpu_quota(limits.cpu)
        # the kernel rounds the memory limit down to whole pages
        page = os.sysconf("SC_PAGE_SIZE")
        want = {
            "memory.limit_in_bytes": str(limits.memory // page * page),
            "pids.max": str(limits.pids),
            "cpu.cfs_quota_us": str(-1 if quota is None else quota),
        }
        return got, want

    def watch_oom(self) -> None:
        """Kill the whole slot as soon as the kernel reports an OOM in it (what v2's
        ``memory.oom.group`` does by itself)."""
        if self._watch is None:
            self._watch = _OomWatch.get().add(self)

    def unwatch(self) -> None:
        if self._watch is not None:
            self._watch.remove(self)
            self._watch = None

    def _kill_all(self) -> None:
        fz = self.dirs.get("freezer")
        frozen = False
        if fz is not None:
            with contextlib.suppress(OSError):
                write(fz / "freezer.state", "FROZEN")
                frozen = True
                end = time.monotonic() + 0.5  # FREEZING until every task is stopped
                while read(fz / "freezer.state").strip() != "FROZEN":
                    if time.monotonic() >= end:
                        break
                    time.sleep(0.001)
        try:
            kill_all(self.pids())
        finally:
            if frozen and fz is not None:
                with contextlib.suppress(OSError):
                    write(fz / "freezer.state", "THAWED")  # killed tasks die as they thaw


class V1(Hierarchy):
    """cgroup v1: one hierarchy per controller (``dirs``: controller -> the directory in
    which the slots are made, ``<mount>/<parent>``)."""

    version = 1

    def __init__(self, dirs: Mapping[str, Path]) -> None:
        self.dirs = dict(dirs)
        self.controllers = tuple(c for c in V1_CONTROLLERS if c in self.dirs)

    def prepare(self) -> None:
        for d in self.dirs.values():
            mkdir(d)

    def slot(self, name: str) -> Slot:
        dirs = {c: d / f"{PREFIX}{name}" for c, d in self.dirs.items()}
        for d in dirs.values():
            mkdir(d)
        return V1Slot(self, name, dirs)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(next(iter(self.dirs.values())))}


class _OomWatch:
    """One daemon thread per process: an eventfd per watched v1 slot, registered on its
    ``memory.oom_control``; when one fires, the whole slot is killed."""

    _instance: _OomWatch | None = None
    _instance_lock = threading.Lock()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fds: dict[int, Slot] = {}
        self._by_slot: dict[int, int] = {}
        self._poll = select.epoll()
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self._poll.register(self._wake_r, select.EPOLLIN)
        self._pid = os.getpid()
        threading.Thread(target=self._run, name="cow006-oom-watch", daemon=True).start()

    @classmethod
    def get(cls) -> _OomWatch:
        with cls._instance_lock:
            if cls._instance is None or cls._instance._pid != os.getpid():
                cls._instance = cls()  # a forked process needs its own thread
            return cls._instance

    def add(self, slot: Slot) -> _OomWatch:
        mem = slot.dirs["memory"]
        efd = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
        try:
            cfd = os.open(mem / "memory.oom_control", os.O_RDONLY | os.O_CLOEXEC)
            try:
                write(mem / "cgroup.event_control", f"{efd} {cfd}")
            finally:
                os.close(cfd)
        except OSError:
            os.close(efd)
            raise
        with self._lock:
            self._fds[efd] = slot
            self._by_slot[id(slot)] = efd
            self._poll.register(efd, select.EPOLLIN)
        return self

    def remove(self, slot: Slot) -> None:
        with self._lock:
            efd = self._by_slot.pop(id(slot), None)
            if efd is None:
                return
            self._fds.pop(efd, None)
            with contextlib.suppress(OSError):
                self._poll.unregister(efd)
            os.close(efd)  # the kernel drops the registration with it

    def _run(self) -> None:
        while True:
            try:
                events = self._poll.poll()
            except InterruptedError:
                continue
            except OSError:
                return
            for fd, _ in events:
                if fd == self._wake_r:
                    continue
                with self._lock:
                    slot = self._fds.get(fd)
                    if slot is None:
                        continue
                    with contextlib.suppress(OSError):
                        os.eventfd_read(fd)
                if slot.oom_kills() > slot.oom_base or _under_oom(slot):
                    slot.oom_seen = True
                    with contextlib.suppress(OSError):
                        slot.kill(timeout=1.0)


def _under_oom(slot: Slot) -> bool:
    with contextlib.suppress(OSError):
        return keyed(slot.dirs["memory"] / "memory.oom_control").get("under_oom", 0) > 0
    return False
