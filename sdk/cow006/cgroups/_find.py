"""Which hierarchy the slot cgroups are made in, and whether they are wanted at all.

``enabled`` reads ``COW006_SANDBOX_CGROUPS`` (on unless ``off``).  ``find`` picks cgroup v2
where the host's own cgroup (or ``COW006_SANDBOX_CGROUP_PARENT``) has the memory, pids and
cpu controllers and is delegated to it, else cgroup v1 when root can write the memory, pids
and cpu hierarchies; it raises ``CgroupError`` with one sentence when neither is usable (the
sandbox then fails closed).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ._files import CgroupError, read
from ._mounts import below, mounts, own_cgroups
from ._slot import REQUIRED, Hierarchy
from ._v1 import V1, V1_CONTROLLERS
from ._v2 import HOST_LEAF, V2, V2_CONTROLLERS

ENV = "COW006_SANDBOX_CGROUPS"  # "off": sandboxed bots run without cgroups (logged)
ENV_PARENT = "COW006_SANDBOX_CGROUP_PARENT"  # where the slot cgroups are made (see find)
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"", "1", "on", "true", "yes", "required"})


def enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether ``COW006_SANDBOX_CGROUPS`` leaves cgroups on (the default: unset or ``on``).

    Raises CgroupError for a word that is neither on nor off."""
    env = os.environ if environ is None else environ
    word = env.get(ENV, "").strip().lower()
    if word in _OFF:
        return False
    if word in _ON:
        return True
    raise CgroupError(f"{ENV}={word!r}: expected on or off")


def find(
    parent: str | None = None,
    *,
    mountinfo: str | None = None,
    self_cgroup: str | None = None,
    prepare: bool = True,
) -> Hierarchy:
    """The hierarchy to make slot cgroups in (prepared: directories made, v2 controllers
    enabled).  Raises CgroupError saying what is missing.

    ``parent`` (else ``COW006_SANDBOX_CGROUP_PARENT``) is a cgroup path, as
    /proc/self/cgroup writes them; the slots go in ``<parent>/cow006-NAME``.  Its default: on
    v2 the host's own cgroup (the delegated one), on v1 the root of each hierarchy (v1 is
    not delegated; root writes it).  ``mountinfo`` and ``self_cgroup`` replace the text of
    /proc/self/mountinfo and /proc/self/cgroup (tests point them at a fake tree).
    """
    if parent is None:
        parent = os.environ.get(ENV_PARENT) or None
    try:
        found = mounts(mountinfo)
        own = own_cgroups(self_cgroup)
    except (OSError, ValueError) as exc:
        raise CgroupError(f"cannot read this process's mounts and cgroups ({exc})") from None
    reasons = []
    for m in found:
        if m.fstype != "cgroup2":
            continue
        path = parent if parent is not None else own.get("")
        if path is None:
            continue
        if parent is None and path.rstrip("/").endswith("/" + HOST_LEAF):
            path = path.rstrip("/").rsplit("/", 1)[0] or "/"  # moved there by an earlier host
        base = below(m, "/" + path.strip("/"))
        if base is None or not base.is_dir():
            continue
        try:
            have = set(read(base / "cgroup.controllers").split())
        except OSError:
            continue
        if not all(c in have for c in REQUIRED):
            lacking = ", ".join(c for c in REQUIRED if c not in have)
            reasons.append(f"the cgroup v2 hierarchy at {base} has no {lacking} controller")
            continue
        v2 = V2(Path(m.point), base)
        if prepare:
            v2.prepare()
        else:
            v2.controllers = tuple(c for c in V2_CONTROLLERS if c in have)
        return v2
    dirs: dict[str, Path] = {}
    for m in found:
        if m.fstype != "cgroup":
            continue
        for ctrl in V1_CONTROLLERS:
            if ctrl in m.options and ctrl not in dirs:
                rel = (parent or "/").strip("/")
                dirs[ctrl] = Path(m.point) / rel if rel else Path(m.point)
    missing = [c for c in REQUIRED if c not in dirs]
    if missing:
        reasons.append(
            f"no cgroup v1 hierarchy has the {', '.join(missing)} controller"
            if dirs
            else "no cgroup v1 hierarchy is mounted"
        )
        raise CgroupError(
            "no usable cgroups: "
            + "; ".join(reasons)
            + " (see docs/sandbox.md: a delegated cgroup v2 subtree, or root with cgroup v1)"
        )
    for ctrl in REQUIRED:
        top = dirs[ctrl]
        while not top.exists() and top != top.parent:  # the nearest one that exists
            top = top.parent
        if not os.access(top, os.W_OK):
            raise CgroupError(
                f"the cgroup v1 {ctrl} hierarchy ({top}) is not writable by this user "
                "(run the host as root, or use a delegated cgroup v2 subtree)"
            )
    v1 = V1(dirs)
    if prepare:
        v1.prepare()
    return v1
