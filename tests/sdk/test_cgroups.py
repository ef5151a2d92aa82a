"""cow006.cgroups: the slot cgroups of the sandbox.

cgroup v1 is tested for real where this machine has it writable (root, v1 memory/pids/cpu
hierarchies: the development machine and CI); otherwise those tests skip with the reason,
or fail when ``COW006_REQUIRE_SANDBOX=1``.  cgroup v2 is tested against a fake tree of its
interface files in a temporary directory: the files cow006.cgroups reads and writes, not the
kernel behind them (processes do not really move, limits do not really bite).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cow006 import cgroups, launch, sandbox
from cow006.cgroups._devices import _whole_disk

# Sandbox slots and their cgroups: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

MiB = 1 << 20
PARENT = f"cow006-test-{os.getpid()}"


def _v1_or_skip() -> cgroups.V1:
    try:
        hier = cgroups.find(PARENT)
    except cgroups.CgroupError as exc:
        reason = f"no writable cgroups here: {exc}"
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    if not isinstance(hier, cgroups.V1):
        pytest.skip("this machine has cgroup v2 delegated: the v1 tests do not apply")
    return hier


@pytest.fixture
def v1() -> Iterator[cgroups.V1]:
    hier = _v1_or_skip()
    made: list[cgroups.Slot] = []
    orig = hier.slot

    def slot(name: str) -> cgroups.Slot:
        s = orig(name)
        made.append(s)
        return s

    hier.slot = slot  # type: ignore[method-assign]
    yield hier
    for s in made:
        s.kill(timeout=2.0)
        s.remove()
    for d in hier.dirs.values():
        for path in (d, d.parent):
            try:
                path.rmdir()
            except OSError:
                pass


def _join(slot: cgroups.Slot) -> object:
    files = slot.procs_files()

    def pre() -> None:
        for path in files:
            fd = os.open(path, os.O_WRONLY)
            os.write(fd, b"0")
            os.close(fd)

    return pre


def _run_in(slot: cgroups.Slot, code: str, **kwargs: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", code],
        preexec_fn=_join(slot),  # type: ignore[arg-type]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kwargs,  # type: ignore[arg-type]
    )


# -- parsing -------------------------------------------------------------------------------------
def test_mountinfo_and_cgroup_files_parse() -> None:
    text = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "41 31 0:38 /svc /with\\040space rw shared:1 - cgroup2 cgroup2 rw,nsdelegate\n"
    )
    found = cgroups.mounts(text)
    assert [m.fstype for m in found] == ["ext4", "cgroup", "cgroup2"]
    assert found[0].dev == (254, 0) and found[0].source == "/dev/vda"
    assert found[1].options == ("rw", "memory")
    assert found[2].point == "/with space" and found[2].root == "/svc"
    own = cgroups.own_cgroups("4:memory:/a/b\n2:cpu,cpuacct:/\n0::/user.slice/x\n")
    assert own == {"memory": "/a/b", "cpu": "/", "cpuacct": "/", "": "/user.slice/x"}


def test_the_setting_is_on_or_off() -> None:
    assert cgroups.enabled({}) is True
    assert cgroups.enabled({cgroups.ENV: "on"}) is True
    assert cgroups.enabled({cgroups.ENV: "OFF"}) is False
    with pytest.raises(cgroups.CgroupError, match="expected on or off"):
        cgroups.enabled({cgroups.ENV: "maybe"})


def test_no_cgroups_is_one_sentence() -> None:
    with pytest.raises(cgroups.CgroupError) as info:
        cgroups.find(mountinfo="27 1 254:0 / / rw - ext4 /dev/vda rw\n", self_cgroup="0::/\n")
    assert "no usable cgroups" in str(info.value) and "\n" not in str(info.value)


def test_a_bad_setting_fails_the_probe_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cgroups.ENV, "maybe")
    status = sandbox.probe(sandbox.Sandbox(uid_base=64490, slots=2), refresh=True)
    assert not status.ok and "COW006_SANDBOX_CGROUPS='maybe'" in status.reason
    with pytest.raises(sandbox.SandboxError, match="expected on or off"):
        sandbox.resolve_mode(None, sandbox=sandbox.Sandbox(uid_base=64490, slots=2))


def test_cgroups_off_is_logged() -> None:
    sb = sandbox.Sandbox(cgroups=False)
    assert sb._cgroups_on() is False
    assert sb.describe()["cgroups"] is False


# -- block devices -------------------------------------------------------------------------------
def test_block_devices_of_files(tmp_path: Path) -> None:
    here = Path(__file__)
    dev = os.stat(here).st_dev
    found = cgroups.block_devices([str(here)])
    assert found  # a disk, or every disk when this one cannot be told
    if os.major(dev) and Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}").exists():
        disk = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
        if not (disk / "partition").exists():
            assert found == ((os.major(dev), os.minor(dev)),)
    # A partition is capped through its whole disk (a fake /sys/dev/block).
    sysdev = tmp_path / "sys"
    (sysdev / "devices" / "sda" / "sda1").mkdir(parents=True)
    (sysdev / "devices" / "sda" / "dev").write_text("8:0\n")
    (sysdev / "devices" / "sda" / "sda1" / "partition").write_text("1\n")
    (sysdev / "block").mkdir()
    (sysdev / "block" / "8:1").symlink_to(sysdev / "devices" / "sda" / "sda1")
    assert _whole_disk((8, 1), sysdev / "block") == (8, 0)
    assert _whole_disk((9, 9), sysdev / "block") is None


# -- cgroup v1, for real -------------------------------------------------------------------------
def test_v1_limits_are_written_and_read_back(v1: cgroups.V1) -> None:
    assert {"memory", "pids", "cpu"} <= set(v1.controllers)
    slot = v1.slot("limits")
    devices = cgroups.block_devices([__file__])
    limits = cgroups.SlotLimits(memory=96 * MiB, pids=7, cpu=0.5, io_bps=4 * MiB, devices=devices)
    slot.apply(limits)
    assert slot.check(limits) == []
    assert (slot.dirs["cpu"] / "cpu.cfs_quota_us").read_text().strip() == "50000"
    if "blkio" in slot.dirs and slot.io_devices:
        text = (slot.dirs["blkio"] / "blkio.throttle.read_bps_device").read_text()
        assert f"{4 * MiB}" in text
    # Raising the cap again (memsw first), then lowering it.
    bigger = cgroups.SlotLimits(memory=300 * MiB, pids=7)
    slot.apply(bigger)
    assert slot.check(bigger) == []
    slot.apply(limits)
    assert slot.check(limits) == []
    assert slot.check(bigger) != []  # a mismatch is reported


# Forks until refused, then says how many children it made.
FORK_UNTIL_REFUSED = """
import os, time
n = 0
for _ in range(20):
    try:
        if os.fork() == 0:
            time.sleep(60)
        n += 1
    except OSError:
        break
print(n, flush=True)
time.sleep(60)
"""
# The parent holds nothing; its child puts 100 MiB in a memfd (no address space).
MEMFD_CHILD = """
import os, time
if os.fork() == 0:
    fd = os.memfd_create('x')
    for _ in range(100):
        os.write(fd, b'x' * (1 << 20))
    print('ESCAPED', flush=True)
    time.sleep(60)
time.sleep(60)
"""
# Forks for ever, the parent leaving each time: a new pid every time.
FORK_LOOP = """
import os, time
print('go', flush=True)
while True:
    try:
        pid = os.fork()
    except OSError:
        time.sleep(0.001)
        continue
    if pid:
        os._exit(0)
"""


def _limited(v1: cgroups.V1, name: str, *, memory: int = 128 * MiB, pids: int) -> cgroups.Slot:
    slot = v1.slot(name)
    slot.apply(cgroups.SlotLimits(memory=memory, pids=pids))
    return slot


def test_v1_members_kill_and_pids_cap(v1: cgroups.V1) -> None:
    slot = _limited(v1, "members", pids=4)
    # A process forking until refused: the pids cap (4 tasks) stops it, whatever its uid.
    proc = _run_in(slot, FORK_UNTIL_REFUSED)
    assert proc.stdout is not None
    forked = int(proc.stdout.readline())
    assert forked == 3
    members = slot.members()
    assert all(proc.pid in pids for pids in members.values()), members
    assert len(slot.pids()) == 4
    assert slot.kill(timeout=5.0) is True
    proc.wait(timeout=5)
    assert slot.empty()


def test_v1_memory_cap_counts_memfd_and_the_watch_kills_the_slot(v1: cgroups.V1) -> None:
    slot = _limited(v1, "oom", memory=64 * MiB, pids=8)
    slot.watch_oom()
    try:
        proc = _run_in(slot, MEMFD_CHILD)
        out, _ = proc.communicate(timeout=20)
        # The child was OOM-killed inside the slot, and the watch killed the parent too
        # (v1 has no memory.oom.group).
        assert b"ESCAPED" not in out
        assert proc.returncode == -9
        assert slot.hit_memory_cap() and slot.oom_kills() > slot.oom_base
        deadline = time.monotonic() + 5
        while not slot.empty() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert slot.empty()
    finally:
        slot.unwatch()


def test_v1_freezer_kill_stops_a_fork_loop(v1: cgroups.V1) -> None:
    slot = _limited(v1, "forkloop", pids=16)
    proc = _run_in(slot, FORK_LOOP, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline() == b"go\n"
    time.sleep(0.2)
    assert slot.pids()
    assert slot.kill(timeout=5.0) is True
    assert slot.empty()
    proc.wait(timeout=5)


# -- cgroup v2, against a fake tree --------------------------------------------------------------
V2_SLOT_FILES = (
    "memory.max",
    "memory.swap.max",
    "memory.oom.group",
    "memory.events",
    "pids.max",
    "cpu.max",
    "io.max",
    "cgroup.procs",
    "cgroup.kill",
    "cgroup.controllers",
    "cgroup.type",
)


def _fake_v2(tmp_path: Path, controllers: str = "cpuset cpu io memory hugetlb pids") -> Path:
    """A cgroup2 mount at tmp/cg: the root, the host's delegated cgroup /svc (with the
    host's processes in it), and the files the kernel would create in new cgroups."""
    root = tmp_path / "cg"
    for d, files in (
        (
            root,
            {
                "cgroup.controllers": controllers,
                "cgroup.subtree_control": "",
                "cgroup.procs": "1\n",
            },
        ),
        (
            root / "svc",
            {
                "cgroup.controllers": controllers,
                "cgroup.subtree_control": "",
                "cgroup.procs": "123\n456\n",
                "cgroup.type": "domain\n",
            },
        ),
        (root / "svc" / cgroups.HOST_LEAF, {"cgroup.procs": "", "cgroup.type": "domain\n"}),
        (root / "svc" / "cow006-uid-64000", dict.fromkeys(V2_SLOT_FILES, "")),
    ):
        d.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            (d / name).write_text(text)
    return root


def _mountinfo(root: Path) -> str:
    return f"41 31 0:38 / {root} rw,relatime - cgroup2 cgroup2 rw\n"


def test_v2_prepare_enables_controllers_and_moves_the_host_out(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path)
    hier = cgroups.find(mountinfo=_mountinfo(root), self_cgroup="0::/svc\n")
    assert isinstance(hier, cgroups.V2)
    assert hier.base == root / "svc"
    assert hier.controllers == ("memory", "pids", "cpu", "io")
    # The delegated cgroup distributes the controllers; its processes went to a leaf first.
    assert (root / "svc" / "cgroup.subtree_control").read_text() == "+memory +pids +cpu +io"
    assert (root / "svc" / cgroups.HOST_LEAF / "cgroup.procs").read_text() in {"123", "456"}
    assert hier.describe()["version"] == 2


def test_v2_limits_files(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path)
    hier = cgroups.find(mountinfo=_mountinfo(root), self_cgroup="0::/svc\n")
    slot = hier.slot("uid-64000")
    d = root / "svc" / "cow006-uid-64000"
    assert slot.procs_files() == [str(d / "cgroup.procs")]
    (d / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    limits = cgroups.SlotLimits(memory=256 * MiB, pids=16, cpu=0.5, io_bps=MiB, devices=((8, 0),))
    slot.apply(limits)
    assert (d / "memory.max").read_text() == str(256 * MiB)
    assert (d / "memory.swap.max").read_text() == "0"
    assert (d / "memory.oom.group").read_text() == "1"
    assert (d / "pids.max").read_text() == "16"
    assert (d / "cpu.max").read_text() == "50000 100000"
    assert (d / "io.max").read_text() == f"8:0 rbps={MiB} wbps={MiB}"
    assert slot.io_devices == ((8, 0),)
    assert slot.check(limits) == []
    assert slot.describe() == {
        "version": 2,
        "memory": 256 * MiB,
        "pids": 16,
        "cpu": 0.5,
        "io_bps": MiB,
    }
    # No CPU quota: "max".
    slot.apply(cgroups.SlotLimits(memory=MiB, pids=1, cpu=0))
    assert (d / "cpu.max").read_text() == "max 100000"
    # The OOM kill count is taken from where the lease began.
    assert slot.oom_base == 2 and not slot.hit_memory_cap()
    (d / "memory.events").write_text("oom 3\noom_kill 3\n")
    assert slot.hit_memory_cap()


def test_v2_kill_uses_cgroup_kill(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path)
    hier = cgroups.find(mountinfo=_mountinfo(root), self_cgroup="0::/svc\n")
    slot = hier.slot("uid-64000")
    d = root / "svc" / "cow006-uid-64000"
    assert slot.kill(timeout=0.1) is True  # empty: nothing written
    assert (d / "cgroup.kill").read_text() == ""
    (d / "cgroup.procs").write_text("999999999\n")  # a process that will not go (fake)
    assert slot.kill(timeout=0.2) is False
    assert (d / "cgroup.kill").read_text() == "1"


def test_v2_a_host_already_moved_to_the_leaf_uses_its_parent(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path)
    own = f"0::/svc/{cgroups.HOST_LEAF}\n"  # a worker started after the first one moved out
    hier = cgroups.find(mountinfo=_mountinfo(root), self_cgroup=own)
    assert isinstance(hier, cgroups.V2) and hier.base == root / "svc"
    assert hier.slot("uid-64000").dirs["memory"] == root / "svc" / "cow006-uid-64000"


def test_v2_without_the_controllers_says_what_is_missing(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path, controllers="cpu io")
    with pytest.raises(cgroups.CgroupError) as info:
        cgroups.find(mountinfo=_mountinfo(root), self_cgroup="0::/svc\n")
    assert "memory, pids" in str(info.value)


def test_v2_parent_setting(tmp_path: Path) -> None:
    root = _fake_v2(tmp_path)
    # The host is elsewhere; the operator names the delegated cgroup.
    hier = cgroups.find(
        "/svc", mountinfo=_mountinfo(root), self_cgroup="0::/user.slice/elsewhere\n"
    )
    assert isinstance(hier, cgroups.V2) and hier.base == root / "svc"


# -- the sandbox's use of them ---------------------------------------------------------------------
def _sandbox_or_skip(sb: sandbox.Sandbox) -> None:
    status = sandbox.probe(sb)
    if not status.ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"the sandbox does not work here: {status.reason}", pytrace=False)
        pytest.skip(f"the sandbox does not work here: {status.reason}")


SLEEPER = ["-I", "-S", "-c", "import time; print('up', flush=True); time.sleep(60)"]


def test_a_sandboxed_process_is_in_its_slot_from_the_start() -> None:
    sb = sandbox.Sandbox(uid_base=64492, slots=1)
    _sandbox_or_skip(sb)
    assert sandbox.probe(sb).details["cgroup"]["oom_score_adj"] == "1000"
    proc = sb.spawn([launch.python_executable(), *SLEEPER])
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        slot = proc.lease.cgroup
        assert slot is not None
        members = slot.members()
        assert all(proc.pid in pids for pids in members.values()), members
        assert len(slot.pids()) >= 3  # bwrap, its pid 1, the sleeper
        with open(f"/proc/{proc.pid}/oom_score_adj") as f:
            assert f.read().strip() == "1000"
        assert slot.limits is not None and slot.check(slot.limits) == []
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    # Released: the cgroup is empty and the slot marked clean.
    assert slot.empty() and proc.lease.clean is True


def test_without_cgroups_the_bots_keep_oom_score_adj() -> None:
    sb = sandbox.Sandbox(uid_base=64493, slots=1, cgroups=False)
    _sandbox_or_skip(sb)
    proc = sb.spawn([launch.python_executable(), *SLEEPER])
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"up\n"
        assert proc.lease.cgroup is None
        with open(f"/proc/{proc.pid}/oom_score_adj") as f:
            assert f.read().strip() == "1000"
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()
    assert sb.describe()["cgroups"] is False
