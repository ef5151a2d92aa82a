"""Where the cgroup hierarchies are: this process's mounts and its own cgroups.

``mounts`` parses ``/proc/self/mountinfo`` (or text in its format, for tests), and
``own_cgroups`` ``/proc/self/cgroup``; ``below`` finds a cgroup's directory under a mount.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ._files import read


@dataclass(frozen=True, slots=True)
class Mount:
    """One line of mountinfo: what is mounted where."""

    dev: tuple[int, int]
    root: str
    point: str
    fstype: str
    source: str
    options: tuple[str, ...]


def _unescape(field: str) -> str:
    """mountinfo escapes space, tab, newline and backslash as octal (``\\040``)."""
    if "\\" not in field:
        return field
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def mounts(text: str | None = None) -> list[Mount]:
    """The mounts of ``/proc/self/mountinfo`` (or of ``text``, in its format)."""
    if text is None:
        text = read(Path("/proc/self/mountinfo"))
    out = []
    for line in text.splitlines():
        words = line.split()
        if "-" not in words[6:]:
            continue
        sep = words.index("-", 6)
        if len(words) < sep + 4:
            continue
        major, _, minor = words[2].partition(":")
        out.append(
            Mount(
                (int(major), int(minor)),
                _unescape(words[3]),
                _unescape(words[4]),
                words[sep + 1],
                _unescape(words[sep + 2]),
                tuple(words[sep + 3].split(",")),
            )
        )
    return out


def own_cgroups(text: str | None = None) -> dict[str, str]:
    """``/proc/self/cgroup`` as {controller or "" for v2: path}."""
    if text is None:
        text = read(Path("/proc/self/cgroup"))
    out = {}
    for line in text.splitlines():
        _, ctrls, path = line.split(":", 2)
        for ctrl in ctrls.split(",") if ctrls else [""]:
            out[ctrl] = path
    return out


def below(mount: Mount, path: str) -> Path | None:
    """The directory of cgroup ``path`` (as /proc/self/cgroup names it) under ``mount``, or
    None when that mount does not show it."""
    root = mount.root.rstrip("/")
    if path != root and not path.startswith(root + "/"):
        return None
    rel = path[len(root) :].lstrip("/")
    return Path(mount.point) / rel if rel else Path(mount.point)
