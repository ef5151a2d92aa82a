"""The host's global /proc files, masked: what a bot reads there never tells it the load.

Files of /proc that are the same for the whole machine (not per pid namespace) time the
other seats' thinking (load, CPU and I/O counters, pressure, free memory, interrupts, open
files, the slot locks in /proc/locks) or name the machine (its kernel command line, boot
id, disks, modules).  Inside the sandbox each is covered by a read-only bind of a neutral
file with constant contents (``neutral_proc``), staged once by the host under the cache
directory (``mask_binds``); a file this kernel does not have is skipped.  /proc/cpuinfo
keeps the CPU's description (the ``cpuid`` instruction tells it anyway) with its clock speed
made constant; /proc/meminfo keeps the total and shows everything else as free; /proc/stat
keeps one line per CPU (the C library counts them there when /sys is absent).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import threading
from typing import TYPE_CHECKING

from ._host import safe_dir

if TYPE_CHECKING:
    from ._config import Sandbox

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


def neutral_proc() -> dict[str, bytes]:
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


_lock = threading.Lock()
_proc_cache: dict[tuple[str, ...], list[tuple[str, str]]] = {}


def mask_binds(sb: Sandbox) -> list[tuple[str, str]]:
    """(staged neutral file, /proc path) read-only binds over the host's global /proc files,
    staged once under ``cache_dir`` (named by their contents, written by the host alone,
    never changed afterwards).  Computed once per process."""
    key = sb._key()
    with _lock:
        if key in _proc_cache:
            return _proc_cache[key]
        files = neutral_proc()
        h = hashlib.sha256()
        for name, data in sorted(files.items()):
            h.update(f"\0{name}\0{len(data)}\0".encode() + data)
        cache = sb.cache_path()
        safe_dir(cache)
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
