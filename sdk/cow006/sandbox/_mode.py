"""Whether bots run sandboxed: the probe's verdict, and the fail-closed rule.

``probe()`` says whether the sandbox works here (once per process and configuration).
``resolve_mode(flag)`` is the rule: ``--sandbox`` or no flag wants the sandbox, and when it
does not work nothing runs (one sentence naming what is missing); only ``--no-sandbox``, or
``COW006_SANDBOX=off`` with no flag, runs bots as plain processes, and then the match log
records ``"sandbox": false`` (``log_entry``).  ``launcher`` gives the matching launcher.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .. import launch
from ._config import Sandbox
from ._errors import SandboxError
from ._probe import SandboxStatus, status

ENV_MODE = "COW006_SANDBOX"  # "off" runs bots unisolated; "on" (or unset) requires the sandbox
_OFF = frozenset({"0", "off", "false", "no"})
_ON = frozenset({"1", "on", "true", "yes", "required"})


def probe(sandbox: Sandbox | None = None, *, refresh: bool = False) -> SandboxStatus:
    """Check, once per process and configuration, that the sandbox works on this machine.

    bwrap present and new enough, the seccomp filter builds, the state directories are
    safe, and a probe process started in the sandbox runs as the slot's uid, under seccomp,
    with an empty environment (its pid 1's too) and no network.
    """
    return status(sandbox or Sandbox(), refresh=refresh)


def resolve_mode(
    flag: bool | None = None,
    *,
    needed: bool = True,
    sandbox: Sandbox | None = None,
    environ: Mapping[str, str] | None = None,
) -> Sandbox | None:
    """The fail-closed rule: the Sandbox to run bot processes in, or None to run them bare.

    ``flag`` is the command line's ``--sandbox`` (True) / ``--no-sandbox`` (False) / nothing
    (None, then ``COW006_SANDBOX``: ``off`` runs bare, anything else wants the sandbox).
    When the sandbox is wanted and does not work here, raises SandboxError (a Cow006Error)
    with one sentence naming what is missing; nothing falls back to bare processes silently.
    ``needed=False`` (every agent plays in-process: no bot process to confine) gives None
    unless ``--sandbox`` was asked for explicitly.
    """
    env = os.environ if environ is None else environ
    if not needed and not flag:
        return None
    if flag is None:
        word = env.get(ENV_MODE, "").strip().lower()
        if word in _OFF:
            return None
        if word and word not in _ON:
            raise SandboxError(f"{ENV_MODE}={word!r}: expected on or off")
    elif not flag:
        return None
    sb = sandbox or Sandbox()
    found = probe(sb)
    if not found.ok:
        raise SandboxError(
            f"the sandbox is required but not available: {found.reason}; "
            f"run with --no-sandbox (or {ENV_MODE}=off) to run bots without isolation"
        )
    return sb


def log_entry(sandbox: Sandbox | None) -> dict[str, Any] | bool:
    """The match log's ``sandbox`` field: False for bare processes, else what isolated them."""
    return False if sandbox is None else sandbox.describe()


def launcher(sandbox: Sandbox | None) -> Callable[[str | Path], subprocess.Popen[bytes]]:
    """The RemoteAgent launcher for a mode from ``resolve_mode``."""
    return launch.launch if sandbox is None else sandbox.launch
