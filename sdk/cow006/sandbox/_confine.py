"""What a bot process does to itself between fork and exec, while the host's code still runs.

In this order, since the first two need root: join the slot's cgroup(s) (``cgroup.procs``
of each hierarchy), make itself the OOM killer's first choice (``oom_score_adj`` 1000), set
its rlimits, then drop to the slot uid with no supplementary groups.  Anything failing
raises, and the child never execs: no bot code ever runs outside its slot.  (CPython's own
``user=``/``group=`` switch in ``Popen`` comes before ``preexec_fn``: too early for both.)
"""

from __future__ import annotations

import os
import resource
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import cgroups
from ._host import is_root
from ._uids import uid_procs

if TYPE_CHECKING:
    from ._config import Sandbox


def rlimits(sb: Sandbox, lang: str) -> list[tuple[int, int]]:
    """The rlimits of a bot process (node's address space is larger: V8 reserves it)."""
    memory = max(sb.memory, sb.node_memory) if lang == "node" else sb.memory
    out = [
        (resource.RLIMIT_AS, memory),
        (resource.RLIMIT_CPU, sb.cpu_seconds),
        (resource.RLIMIT_FSIZE, sb.fsize),
        (resource.RLIMIT_NOFILE, sb.nofile),
        (resource.RLIMIT_CORE, 0),
    ]
    if is_root():
        out.append((resource.RLIMIT_NPROC, sb.nproc))
    else:  # the count is per user: leave room for what the user already runs
        out.append((resource.RLIMIT_NPROC, len(uid_procs(os.getuid())) + sb.nproc))
    return out


class Preexec:
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
