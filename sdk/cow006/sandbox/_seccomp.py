"""The seccomp filter of every sandboxed bot: default allow, EPERM for what a bot never needs.

Denied: ``DENIED_SYSCALLS`` (ptrace and friends, keyrings, bpf, perf, userfaultfd, io_uring,
the machine-wide AIO pool, inotify/fanotify, sysinfo, the mount family, namespaces, kernel
modules, clocks), sockets of any family but ``AF_UNIX``, and ``clone`` with a namespace flag
(``clone3`` gets ENOSYS, so the C library falls back to ``clone``, whose flags the filter can
see).  Built with libseccomp (``pyseccomp``, or Debian's ``python3-seccomp``), imported when
the filter is first built; bwrap loads the compiled program (``seccomp_bpf``) from a pipe.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
from typing import Any

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

_bpf_cache: list[bytes] = []


def _seccomp_module() -> Any:
    # Neither module has type information (pyproject.toml's mypy section says so).
    try:
        import pyseccomp as sc
    except ImportError:
        import seccomp as sc
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


def seccomp_bpf() -> bytes:
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
