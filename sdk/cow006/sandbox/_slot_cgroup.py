"""The slot cgroups as the sandbox uses them (``cow006.cgroups``): one per slot, limits per lease.

The hierarchy is found once per process and configuration (``hierarchy``: SandboxError with
one sentence when there is none, so the probe fails closed).  A root host keeps one Slot
object per slot uid (it carries the slot's OOM watch and kill lock); another user makes one
cgroup per lease and removes it at release.  ``slot_cgroup`` empties the lease's cgroup if a
dead host left something in it and writes this bot's limits, before anything runs.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import cgroups
from ._errors import SandboxError
from ._host import is_root
from ._runtime import runtime_binds
from ._uids import purge_uid

if TYPE_CHECKING:
    from ._config import Sandbox
    from ._slots import Lease

_cgroup_lock = threading.Lock()
_hierarchies: dict[tuple[str, ...], cgroups.Hierarchy] = {}
_slots: dict[tuple[int, str], cgroups.Slot] = {}
_lease_seq = itertools.count()
_devices_cache: dict[frozenset[int], tuple[tuple[int, int], ...]] = {}


def hierarchy(sb: Sandbox) -> cgroups.Hierarchy:
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


def slot_cgroup(sb: Sandbox, lease: Lease, lang: str, bot: Path | None) -> cgroups.Slot | None:
    """The lease's cgroup, emptied and with this bot's limits written (None when cgroups
    are off).  Root hosts keep one cgroup per slot uid; others make one per lease."""
    if not sb._cgroups_on():
        return None
    hier = hierarchy(sb)
    if is_root():
        slot = _slot_of(hier, f"uid-{lease.uid}")
    else:
        slot = _slot_of(hier, f"host-{os.getpid()}-{next(_lease_seq)}", cache=False)
        lease.remove_cgroup = True
    lease.cgroup = slot
    # Left populated by a host that died holding the slot: emptied first, or not used.
    if not slot.empty() and not slot.kill(
        reap=lambda: purge_uid(lease.uid, timeout=0.0) if is_root() else None
    ):
        raise SandboxError(f"the slot cgroup {slot.name} runs processes that will not die")
    paths = [src for src, _ in runtime_binds(sb, lang) if src]
    paths += [str(sb.state_path()), str(sb.cache_path())]
    if bot is not None:
        paths.append(str(bot))
    limits = cgroups.SlotLimits(
        memory=sb._slot_memory(),
        pids=sb.nproc,
        cpu=sb.cpu,
        io_bps=sb.io_bps,
        devices=_io_devices(paths) if sb.io_bps > 0 else (),
    )
    try:
        slot.apply(limits)
        slot.watch_oom()
    except OSError as exc:
        raise SandboxError(
            f"cannot set the limits of the slot cgroup {slot.name} ({exc.strerror})"
        ) from None
    return slot
