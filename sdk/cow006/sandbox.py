"""The sandbox: bot processes inside bubblewrap, as a dedicated uid, under a seccomp filter.

``Sandbox().launch`` is a drop-in ``launcher`` for ``cow006.host.RemoteAgent``: it turns the
argv of ``cow006.launch`` into a ``bwrap`` invocation and starts it.  What a bot gets:

* its own user, pid, network, ipc, uts, mount and cgroup namespaces (``--unshare-all``), no
  capabilities, a new session, no further user namespaces (``--disable-userns``), and death
  with its host (``--die-with-parent``);
* a root file system that is an empty, read-only tmpfs holding only: the real interpreter
  binary (Python or node) with its standard library and shared libraries, the ``cow006``
  package at ``/sdk/cow006`` (the host's compiled copy: ``launch.compiled_sdk``), the bot's
  own files at ``/bot`` (read-only: regular files and folders only, ``_bot_source``), a
  fresh ``/proc`` whose machine-wide files are masked (``PROC_MASKS``), a minimal ``/dev``
  (read-only), and a private ``/tmp`` of ``tmp_size`` bytes.  No ``/etc``, no ``/run``, no
  home, no other bot;
* an empty environment but for ``cow006.launch.BOT_ENV`` (bwrap itself is started with an
  empty environment too: its pid 1 inside keeps its environment readable);
* a seccomp filter (libseccomp, through ``pyseccomp`` or Debian's ``python3-seccomp``):
  sockets of the UNIX family only, and no ptrace, process_vm_*, keyrings, bpf,
  perf_event_open, userfaultfd, io_uring, AIO, inotify/fanotify, sysinfo, mount family,
  namespaces or kernel modules;
* resource limits (``RLIMIT_AS``, ``_CPU``, ``_NPROC``, ``_FSIZE``, ``_NOFILE``, ``_CORE``),
  and a cgroup per slot (``cow006.cgroups``: memory, pids, CPU and disk bandwidth caps for
  all the slot's processes together, joined before any bot code runs, emptied at release)
  with ``oom_score_adj`` 1000 for every bot process;
* when the host runs as root, a dedicated non-root uid per concurrent *slot*
  (``uid_base + n``), so ``RLIMIT_NPROC`` really bounds a fork bomb.  A slot is held with an
  ``flock`` under a root-owned directory (safe across processes), and before its uid is used
  again every process of that uid is killed and reaped (the host is made a child subreaper).

Killing the ``bwrap`` process (the host kills the process group) takes the whole pid
namespace with it.  A Python bot gets its protocol pipes over a socket once it runs
(``HANDOFF``), so that only the bot holds them and closing its output is seen as a crash.
``probe()`` checks all of this works on the machine by running a probe process in the
sandbox; ``resolve_mode()`` is the fail-closed rule: when the sandbox is
wanted and the probe fails, nothing runs, unless the caller explicitly says ``--no-sandbox``
(or ``COW006_SANDBOX=off``), and then the match log records ``"sandbox": false``.

Only the standard library is imported at module level; the seccomp binding is imported when
the filter is first built.  See docs/sandbox.md.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import itertools
import json
import os
import pwd
import resource
import shutil
import signal
import socket
import stat
import subprocess
import sys
import sysconfig
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import cgroups, launch
from .errors import AgentLoadError

MiB = 1 << 20
ENV_MODE = "COW006_SANDBOX"  # "off" runs bots unisolated; "on" (or unset) requires the sandbox
SDK_DEST = "/sdk"  # the cow006 package is at /sdk/cow006 inside
BOT_DEST = "/bot"  # the bot's file or folder inside
PROBE_TIMEOUT = 15.0
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"1", "on", "true", "yes", "required"})

# Run first in a Python bot: take the protocol pipes (fd 0 and 1) from the socket whose fd
# number is argv[1], then go on as the usual bootstrap (``cow006.launch.bootstrap``).
HANDOFF = (
    "import _socket, array, os, sys; "
    "_c = _socket.socket(fileno=int(sys.argv.pop(1))); "
    "_a = array.array('i'); "
    "_m, _anc, _f, _x = _c.recvmsg(1, _socket.CMSG_LEN(2 * _a.itemsize)); "
    "[_a.frombytes(d[: len(d) - len(d) % _a.itemsize]) for l, t, d in _anc "
    "if l == _socket.SOL_SOCKET and t == _socket.SCM_RIGHTS]; "
    "_c.close(); os.dup2(_a[0], 0); os.dup2(_a[1], 1); os.close(_a[0]); os.close(_a[1]); "
    "del _c, _a, _m, _anc, _f, _x; "
)

# Syscalls a bot never needs and that widen the kernel's attack surface; denied with EPERM.
DENIED_SYSCALLS = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "process_madvise",
    "pidfd_getfd",
    "kcmp",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    # Machine-wide kernel pools and watches: the AIO pool (fs.aio-max-nr, shared by the whole
    # machine: 16 io_setup calls used it up) and inotify/fanotify (a seat could watch the
    # shared read-only files to see another seat load or read them).
    "io_setup",
    "io_submit",
    "io_getevents",
    "io_pgetevents",
    "io_cancel",
    "io_destroy",
    "inotify_init",
    "inotify_init1",
    "inotify_add_watch",
    "inotify_rm_watch",
    "fanotify_init",
    "fanotify_mark",
    # sysinfo() tells the machine's load averages, free memory, process count and uptime,
    # the same as the /proc files masked below (PROC_MASKS); the C library's getloadavg
    # uses it.  Refused, getloadavg fails and nothing a bot needs breaks (node reads /proc).
    "sysinfo",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
    "unshare",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "sethostname",
    "setdomainname",
    "settimeofday",
    "clock_settime",
    "clock_adjtime",
    "adjtimex",
    "vhangup",
)
# clone() flags that make namespaces: refused (clone3 hides its flags, so it gets ENOSYS and
# the C library falls back to clone).
CLONE_NS_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
    0x00000080,  # CLONE_NEWTIME
)
# Parts of the standard library a bot has no use for (or that are big): never staged.
STDLIB_SKIP = frozenset(
    {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip"}
)


class SandboxError(AgentLoadError):
    """The sandbox cannot run a bot: it is missing, misconfigured, or out of slots."""


# -- configuration ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Sandbox:
    """How bots are confined.  Sizes in bytes, times in seconds.

    ``memory`` is the address-space limit of each process (node bots get at least
    ``node_memory``: V8 reserves address space up front).  ``cpu_seconds`` is a per-process
    backstop well above any time bank; the host's deadlines are what really bound a bot.
    ``nproc`` counts processes and threads of the slot's uid (root hosts only).  ``slots``
    concurrent bots at most, with uids ``uid_base .. uid_base + slots - 1`` (root hosts;
    a non-root host runs bots as itself).  ``state_dir`` holds the slot locks and copies of
    bots whose files the slot uid could not reach; ``cache_dir`` holds runtime files staged
    for the same reason (an interpreter under a private home, say); both default by uid.

    Each slot also has a cgroup (``cow006.cgroups``) bounding all its processes together:
    ``slot_memory`` bytes (heap, memfd, shmem, tmpfs; None: ``memory``, for node bots too:
    what V8 reserves up front is address space, not memory), ``nproc`` tasks, ``cpu`` cores
    of CPU time (0: no quota) and ``io_bps`` bytes/s of disk reads and writes (0: no cap).
    ``cgroups``: None follows ``COW006_SANDBOX_CGROUPS`` (on unless ``off``); False runs the
    sandbox without them (the log says so).  ``cgroup_parent`` (else
    ``COW006_SANDBOX_CGROUP_PARENT``) is where the slot cgroups are made (``cgroups.find``).
    """

    memory: int = 512 * MiB
    node_memory: int = 2048 * MiB
    cpu_seconds: int = 300
    nproc: int = 32
    fsize: int = 8 * MiB
    nofile: int = 64
    tmp_size: int = 16 * MiB
    slots: int = 16
    uid_base: int = 64000
    slot_wait: float = 30.0
    state_dir: str | None = None
    cache_dir: str | None = None
    # The bubblewrap binary; COW006_BWRAP names another one (or a missing one, to test refusal).
    bwrap: str = field(default_factory=lambda: os.environ.get("COW006_BWRAP", "bwrap"))
    cgroups: bool | None = None
    cgroup_parent: str | None = None
    slot_memory: int | None = None
    cpu: float = 1.0
    io_bps: int = 32 * MiB

    # -- what the log says ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The match log's ``sandbox`` entry: what isolated the bots."""
        st = probe(self)
        return {
            "kind": "bwrap",
            "bwrap": st.version,
            "namespaces": ["user", "pid", "net", "ipc", "uts", "mount", "cgroup"],
            "seccomp": st.seccomp,
            "uid": "per-slot" if _root() else "host",
            "memory": self.memory,
            "cpu_seconds": self.cpu_seconds,
            "nproc": self.nproc,
            "fsize": self.fsize,
            "nofile": self.nofile,
            "tmp_size": self.tmp_size,
            "cgroups": self._cgroups_entry(),
        }

    def _cgroups_entry(self) -> dict[str, Any] | bool:
        """The log's record of the slot cgroups: False when they are off."""
        if not self._cgroups_on():
            return False
        try:
            version: int | None = _hierarchy(self).version
        except SandboxError:  # no match ran then: the probe fails without them
            version = None
        return {
            "version": version,
            "memory": self._slot_memory(),
            "pids": self.nproc,
            "cpu": self.cpu,
            "io_bps": self.io_bps or None,
            "oom_score_adj": cgroups.OOM_SCORE_ADJ,
        }

    def _cgroups_on(self) -> bool:
        """Whether bots get slot cgroups (raises SandboxError for a bad setting)."""
        if self.cgroups is not None:
            return self.cgroups
        try:
            return cgroups.enabled()
        except cgroups.CgroupError as exc:
            raise SandboxError(str(exc)) from None

    def _slot_memory(self) -> int:
        """The slot's memory cap: ``slot_memory``, else ``memory`` (node bots included: the
        address space V8 reserves, which ``node_memory`` allows, is not memory used)."""
        return self.memory if self.slot_memory is None else self.slot_memory

    # -- directories -------------------------------------------------------------------------
    def state_path(self) -> Path:
        if self.state_dir:
            return Path(self.state_dir)
        if _root():
            return Path("/run/cow006-sandbox")
        base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
        return Path(base) / f"cow006-sandbox-{os.getuid()}"

    def cache_path(self) -> Path:
        if self.cache_dir:
            return Path(self.cache_dir)
        if _root():
            return Path("/var/cache/cow006-sandbox")
        return self.state_path() / "cache"

    def _key(self) -> tuple[str, ...]:
        """What the probe and the staged runtimes depend on (not the limits or the slots)."""
        try:
            groups = str(self._cgroups_on())
        except SandboxError as exc:
            groups = str(exc)
        parent = self.cgroup_parent or os.environ.get(cgroups.ENV_PARENT, "")
        return (self.bwrap, str(self.state_path()), str(self.cache_path()), groups, parent)

    # -- launching ---------------------------------------------------------------------------
    def launch(self, path: str | Path) -> SandboxedProcess:
        """The ``RemoteAgent`` launcher: run the bot at ``path`` in the sandbox."""
        lang, file = launch.resolve(path)
        argv = launch.command_for(path, sdk=SDK_DEST)
        p = Path(path)
        bot_src = p.resolve() if p.is_dir() else file
        argv[-1] = f"{BOT_DEST}/{file.name}"  # the file itself, or bot.py in the folder
        if lang == "python":
            # The protocol pipes are handed to the bot over a socket once it runs, so that
            # only the bot holds them (bwrap's own processes keep their stdio): a bot that
            # closes its output is seen to, as outside the sandbox.
            at = argv.index("-c") + 1
            argv[at : at + 1] = [HANDOFF + launch.bootstrap(SDK_DEST), "{fd}"]
            return self.spawn(argv, lang=lang, bot=bot_src, handoff=True)
        return self.spawn(argv, lang=lang, bot=bot_src)

    def spawn(
        self,
        argv: Sequence[str],
        *,
        lang: str = "python",
        bot: Path | None = None,
        env: Mapping[str, str] | None = None,
        handoff: bool = False,
    ) -> SandboxedProcess:
        """Start ``argv`` (its program one of the runtimes: ``sys.executable`` resolved, or
        node) in the sandbox, with pipes on stdin/stdout/stderr.  ``bot`` (a file or folder)
        is bound read-only at /bot.  With ``handoff`` the stdin/stdout pipes are sent over a
        socket whose fd number replaces the argument ``"{fd}"`` (see ``HANDOFF``).  Raises
        SandboxError if the sandbox cannot be used."""
        status = probe(self)
        if not status.ok:
            raise SandboxError(f"the sandbox is not available: {status.reason}")
        return self._spawn(argv, lang=lang, bot=bot, env=env, status=status, handoff=handoff)

    def _spawn(
        self,
        argv: Sequence[str],
        *,
        lang: str,
        bot: Path | None,
        env: Mapping[str, str] | None,
        status: SandboxStatus,
        handoff: bool = False,
    ) -> SandboxedProcess:
        _become_subreaper()
        lease = _acquire(self)
        opened: list[int] = []  # fds to close in this process once the child has its own
        try:
            # The slot's cgroup gets its limits before anything runs; the child joins it in
            # _Preexec before it drops root, so no bot code ever runs outside it.
            slot = self._slot_cgroup(lease, lang, bot)
            argv = list(argv)
            ours = theirs = None
            if handoff:
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                opened.append(theirs.detach())
                argv[argv.index("{fd}")] = str(opened[-1])
            cmd = self._command(argv, lang=lang, bot=bot, lease=lease, env=env, status=status)
            rfd, wfd = os.pipe()
            opened.append(rfd)
            with os.fdopen(wfd, "wb") as w:
                w.write(_seccomp_bpf())  # far below the pipe's capacity
            cmd[cmd.index("--seccomp") + 1] = str(rfd)
            pipe = subprocess.DEVNULL if handoff else subprocess.PIPE
            # The switch to the slot uid is _Preexec's (not Popen's user=/group=, which
            # CPython applies before preexec_fn): joining the cgroup and raising
            # oom_score_adj need root, and come first.
            preexec = _Preexec(
                self._rlimits(lang, lease),
                uid=lease.uid if _root() else None,
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
            except subprocess.SubprocessError as exc:  # _Preexec failed in the child
                raise SandboxError(
                    "a bot process could not join its slot's cgroup or drop to the slot uid "
                    f"({exc})"
                ) from None
            if ours is not None:
                with ours:
                    proc._hand_off(ours)
            return proc
        except BaseException:
            lease.release()
            raise
        finally:
            for fd in opened:
                with contextlib.suppress(OSError):
                    os.close(fd)

    def _slot_cgroup(self, lease: _Lease, lang: str, bot: Path | None) -> cgroups.Slot | None:
        """The lease's cgroup, emptied and with this bot's limits written (None when cgroups
        are off).  Root hosts keep one cgroup per slot uid; others make one per lease."""
        if not self._cgroups_on():
            return None
        hier = _hierarchy(self)
        if _root():
            slot = _slot_of(hier, f"uid-{lease.uid}")
        else:
            slot = _slot_of(hier, f"host-{os.getpid()}-{next(_lease_seq)}", cache=False)
            lease.remove_cgroup = True
        lease.cgroup = slot
        # Left populated by a host that died holding the slot: emptied first, or not used.
        if not slot.empty() and not slot.kill(
            reap=lambda: _purge_uid(lease.uid, timeout=0.0) if _root() else None
        ):
            raise SandboxError(f"the slot cgroup {slot.name} runs processes that will not die")
        paths = [src for src, _ in _runtime_binds(self, lang) if src]
        paths += [str(self.state_path()), str(self.cache_path())]
        if bot is not None:
            paths.append(str(bot))
        limits = cgroups.SlotLimits(
            memory=self._slot_memory(),
            pids=self.nproc,
            cpu=self.cpu,
            io_bps=self.io_bps,
            devices=_io_devices(paths) if self.io_bps > 0 else (),
        )
        try:
            slot.apply(limits)
            slot.watch_oom()
        except OSError as exc:
            raise SandboxError(
                f"cannot set the limits of the slot cgroup {slot.name} ({exc.strerror})"
            ) from None
        return slot

    def _rlimits(self, lang: str, lease: _Lease) -> list[tuple[int, int]]:
        memory = max(self.memory, self.node_memory) if lang == "node" else self.memory
        out = [
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_CPU, self.cpu_seconds),
            (resource.RLIMIT_FSIZE, self.fsize),
            (resource.RLIMIT_NOFILE, self.nofile),
            (resource.RLIMIT_CORE, 0),
        ]
        if _root():
            out.append((resource.RLIMIT_NPROC, self.nproc))
        else:  # the count is per user: leave room for what the user already runs
            out.append((resource.RLIMIT_NPROC, len(_uid_procs(os.getuid())) + self.nproc))
        return out

    def _command(
        self,
        argv: Sequence[str],
        *,
        lang: str,
        bot: Path | None,
        lease: _Lease,
        env: Mapping[str, str] | None,
        status: SandboxStatus,
    ) -> list[str]:
        cmd = [status.bwrap or self.bwrap, "--unshare-all", "--unshare-user"]
        if status.disable_userns:
            cmd.append("--disable-userns")
        cmd += [
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--hostname",
            "cow006",
            "--clearenv",
        ]
        for key, value in (env if env is not None else launch.BOT_ENV).items():
            cmd += ["--setenv", key, value]
        cmd += ["--setenv", "TMPDIR", "/tmp", "--setenv", "HOME", "/tmp"]
        for src, dest in _runtime_binds(self, lang):
            if src:
                cmd += ["--ro-bind", src, dest]
            else:  # an empty read-only directory over ``dest``
                cmd += ["--size", "4096", "--tmpfs", dest, "--remount-ro", dest]
        for link, target in _top_symlinks():
            cmd += ["--symlink", target, link]
        if bot is not None:
            src = _bot_source(self, bot, lease)
            dest = BOT_DEST if bot.is_dir() else f"{BOT_DEST}/{bot.name}"
            cmd += ["--ro-bind", str(src), dest]
        else:
            cmd += ["--dir", BOT_DEST]
        cmd += ["--proc", "/proc"]
        for src, dest in _proc_masks(self):  # the host's global /proc files, neutralised
            cmd += ["--ro-bind", src, dest]
        cmd += [
            "--dev",
            "/dev",
            "--remount-ro",
            "/dev",
            "--perms",
            "1777",
            "--size",
            str(self.tmp_size),
            "--tmpfs",
            "/tmp",
            "--remount-ro",
            "/",
            "--chdir",
            BOT_DEST,
            "--seccomp",
            "-1",  # the fd is filled in by _spawn
            "--",
            *argv,
        ]
        return cmd


def _root() -> bool:
    return os.geteuid() == 0


class _Preexec:
    """Runs in the child between fork and exec: join the slot's cgroup(s) and make the
    process the OOM killer's first choice (both need root, so they come first), set the
    rlimits, then drop to the slot uid (no supplementary groups).  Anything failing raises,
    and the child never execs."""

    def __init__(
        self, limits: list[tuple[int, int]], *, uid: int | None = None, join: Sequence[str] = ()
    ) -> None:
        self.limits = limits
        self.uid = uid
        self.join = list(join)
        self.oom = str(cgroups.OOM_SCORE_ADJ).encode()

    def __call__(self) -> None:
        for path in self.join:
            fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
            try:
                os.write(fd, b"0")  # 0: the writing process
            finally:
                os.close(fd)
        fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, self.oom)
        finally:
            os.close(fd)
        for res, value in self.limits:
            resource.setrlimit(res, (value, value))
        if self.uid is not None:
            os.setgroups([])
            os.setresgid(self.uid, self.uid, self.uid)
            os.setresuid(self.uid, self.uid, self.uid)


# -- the status of the sandbox on this machine -------------------------------------------------
@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """What ``probe`` found: ``ok`` when bots can run sandboxed, else ``problems`` say why."""

    ok: bool
    problems: tuple[str, ...] = ()
    bwrap: str | None = None
    version: str | None = None
    seccomp: bool = False
    disable_userns: bool = False
    per_slot_uid: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """One sentence: what is missing, or that the sandbox works."""
        return "; ".join(self.problems) if self.problems else "the sandbox works"


_probe_lock = threading.RLock()
_probed: dict[tuple[str, ...], SandboxStatus] = {}

# The probe process: what it sees and can do, as one JSON line on stdout.
_PROBE_CODE = r"""
import json, os, socket, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "env": sorted(os.environ)}
try:
    out["init_environ"] = len(open("/proc/1/environ", "rb").read())
except OSError as exc:
    out["init_environ"] = str(exc)
with open("/proc/self/status") as f:
    out["seccomp"] = [ln.split()[1] for ln in f if ln.startswith("Seccomp:")][0]
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        out["net"] = "connected"
    except OSError as exc:
        out["net"] = "connect failed: %s" % exc
except OSError as exc:
    out["net"] = "socket denied: %s" % exc
try:
    out["etc"] = os.listdir("/etc")
except OSError:
    out["etc"] = None
out["proc"] = {}
for name in ("loadavg", "stat", "pressure/cpu", "cmdline", "sys/kernel/random/boot_id"):
    try:
        with open("/proc/" + name, "rb") as f:
            out["proc"][name] = f.read(8192).decode("latin-1")
    except OSError:
        out["proc"][name] = None
try:  # both denied by the seccomp filter: inotify, and the machine-wide AIO pool
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    out["inotify"] = "allowed" if fd >= 0 else os.strerror(ctypes.get_errno())
    nr = {"x86_64": 206, "aarch64": 0}.get(os.uname().machine)  # io_setup
    if nr is not None:
        ctx = ctypes.c_ulong(0)
        ok = libc.syscall(nr, 1, ctypes.byref(ctx)) == 0
        out["aio"] = "allowed" if ok else os.strerror(ctypes.get_errno())
    info = ctypes.create_string_buffer(256)
    out["sysinfo"] = "allowed" if libc.sysinfo(info) == 0 else os.strerror(ctypes.get_errno())
except Exception as exc:
    out["inotify"] = "not tried: %s" % exc
print(json.dumps(out))
"""


def probe(sandbox: Sandbox | None = None, *, refresh: bool = False) -> SandboxStatus:
    """Check, once per process and configuration, that the sandbox works on this machine.

    bwrap present and new enough, the seccomp filter builds, the state directories are
    safe, and a probe process started in the sandbox runs as the slot's uid, under seccomp,
    with an empty environment (its pid 1's too) and no network.
    """
    sb = sandbox or Sandbox()
    key = sb._key()
    with _probe_lock:  # held throughout: a first probe runs once, the others wait for it
        if refresh or key not in _probed:
            _probed[key] = _probe(sb)
        return _probed[key]


def _probe(sb: Sandbox) -> SandboxStatus:
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, ("the sandbox needs Linux (bubblewrap, namespaces)",))
    bwrap = shutil.which(sb.bwrap) or shutil.which(sb.bwrap, path="/usr/bin:/bin")
    if bwrap is None:
        return SandboxStatus(False, ("bubblewrap is not installed (apt-get install bubblewrap)",))
    version = _bwrap_version(bwrap)
    if version is None:
        return SandboxStatus(False, (f"{bwrap} --version failed",), bwrap)
    nums = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    problems: list[str] = []
    seccomp = True
    try:
        _seccomp_bpf()
    except ImportError:
        seccomp = False
        problems.append(
            "no Python binding of libseccomp is installed "
            "(pip install pyseccomp, or apt-get install python3-seccomp)"
        )
    except Exception as exc:  # libseccomp itself missing or too old
        seccomp = False
        problems.append(
            f"the seccomp filter cannot be built ({type(exc).__name__}: {exc}; "
            "apt-get install libseccomp2)"
        )
    try:
        for d in (sb.state_path(), sb.cache_path()):
            _safe_dir(d)
    except SandboxError as exc:
        problems.append(str(exc))
    try:  # fail closed: slot cgroups are wanted (the default) and none is usable
        if sb._cgroups_on():
            _hierarchy(sb)
    except SandboxError as exc:
        problems.append(str(exc))
    partial = SandboxStatus(
        False,
        tuple(problems),
        bwrap,
        version,
        seccomp,
        disable_userns=nums >= (0, 8),
        per_slot_uid=_root(),
    )
    if problems:
        return partial
    # Run the probe process with the real machinery, as if the sandbox worked.
    trial = SandboxStatus(
        True, (), bwrap, version, True, partial.disable_userns, partial.per_slot_uid
    )
    try:
        found = _run_probe(sb, trial)
    except Exception as exc:
        found = {"error": f"{type(exc).__name__}: {exc}"}
    problems += _judge_probe(found) + _judge_isolation(sb, found)
    return SandboxStatus(
        not problems,
        tuple(problems),
        bwrap,
        version,
        seccomp,
        partial.disable_userns,
        partial.per_slot_uid,
        found,
    )


def _bwrap_version(bwrap: str) -> str | None:
    try:
        out = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, env={}
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()
    return words[-1] if out.returncode == 0 and words else None


def _run_probe(sb: Sandbox, trial: SandboxStatus) -> dict[str, Any]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        argv = [launch.python_executable(), "-I", "-S", "-B", "-c", _PROBE_CODE, str(port)]
        proc = sb._spawn(argv, lang="python", bot=None, env=None, status=trial)
        groups = _cgroup_facts(proc)
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"error": f"the probe process did not finish within {PROBE_TIMEOUT:g} s"}
        try:
            conn, _ = listener.accept()
            conn.close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        listener.close()
    if proc.returncode != 0:
        text = err.decode("utf-8", "replace").strip().splitlines()
        return {"error": f"the probe process failed: {text[-1] if text else proc.returncode}"}
    try:
        found: dict[str, Any] = json.loads(out)
    except ValueError:
        return {"error": f"the probe process printed {out[:200]!r}"}
    found["reached_host"] = reached
    found["cgroup"] = groups
    return found


def _cgroup_facts(proc: SandboxedProcess) -> dict[str, Any] | None:
    """What the host sees of a just started sandbox: which of its slot's cgroups hold it,
    whether the limits read back as written, its oom_score_adj (None: cgroups off)."""
    slot = proc.lease.cgroup
    if slot is None:
        return None
    members = slot.members()
    try:
        with open(f"/proc/{proc.pid}/oom_score_adj") as f:
            oom = f.read().strip()
    except OSError:
        oom = None
    return {
        "version": slot.version,
        "controllers": sorted(members),
        "joined": sorted(c for c, pids in members.items() if proc.pid in pids),
        "limits": slot.check(slot.limits) if slot.limits else ["no limits were written"],
        "oom_score_adj": oom,
    }


def _judge_isolation(sb: Sandbox, found: dict[str, Any]) -> list[str]:
    """The probe's checks of the pid namespace and of the slot cgroup's limits."""
    if "error" in found:
        return []  # _judge_probe says why
    problems = []
    pid = found.get("pid")
    if not isinstance(pid, int) or pid > 10:  # bwrap's init is pid 1 of a fresh namespace
        problems.append("the probe process is not in a pid namespace of its own")
    try:
        wanted = sb._cgroups_on()
    except SandboxError as exc:
        return [*problems, str(exc)]
    groups = found.get("cgroup")
    if not wanted:
        return problems
    if not isinstance(groups, dict):
        return [*problems, "the probe process got no slot cgroup"]
    missing = sorted(set(groups["controllers"]) - set(groups["joined"]))
    if missing or not groups["joined"]:
        problems.append(f"the probe process is not in its slot's cgroup ({', '.join(missing)})")
    if groups["limits"]:
        problems.append(f"the slot cgroup's limits are not in force: {'; '.join(groups['limits'])}")
    if groups["oom_score_adj"] != str(cgroups.OOM_SCORE_ADJ):
        problems.append(f"the probe process has oom_score_adj {groups['oom_score_adj']}")
    return problems


def _judge_probe(found: dict[str, Any]) -> list[str]:
    if "error" in found:
        return [f"a sandboxed probe process does not run ({found['error']})"]
    problems = []
    if _root() and found.get("uid") == 0:
        problems.append("the probe process ran as root")
    extra = set(found.get("env", ())) - set(launch.BOT_ENV) - {"TMPDIR", "HOME", "PWD"}
    if extra:
        problems.append(f"the probe process saw environment variables {sorted(extra)}")
    if found.get("init_environ") not in (0, "0"):
        problems.append("the sandbox's pid 1 shows an environment")
    if found.get("seccomp") != "2":
        problems.append("the seccomp filter is not in force in the sandbox")
    if found.get("reached_host") or found.get("net") == "connected":
        problems.append("the probe process reached the network")
    if found.get("etc"):
        problems.append("the probe process sees /etc")
    if "allowed" in (found.get("inotify"), found.get("aio"), found.get("sysinfo")):
        problems.append("the seccomp filter lets inotify, the AIO calls or sysinfo through")
    neutral = _neutral_proc()
    shown = found.get("proc") or {}
    leaks = [
        name
        for name, data in neutral.items()
        if name in shown and shown[name] != data.decode("latin-1")
    ]
    if leaks:
        problems.append(f"the host's /proc/{leaks[0]} shows in the sandbox")
    elif not shown:
        problems.append("the probe process did not report what /proc shows")
    return problems


def resolve_mode(
    flag: bool | None = None,
    *,
    needed: bool = True,
    sandbox: Sandbox | None = None,
    environ: Mapping[str, str] | None = None,
) -> Sandbox | None:
    """The fail-closed rule: the Sandbox to run bot processes in, or None to run them bare.

    ``flag`` is the command line's ``--sandbox`` (True) / ``--no-sandbox`` (False) / nothing
    (None, then ``COW006_SANDBOX``: ``off`` runs bare, anything else wants the sandbox).
    When the sandbox is wanted and does not work here, raises SandboxError (a Cow006Error)
    with one sentence naming what is missing; nothing falls back to bare processes silently.
    ``needed=False`` (every agent plays in-process: no bot process to confine) gives None
    unless ``--sandbox`` was asked for explicitly.
    """
    env = os.environ if environ is None else environ
    if not needed and not flag:
        return None
    if flag is None:
        word = env.get(ENV_MODE, "").strip().lower()
        if word in _OFF:
            return None
        if word and word not in _ON:
            raise SandboxError(f"{ENV_MODE}={word!r}: expected on or off")
    elif not flag:
        return None
    sb = sandbox or Sandbox()
    status = probe(sb)
    if not status.ok:
        raise SandboxError(
            f"the sandbox is required but not available: {status.reason}; "
            f"run with --no-sandbox (or {ENV_MODE}=off) to run bots without isolation"
        )
    return sb


def log_entry(sandbox: Sandbox | None) -> dict[str, Any] | bool:
    """The match log's ``sandbox`` field: False for bare processes, else what isolated them."""
    return False if sandbox is None else sandbox.describe()


def launcher(sandbox: Sandbox | None) -> Callable[[str | Path], subprocess.Popen[bytes]]:
    """The RemoteAgent launcher for a mode from ``resolve_mode``."""
    return launch.launch if sandbox is None else sandbox.launch


# -- the seccomp filter --------------------------------------------------------------------------
_bpf_cache: list[bytes] = []


def _seccomp_module() -> Any:
    try:
        import pyseccomp as sc  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        import seccomp as sc  # type: ignore[import-not-found,no-redef,unused-ignore]
    return sc


def seccomp_filter() -> Any:
    """The libseccomp filter of the sandbox (default allow; see DENIED_SYSCALLS)."""
    sc = _seccomp_module()
    f = sc.SyscallFilter(sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    for name in DENIED_SYSCALLS:
        try:
            f.add_rule(eperm, name)
        except Exception:  # a syscall this architecture or libseccomp does not know
            continue
    for name in ("socket", "socketpair"):
        f.add_rule(eperm, name, sc.Arg(0, sc.NE, socket.AF_UNIX))
    for flag in CLONE_NS_FLAGS:
        f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    with contextlib.suppress(Exception):
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    return f


def _seccomp_bpf() -> bytes:
    """The compiled BPF program (built once per process)."""
    if _bpf_cache:
        return _bpf_cache[0]
    f = seccomp_filter()
    rfd, wfd = os.pipe()
    try:
        with os.fdopen(wfd, "wb", closefd=False) as w:
            f.export_bpf(w)
        os.close(wfd)
        wfd = -1
        chunks = []
        while chunk := os.read(rfd, 65536):
            chunks.append(chunk)
    finally:
        os.close(rfd)
        if wfd >= 0:
            os.close(wfd)
    bpf = b"".join(chunks)
    if not bpf or len(bpf) % 8:
        raise RuntimeError("libseccomp exported an empty or truncated filter")
    _bpf_cache.append(bpf)
    return bpf


# -- what is bound into the sandbox ---------------------------------------------------------------
_runtime_cache: dict[tuple[tuple[str, ...], str], list[tuple[str, str]]] = {}
_runtime_lock = threading.Lock()


# -- /proc: the host's global files, masked ---------------------------------------------------
# Files of /proc that are the same for the whole machine (not per pid namespace): they time
# the other seats' thinking (load, CPU and I/O counters, pressure, free memory, interrupts,
# open files, the slot locks in /proc/locks) or name the machine (its kernel command line,
# boot id, disks, modules).  Inside the sandbox each is covered by a read-only bind of a
# neutral file with constant contents (``_neutral_proc``), staged once by the host; a file
# this kernel does not have is skipped.  /proc/cpuinfo keeps the CPU's description (the
# ``cpuid`` instruction tells it anyway) with its clock speed made constant; /proc/meminfo
# keeps the total and shows everything else as free; /proc/stat keeps one line per CPU (the
# C library counts them there when /sys is absent).
PROC_MASKS = (
    "loadavg",
    "stat",
    "uptime",
    "meminfo",
    "cpuinfo",
    "pressure/cpu",
    "pressure/memory",
    "pressure/io",
    "pressure/irq",
    "cmdline",
    "sys/kernel/random/boot_id",
    "kallsyms",
    "modules",
    "schedstat",
    "sched_debug",
    "interrupts",
    "softirqs",
    "diskstats",
    "partitions",
    "swaps",
    "vmstat",
    "zoneinfo",
    "buddyinfo",
    "locks",
    "key-users",
    "latency_stats",
    "sys/fs/file-nr",
    "sys/fs/inode-nr",
    "sys/fs/inode-state",
    "sys/fs/dentry-state",
    "sys/fs/aio-nr",
)
NEUTRAL_BOOT_ID = b"00000000-0000-4000-8000-000000000000\n"
NEUTRAL_LOADAVG = b"0.00 0.00 0.00 1/1 1\n"
_PRESSURE = b"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n" + (
    b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
)


def _neutral_proc() -> dict[str, bytes]:
    """The neutral contents of each masked /proc file this kernel has (path under /proc ->
    bytes).  Constant for a machine: nothing in them changes while bots run."""
    host: dict[str, bytes] = {}
    for name in ("stat", "meminfo", "cpuinfo"):
        with contextlib.suppress(OSError), open(f"/proc/{name}", "rb") as f:
            host[name] = f.read()
    cpus = [
        line.split()[0]
        for line in host.get("stat", b"").splitlines()
        if line[:3] == b"cpu" and line[3:4].isdigit()
    ] or [b"cpu0"]
    zeros = b" 0 0 0 0 0 0 0 0 0 0\n"
    stat_text = b"cpu " + zeros + b"".join(c + zeros for c in cpus)
    stat_text += b"intr 0\nctxt 0\nbtime 0\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n"
    stat_text += b"softirq 0 0 0 0 0 0 0 0 0 0 0\n"
    total = b"0"
    for line in host.get("meminfo", b"").splitlines():
        if line.startswith(b"MemTotal:"):
            total = line.split()[1]
    mem = b"".join(
        b"%-16s%8s kB\n" % (key + b":", value)
        for key, value in (
            (b"MemTotal", total),
            (b"MemFree", total),
            (b"MemAvailable", total),
            (b"Buffers", b"0"),
            (b"Cached", b"0"),
            (b"SwapCached", b"0"),
            (b"Active", b"0"),
            (b"Inactive", b"0"),
            (b"SwapTotal", b"0"),
            (b"SwapFree", b"0"),
            (b"Dirty", b"0"),
            (b"Shmem", b"0"),
        )
    )
    cpuinfo = b"".join(
        (b"cpu MHz\t\t: 0.000" if line.startswith(b"cpu MHz") else line) + b"\n"
        for line in host.get("cpuinfo", b"").splitlines()
    )
    contents = {
        "loadavg": NEUTRAL_LOADAVG,
        "stat": stat_text,
        "uptime": b"0.00 0.00\n",
        "meminfo": mem,
        "cpuinfo": cpuinfo,
        "pressure/cpu": _PRESSURE,
        "pressure/memory": _PRESSURE,
        "pressure/io": _PRESSURE,
        "pressure/irq": _PRESSURE,
        "cmdline": b"\n",
        "sys/kernel/random/boot_id": NEUTRAL_BOOT_ID,
        "swaps": b"Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n",
        "partitions": b"major minor  #blocks  name\n\n",
        "sys/fs/file-nr": b"0\t0\t0\n",
        "sys/fs/inode-nr": b"0\t0\n",
        "sys/fs/inode-state": b"0\t0\t0\t0\t0\t0\t0\n",
        "sys/fs/dentry-state": b"0\t0\t0\t0\t0\t0\n",
        "sys/fs/aio-nr": b"0\n",
    }
    return {name: contents.get(name, b"") for name in PROC_MASKS if os.path.isfile(f"/proc/{name}")}


_proc_cache: dict[tuple[str, ...], list[tuple[str, str]]] = {}


def _proc_masks(sb: Sandbox) -> list[tuple[str, str]]:
    """(staged neutral file, /proc path) read-only binds over the host's global /proc files,
    staged once under ``cache_dir`` (named by their contents, written by the host alone,
    never changed afterwards).  Computed once per process."""
    key = sb._key()
    with _runtime_lock:
        if key in _proc_cache:
            return _proc_cache[key]
        files = _neutral_proc()
        h = hashlib.sha256()
        for name, data in sorted(files.items()):
            h.update(f"\0{name}\0{len(data)}\0".encode() + data)
        cache = sb.cache_path()
        _safe_dir(cache)
        target = cache / f"proc-{h.hexdigest()[:20]}"
        if not target.is_dir():
            tmp = cache / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
            shutil.rmtree(tmp, ignore_errors=True)
            try:
                for name, data in files.items():
                    dest = tmp / name
                    dest.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
                    dest.write_bytes(data)
                    os.chmod(dest, 0o444)
                for folder, _dirs, _names in os.walk(tmp):
                    os.chmod(folder, 0o755)
                os.rename(tmp, target)
            except OSError:  # another process staged it first
                if not target.is_dir():
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        # /proc/pressure holds nothing but the masked files: one bind for the folder (each
        # bind costs bwrap a mount and a scan of the mount table, for every bot started).
        names = [("pressure" if n.startswith("pressure/") else n) for n in sorted(files)]
        binds = [(str(target / n), f"/proc/{n}") for n in dict.fromkeys(names)]
        _proc_cache[key] = binds
        return binds


def _top_symlinks() -> list[tuple[str, str]]:
    """The host's top-level symlinks such as /lib -> usr/lib (merged /usr), mirrored inside."""
    out = []
    for link in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(link):
            out.append((link, os.readlink(link)))
    return out


def _shared_libs(files: Iterable[str], cache: Path | None = None) -> list[str]:
    """The shared libraries (and the dynamic loader) the given ELF files need, via ldd.

    ldd is slow (a second for the ~70 extension modules of the stdlib), so the answer is
    kept in ``cache`` (a directory only this user can write), keyed by the files' identity.
    """
    files = [f for f in files if os.path.isfile(f)]
    if not files:
        return []
    saved = None
    if cache is not None:
        ident = "|".join(f"{f}:{os.stat(f).st_mtime_ns}:{os.stat(f).st_size}" for f in files)
        saved = cache / f"libs-{hashlib.sha256(ident.encode()).hexdigest()[:20]}.json"
        with contextlib.suppress(OSError, ValueError):
            libs = json.loads(saved.read_text())
            if isinstance(libs, list) and all(isinstance(x, str) for x in libs):
                return libs
    found = _ldd(files)
    if saved is not None and found:
        tmp = saved.with_suffix(f".{os.getpid()}.tmp")
        with contextlib.suppress(OSError):
            tmp.write_text(json.dumps(found))
            os.replace(tmp, saved)
    return found


def _ldd(files: list[str]) -> list[str]:
    try:
        out = subprocess.run(
            ["ldd", *files], capture_output=True, text=True, timeout=60, env={"LC_ALL": "C"}
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    libs: set[str] = set()
    for line in out.splitlines():
        line = line.strip()
        if "=>" in line:
            target = line.split("=>", 1)[1].strip().split(" (")[0].strip()
            if target.startswith("/"):
                libs.add(target)
        elif line.startswith("/") and " (0x" in line:
            libs.add(line.split(" (")[0])
    return sorted(libs)


def _lib_dest(path: str) -> str:
    """Where a library goes inside: its directory resolved (merged /usr), its name kept."""
    return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))


def _runtime_binds(sb: Sandbox, lang: str) -> list[tuple[str, str]]:
    """(source, destination) read-only binds of a runtime: interpreter, stdlib, libraries and
    the cow006 package.  Computed once per process; sources the slot uid cannot reach (an
    interpreter under root's private home) are staged under ``cache_dir`` first."""
    key = (sb._key(), lang)
    with _runtime_lock:
        if key in _runtime_cache:
            return _runtime_cache[key]
        binds = _compute_runtime_binds(sb, lang)
        _runtime_cache[key] = binds
        return binds


def _sdk_source(sb: Sandbox) -> str:
    """The ``cow006`` package to bind at /sdk/cow006: the host's compiled copy of it under
    ``cache_dir`` (``launch.compiled_sdk``: sources and their bytecode, written by the host
    alone and bound read-only, so a bot neither compiles the SDK at start-up nor can change
    what another bot imports), or, if that cannot be made, the sources without bytecode."""
    staged = launch.compiled_sdk(sb.cache_path())
    if staged is not None:
        return _reachable(sb, os.path.join(staged, "cow006"))
    sdk = os.path.join(launch.sdk_dir(), "cow006")
    return _reachable(sb, sdk, skip=frozenset({"__pycache__"}))


def _compute_runtime_binds(sb: Sandbox, lang: str) -> list[tuple[str, str]]:
    binds: list[tuple[str, str]] = []
    cache = sb.cache_path()
    _safe_dir(cache)
    elf: list[str] = []
    if lang == "node":
        exe = os.path.realpath(launch.node_executable())
        binds.append((_reachable(sb, exe), exe))
        elf.append(exe)
    else:
        exe = launch.python_executable()
        binds.append((_reachable(sb, exe), exe))
        elf.append(exe)
        stdlib = os.path.realpath(sysconfig.get_path("stdlib"))
        source = _reachable(sb, stdlib, skip=STDLIB_SKIP)
        binds.append((source, stdlib))
        if source == stdlib:  # bound as it is: hide the host's installed packages
            for name in ("site-packages", "dist-packages"):
                if os.path.isdir(os.path.join(stdlib, name)):
                    binds.append(("", os.path.join(stdlib, name)))
        dynload = sysconfig.get_config_var("DESTSHARED") or os.path.join(stdlib, "lib-dynload")
        dynload = os.path.realpath(dynload)
        if os.path.isdir(dynload):
            if not (dynload + "/").startswith(stdlib + "/"):
                binds.append((_reachable(sb, dynload), dynload))
            elf += [
                os.path.join(dynload, n)
                for n in sorted(os.listdir(dynload))
                if n.endswith(".so") and not n.startswith("_tkinter")
            ]
        binds.append((_sdk_source(sb), f"{SDK_DEST}/cow006"))
    seen = {dest for _, dest in binds}
    libs = {}
    for lib in _shared_libs(elf, cache):
        dest = _lib_dest(lib)
        if dest not in seen:
            seen.add(dest)
            libs[dest] = os.path.realpath(lib)
    if _root():  # one bind per library directory (each bind costs bwrap a mountinfo scan)
        binds += _lib_dirs(sb, libs, [dest for _, dest in binds])
    else:
        binds += [(src, dest) for dest, src in libs.items()]
    return sorted(binds, key=lambda b: b[1].split("/"))  # a directory before what is in it


def _lib_dirs(sb: Sandbox, libs: Mapping[str, str], others: Sequence[str]) -> list[tuple[str, str]]:
    """Stage the libraries of each destination directory together (hard links, named as the
    loader looks for them) and bind each such directory once; a directory that holds
    another bind (libpython beside the stdlib) gets its files bound one by one instead."""
    by_dir: dict[str, dict[str, str]] = {}
    for dest, src in libs.items():
        by_dir.setdefault(os.path.dirname(dest), {})[os.path.basename(dest)] = src
    out = []
    for dest_dir, files in sorted(by_dir.items()):
        if any((o + "/").startswith(dest_dir + "/") for o in others):
            for name, src in sorted(files.items()):
                out.append((_reachable(sb, src), f"{dest_dir}/{name}"))
        else:
            out.append((_stage_lib_dir(sb.cache_path(), files), dest_dir))
    return out


def _stage_lib_dir(cache: Path, files: Mapping[str, str]) -> str:
    """A directory of hard links (copies across file systems) to ``files`` (name -> source)
    under ``cache``, keyed by the sources' identity."""
    ident = "|".join(
        f"{name}:{src}:{os.stat(src).st_mtime_ns}:{os.stat(src).st_size}"
        for name, src in sorted(files.items())
    )
    target = cache / f"lib-{hashlib.sha256(ident.encode()).hexdigest()[:20]}"
    if not target.is_dir():
        tmp = cache / f".{target.name}.{os.getpid()}.{threading.get_ident()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(mode=0o755)
        os.chmod(tmp, 0o755)
        for name, src in files.items():
            _link_or_copy(src, str(tmp / name))
        try:
            os.rename(tmp, target)
        except OSError:  # another process staged it first
            shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def _reachable_by_others(path: str) -> bool:
    """Whether a user other than the owner can reach and read ``path`` (every ancestor
    searchable by others, the path itself readable by others)."""
    p = Path(path)
    for parent in reversed(p.parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    need = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
    return mode & need == need


def _reachable(sb: Sandbox, path: str, skip: frozenset[str] = frozenset()) -> str:
    """``path`` itself if the slot uid can reach it, else a staged copy (hard links where the
    file system allows) under ``cache_dir``, keyed by the source's identity."""
    if not _root() or _reachable_by_others(path):
        return path
    st = os.stat(path)
    ident = f"{path}|{st.st_dev}|{st.st_ino}|{st.st_mtime_ns}|{st.st_size}|{sorted(skip)}"
    if stat.S_ISDIR(st.st_mode):
        ident += "|" + _tree_ident(path, skip)
    key = hashlib.sha256(ident.encode()).hexdigest()[:20]
    root = sb.cache_path()
    _safe_dir(root)
    dest = root / key
    target = dest / os.path.basename(path)
    if target.exists():
        return str(target)
    tmp = root / f".{key}.{os.getpid()}.{threading.get_ident()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(mode=0o755)
    os.chmod(tmp, 0o755)
    if stat.S_ISDIR(st.st_mode):
        _copy_tree(path, str(tmp / os.path.basename(path)), skip)
    else:
        _link_or_copy(path, str(tmp / os.path.basename(path)))
    try:
        os.rename(tmp, dest)
    except OSError:  # another process staged it first
        shutil.rmtree(tmp, ignore_errors=True)
    return str(target)


def _tree_ident(path: str, skip: frozenset[str]) -> str:
    """A cheap fingerprint of a tree: the mtimes of its directories."""
    h = hashlib.sha256()
    for root, dirs, _ in os.walk(path):
        if root == path:
            dirs[:] = [d for d in dirs if d not in skip]
        dirs.sort()
        with contextlib.suppress(OSError):
            h.update(f"{root}|{os.stat(root).st_mtime_ns}".encode())
    return h.hexdigest()


def _link_or_copy(src: str, dest: str) -> None:
    try:
        os.link(src, dest)
    except OSError:
        shutil.copy2(src, dest)
    mode = os.stat(dest).st_mode
    if not mode & stat.S_IROTH:  # a private copy (never a shared inode) may be opened up
        with contextlib.suppress(OSError):
            if os.stat(src).st_ino != os.stat(dest).st_ino:
                os.chmod(dest, mode | stat.S_IROTH | (stat.S_IXOTH if mode & stat.S_IXUSR else 0))


def _copy_tree(src: str, dest: str, skip: frozenset[str]) -> None:
    for root, dirs, files in os.walk(src):
        rel = os.path.relpath(root, src)
        out = dest if rel == "." else os.path.join(dest, rel)
        if rel == ".":
            dirs[:] = [d for d in dirs if d not in skip]
        os.makedirs(out, mode=0o755, exist_ok=True)
        os.chmod(out, 0o755)
        for name in dirs:
            full = os.path.join(root, name)
            if os.path.islink(full):
                os.symlink(os.readlink(full), os.path.join(out, name))
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            full = os.path.join(root, name)
            if os.path.islink(full):
                os.symlink(os.readlink(full), os.path.join(out, name))
            elif os.path.isfile(full):
                _link_or_copy(full, os.path.join(out, name))


def _bot_source(sb: Sandbox, bot: Path, lease: _Lease) -> Path:
    """The bot's file or folder to bind at /bot: itself when the slot uid can read all of
    it, else a fresh copy for this lease (made world-readable).  Either way it may hold only
    regular files and folders (``_scan_bot``): a symbolic link, a device node, a named pipe
    or a socket is refused with one sentence, and the host never follows a link in it, nor
    opens anything in it but regular files."""
    bot = bot.resolve()  # the path the user named (itself perhaps a link): taken as meant
    readable = _scan_bot(bot)
    if not _root() or (readable and _reachable_by_others(str(bot))):
        return bot
    stage = sb.state_path() / f"bot-{lease.uid}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir(mode=0o755)
    os.chmod(stage, 0o755)
    lease.stage = stage
    target = stage / ("bot" if bot.is_dir() else bot.name)
    try:
        if bot.is_dir():
            _copy_bot_tree(bot, target)
        else:
            _copy_regular(str(bot), None, target, bot, "")
    except OSError as exc:  # something in it changed under us (a folder swapped for a link)
        raise SandboxError(f"cannot copy the bot {bot}: {exc.strerror or exc}") from None
    return target


_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a device node",
    stat.S_IFBLK: "a device node",
}


def _refused(bot: Path, rel: str, mode: int) -> SandboxError:
    what = _KINDS.get(stat.S_IFMT(mode), "a special file")
    where = f"the bot folder {bot} holds {what} ({rel})" if rel else f"the bot {bot} is {what}"
    return SandboxError(f"{where}: a bot may hold only regular files and folders")


def _scan_bot(bot: Path) -> bool:
    """Walk the bot's file or folder without following links (hidden entries too: the bot
    sees them) and raise SandboxError at the first entry that is neither a regular file nor
    a folder.  Returns whether every file is readable and every folder searchable by others
    (then the slot uid can read the bot where it is)."""
    try:
        mode = os.lstat(bot).st_mode
        if not stat.S_ISDIR(mode):
            if not stat.S_ISREG(mode):
                raise _refused(bot, "", mode)
            return bool(mode & stat.S_IROTH)
        readable = mode & 0o005 == 0o005
        todo = [(bot, "")]
        while todo:
            folder, rel = todo.pop()
            with os.scandir(folder) as entries:
                for entry in entries:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    sub = rel + entry.name
                    if stat.S_ISDIR(mode):
                        readable = readable and mode & 0o005 == 0o005
                        todo.append((Path(entry.path), sub + "/"))
                    elif stat.S_ISREG(mode):
                        readable = readable and bool(mode & stat.S_IROTH)
                    else:
                        raise _refused(bot, sub, mode)
    except OSError as exc:
        raise SandboxError(f"cannot read the bot {bot}: {exc.strerror or exc}") from None
    return readable


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _copy_bot_tree(bot: Path, dest: Path) -> None:
    """Copy a bot folder's regular files and folders (hidden ones left out) to ``dest``,
    walking by directory descriptors opened with O_NOFOLLOW: an entry swapped for a link or
    a special file since ``_scan_bot`` is refused, never followed or read."""
    stack: list[tuple[int, Path, str, Iterator[str]]] = []
    try:
        fd = os.open(bot, _DIR_FLAGS)
        stack.append((fd, dest, "", iter(sorted(os.listdir(fd)))))
        os.mkdir(dest, 0o755)
        os.chmod(dest, 0o755)  # not left to the umask: the slot uid reads it
        while stack:
            fd, out, rel, names = stack[-1]
            name = next(names, None)
            if name is None:
                stack.pop()
                os.close(fd)
                continue
            if name.startswith("."):
                continue
            mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
            if stat.S_ISDIR(mode):
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                stack.append((child, out / name, f"{rel}{name}/", iter(sorted(os.listdir(child)))))
                os.mkdir(out / name, 0o755)
                os.chmod(out / name, 0o755)
            elif stat.S_ISREG(mode):
                _copy_regular(name, fd, out / name, bot, rel + name)
            else:
                raise _refused(bot, rel + name, mode)
    finally:
        for fd, *_ in stack:
            os.close(fd)


def _copy_regular(name: str, dir_fd: int | None, dest: Path, bot: Path, rel: str) -> None:
    """Copy one regular file (opened with O_NOFOLLOW and O_NONBLOCK, checked to be a regular
    file once open) to a new file ``dest`` of mode 0644."""
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise _refused(bot, rel, mode)
        with open(dest, "xb") as out, os.fdopen(fd, "rb", closefd=False) as src:
            shutil.copyfileobj(src, out)
        os.chmod(dest, 0o644)
    finally:
        os.close(fd)


def _safe_dir(path: Path) -> None:
    """Create ``path`` owned by us, writable by us alone (0711: others may pass through to
    what is staged inside, but not list it); refuse one that someone else could change."""
    try:
        path.mkdir(mode=0o711, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise SandboxError(f"cannot create the sandbox directory {path}: {exc}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise SandboxError(
            f"the sandbox directory {path} must be a directory owned by uid {os.geteuid()} "
            "and writable by it alone"
        )
    if st.st_mode & 0o777 != 0o711:
        os.chmod(path, 0o711)


# -- slots, uids and processes ------------------------------------------------------------------
class _Lease:
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
            if _root():
                self.killed, self.clean = _purge_uid(self.uid)
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


# The slot cgroups: the hierarchy found once per process and configuration, one Slot object
# per slot cgroup (it carries the slot's OOM watch and kill lock), per-lease names for
# non-root hosts.
_cgroup_lock = threading.Lock()
_hierarchies: dict[tuple[str, ...], cgroups.Hierarchy] = {}
_slots: dict[tuple[int, str], cgroups.Slot] = {}
_lease_seq = itertools.count()
_devices_cache: dict[frozenset[int], tuple[tuple[int, int], ...]] = {}


def _hierarchy(sb: Sandbox) -> cgroups.Hierarchy:
    """The cgroup hierarchy for ``sb``'s slots (found and prepared once); SandboxError with
    one sentence when there is none."""
    parent = sb.cgroup_parent or os.environ.get(cgroups.ENV_PARENT) or None
    key = (parent or "",)
    with _cgroup_lock:
        if key not in _hierarchies:
            try:
                _hierarchies[key] = cgroups.find(parent)
            except cgroups.CgroupError as exc:
                raise SandboxError(
                    f"{exc}; set {cgroups.ENV}=off to run sandboxed bots without cgroups"
                ) from None
        return _hierarchies[key]


def _slot_of(hier: cgroups.Hierarchy, name: str, *, cache: bool = True) -> cgroups.Slot:
    """The Slot object of cgroup ``name`` (made if needed), kept for reuse unless ``cache``
    is False (a per-lease cgroup)."""
    with _cgroup_lock:
        key = (id(hier), name)
        if key not in _slots:
            try:
                slot = hier.slot(name)
            except cgroups.CgroupError as exc:
                raise SandboxError(str(exc)) from None
            if not cache:
                return slot
            _slots[key] = slot
        return _slots[key]


def _io_devices(paths: Sequence[str]) -> tuple[tuple[int, int], ...]:
    """The disks behind what is bound into the sandbox (``cgroups.block_devices``), cached
    by the set of file systems they are on."""
    devs = set()
    for path in paths:
        with contextlib.suppress(OSError):
            devs.add(os.stat(path).st_dev)
    key = frozenset(devs)
    with _cgroup_lock:
        if key not in _devices_cache:
            _devices_cache[key] = cgroups.block_devices(paths)
        return _devices_cache[key]


# What a slot's lock file says: both words have one length, so marking a slot is one pwrite
# over the other word (an ftruncate can cost milliseconds: freeing blocks, discard).
_CLEAN = b"clean"
_BUSY = b"busy\n"


def _mark(fd: int, word: bytes) -> None:
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_size > len(word):
            os.ftruncate(fd, len(word))
        os.pwrite(fd, word, 0)


_reserved: dict[int, bool] = {}


def _uid_usable(uid: int) -> bool:
    """A slot uid must be unused on the machine, or one of ours (cow006-sb*)."""
    if uid not in _reserved:
        try:
            name = pwd.getpwuid(uid).pw_name
            _reserved[uid] = name.startswith("cow006")
        except KeyError:
            _reserved[uid] = True
    return _reserved[uid]


def _acquire(sb: Sandbox) -> _Lease:
    """Take a free slot (an flock on its lock file) and make sure its uid runs nothing."""
    state = sb.state_path()
    _safe_dir(state)
    if not _root():
        fd = os.open(state / "host.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        return _Lease(os.getuid(), fd)
    deadline = time.monotonic() + sb.slot_wait
    order = range(sb.slots)  # the lowest free slot: a recently released one skips its purge
    while True:
        for n in order:
            uid = sb.uid_base + n
            if not _uid_usable(uid):
                continue
            fd = os.open(state / f"uid-{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            # A slot released cleanly says so in its lock file; otherwise (a host that died
            # holding it, say) its uid is purged first.
            if os.pread(fd, 16, 0) == _CLEAN or _purge_uid(uid)[1]:
                _mark(fd, _BUSY)
                return _Lease(uid, fd)
            os.close(fd)  # something of that uid will not die: try another slot
        if time.monotonic() >= deadline:
            raise SandboxError(
                f"all {sb.slots} sandbox slots (uids {sb.uid_base}..{sb.uid_base + sb.slots - 1})"
                f" stayed busy for {sb.slot_wait:g} s"
            )
        time.sleep(0.02)


def _uid_procs(uid: int) -> list[tuple[int, int, str]]:
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


def _purge_uid(uid: int, timeout: float = 5.0) -> tuple[int, bool]:
    """SIGKILL every process of ``uid`` and reap those that are our children, until none is
    left.  Returns (how many live ones were killed, whether the uid is clear)."""
    me = os.getpid()
    killed: set[int] = set()
    deadline = time.monotonic() + timeout
    while True:
        procs = _uid_procs(uid)
        if not procs:
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


# The pid that made itself a subreaper: the setting is per process and not inherited by a
# fork, so a forked child (a worker pool process) must set it again for itself.
_subreaper_pid: list[int] = []


def _become_subreaper() -> None:
    """Make this process a child subreaper: orphans of bot processes (bwrap's pid 1, once
    bwrap is killed) are reparented here and reaped by ``_purge_uid``."""
    if (_subreaper_pid and _subreaper_pid[0] == os.getpid()) or not _root():
        return
    _subreaper_pid[:] = [os.getpid()]
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


class SandboxedProcess(subprocess.Popen[bytes]):
    """A bwrap process holding a slot.  The slot is released (its uid purged of every
    process) as soon as the process has been reaped by ``wait`` or ``poll``, or when the
    object is collected."""

    def __init__(self, args: Sequence[str], *, lease: _Lease, **kwargs: Any) -> None:
        self.lease = lease
        super().__init__(list(args), **kwargs)
        self._release = weakref.finalize(self, lease.release)

    def _hand_off(self, ctl: socket.socket) -> None:
        """Make the bot's stdin/stdout pipes and send its ends over ``ctl``: after this, the
        bot is the only process that holds them."""
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        try:
            socket.send_fds(ctl, [b"p"], [in_r, out_w])
        except OSError:
            for fd in (in_w, out_r):
                os.close(fd)
            raise
        finally:
            os.close(in_r)
            os.close(out_w)
        self.stdin = os.fdopen(in_w, "wb", buffering=0)
        self.stdout = os.fdopen(out_r, "rb", buffering=0)

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
