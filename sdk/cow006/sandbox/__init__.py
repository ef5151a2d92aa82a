"""The sandbox: bot processes inside bubblewrap, as a dedicated uid, under a seccomp filter.

``Sandbox().launch`` is a drop-in ``launcher`` for ``cow006.host.RemoteAgent``: it turns the
argv of ``cow006.launch`` into a ``bwrap`` invocation and starts it.  What a bot gets:

* its own user, pid, network, ipc, uts, mount and cgroup namespaces (``--unshare-all``), no
  capabilities, a new session, no further user namespaces (``--disable-userns``), and death
  with its host (``--die-with-parent``);
* a root file system that is an empty, read-only tmpfs holding only: the real interpreter
  binary (Python or node) with its standard library and shared libraries, the ``cow006``
  package at ``/sdk/cow006`` (the host's compiled copy: ``launch.compiled_sdk``), the bot's
  own files at ``/bot`` (read-only: regular files and folders only), a fresh ``/proc`` whose
  machine-wide files are masked (``PROC_MASKS``), a minimal ``/dev`` (read-only), and a
  private ``/tmp`` of ``tmp_size`` bytes.  No ``/etc``, no ``/run``, no home, no other bot;
* an empty environment but for ``cow006.launch.BOT_ENV`` (bwrap itself is started with an
  empty environment too: its pid 1 inside keeps its environment readable);
* a seccomp filter (``DENIED_SYSCALLS``; sockets of the UNIX family only);
* resource limits (``RLIMIT_AS``, ``_CPU``, ``_NPROC``, ``_FSIZE``, ``_NOFILE``, ``_CORE``),
  and a cgroup per slot (``cow006.cgroups``: memory, pids, CPU and disk bandwidth caps for
  all the slot's processes together, joined before any bot code runs, emptied at release)
  with ``oom_score_adj`` 1000 for every bot process;
* when the host runs as root, a dedicated non-root uid per concurrent *slot*
  (``uid_base + n``), so ``RLIMIT_NPROC`` really bounds a fork bomb.  A slot is held with an
  ``flock`` under a root-owned directory (safe across processes), and before its uid is used
  again every process of that uid is killed and reaped (the host is made a child subreaper).

Python bots are started by default from a fork server instead of bwrap (the zygote:
``cow006._zygote``, ``_forkserver``), whose child builds the very same sandbox itself before
anything of the bot's runs; ``COW006_SANDBOX_ZYGOTE=off`` (``Sandbox(zygote=False)``) starts
them through bwrap, as node bots always are.

Killing the ``bwrap`` process (the host kills the process group) takes the whole pid
namespace with it, as killing the zygote's child does.  ``probe()`` checks all of this works
on the machine by running a probe process in the sandbox (through the zygote when it is on);
``resolve_mode()`` is the fail-closed rule: when the sandbox is wanted and the probe fails,
nothing runs, unless the caller explicitly says ``--no-sandbox`` (or ``COW006_SANDBOX=off``),
and then the match log records ``"sandbox": false``.

The modules, in the order a bot process is started through them (``_process.start``):

* ``_config``: ``Sandbox``, the limits and directories, and its ``launch`` / ``spawn``;
* ``_mode``: ``probe``, ``resolve_mode``, ``log_entry``, ``launcher``;
* ``_probe``: the probe process and the judgement of what it saw (``SandboxStatus``);
* ``_slots``: leases of the slots (flock, uid) and their release; ``_uids``: the processes of
  a slot uid, and purging them;
* ``_slot_cgroup``: the slot's cgroup, its limits written for each lease;
* ``_runtime`` (interpreter, stdlib, libraries, the SDK), ``_botfiles`` (the bot's files,
  checked, copied if need be), ``_procfs`` (the masked /proc files), ``_staging`` (copies of
  what the slot uid cannot reach): what is bound where;
* ``_command``: the bwrap command line; ``_seccomp``: the filter; ``_confine``: what the
  child does between fork and exec (cgroup, ``oom_score_adj``, rlimits, the slot uid);
  ``_handoff``: the protocol pipes of a Python bot, passed over a socket;
* ``_forkserver``: the zygote's host side (the fork server per host, a bot's request);
* ``_process``: ``start`` and ``SandboxedProcess``; ``_host``, ``_errors``: shared bits.

Only the standard library is imported; the seccomp binding is imported when the filter is
first built.  See docs/sandbox.md.
"""

from __future__ import annotations

from ._botfiles import BOT_DEST
from ._config import ENV_ZYGOTE, MiB, Sandbox
from ._errors import SandboxError
from ._forkserver import zygote_pids
from ._handoff import HANDOFF
from ._mode import ENV_MODE, launcher, log_entry, probe, resolve_mode
from ._probe import PROBE_TIMEOUT, SandboxStatus
from ._process import SandboxedProcess
from ._procfs import NEUTRAL_BOOT_ID, NEUTRAL_LOADAVG, PROC_MASKS
from ._runtime import SDK_DEST, STDLIB_SKIP
from ._seccomp import CLONE_NS_FLAGS, DENIED_SYSCALLS, seccomp_filter

__all__ = [
    "BOT_DEST",
    "CLONE_NS_FLAGS",
    "DENIED_SYSCALLS",
    "ENV_MODE",
    "ENV_ZYGOTE",
    "HANDOFF",
    "NEUTRAL_BOOT_ID",
    "NEUTRAL_LOADAVG",
    "PROBE_TIMEOUT",
    "PROC_MASKS",
    "SDK_DEST",
    "STDLIB_SKIP",
    "MiB",
    "Sandbox",
    "SandboxError",
    "SandboxStatus",
    "SandboxedProcess",
    "launcher",
    "log_entry",
    "probe",
    "resolve_mode",
    "seccomp_filter",
    "zygote_pids",
]
