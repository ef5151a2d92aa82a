"""The probe: does the sandbox really work on this machine, with this configuration?

``status`` checks once per process and configuration: bwrap present (0.8 or later for
``--disable-userns``), the seccomp filter builds, the state directories are safe, the slot
cgroups are usable when wanted; then it starts a probe process in the sandbox with the real
machinery (bwrap, or the zygote when ``Sandbox.zygote_on()``: ``_forkserver``) and judges
what it reports: it runs as the slot uid (not root), under seccomp, with an empty
environment (its pid 1's too), without /etc, cannot open a socket or reach a port the probe
listens on, holds no capability (effective, permitted or bounding) and has ``no_new_privs``,
sees the neutral /proc files, is refused inotify, the AIO calls and sysinfo, sits in a pid
namespace of its own and in its slot's cgroup with the limits in force.  A ``SandboxStatus``
says what was found; its ``reason`` names what is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .. import cgroups, launch
from ._errors import SandboxError
from ._host import is_root, safe_dir
from ._process import SandboxedProcess, start
from ._procfs import neutral_proc
from ._seccomp import seccomp_bpf
from ._slot_cgroup import hierarchy

if TYPE_CHECKING:
    from ._config import Sandbox

PROBE_TIMEOUT = 15.0


@dataclass(frozen=True, slots=True)
class SandboxStatus:
    """What ``probe`` found: ``ok`` when bots can run sandboxed, else ``problems`` say why."""

    ok: bool
    problems: tuple[str, ...] = ()
    bwrap: str | None = None
    version: str | None = None
    seccomp: bool = False
    disable_userns: bool = False
    per_slot_uid: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str:
        """One sentence: what is missing, or that the sandbox works."""
        return "; ".join(self.problems) if self.problems else "the sandbox works"


_probe_lock = threading.RLock()
_probed: dict[tuple[str, ...], SandboxStatus] = {}

# The probe process: what it sees and can do, as one JSON line on stdout.
_PROBE_CODE = r"""
import json, os, socket, sys
out = {"uid": os.getuid(), "pid": os.getpid(), "env": sorted(os.environ)}
try:
    out["init_environ"] = len(open("/proc/1/environ", "rb").read())
except OSError as exc:
    out["init_environ"] = str(exc)
with open("/proc/self/status") as f:
    status = dict(ln.split(":", 1) for ln in f if ":" in ln)
out["seccomp"] = status["Seccomp"].strip()
out["caps"] = {k: status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs")}
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(0.5)
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        out["net"] = "connected"
    except OSError as exc:
        out["net"] = "connect failed: %s" % exc
except OSError as exc:
    out["net"] = "socket denied: %s" % exc
try:
    out["etc"] = os.listdir("/etc")
except OSError:
    out["etc"] = None
out["proc"] = {}
for name in ("loadavg", "stat", "pressure/cpu", "cmdline", "sys/kernel/random/boot_id"):
    try:
        with open("/proc/" + name, "rb") as f:
            out["proc"][name] = f.read(8192).decode("latin-1")
    except OSError:
        out["proc"][name] = None
try:  # both denied by the seccomp filter: inotify, and the machine-wide AIO pool
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    out["inotify"] = "allowed" if fd >= 0 else os.strerror(ctypes.get_errno())
    nr = {"x86_64": 206, "aarch64": 0}.get(os.uname().machine)  # io_setup
    if nr is not None:
        ctx = ctypes.c_ulong(0)
        ok = libc.syscall(nr, 1, ctypes.byref(ctx)) == 0
        out["aio"] = "allowed" if ok else os.strerror(ctypes.get_errno())
    info = ctypes.create_string_buffer(256)
    out["sysinfo"] = "allowed" if libc.sysinfo(info) == 0 else os.strerror(ctypes.get_errno())
except Exception as exc:
    out["inotify"] = "not tried: %s" % exc
print(json.dumps(out))
"""


def status(sb: Sandbox, *, refresh: bool = False) -> SandboxStatus:
    """What the probe found for ``sb`` (run once per process and configuration, unless
    ``refresh``)."""
    key = sb._key()
    with _probe_lock:  # held throughout: a first probe runs once, the others wait for it
        if refresh or key not in _probed:
            _probed[key] = _probe(sb)
        return _probed[key]


def _probe(sb: Sandbox) -> SandboxStatus:
    if not sys.platform.startswith("linux"):
        return SandboxStatus(False, ("the sandbox needs Linux (bubblewrap, namespaces)",))
    bwrap = shutil.which(sb.bwrap) or shutil.which(sb.bwrap, path="/usr/bin:/bin")
    if bwrap is None:
        return SandboxStatus(False, ("bubblewrap is not installed (apt-get install bubblewrap)",))
    version = _bwrap_version(bwrap)
    if version is None:
        return SandboxStatus(False, (f"{bwrap} --version failed",), bwrap)
    nums = tuple(int(x) for x in version.split(".")[:2] if x.isdigit())
    problems: list[str] = []
    seccomp = True
    try:
        seccomp_bpf()
    except ImportError:
        seccomp = False
        problems.append(
            "no Python binding of libseccomp is installed "
            "(pip install pyseccomp, or apt-get install python3-seccomp)"
        )
    except Exception as exc:  # libseccomp itself missing or too old
        seccomp = False
        problems.append(
            f"the seccomp filter cannot be built ({type(exc).__name__}: {exc}; "
            "apt-get install libseccomp2)"
        )
    try:
        for d in (sb.state_path(), sb.cache_path()):
            safe_dir(d)
    except SandboxError as exc:
        problems.append(str(exc))
    try:  # fail closed: slot cgroups are wanted (the default) and none is usable
        if sb._cgroups_on():
            hierarchy(sb)
    except SandboxError as exc:
        problems.append(str(exc))
    partial = SandboxStatus(
        False,
        tuple(problems),
        bwrap,
        version,
        seccomp,
        disable_userns=nums >= (0, 8),
        per_slot_uid=is_root(),
    )
    if problems:
        return partial
    # Run the probe process with the real machinery, as if the sandbox worked.
    trial = SandboxStatus(
        True, (), bwrap, version, True, partial.disable_userns, partial.per_slot_uid
    )
    try:
        found = _run_probe(sb, trial)
    except Exception as exc:
        found = {"error": f"{type(exc).__name__}: {exc}"}
    problems += _judge_probe(found) + _judge_isolation(sb, found)
    return SandboxStatus(
        not problems,
        tuple(problems),
        bwrap,
        version,
        seccomp,
        partial.disable_userns,
        partial.per_slot_uid,
        found,
    )


def _bwrap_version(bwrap: str) -> str | None:
    try:
        out = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, env={}
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = out.stdout.split()
    return words[-1] if out.returncode == 0 and words else None


def _run_probe(sb: Sandbox, trial: SandboxStatus) -> dict[str, Any]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        argv = [launch.python_executable(), "-I", "-S", "-B", "-c", _PROBE_CODE, str(port)]
        proc = start(sb, argv, lang="python", bot=None, env=None, status=trial, confirm=True)
        groups = _cgroup_facts(proc)
        try:
            out, err = proc.communicate(timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return {"error": f"the probe process did not finish within {PROBE_TIMEOUT:g} s"}
        try:
            conn, _ = listener.accept()
            conn.close()
            reached = True
        except BlockingIOError:
            reached = False
    finally:
        listener.close()
    if proc.returncode != 0:
        text = err.decode("utf-8", "replace").strip().splitlines()
        return {"error": f"the probe process failed: {text[-1] if text else proc.returncode}"}
    try:
        found: dict[str, Any] = json.loads(out)
    except ValueError:
        return {"error": f"the probe process printed {out[:200]!r}"}
    found["reached_host"] = reached
    found["cgroup"] = groups
    return found


def _cgroup_facts(proc: SandboxedProcess) -> dict[str, Any] | None:
    """What the host sees of a just started sandbox: which of its slot's cgroups hold it,
    whether the limits read back as written, its oom_score_adj (None: cgroups off)."""
    slot = proc.lease.cgroup
    if slot is None:
        return None
    members = slot.members()
    try:
        with open(f"/proc/{proc.pid}/oom_score_adj") as f:
            oom = f.read().strip()
    except OSError:
        oom = None
    return {
        "version": slot.version,
        "controllers": sorted(members),
        "joined": sorted(c for c, pids in members.items() if proc.pid in pids),
        "limits": slot.check(slot.limits) if slot.limits else ["no limits were written"],
        "oom_score_adj": oom,
    }


def _judge_isolation(sb: Sandbox, found: dict[str, Any]) -> list[str]:
    """The probe's checks of the pid namespace and of the slot cgroup's limits."""
    if "error" in found:
        return []  # _judge_probe says why
    problems = []
    pid = found.get("pid")
    if not isinstance(pid, int) or pid > 10:  # bwrap's init is pid 1 of a fresh namespace
        problems.append("the probe process is not in a pid namespace of its own")
    try:
        wanted = sb._cgroups_on()
    except SandboxError as exc:
        return [*problems, str(exc)]
    groups = found.get("cgroup")
    if not wanted:
        return problems
    if not isinstance(groups, dict):
        return [*problems, "the probe process got no slot cgroup"]
    missing = sorted(set(groups["controllers"]) - set(groups["joined"]))
    if missing or not groups["joined"]:
        problems.append(f"the probe process is not in its slot's cgroup ({', '.join(missing)})")
    if groups["limits"]:
        problems.append(f"the slot cgroup's limits are not in force: {'; '.join(groups['limits'])}")
    if groups["oom_score_adj"] != str(cgroups.OOM_SCORE_ADJ):
        problems.append(f"the probe process has oom_score_adj {groups['oom_score_adj']}")
    return problems


def _judge_probe(found: dict[str, Any]) -> list[str]:
    if "error" in found:
        return [f"a sandboxed probe process does not run ({found['error']})"]
    problems = []
    if is_root() and found.get("uid") == 0:
        problems.append("the probe process ran as root")
    extra = set(found.get("env", ())) - set(launch.BOT_ENV) - {"TMPDIR", "HOME", "PWD"}
    if extra:
        problems.append(f"the probe process saw environment variables {sorted(extra)}")
    if found.get("init_environ") not in (0, "0"):
        problems.append("the sandbox's pid 1 shows an environment")
    if found.get("seccomp") != "2":
        problems.append("the seccomp filter is not in force in the sandbox")
    caps = found.get("caps") or {}
    held = [k for k in ("CapEff", "CapPrm", "CapBnd") if caps.get(k, "?").strip("0")]
    if held or caps.get("NoNewPrivs") != "1":
        problems.append(
            f"the probe process keeps privileges ({', '.join(held) or 'new privileges'})"
        )
    if found.get("reached_host") or found.get("net") == "connected":
        problems.append("the probe process reached the network")
    if found.get("etc"):
        problems.append("the probe process sees /etc")
    if "allowed" in (found.get("inotify"), found.get("aio"), found.get("sysinfo")):
        problems.append("the seccomp filter lets inotify, the AIO calls or sysinfo through")
    neutral = neutral_proc()
    shown = found.get("proc") or {}
    leaks = [
        name
        for name, data in neutral.items()
        if name in shown and shown[name] != data.decode("latin-1")
    ]
    if leaks:
        problems.append(f"the host's /proc/{leaks[0]} shows in the sandbox")
    elif not shown:
        problems.append("the probe process did not report what /proc shows")
    return problems
