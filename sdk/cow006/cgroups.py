"""A cgroup per sandbox slot: limits that hold for everything a bot starts, however it forks.

``cow006.sandbox`` gives each concurrent bot a *slot* (a uid, a lock); this module gives each
slot a control group, so that the slot's processes together (the bot, its children, bwrap's
own processes) share one memory cap, one pids cap, one CPU quota and one disk bandwidth cap.
Per-process rlimits cannot do that: six children of 512 MiB each are within ``RLIMIT_AS``,
memfds are not in anyone's address space, and thirty busy children each get a full share of
the CPU.

Two kinds of hierarchy are supported:

* **cgroup v2** (the unified hierarchy, what production Linux uses): the slot's cgroup gets
  ``memory.max`` (and ``memory.swap.max`` 0), ``memory.oom.group`` 1 (a slot that runs out of
  memory is killed whole), ``pids.max``, ``cpu.max`` and ``io.max``.  It needs a delegated
  subtree: by default the host's own cgroup (systemd ``Delegate=yes``, or a container with a
  private cgroup namespace and a writable cgroup2 mount) with the memory, pids and cpu
  controllers available.  The processes of that cgroup are moved into a leaf
  (``cow006-host``) so that controllers can be enabled for the slots (cgroup v2 allows no
  processes in a cgroup that distributes controllers); the slots are its children
  ``cow006-uid-N``.
* **cgroup v1** (separate ``memory``, ``pids``, ``cpu``, ``blkio`` and ``freezer``
  hierarchies, writable by root): ``memory.limit_in_bytes`` (and ``memory.memsw.*`` where
  swap accounting exists), ``pids.max``, ``cpu.cfs_quota_us``/``cpu.cfs_period_us``,
  ``blkio.throttle.{read,write}_bps_device``; the freezer stops every process of a slot
  before it is killed, and since v1 has no ``memory.oom.group``, a watcher thread
  (``memory.oom_control`` through ``cgroup.event_control``) kills the whole slot as soon as
  the kernel reports an OOM in it.  Slots are ``cow006-uid-N`` at the root of each
  hierarchy.

The slot cgroups are siblings of what else runs at their level (not grouped under one
``cow006`` cgroup): the CPU controller shares time by weight between siblings, so a slot
competes as one task would, and a hog's thirty children cost the other bots no more than
one more process does, whatever else loads the machine.

v2 is used when the delegated subtree has the controllers, else v1.  ``find`` raises
``CgroupError`` with one sentence when neither is usable (the sandbox then fails closed).

Tested for real on a v1 machine (tests/sdk/test_cgroups.py); the v2 code is tested against
a fake tree of its interface files in a temporary directory (the kernel's side, such as
processes moving between cgroups, is not exercised there).  Only the standard library is
used.  See docs/sandbox.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "COW006_SANDBOX_CGROUPS"  # "off": sandboxed bots run without cgroups (logged)
ENV_PARENT = "COW006_SANDBOX_CGROUP_PARENT"  # where the slot cgroups are made (see find)
PREFIX = "cow006-"  # a slot cgroup is <parent>/cow006-<name>, e.g. cow006-uid-64000
HOST_LEAF = "cow006-host"  # v2: where the host's own processes move to
REQUIRED = ("memory", "pids", "cpu")  # without these, no cgroups
V1_CONTROLLERS = ("memory", "pids", "cpu", "blkio", "freezer")
V2_CONTROLLERS = ("memory", "pids", "cpu", "io")
CPU_PERIOD = 100_000  # microseconds
OOM_SCORE_ADJ = 1000  # bot processes are the OOM killer's first choice, never the host
KILL_TIMEOUT = 5.0
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"", "1", "on", "true", "yes", "required"})


class CgroupError(Exception):
    """Cgroups cannot be used as the sandbox needs them; the message is one sentence."""


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``COW006_SANDBOX_CGROUPS`` leaves cgroups on (the default: unset or ``on``).

    Raises CgroupError for a word that is neither on nor off."""
    env = os.environ if environ is None else environ
    word = env.get(ENV, "").strip().lower()
    if word in _OFF:
        return False
    if word in _ON:
        return True
    raise CgroupError(f"{ENV}={word!r}: expected on or off")


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


# -- small file helpers: cgroup files are never created, only written -------------------------
def _write(path: Path, text: str) -> None:
    """Write one value to an existing cgroup file (O_CREAT never: a missing file is an error,
    not a new regular file)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _read(path: Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "replace")


def _keyed(path: Path) -> dict[str, int]:
    """A flat keyed file (``memory.events``, ``memory.oom_control``) as a dict."""
    out = {}
    for line in _read(path).splitlines():
        words = line.split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            out[words[0]] = int(words[1])
    return out


def _pids(path: Path) -> set[int]:
    try:
        return {int(w) for w in _read(path).split() if w.isdigit()}
    except FileNotFoundError:
        return set()


def _mkdir(path: Path) -> None:
    try:
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise CgroupError(f"cannot create the cgroup {path}: {exc.strerror}") from None


# -- where the hierarchies are ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Mount:
    """One line of mountinfo: what is mounted where."""

    dev: tuple[int, int]
    root: str
    point: str
    fstype: str
    source: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(text: str | None = None) -> list[Mount]:
    """The mounts of ``/proc/self/mountinfo`` (or of ``text``, in its format)."""
    if text is None:
        text = _read(Path("/proc/self/mountinfo"))
    out = []
    for line in text.splitlines():
        words = line.split()
        if "-" not in words[6:]:
            continue
        sep = words.index("-", 6)
        if len(words) < sep + 4:
            continue
        major, _, minor = words[2].partition(":")
        out.append(
            Mount(
                (int(major), int(minor)),
                _unescape(words[3]),
                _unescape(words[4]),
                words[sep + 1],
                _unescape(words[sep + 2]),
                tuple(words[sep + 3].split(",")),
            )
        )
    return out


def own_cgroups(text: str | None = None) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller or "" for v2: path}."""
    if text is None:
        text = _read(Path("/proc/self/cgroup"))
    out = {}
    for line in text.splitlines():
        _, ctrls, path = line.split(":", 2)
        for ctrl in ctrls.split(",") if ctrls else [""]:
            out[ctrl] = path
    return out


def _below(mount: Mount, path: str) -> Path | None:
    """The directory of cgroup ``path`` (as /proc/self/cgroup names it) under ``mount``, or
    None when that mount does not show it."""
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    rel = path[len(root) :].lstrip("/")
    return Path(mount.point) / rel if rel else Path(mount.point)


# -- the slot --------------------------------------------------------------------------------------
class Slot:
    """The cgroup(s) of one slot: one directory (v2), or one per controller (v1)."""

    def __init__(self, hierarchy: Hierarchy, name: str, dirs: Mapping[str, Path]) -> None:
        self.hierarchy = hierarchy
        self.name = name
        self.dirs = dict(dirs)  # controller -> directory (v2: the same one for all)
        self.limits: SlotLimits | None = None
        self.oom_base = 0  # the OOM kill count when the current lease began
        self.io_devices: tuple[tuple[int, int], ...] = ()  # the devices really capped
        self._lock = threading.Lock()
        self._watch: _OomWatch | None = None
        self.oom_seen = False  # the v1 watcher saw an OOM and killed the slot

    @property
    def version(self) -> int:
        return self.hierarchy.version

    def _unique_dirs(self) -> list[Path]:
        return list(dict.fromkeys(self.dirs.values()))

    def procs_files(self) -> list[str]:
        """The ``cgroup.procs`` files a process writes itself into to join the slot."""
        return [str(d / "cgroup.procs") for d in self._unique_dirs()]

    def members(self) -> dict[str, set[int]]:
        """The pids in the slot, per controller directory (they should all agree)."""
        return {c: _pids(d / "cgroup.procs") for c, d in self.dirs.items()}

    def pids(self) -> set[int]:
        out: set[int] = set()
        for d in self._unique_dirs():
            out |= _pids(d / "cgroup.procs")
        return out

    def empty(self) -> bool:
        return not self.pids()

    # -- limits ----------------------------------------------------------------------------
    def apply(self, limits: SlotLimits) -> None:
        """Write the limits (before any process of a new lease joins) and note the OOM kill
        count they start from."""
        if self.version == 2:
            self._apply_v2(limits)
        else:
            self._apply_v1(limits)
        self.limits = limits
        self.oom_base = self.oom_kills()
        self.oom_seen = False

    def _apply_v2(self, lim: SlotLimits) -> None:
        d = self.dirs["memory"]
        _write(d / "memory.max", str(lim.memory))
        if (d / "memory.swap.max").exists():
            _write(d / "memory.swap.max", "0")
        _write(d / "memory.oom.group", "1")
        _write(d / "pids.max", str(lim.pids))
        quota = "max" if lim.cpu <= 0 else str(max(1000, round(lim.cpu * CPU_PERIOD)))
        _write(d / "cpu.max", f"{quota} {CPU_PERIOD}")
        done = []
        if "io" in self.dirs and lim.io_bps > 0:
            for major, minor in lim.devices:
                with contextlib.suppress(OSError):  # a device without throttling support
                    _write(d / "io.max", f"{major}:{minor} rbps={lim.io_bps} wbps={lim.io_bps}")
                    done.append((major, minor))
        self.io_devices = tuple(done)

    def _apply_v1(self, lim: SlotLimits) -> None:
        mem = self.dirs["memory"]
        limit, memsw = mem / "memory.limit_in_bytes", mem / "memory.memsw.limit_in_bytes"
        # memsw (memory + swap) may never be below the memory limit: raise it first when
        # growing, lower it last when shrinking.
        try:
            _write(limit, str(lim.memory))
            if memsw.exists():
                _write(memsw, str(lim.memory))
        except OSError as exc:
            if exc.errno != errno.EINVAL or not memsw.exists():
                raise
            _write(memsw, str(lim.memory))
            _write(limit, str(lim.memory))
        _write(self.dirs["pids"] / "pids.max", str(lim.pids))
        cpu = self.dirs["cpu"]
        _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD))
        quota = -1 if lim.cpu <= 0 else max(1000, round(lim.cpu * CPU_PERIOD))
        _write(cpu / "cpu.cfs_quota_us", str(quota))
        done = []
        if "blkio" in self.dirs:
            blk = self.dirs["blkio"]
            old = {
                line.split()[0]
                for name in ("read", "write")
                for line in _read(blk / f"blkio.throttle.{name}_bps_device").splitlines()
                if line.strip()
            }
            want = {f"{a}:{b}" for a, b in lim.devices} if lim.io_bps > 0 else set()
            for dev in old - want:  # a device no longer bound: its cap is lifted
                for name in ("read", "write"):
                    with contextlib.suppress(OSError):
                        _write(blk / f"blkio.throttle.{name}_bps_device", f"{dev} 0")
            for major, minor in lim.devices if lim.io_bps > 0 else ():
                try:
                    for name in ("read", "write"):
                        _write(
                            blk / f"blkio.throttle.{name}_bps_device",
                            f"{major}:{minor} {lim.io_bps}",
                        )
                except OSError:  # a device without throttling support
                    continue
                done.append((major, minor))
        self.io_devices = tuple(done)

    def check(self, limits: SlotLimits) -> list[str]:
        """Read the limits back: what is not as written (one short phrase each)."""
        problems = []
        try:
            if self.version == 2:
                d = self.dirs["memory"]
                got = {
                    "memory.max": _read(d / "memory.max").strip(),
                    "pids.max": _read(d / "pids.max").strip(),
                    "cpu.max": _read(d / "cpu.max").split()[0],
                }
                quota = "max" if limits.cpu <= 0 else str(max(1000, round(limits.cpu * 1e5)))
                want = {
                    "memory.max": str(limits.memory),
                    "pids.max": str(limits.pids),
                    "cpu.max": quota,
                }
            else:
                got = {
                    "memory.limit_in_bytes": _read(
                        self.dirs["memory"] / "memory.limit_in_bytes"
                    ).strip(),
                    "pids.max": _read(self.dirs["pids"] / "pids.max").strip(),
                    "cpu.cfs_quota_us": _read(self.dirs["cpu"] / "cpu.cfs_quota_us").strip(),
                }
                quota = -1 if limits.cpu <= 0 else max(1000, round(limits.cpu * CPU_PERIOD))
                # the kernel rounds the memory limit down to whole pages
                page = os.sysconf("SC_PAGE_SIZE")
                want = {
                    "memory.limit_in_bytes": str(limits.memory // page * page),
                    "pids.max": str(limits.pids),
                    "cpu.cfs_quota_us": str(quota),
                }
        except OSError as exc:
            return [f"the slot's cgroup limits cannot be read ({exc.strerror})"]
        for key, value in want.items():
            if got[key] != value:
                problems.append(f"{key} is {got[key]}, not {value}")
        return problems

    # -- what happened -----------------------------------------------------------------------
    def oom_kills(self) -> int:
        """How many processes the OOM killer has killed in this cgroup (ever)."""
        d = self.dirs["memory"]
        try:
            if self.version == 2:
                return _keyed(d / "memory.events").get("oom_kill", 0)
            return _keyed(d / "memory.oom_control").get("oom_kill", 0)
        except OSError:
            return 0

    def hit_memory_cap(self) -> bool:
        """Whether the slot ran out of memory since the limits were applied."""
        return self.oom_seen or self.oom_kills() > self.oom_base

    def watch_oom(self) -> None:
        """v1: kill the whole slot as soon as the kernel reports an OOM in it (what v2's
        ``memory.oom.group`` does by itself)."""
        if self.version != 1 or self._watch is not None:
            return
        self._watch = _OomWatch.get().add(self)

    def unwatch(self) -> None:
        if self._watch is not None:
            self._watch.remove(self)
            self._watch = None

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
                if self.version == 2:
                    self._kill_v2()
                else:
                    self._kill_v1()
                if reap is not None:
                    reap()
                end = min(deadline, time.monotonic() + 0.05)
                while time.monotonic() < end and not self.empty():
                    time.sleep(0.001)
                    if reap is not None:
                        reap()
                if time.monotonic() >= deadline:
                    return self.empty()

    def _kill_v2(self) -> None:
        d = self.dirs["memory"]
        if (d / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(d / "cgroup.kill", "1")
            return
        freeze = d / "cgroup.freeze"
        frozen = False
        if freeze.exists():
            with contextlib.suppress(OSError):
                _write(freeze, "1")
                frozen = True
        _kill_all(_pids(d / "cgroup.procs"))
        if frozen:
            with contextlib.suppress(OSError):
                _write(freeze, "0")

    def _kill_v1(self) -> None:
        fz = self.dirs.get("freezer")
        frozen = False
        if fz is not None:
            with contextlib.suppress(OSError):
                _write(fz / "freezer.state", "FROZEN")
                frozen = True
                end = time.monotonic() + 0.5  # FREEZING until every task is stopped
                while _read(fz / "freezer.state").strip() != "FROZEN":
                    if time.monotonic() >= end:
                        break
                    time.sleep(0.001)
        try:
            _kill_all(self.pids())
        finally:
            if frozen:
                with contextlib.suppress(OSError):
                    _write(fz / "freezer.state", "THAWED")  # killed tasks die as they thaw

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


def _kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


# -- the hierarchies -----------------------------------------------------------------------------
class Hierarchy:
    """Where the slot cgroups are made; ``slot(name)`` gives one (created if needed)."""

    version = 0
    controllers: tuple[str, ...] = ()

    def slot(self, name: str) -> Slot:
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "controllers": list(self.controllers)}


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
            have = set(_read(self.base / "cgroup.controllers").split())
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
        enabled_now = set(_read(d / "cgroup.subtree_control").split())
        todo = [c for c in want if c not in enabled_now]
        if not todo:
            return
        line = " ".join(f"+{c}" for c in todo)
        for _attempt in range(5):
            if (d / "cgroup.type").exists():  # the root cgroup has no cgroup.type
                procs = _pids(d / "cgroup.procs")
                if procs:
                    leaf = d / HOST_LEAF
                    _mkdir(leaf)
                    for pid in procs:
                        with contextlib.suppress(ProcessLookupError, OSError):
                            _write(leaf / "cgroup.procs", str(pid))
            try:
                _write(d / "cgroup.subtree_control", line)
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    raise CgroupError(
                        f"cannot enable the {', '.join(todo)} controller(s) in {d} ({exc.strerror})"
                    ) from None
        raise CgroupError(f"cannot enable controllers in {d}: it keeps getting new processes")

    def slot(self, name: str) -> Slot:
        d = self.base / f"{PREFIX}{name}"
        _mkdir(d)
        return Slot(self, name, {c: d for c in self.controllers})

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(self.base)}


class V1(Hierarchy):
    """cgroup v1: one hierarchy per controller (``dirs``: controller -> the directory in
    which the slots are made, ``<mount>/<parent>``)."""

    version = 1

    def __init__(self, dirs: Mapping[str, Path]) -> None:
        self.dirs = dict(dirs)
        self.controllers = tuple(c for c in V1_CONTROLLERS if c in self.dirs)

    def prepare(self) -> None:
        for d in self.dirs.values():
            _mkdir(d)

    def slot(self, name: str) -> Slot:
        dirs = {c: d / f"{PREFIX}{name}" for c, d in self.dirs.items()}
        for d in dirs.values():
            _mkdir(d)
        return Slot(self, name, dirs)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "path": str(next(iter(self.dirs.values())))}


def find(
    parent: str | None = None,
    *,
    mountinfo: str | None = None,
    self_cgroup: str | None = None,
    prepare: bool = True,
) -> Hierarchy:
    """The hierarchy to make slot cgroups in (prepared: directories made, v2 controllers
    enabled).  Raises CgroupError saying what is missing.

    ``parent`` (else ``COW006_SANDBOX_CGROUP_PARENT``) is a cgroup path, as
    /proc/self/cgroup writes them; the slots go in ``<parent>/cow006-NAME``.  Its default: on
    v2 the host's own cgroup (the delegated one), on v1 the root of each hierarchy (v1 is
    not delegated; root writes it).  ``mountinfo`` and ``self_cgroup`` replace the text of
    /proc/self/mountinfo and /proc/self/cgroup (tests point them at a fake tree).
    """
    if parent is None:
        parent = os.environ.get(ENV_PARENT) or None
    try:
        found = mounts(mountinfo)
        own = own_cgroups(self_cgroup)
    except (OSError, ValueError) as exc:
        raise CgroupError(f"cannot read this process's mounts and cgroups ({exc})") from None
    reasons = []
    for m in found:
        if m.fstype != "cgroup2":
            continue
        path = parent if parent is not None else own.get("")
        if path is None:
            continue
        if parent is None and path.rstrip("/").endswith("/" + HOST_LEAF):
            path = path.rstrip("/").rsplit("/", 1)[0] or "/"  # moved there by an earlier host
        base = _below(m, "/" + path.strip("/"))
        if base is None or not base.is_dir():
            continue
        try:
            have = set(_read(base / "cgroup.controllers").split())
        except OSError:
            continue
        if not all(c in have for c in REQUIRED):
            missing = ", ".join(c for c in REQUIRED if c not in have)
            reasons.append(f"the cgroup v2 hierarchy at {base} has no {missing} controller")
            continue
        v2 = V2(Path(m.point), base)
        if prepare:
            v2.prepare()
        else:
            v2.controllers = tuple(c for c in V2_CONTROLLERS if c in have)
        return v2
    dirs: dict[str, Path] = {}
    for m in found:
        if m.fstype != "cgroup":
            continue
        for ctrl in V1_CONTROLLERS:
            if ctrl in m.options and ctrl not in dirs:
                rel = (parent or "/").strip("/")
                dirs[ctrl] = Path(m.point) / rel if rel else Path(m.point)
    missing = [c for c in REQUIRED if c not in dirs]
    if missing:
        reasons.append(
            f"no cgroup v1 hierarchy has the {', '.join(missing)} controller"
            if dirs
            else "no cgroup v1 hierarchy is mounted"
        )
        raise CgroupError(
            "no usable cgroups: "
            + "; ".join(reasons)
            + " (see docs/sandbox.md: a delegated cgroup v2 subtree, or root with cgroup v1)"
        )
    for ctrl in REQUIRED:
        top = dirs[ctrl]
        while not top.exists() and top != top.parent:  # the nearest one that exists
            top = top.parent
        if not os.access(top, os.W_OK):
            raise CgroupError(
                f"the cgroup v1 {ctrl} hierarchy ({top}) is not writable by this user "
                "(run the host as root, or use a delegated cgroup v2 subtree)"
            )
    v1 = V1(dirs)
    if prepare:
        v1.prepare()
    return v1


# -- block devices behind files ------------------------------------------------------------------
def _whole_disk(dev: tuple[int, int], sys_block: Path) -> tuple[int, int] | None:
    """The whole disk of a block device (a partition's parent), or None if not a block
    device this machine lists."""
    node = sys_block / f"{dev[0]}:{dev[1]}"
    if not node.exists():
        return None
    if (node / "partition").exists():
        with contextlib.suppress(OSError, ValueError):
            major, minor = _read(node.resolve().parent / "dev").strip().split(":")
            return int(major), int(minor)
        return None
    return dev


def all_disks(sys_block: Path = Path("/sys/block")) -> list[tuple[int, int]]:
    """Every whole disk of the machine (a fallback when a file's disk cannot be found)."""
    out = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(sys_block)):
            with contextlib.suppress(OSError, ValueError):
                major, minor = _read(sys_block / name / "dev").strip().split(":")
                out.append((int(major), int(minor)))
    return out


_MEMORY_FS = frozenset({"tmpfs", "ramfs", "proc", "sysfs", "devtmpfs", "devpts", "mqueue"})


def block_devices(
    paths: Iterable[str],
    *,
    mount_list: list[Mount] | None = None,
    sys_dev_block: Path = Path("/sys/dev/block"),
    sys_block: Path = Path("/sys/block"),
) -> tuple[tuple[int, int], ...]:
    """The whole disks holding ``paths`` (their ``st_dev``; for a file system without a
    device number of its own, such as overlayfs, its mount's source or lower/upper
    directories from mountinfo).  When some path's disk cannot be found, every disk of the
    machine is returned: a cap on too many devices is safe, a missing one is not."""
    found: set[tuple[int, int]] = set()
    table: list[Mount] | None = mount_list
    todo = [p for p in paths if p]
    seen: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            st = os.stat(path)
        except OSError:
            continue
        dev = (os.major(st.st_dev), os.minor(st.st_dev))
        if dev[0] != 0:
            disk = _whole_disk(dev, sys_dev_block)
            if disk is None:
                return tuple(all_disks(sys_block))
            found.add(disk)
            continue
        if table is None:
            try:
                table = mounts()
            except OSError:
                return tuple(all_disks(sys_block))
        m = next((m for m in table if m.dev == dev), None)
        if m is None:
            return tuple(all_disks(sys_block))
        if m.fstype in _MEMORY_FS:
            continue  # memory, counted by the memory cap
        if m.source.startswith("/dev/"):
            with contextlib.suppress(OSError):
                rdev = os.stat(m.source).st_rdev
                disk = _whole_disk((os.major(rdev), os.minor(rdev)), sys_dev_block)
                if disk is not None:
                    found.add(disk)
                    continue
        if m.fstype == "overlay":
            layers = [
                d
                for opt in m.options
                if opt.startswith(("lowerdir=", "upperdir="))
                for d in opt.split("=", 1)[1].split(":")
            ]
            if layers and all(os.path.exists(d) for d in layers):
                todo += layers
                continue
        return tuple(all_disks(sys_block))
    return tuple(sorted(found))


# -- v1: the OOM watcher -------------------------------------------------------------------------
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
                _write(mem / "cgroup.event_control", f"{efd} {cfd}")
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
        return _keyed(slot.dirs["memory"] / "memory.oom_control").get("under_oom", 0) > 0
    return False
