"""The bubblewrap command line of one bot process: its namespaces and what is bound where.

Every namespace unshared (user, pid, network, ipc, uts, mount, cgroup), no capabilities, a
new session, no further user namespaces (``--disable-userns``, bwrap 0.8), death with the
host, an empty environment but for ``launch.BOT_ENV``.  The root is an empty tmpfs made
read-only at the end, holding only: the runtime (``_runtime``), the host's top-level
symlinks, the bot's files at /bot (``_botfiles``), a fresh /proc with the host's global
files masked (``_procfs``), a minimal read-only /dev and a private /tmp.  The seccomp program
is read from a file descriptor (``--seccomp FD``) that the caller fills in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .. import launch
from ._botfiles import BOT_DEST, bot_source
from ._procfs import mask_binds
from ._runtime import runtime_binds, top_symlinks

if TYPE_CHECKING:
    from ._config import Sandbox
    from ._probe import SandboxStatus
    from ._slots import Lease


def bwrap_command(
    sb: Sandbox,
    argv: Sequence[str],
    *,
    lang: str,
    bot: Path | None,
    lease: Lease,
    env: Mapping[str, str] | None,
    status: SandboxStatus,
) -> list[str]:
    """The bwrap argv that runs ``argv`` for this lease (``--seccomp`` still ``-1``)."""
    cmd = [status.bwrap or sb.bwrap, "--unshare-all", "--unshare-user"]
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
    for src, dest in runtime_binds(sb, lang):
        if src:
            cmd += ["--ro-bind", src, dest]
        else:  # an empty read-only directory over ``dest``
            cmd += ["--size", "4096", "--tmpfs", dest, "--remount-ro", dest]
    for link, target in top_symlinks():
        cmd += ["--symlink", target, link]
    if bot is not None:
        files = bot_source(sb, bot, lease)
        dest = BOT_DEST if bot.is_dir() else f"{BOT_DEST}/{bot.name}"
        cmd += ["--ro-bind", str(files), dest]
    else:
        cmd += ["--dir", BOT_DEST]
    cmd += ["--proc", "/proc"]
    for src, dest in mask_binds(sb):  # the host's global /proc files, neutralised
        cmd += ["--ro-bind", src, dest]
    cmd += [
        "--dev",
        "/dev",
        "--remount-ro",
        "/dev",
        "--perms",
        "1777",
        "--size",
        str(sb.tmp_size),
        "--tmpfs",
        "/tmp",
        "--remount-ro",
        "/",
        "--chdir",
        BOT_DEST,
        "--seccomp",
        "-1",  # the fd is filled in by _process.start
        "--",
        *argv,
    ]
    return cmd
