"""A cgroup per sandbox slot: limits that hold for everything a bot starts, however it forks.

``cow006.sandbox`` gives each concurrent bot a *slot* (a uid, a lock); this package gives each
slot a control group, so that the slot's processes together (the bot, its children, bwrap's
own processes) share one memory cap, one pids cap, one CPU quota and one disk bandwidth cap.
Per-process rlimits cannot do that: six children of 512 MiB each are within ``RLIMIT_AS``,
memfds are not in anyone's address space, and thirty busy children each get a full share of
the CPU.

Two kinds of hierarchy are supported behind one interface (``Hierarchy.slot`` gives a
``Slot``: ``apply``, ``check``, ``watch_oom``, ``kill``; ``_slot``):

* **cgroup v2** (``_v2``: the unified hierarchy, what production Linux uses), in a delegated
  subtree: ``memory.max``, ``memory.oom.group``, ``pids.max``, ``cpu.max``, ``io.max``,
  ``cgroup.kill``;
* **cgroup v1** (``_v1``: separate memory, pids, cpu, blkio and freezer hierarchies, writable
  by root), with a watcher thread that kills a slot at its first OOM (v1 has no
  ``memory.oom.group``).

The slot cgroups are siblings of what else runs at their level (not grouped under one
``cow006`` cgroup): the CPU controller shares time by weight between siblings, so a slot
competes as one task would, and a hog's thirty children cost the other bots no more than
one more process does, whatever else loads the machine.

v2 is used when the delegated subtree has the controllers, else v1.  ``find`` (``_find``)
raises ``CgroupError`` with one sentence when neither is usable (the sandbox then fails
closed).  ``block_devices`` (``_devices``) tells which disks the I/O cap applies to;
``mounts`` and ``own_cgroups`` (``_mounts``) read where the hierarchies are.

Tested for real on a v1 machine (tests/sdk/test_cgroups.py); the v2 code is tested against
a fake tree of its interface files in a temporary directory (the kernel's side, such as
processes moving between cgroups, is not exercised there).  Only the standard library is
used.  See docs/sandbox.md.
"""

from __future__ import annotations

from ._devices import all_disks, block_devices
from ._files import CgroupError
from ._find import ENV, ENV_PARENT, enabled, find
from ._mounts import Mount, mounts, own_cgroups
from ._slot import (
    CPU_PERIOD,
    KILL_TIMEOUT,
    OOM_SCORE_ADJ,
    PREFIX,
    REQUIRED,
    Hierarchy,
    Slot,
    SlotLimits,
)
from ._v1 import V1, V1_CONTROLLERS
from ._v2 import HOST_LEAF, V2, V2_CONTROLLERS

__all__ = [
    "CPU_PERIOD",
    "ENV",
    "ENV_PARENT",
    "HOST_LEAF",
    "KILL_TIMEOUT",
    "OOM_SCORE_ADJ",
    "PREFIX",
    "REQUIRED",
    "V1",
    "V1_CONTROLLERS",
    "V2",
    "V2_CONTROLLERS",
    "CgroupError",
    "Hierarchy",
    "Mount",
    "Slot",
    "SlotLimits",
    "all_disks",
    "block_devices",
    "enabled",
    "find",
    "mounts",
    "own_cgroups",
]
