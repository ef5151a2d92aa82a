"""Who the host is and where it keeps the sandbox's files.

A root host gives each slot a uid of its own and keeps its state (slot locks, copies of
bots) under ``/run/cow006-sandbox`` and what it stages for the slot uids (runtimes, the SDK,
the neutral /proc files) under ``/var/cache/cow006-sandbox``; another user keeps both under
its runtime directory.  Every such directory is the host's alone (``safe_dir``).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ._errors import SandboxError


def is_root() -> bool:
    """Whether the host runs as root (then bots get per-slot uids)."""
    return os.geteuid() == 0


def default_state_dir() -> Path:
    """Where slot locks and bot copies live when ``Sandbox.state_dir`` is not set."""
    if is_root():
        return Path("/run/cow006-sandbox")
    base = os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"cow006-sandbox-{os.getuid()}"


def default_cache_dir(state: Path) -> Path:
    """Where staged runtimes live when ``Sandbox.cache_dir`` is not set."""
    if is_root():
        return Path("/var/cache/cow006-sandbox")
    return state / "cache"


def safe_dir(path: Path) -> None:
    """Create ``path`` owned by us, writable by us alone (0711: others may pass through to
    what is staged inside, but not list it); refuse one that someone else could change."""
    try:
        path.mkdir(mode=0o711, parents=True, exist_ok=True)
        st = os.lstat(path)
    except OSError as exc:
        raise SandboxError(f"cannot create the sandbox directory {path}: {exc}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise SandboxError(
            f"the sandbox directory {path} must be a directory owned by uid {os.geteuid()} "
            "and writable by it alone"
        )
    if st.st_mode & 0o777 != 0o711:
        os.chmod(path, 0o711)
