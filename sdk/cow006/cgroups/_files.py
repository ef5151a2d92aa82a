"""The cgroup file system's own files, and the one error of ``cow006.cgroups``.

A cgroup file is never created, only written (``write``: a missing file is an error, not a
new regular file) and read whole (``read``, ``keyed`` for flat keyed files, ``pids`` for
``cgroup.procs``).
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path


class CgroupError(Exception):
    """Cgroups cannot be used as the sandbox needs them; the message is one sentence."""


def write(path: str | Path, text: str) -> None:
    """Write one value to an existing cgroup file (O_CREAT never: a missing file is an error,
    not a new regular file)."""
    fd = os.open(path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def read(path: str | Path) -> str:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("ascii", "replace")


def keyed(path: Path) -> dict[str, int]:
    """A flat keyed file (``memory.events``, ``memory.oom_control``) as a dict."""
    out = {}
    for line in read(path).splitlines():
        words = line.split()
        if len(words) == 2 and words[1].lstrip("-").isdigit():
            out[words[0]] = int(words[1])
    return out


def pids_in(path: str | Path) -> set[int]:
    """The pids a ``cgroup.procs`` file lists (none if the cgroup is gone)."""
    try:
        return {int(w) for w in read(path).split() if w.isdigit()}
    except FileNotFoundError:
        return set()


def mkdir(path: Path) -> None:
    try:
        path.mkdir(mode=0o755, parents=True, exist_ok=True)
    except OSError as exc:
        raise CgroupError(f"cannot create the cgroup {path}: {exc.strerror}") from None


def kill_all(pids: Iterable[int]) -> None:
    """SIGKILL each of ``pids`` (those already gone, or not ours to kill, are skipped)."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
