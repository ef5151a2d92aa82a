"""``Sandbox``: how bots are confined (its limits and directories), and its two entry points.

``Sandbox().launch`` is a drop-in ``launcher`` for ``cow006.host.RemoteAgent``: it turns the
argv of ``cow006.launch`` into a sandboxed start (``_process.start``); ``spawn`` starts any
argv of one of the runtimes.  Both first check that the sandbox works here (``_probe``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import cgroups, launch
from ._botfiles import BOT_DEST
from ._errors import SandboxError
from ._handoff import HANDOFF
from ._host import default_cache_dir, default_state_dir, is_root
from ._probe import status
from ._process import SandboxedProcess, start
from ._runtime import SDK_DEST, bot_libs_dest
from ._slot_cgroup import hierarchy

MiB = 1 << 20
# "off": Python bots start in bwrap, as node bots do, instead of from the fork server.
ENV_ZYGOTE = "COW006_SANDBOX_ZYGOTE"
_keys: dict[tuple[Any, ...], tuple[str, ...]] = {}  # Sandbox._key, per configuration


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
    zygote: bool | None = None

    def zygote_on(self) -> bool:
        """Whether Python bots start from the fork server (``_forkserver``, the default)
        rather than bwrap: ``zygote``, else ``COW006_SANDBOX_ZYGOTE`` (on unless ``off``)."""
        if self.zygote is not None:
            return self.zygote
        word = os.environ.get(ENV_ZYGOTE, "").strip().lower()
        if word in ("", "1", "on", "true", "yes"):
            return True
        if word in ("0", "off", "false", "no"):
            return False
        raise SandboxError(f"{ENV_ZYGOTE}={word!r}: expected on or off")

    # -- what the log says ---------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        """The match log's ``sandbox`` entry: what isolated the bots."""
        st = status(self)
        return {
            "kind": "bwrap",
            "bwrap": st.version,
            "namespaces": ["user", "pid", "net", "ipc", "uts", "mount", "cgroup"],
            "seccomp": st.seccomp,
            "uid": "per-slot" if is_root() else "host",
            "memory": self.memory,
            "cpu_seconds": self.cpu_seconds,
            "nproc": self.nproc,
            "fsize": self.fsize,
            "nofile": self.nofile,
            "tmp_size": self.tmp_size,
            "cgroups": self._cgroups_entry(),
            # Python bots: the same sandbox built by a fork of the fork server (True), or
            # by bwrap (False).  Node bots always start in bwrap.
            "zygote": self.zygote_on(),
        }

    def _cgroups_entry(self) -> dict[str, Any] | bool:
        """The log's record of the slot cgroups: False when they are off."""
        if not self._cgroups_on():
            return False
        try:
            version: int | None = hierarchy(self).version
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
        """Where the slot locks and the copies of bots are kept."""
        return Path(self.state_dir) if self.state_dir else default_state_dir()

    def cache_path(self) -> Path:
        """Where the runtimes staged for the slot uids are kept."""
        return Path(self.cache_dir) if self.cache_dir else default_cache_dir(self.state_path())

    def _key(self) -> tuple[str, ...]:
        """What the probe and the staged runtimes depend on (not the limits or the slots).
        Asked several times for every bot started: remembered for this configuration and
        the environment variables it reads."""
        env = os.environ
        memo = (
            self,
            os.geteuid(),
            env.get("XDG_RUNTIME_DIR"),
            env.get(cgroups.ENV),
            env.get(cgroups.ENV_PARENT),
            env.get(ENV_ZYGOTE),
            env.get(launch.ENV_BOTLIBS),
        )
        key = _keys.get(memo)
        if key is None:
            key = _keys[memo] = self._compute_key()
        return key

    def _compute_key(self) -> tuple[str, ...]:
        try:
            groups = str(self._cgroups_on())
        except SandboxError as exc:
            groups = str(exc)
        parent = self.cgroup_parent or os.environ.get(cgroups.ENV_PARENT, "")
        try:
            zygote = str(self.zygote_on())
        except SandboxError as exc:
            zygote = str(exc)
        try:
            botlibs = str(launch.botlibs_dir())
        except Exception as exc:  # a bad COW006_BOTLIBS: the start of a bot says so
            botlibs = str(exc)
        return (
            self.bwrap,
            str(self.state_path()),
            str(self.cache_path()),
            groups,
            parent,
            zygote,
            botlibs,
        )

    # -- launching ---------------------------------------------------------------------------
    def launch(self, path: str | Path) -> SandboxedProcess:
        """The ``RemoteAgent`` launcher: run the bot at ``path`` in the sandbox."""
        lang, file = launch.resolve(path)
        libs = bot_libs_dest()
        argv = launch.command(lang, file, sdk=SDK_DEST, libs=libs)
        p = Path(path)
        bot_src = p.resolve() if p.is_dir() else file
        # The file itself, or the entry in the folder (bot.py, or the manifest's).
        inside = file.relative_to(bot_src).as_posix() if p.is_dir() else file.name
        argv[-1] = f"{BOT_DEST}/{inside}"
        if lang == "python" and self.zygote_on():
            # The zygote's child hands the bot its stdio pipes itself: only the bot holds them.
            return self.spawn(argv, lang=lang, bot=bot_src)
        if lang == "python":
            # The protocol pipes are handed to the bot over a socket once it runs, so that
            # only the bot holds them (bwrap's own processes keep their stdio): a bot that
            # closes its output is seen to, as outside the sandbox.
            at = argv.index("-c") + 1
            argv[at : at + 1] = [HANDOFF + launch.bootstrap(SDK_DEST, libs), "{fd}"]
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
        found = status(self)
        if not found.ok:
            raise SandboxError(f"the sandbox is not available: {found.reason}")
        return start(self, argv, lang=lang, bot=bot, env=env, status=found, handoff=handoff)
