"""The sandbox's fork server (the "zygote"): a trusted process that has imported the bot
runtime and forks one fresh, sandboxed child for each Python bot.

Started by the host (``cow006.sandbox._forkserver``) from the real interpreter with ``-I -S
-B``, an empty environment and the host's compiled SDK, it imports ``cow006.bot`` and what it
needs (the lean runtime: tests/sdk/test_bot_imports.py) and never anything of a bot's: it
reads nothing but the host's requests on its socket.  For each request it clones the
sandbox's pid 1, which confines itself, in this order, before it opens or imports anything of
the bot's:

1. it is born the host's child (``clone(CLONE_PARENT)``) in new user, mount, pid, network,
   ipc and uts namespaces (the user namespace first, so the others are its own); it dies
   with the host (``PR_SET_PDEATHSIG``), in a session of its own, holding only the bot's
   stdio;
2. from outside, before it may go on, the zygote puts it in the slot's cgroup(s), sets its
   rlimits and ``oom_score_adj`` 1000, denies it setgroups and maps only the slot uid and
   gid into its user namespace (on a host that is not root: the host's own);
3. it takes the slot uid, a cgroup namespace of its own (its slot's cgroup is its root) and
   the host name ``cow006``;
4. it builds the root bwrap would (an empty tmpfs, made read-only, holding only the
   runtime, the bot's files at /bot, a fresh /proc with its masks, a minimal /dev and a
   private /tmp), pivots into it and detaches the host's tree, clears the environment to the
   bot's, drops every capability (bounding, ambient, effective, permitted), sets
   ``no_new_privs`` and loads the seccomp filter (the same BPF program as bwrap's);
5. it forks the bot (pid 2, as under bwrap) and reaps until it ends, then exits with its
   status (128 + signal for a signal, as bwrap's pid 1), taking the namespace with it.

So a child never ran another bot's code, and nothing a bot does survives it: its processes,
mounts, files in /tmp and memory all go with its pid namespace, and the zygote only ever
forks and confines (it never waits for or reads from a bot).  A step that fails ends the
child with a line on the bot's stderr and status 1, before any bot code runs.  Two processes
a sandbox, not bwrap's three: pid 1 is the host's child itself (no outer process that only
waits), which saves a fork, an exit and the memory each of them touches.
"""

from __future__ import annotations

import os
import sys

# The modules of the bot runtime (imported by the zygote's program before this one): what a
# bot sees in sys.modules.  What the zygote imports for itself is removed in the bot.
_RUNTIME = frozenset(sys.modules)

import _signal  # type: ignore[import-not-found]  # noqa: E402  (after _RUNTIME: no stub)
import _socket  # noqa: E402
import ctypes  # noqa: E402
import gc  # noqa: E402
import resource  # noqa: E402
import select  # noqa: E402
from time import monotonic as _monotonic  # noqa: E402

from cow006 import protocol  # noqa: E402  (a runtime module: imported already)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
# The namespaces a sandbox's pid 1 is cloned into; the cgroup namespace comes once it is in
# its slot's cgroup (``_init``).  With the user namespace first, the others are its own.
CLONE_NAMESPACES = (
    CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
)
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 22, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL, SECCOMP_MODE_FILTER = 4, 2
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
# statvfs flag -> mount flag: a bind inherits flags the kernel locks in a user namespace
# (nosuid, nodev, noexec, the atime ones); a read-only remount must repeat them.
_LOCKED = (
    (2, MS_NOSUID),
    (4, MS_NODEV),
    (8, MS_NOEXEC),
    (1024, MS_NOATIME),
    (2048, MS_NODIRATIME),
    (4096, MS_RELATIME),
)
# The minimal /dev (bwrap's --dev): these nodes, bound from the host's, and these links.
DEV_NODES = ("null", "zero", "full", "random", "urandom", "tty")
DEV_LINKS = (
    ("fd", "/proc/self/fd"),
    ("stdin", "/proc/self/fd/0"),
    ("stdout", "/proc/self/fd/1"),
    ("stderr", "/proc/self/fd/2"),
    ("core", "/proc/kcore"),
    ("ptmx", "pts/ptmx"),
)

_libc = ctypes.CDLL(None, use_errno=True)
# The same symbols called with the interpreter lock held (a PyDLL), for the raw clone below:
# the child must come back from the call holding it, as from os.fork's fork().
_pyapi = ctypes.PyDLL(None, use_errno=True)
SYS_CLONE = {"x86_64": 56, "aarch64": 220}
CLONE_PARENT, SIGCHLD = 0x00008000, 17
_ulong = ctypes.c_ulong
_libc.prctl.argtypes = [ctypes.c_int, _ulong, _ulong, _ulong, _ulong]
_libc.mount.argtypes = [ctypes.c_char_p] * 3 + [_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.sethostname.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, a: int = 0, b: int = 0) -> None:
    _check(_libc.prctl(option, a, b, 0, 0), f"prctl({option})")


def _mount(src: str | None, dest: str, fstype: str | None, flags: int, data: str = "") -> None:
    enc = [None if s is None else s.encode() for s in (src, dest, fstype)]
    ret = _libc.mount(enc[0], enc[1], enc[2], flags, data.encode() if data else None)
    _check(ret, f"mount {src or fstype} on {dest}")


def _write(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _status_code(status: int) -> int:
    """bwrap's pid 1's rule: the exit status, or 128 + the signal that ended the process."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return 255


# -- the server --------------------------------------------------------------------------------
def main(fd: int, sdk: str) -> None:
    """Serve the host's requests on the socket ``fd`` until the host closes it (or dies);
    ``sdk`` is where the sandbox binds the SDK (its ``cow006`` package inside)."""
    _prctl(PR_SET_PDEATHSIG, 9)  # SIGKILL when the host dies
    host = os.getppid()
    if host == 1:
        os._exit(0)
    relocate(sdk)
    global _LAST_CAP, _host_fd
    _LAST_CAP = _last_cap()  # the kernel's, the same for every child
    try:  # a child polls it: was the host gone before the child could see it go?
        _host_fd = os.pidfd_open(host)
    except OSError:  # Linux before 5.3: a slot left populated is emptied by its next lease
        _host_fd = -1
    # The children inherit no supplementary group (root's): they take none of their own.
    if os.geteuid() == 0:
        os.setgroups([])
    ctl = _socket.socket(fileno=fd)
    cmsg_space = _socket.CMSG_SPACE(3 * 4)
    # No garbage collection in the zygote, and what it holds is frozen before each fork: a
    # collection in a child would touch every object, copying the pages a fork shares.
    gc.disable()
    while True:
        try:
            data, anc, _flags, _addr = ctl.recvmsg(1 << 16, cmsg_space)
        except InterruptedError:
            continue
        fds: list[int] = []
        for level, kind, blob in anc:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                fds += [
                    int.from_bytes(blob[i : i + 4], sys.byteorder, signed=True)
                    for i in range(0, len(blob) - len(blob) % 4, 4)
                ]
        if not data:
            os._exit(0)  # the host closed its end
        try:
            req = protocol.decode_host(data)
            # The program (the host's bootstrap, the same for every bot) compiled here once,
            # not in each child: compiling touches memory the fork shares.
            req["program"] = _programs.get(req["code"]) or _compile(req["code"])
            req["seccomp"] = _seccomp_of(req["bpf"])
            req["root"] = root_steps(req)
            if len(fds) != 3:
                raise ValueError(f"expected 3 file descriptors, got {len(fds)}")
            reply = f"ok {_spawn(req, fds)}"
        except Exception as exc:
            reply = f"error {type(exc).__name__}: {exc}"
        finally:
            for n in fds:
                os.close(n)
        ctl.sendall(reply.encode())


_programs: dict[str, Any] = {}
_LAST_CAP = 0  # the kernel's last capability (main)
_host_fd = -1  # a pidfd of the host (main)


def _compile(code: str) -> Any:
    program = compile(code, "<string>", "exec")
    if len(_programs) < 16:  # the host sends one or two programs; a bound all the same
        _programs[code] = program
    return program


def _spawn(req: dict[str, Any], fds: list[int]) -> int:
    """Clone the sandbox's pid 1 as the host's child, in its new namespaces, confine it from
    here (its cgroup, rlimits, OOM score, uid and gid maps) and let it go on; its pid."""
    go_r, go_w = os.pipe()  # the zygote says the child is confined (end of file: it failed)
    done_r, done_w = os.pipe()  # the child says it runs as the slot uid (end of file: failed)
    sys.stderr.flush()
    gc.freeze()
    try:
        child = _fork_for_host(CLONE_NAMESPACES)
    except BaseException:
        for n in (go_r, go_w, done_r, done_w):
            os.close(n)
        raise
    if child == 0:
        os.close(go_w)
        os.close(done_r)
        _init(req, fds, go_r, done_w)  # never returns
    os.close(go_r)
    os.close(done_w)
    try:
        try:
            _confine(child, req)
        except BaseException:
            os.kill(child, 9)  # it runs nothing of the bot's before the go below
            raise
        os.write(go_w, b"g")
        os.close(go_w)
        go_w = -1
        # With ``confirm`` (the probe), answer once the child runs as the slot uid (what
        # bwrap's Popen returning after its preexec means), so the host can check it.
        # Otherwise at once: the child builds its sandbox while the host asks for the next
        # seat, and runs nothing of the bot's before it is done (a failure ends it with a
        # line on its stderr, status 1).
        if req.get("confirm") and os.read(done_r, 1) != b"c":
            raise OSError("a bot process could not join its slot's cgroup or drop to the slot uid")
        return child
    finally:
        if go_w >= 0:
            os.close(go_w)
        os.close(done_r)


def _confine(pid: int, req: dict[str, Any]) -> None:
    """What the zygote does to its new child from outside, before the child goes on: the
    slot's cgroup(s), the OOM score and the rlimits, then the child's uid and gid maps (only
    the slot uid, or the zygote's own uid on a host that is not root) with setgroups denied.
    The child was cloned straight into its namespaces, so these are what a process outside
    may do to it; inside, it holds every capability of its own user namespace until it
    drops them all (``_drop_privileges``)."""
    for path in req["join"]:
        _write(path, str(pid).encode())
    _write(f"/proc/{pid}/oom_score_adj", str(req["oom"]).encode())
    for res, value in req["rlimits"]:
        resource.prlimit(pid, res, (value, value))
    uid = req["uid"] if req["uid"] is not None else os.geteuid()
    gid = req["uid"] if req["uid"] is not None else os.getegid()
    _write(f"/proc/{pid}/setgroups", b"deny")
    _write(f"/proc/{pid}/uid_map", f"{uid} {uid} 1".encode())
    _write(f"/proc/{pid}/gid_map", f"{gid} {gid} 1".encode())


def _fork_for_host(flags: int = 0) -> int:
    """``os.fork``, but the child is the host's (``clone(CLONE_PARENT)``): no intermediate
    process that exits so that a subreaper host inherits it, no wait for that; and it is
    born in the new namespaces ``flags`` name.  The same steps as ``os.fork`` around the
    system call (the interpreter's locks, the at-fork hooks); the zygote is
    single-threaded.  0 in the child, the child's pid here.

    The C library's cached thread id stays the zygote's in this child (its own ``fork``
    sets it, a raw clone does not): the child only confines itself and forks (every process
    it forks has its own again), it never raises a signal at its own thread."""
    nr = SYS_CLONE.get(os.uname().machine)
    if nr is None:
        raise OSError(f"clone: unknown architecture {os.uname().machine}")
    _pyapi.PyOS_BeforeFork()
    zero = ctypes.c_long(0)
    # clone(flags, stack 0: the child runs on a copy of this stack, as with fork, ...)
    pid = _pyapi.syscall(
        ctypes.c_long(nr), ctypes.c_long(CLONE_PARENT | SIGCHLD | flags), zero, zero, zero, zero
    )
    if pid == 0:
        _pyapi.PyOS_AfterFork_Child()
        return 0
    err = ctypes.get_errno()
    _pyapi.PyOS_AfterFork_Parent()
    if pid < 0:
        raise OSError(err, f"clone: {os.strerror(err)}")
    return int(pid)


def _fail(exc: BaseException) -> None:
    try:
        os.write(2, f"cow006 sandbox: {exc}\n".encode(errors="replace"))
    finally:
        os._exit(1)


# -- the sandbox's pid 1: the rest of the confinement, the file system, the bot --------------
def _init(req: dict[str, Any], fds: list[int], go_r: int, done_w: int) -> None:
    try:
        for n, fd in enumerate(fds):  # the bot's stdin, stdout and stderr
            os.dup2(fd, n)
        _prctl(PR_SET_PDEATHSIG, 9)  # bwrap's --die-with-parent
        # Its parent, the host, is outside its pid namespace (getppid says 0): the host's
        # pidfd tells whether it ended before the line above could take effect.
        if _host_fd >= 0 and select.select([_host_fd], [], [], 0)[0]:
            os._exit(1)
        # Only the bot's stdio is left, and the pipes to the zygote (the socket, the pidfd
        # and the zygote's other descriptors go).
        keep = sorted((go_r, done_w))
        os.closerange(3, keep[0])
        os.closerange(keep[0] + 1, keep[1])
        os.closerange(keep[1] + 1, 1 << 16)
        if os.read(go_r, 1) != b"g":  # the zygote could not confine this process
            os._exit(1)
        os.close(go_r)
        os.setsid()
        uid = req["uid"]
        if uid is not None:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            # A change of uid makes a process undumpable, its /proc files root's: the bot,
            # forked from here, must own its own /proc/self (bwrap's processes do).
            _prctl(PR_SET_DUMPABLE, 1)
        if req.get("confirm"):  # else the zygote is not listening (its end is closed)
            os.write(done_w, b"c")
        os.close(done_w)
        # In its slot's cgroup now (``_confine``): a cgroup namespace of its own from there,
        # so that it sees that cgroup as its root, as under bwrap.
        _check(_libc.unshare(CLONE_NEWCGROUP), "unshare")
        name = req["hostname"].encode()
        _check(_libc.sethostname(name, len(name)), "sethostname")
        _build_root(req["root"])
        os.environ.clear()
        os.environ.update(req["env"])
        _drop_privileges(req["seccomp"])
        bot = os.fork()
        if bot == 0:
            _run_bot(req)  # never returns
        os.close(0)
        os.close(1)
        # As a pid 1 without handlers: a signal from inside the namespace does nothing to it
        # (the interpreter's own SIGINT handler would end the sandbox).  Stderr stays open
        # here, as in bwrap's pid 1: its end of file tells the host the sandbox is gone.
        _signal.signal(_signal.SIGINT, _signal.SIG_DFL)
        while True:
            pid, status = os.waitpid(-1, 0)
            if pid == bot:
                os._exit(_status_code(status))
    except BaseException as exc:
        _fail(exc)


# -- the sandbox's root, planned in the zygote -------------------------------------------------
# ``_build_root`` is a list of steps (``Step``) that the zygote works out before it clones the
# child: paths encoded, bind sources looked at, the flags a bind's read-only remount must keep
# read from the host's mount (``_locked``), all once per sandbox configuration.  The child
# only runs them: fewer Python steps in a fresh fork, fewer of the zygote's pages copied.
#   ("mount", source, target, fstype, flags, data, what)   mount(2), bytes or None
#   ("remount", target, flags)      a remount keeping the flags the mount has (statvfs now)
#   ("dirs", path)                  os.makedirs(path, exist_ok=True)
#   ("dir", path)                   os.mkdir
#   ("file", path)                  an empty file, made unless one is there (its folders too)
#   ("node", path)                  an empty file, made (a device node's mount point)
#   ("link", target, path)          os.symlink
#   ("cd", path), ("pivot", new, old), ("umount", path)
if TYPE_CHECKING:
    Step = tuple[Any, ...]
_plans: dict[str, tuple[list[Step], list[Step], list[Step]]] = {}


def _locked(path: str) -> int:
    """The mount flags a read-only remount of a bind of ``path`` must repeat (the kernel
    locks them in a user namespace): those of the mount ``path`` is on, seen from here."""
    have = os.statvfs(path).f_flag
    return sum(ms for st, ms in _LOCKED if have & st)


def _bind_steps(src: str, dest: str) -> list[Step]:
    """Bind ``src`` of the host (under /oldroot) at ``dest`` of the new root, read-only."""
    source, target = "/oldroot" + src, "/newroot" + dest
    made: Step = ("dirs", target) if os.path.isdir(src) else ("file", target)
    ro = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | _locked(src)
    return [
        made,
        (
            "mount",
            source.encode(),
            target.encode(),
            None,
            MS_BIND,
            None,
            f"mount {source} on {target}",
        ),
        ("mount", None, target.encode(), None, ro, None, f"mount {target}"),
    ]


def _tmpfs_steps(dest: str, data: str, *, ro: bool = False) -> list[Step]:
    target = "/newroot" + dest
    steps: list[Step] = [
        ("dirs", target),
        (
            "mount",
            b"tmpfs",
            target.encode(),
            b"tmpfs",
            MS_NOSUID | MS_NODEV,
            data.encode(),
            f"mount tmpfs on {target}",
        ),
    ]
    if ro:
        steps.append(("remount", target, MS_RDONLY | MS_NOSUID | MS_NODEV))
    return steps


def _mask_steps(masks: list[list[str]]) -> list[Step]:
    """The neutral /proc files, bound read-only over the host's.  They are staged in one
    directory: bound read-only once (on the first tmpfs, detached at the end), every file is
    bound from there and so is read-only (nosuid, nodev) from the start, without a remount of
    its own (two calls fewer per file, for some thirty files)."""
    if len(masks) < 2:
        return [step for src, dest in masks for step in _bind_steps(src, dest)]
    folder = os.path.commonpath([src for src, _dest in masks])
    ro = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | _locked(folder)
    steps: list[Step] = [
        ("dir", "/masks"),
        (
            "mount",
            ("/oldroot" + folder).encode(),
            b"/masks",
            None,
            MS_BIND,
            None,
            "mount the masks",
        ),
        ("mount", None, b"/masks", None, ro, None, "mount /masks"),
    ]
    for src, dest in masks:
        source, target = "/masks/" + os.path.relpath(src, folder), "/newroot" + dest
        steps.append(
            ("mount", source.encode(), target.encode(), None, MS_BIND, None, f"mount {target}")
        )
    return steps


def _plan(req: dict[str, Any]) -> tuple[list[Step], list[Step], list[Step]]:
    """The steps of the root that are the same for every bot of a configuration: before the
    bot's files, between them and /tmp, and after /tmp (made once, kept)."""
    # Kept for a minute: what it read of the host's mounts is read again now and then (an
    # operator may remount a host directory; a stale flag would fail every sandbox).
    key = repr((req["binds"], req["symlinks"], req["masks"], int(_monotonic() // 60)))
    found = _plans.get(key)
    if found is not None:
        return found
    head: list[Step] = [
        ("mount", None, b"/", None, MS_REC | MS_PRIVATE, None, "mount /"),
        # A tmpfs at /tmp becomes the root for a moment, the host's tree under /oldroot, the
        # new root is built at /newroot (so a bot under the host's /tmp can still be bound),
        # then it becomes the root and the rest is detached.
        (
            "mount",
            b"tmpfs",
            b"/tmp",
            b"tmpfs",
            MS_NOSUID | MS_NODEV,
            b"mode=0755",
            "mount tmpfs on /tmp",
        ),
        ("cd", "/tmp"),
        ("dir", "newroot"),
        ("dir", "oldroot"),
        ("pivot", ".", "oldroot"),
        ("cd", "/"),
        ("mount", b"newroot", b"newroot", None, MS_BIND | MS_REC, None, "mount newroot"),
    ]
    for src, dest in req["binds"]:
        if src:
            head += _bind_steps(src, dest)
        else:  # an empty read-only directory over ``dest``
            head += _tmpfs_steps(dest, "size=4096,mode=0755", ro=True)
    head += [("link", target, "/newroot" + link) for link, target in req["symlinks"]]
    middle: list[Step] = [
        ("dir", "/newroot/proc"),
        (
            "mount",
            b"proc",
            b"/newroot/proc",
            b"proc",
            MS_NOSUID | MS_NODEV | MS_NOEXEC,
            None,
            "mount proc",
        ),
        *_mask_steps(req["masks"]),
        *_tmpfs_steps("/dev", "mode=0755"),
    ]
    for node in DEV_NODES:
        target = f"/newroot/dev/{node}"
        flags = MS_REMOUNT | MS_BIND | MS_NOSUID | _locked(f"/dev/{node}")  # bwrap's --dev-bind
        middle += [
            ("node", target),
            (
                "mount",
                f"/oldroot/dev/{node}".encode(),
                target.encode(),
                None,
                MS_BIND,
                None,
                f"mount {target}",
            ),
            ("mount", None, target.encode(), None, flags, None, f"mount {target}"),
        ]
    middle += [("link", target, f"/newroot/dev/{link}") for link, target in DEV_LINKS]
    middle += [
        ("dir", "/newroot/dev/shm"),
        ("dir", "/newroot/dev/pts"),
        (
            "mount",
            b"devpts",
            b"/newroot/dev/pts",
            b"devpts",
            MS_NOSUID | MS_NOEXEC,
            b"newinstance,ptmxmode=0666,mode=620",
            "mount devpts",
        ),
        ("remount", "/newroot/dev", MS_RDONLY | MS_NOSUID),  # its nodes stay usable
    ]
    tail: list[Step] = [
        # Leave the host's tree, then the first tmpfs: only /newroot is left, as /.
        ("mount", None, b"/oldroot", None, MS_REC | MS_PRIVATE, None, "mount /oldroot"),
        ("umount", b"/oldroot"),
        ("cd", "/newroot"),
        ("pivot", ".", "."),
        ("umount", b"."),
        ("cd", "/"),
        ("remount", "/", MS_RDONLY | MS_NOSUID | MS_NODEV),
    ]
    found = (head, middle, tail)
    if len(_plans) >= 8:  # one configuration per host, a few in tests: a bound all the same
        _plans.clear()
    _plans[key] = found
    return found


def root_steps(req: dict[str, Any]) -> list[Step]:
    """Every step of the request's root, in order (in the zygote, before the clone)."""
    head, middle, tail = _plan(req)
    if req["bot"] is not None:
        bot: list[Step] = _bind_steps(*req["bot"])
    else:
        bot = [("dirs", "/newroot" + req["cwd"])]
    tmp = _tmpfs_steps("/tmp", f"size={int(req['tmp_size'])},mode=1777")
    return [*head, *bot, *middle, *tmp, *tail, ("cd", req["cwd"])]


def _build_root(steps: list[Step]) -> None:
    """bwrap's root: an empty tmpfs holding only what the request names, made read-only."""
    mount, umount = _libc.mount, _libc.umount2
    for step in steps:
        op = step[0]
        if op == "mount":
            if mount(step[1], step[2], step[3], step[4], step[5]) != 0:
                _check(-1, step[6])
        elif op == "remount":
            _remount(step[1], step[2])
        elif op == "dirs":
            os.makedirs(step[1], 0o755, exist_ok=True)
        elif op == "dir":
            os.mkdir(step[1], 0o755)
        elif op == "file":
            os.makedirs(os.path.dirname(step[1]), 0o755, exist_ok=True)
            if not os.path.exists(step[1]):
                os.close(os.open(step[1], os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        elif op == "node":
            os.close(os.open(step[1], os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o666))
        elif op == "link":
            os.symlink(step[1], step[2])
        elif op == "cd":
            os.chdir(step[1])
        elif op == "pivot":
            _pivot_root(step[1], step[2])
        elif op == "umount":
            _check(umount(step[1], MNT_DETACH), f"umount {step[1].decode()}")
        else:  # pragma: no cover - a step the plan does not make
            raise OSError(f"unknown step {op!r}")


def _remount(target: str, flags: int) -> None:
    """Remount the mount at ``target`` with ``flags`` and the flags it has (some are locked)."""
    have = os.statvfs(target).f_flag
    locked = sum(ms for st, ms in _LOCKED if have & st)
    _mount(None, target, None, MS_REMOUNT | MS_BIND | flags | locked)


def _pivot_root(new: str, old: str) -> None:
    nr = SYS_PIVOT_ROOT.get(os.uname().machine)
    if nr is None:
        raise OSError(f"pivot_root: unknown architecture {os.uname().machine}")
    _check(_libc.syscall(nr, new.encode(), old.encode()), "pivot_root")


class Seccomp:
    """A seccomp program ready for ``prctl``, made in the zygote (once per program): its
    children only pass its address."""

    def __init__(self, bpf_hex: str) -> None:
        bpf = bytes.fromhex(bpf_hex)
        if not bpf or len(bpf) % 8:
            raise ValueError("no seccomp program")
        self.buf = ctypes.create_string_buffer(bpf, len(bpf))
        self.prog = _SockFprog(len(bpf) // 8, ctypes.addressof(self.buf))


_seccomp: dict[str, Seccomp] = {}


def _seccomp_of(bpf_hex: str) -> Seccomp:
    found = _seccomp.get(bpf_hex)
    if found is None:
        found = Seccomp(bpf_hex)
        if len(_seccomp) < 4:  # one program per host; a bound all the same
            _seccomp[bpf_hex] = found
    return found


def _last_cap() -> int:
    with open("/proc/sys/kernel/cap_last_cap") as f:
        return int(f.read())


def _drop_privileges(seccomp: Seccomp) -> None:
    """Every capability dropped (bwrap's --cap-drop ALL), no_new_privs, the seccomp filter."""
    for cap in range(_LAST_CAP + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all empty
    _check(_libc.capset(header, data), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(seccomp.prog))


# -- the bot -----------------------------------------------------------------------------------
def _run_bot(req: dict[str, Any]) -> None:
    """Run the request's ``-c`` program as the interpreter would, as a fresh process: the
    zygote's own modules gone from sys.modules, the SDK's at /sdk, ``sys.argv`` the bot's."""
    code = 1
    try:
        _prctl(PR_SET_PDEATHSIG, 9)
        _as_fresh_interpreter(req)
        gc.enable()  # the bot's own objects are collected as usual (the zygote's are frozen)
        program = req["program"]
        main_ns = sys.modules["__main__"].__dict__
        keep: dict[str, Any] = {
            k: main_ns[k] for k in ("__name__", "__builtins__", "__loader__") if k in main_ns
        }
        main_ns.clear()
        main_ns.update(keep, __doc__=None, __package__=None, __spec__=None, __annotations__={})
        try:
            exec(program, main_ns)
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except BaseException:
            sys.excepthook(*sys.exc_info())
        _shutdown()
    finally:
        os._exit(code)


def _exit_code(exc: SystemExit) -> int:
    """The status of the interpreter exiting with ``exc`` (as ``sys.exit`` documents it)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code & 0xFF
    try:
        print(exc.code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _shutdown() -> None:
    """What the interpreter does at its exit before tearing down: threads, atexit, flush."""
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except Exception:
            pass
    import atexit

    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass


def _as_fresh_interpreter(req: dict[str, Any]) -> None:
    """sys.modules and sys.argv as a bot process started in bwrap has them: the runtime's
    modules only (``relocate`` has put the SDK's at ``/sdk/cow006`` already)."""
    for name in list(sys.modules):
        if name not in _RUNTIME or name == __name__:
            del sys.modules[name]
    cow006 = sys.modules["cow006"]
    if hasattr(cow006, "_zygote"):
        delattr(cow006, "_zygote")
    sys.argv[:] = ["-c", *req["args"]]


def relocate(sdk: str) -> None:
    """Name the SDK's modules as the sandbox sees them (``sdk``/cow006, not the host's
    staged copy), once in the zygote: its children import what the bot asks for from there.
    The zygote itself imports nothing more of the SDK."""
    import cow006

    staged = os.path.dirname(os.path.dirname(cow006.__file__ or ""))
    for name, module in list(sys.modules.items()):
        if name != "cow006" and not name.startswith("cow006."):
            continue
        for attr in ("__file__", "__cached__"):
            value = getattr(module, attr, None)
            if isinstance(value, str) and value.startswith(staged + "/"):
                setattr(module, attr, sdk + value[len(staged) :])
        spec = getattr(module, "__spec__", None)
        if spec is not None and isinstance(spec.origin, str) and spec.origin.startswith(staged):
            spec.origin = sdk + spec.origin[len(staged) :]
        path = getattr(module, "__path__", None)
        if path is not None:
            path[:] = [sdk + p[len(staged) :] if p.startswith(staged) else p for p in path]
    sys.path[:] = [p for p in sys.path if p != staged]
    sys.path_importer_cache.clear()
