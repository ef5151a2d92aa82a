"""The disks behind files: what a slot's disk bandwidth cap applies to.

``block_devices`` gives the whole disks holding some paths (a partition's disk, through
mountinfo for file systems such as overlayfs); where one cannot be told, every disk of the
machine (``all_disks``): a cap on too many devices is safe, a missing one is not.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from pathlib import Path

from ._files import read
from ._mounts import Mount, mounts


def _whole_disk(dev: tuple[int, int], sys_block: Path) -> tuple[int, int] | None:
    """The whole disk of a block device (a partition's parent), or None if not a block
    device this machine lists."""
    node = sys_block / f"{dev[0]}:{dev[1]}"
    if not node.exists():
        return None
    if (node / "partition").exists():
        with contextlib.suppress(OSError, ValueError):
            major, minor = read(node.resolve().parent / "dev").strip().split(":")
            return int(major), int(minor)
        return None
    return dev


def all_disks(sys_block: Path = Path("/sys/block")) -> list[tuple[int, int]]:
    """Every whole disk of the machine (a fallback when a file's disk cannot be found)."""
    out = []
    with contextlib.suppress(OSError):
        for name in sorted(os.listdir(sys_block)):
            with contextlib.suppress(OSError, ValueError):
                major, minor = read(sys_block / name / "dev").strip().split(":")
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
