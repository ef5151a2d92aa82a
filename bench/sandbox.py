"""Sandbox benchmark: what the sandbox costs a bot process, old against new.

In one run, for a trivial Python bot, sandboxed (``cow006.sandbox``: from the zygote, the
default, and through bwrap, ``COW006_SANDBOX_ZYGOTE=off``) and bare (``cow006.launch``):

* decision round trip: the median of ``RemoteAgent.play`` over many requests (the view out,
  the bot's reply back, both parsed); target <= 150 us sandboxed;
* process start: spawn to ``ready``, median; target <= 10 ms sandboxed;
* a full 4-player match of four such bots, process starts and shutdowns included, median
  wall time and CPU time (the host, the bot processes, and the zygote's share: its own CPU
  per match, and what its short-lived forks cost, spread over the matches); targets: <= 60
  ms of CPU and <= 60 ms of wall time sandboxed, sandboxed / bare <= 1.2.  The headline
  figure plays it as ``cow006 play`` does (``cow006.spec.play``: the four processes are
  started together, then the match greets them); the second one as ``play_match`` alone
  plays unstarted ``RemoteAgent`` objects (each process started when its seat is greeted,
  one after the other).  Every match starts four fresh sandboxes.

The bot libraries (``/botlibs``, numpy; docs/sandbox.md, "Bot libraries"), in the same run,
the starts of the three kinds alternating: process start of the trivial bot with the
libraries bound and on its sys.path (as every bot has them) and without them
(``COW006_BOTLIBS=off``, as before they existed), so that what they cost a bot that does not
import numpy is measured side by side; the start of a bot whose first line is ``import
numpy``; and the time of that ``import numpy`` inside the bot process (its own clocks, wall
and CPU); each start's wall time and the CPU time of the bot's whole process tree (the wall
time depends on the machine's load, the CPU time much less); all medians, sandboxed (zygote
and bwrap) and bare.  ``--libs-only`` measures just these.

``--old DIR`` first runs the same benchmark in DIR (a worktree of the old commit with its
own ``.venv``) and prints each figure beside today's, so both come from one session.  The
figures are printed (``--json`` for one JSON object).  Needs a working sandbox (run as root
for per-slot uids); without one it prints why and exits 2.

    python bench/sandbox.py [--matches N] [--decisions N] [--starts N] [--old DIR] [--json]
                            [--libs-only]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cow006 import MatchInfo, View, launch, play_match, sandbox, spec
from cow006.host import Limits, RemoteAgent, TimedAgent

BOT = '''"""A trivial bot: its highest card, the cheapest row."""
from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return max(view.hand)
'''
# The same bot, numpy imported first (its own clock around the import, on stderr).
NUMPY_BOT = '''"""A trivial bot that imports numpy (and says how long the import took)."""
import sys
import time

_t, _c = time.perf_counter(), time.process_time()
import numpy

_t, _c = time.perf_counter() - _t, time.process_time() - _c
print(f"IMPORT_NUMPY_S {_t:.6f} {_c:.6f}", file=sys.stderr, flush=True)
from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return int(numpy.max(view.hand))
'''
ROOMY = Limits(startup=30.0, decision=5.0, bank=60.0)
Launcher = Callable[[str | Path], Any]


def a_view() -> View:
    """A realistic mid-round view of seat 0 (from a real match of the built-ins)."""
    from cow006.bots import make

    seen: list[View] = []

    class Spy(type(make("random"))):  # type: ignore[misc]
        def play(self, view: View) -> int:
            seen.append(view)
            return super().play(view)

    play_match([Spy(), make("random"), make("random"), make("random")], seed=1)
    return seen[5]


def round_trips(bot: Path, launcher: Launcher, n: int) -> float:
    view = a_view()
    agent = TimedAgent(bot, limits=ROOMY, launcher=launcher)
    with agent:
        agent.on_match_start(MatchInfo(seat=0, n_players=4, seed=1, names=("a", "b", "c", "d")))
        for _ in range(min(200, n)):  # warm up
            agent.play(view)
        agent.times.clear()
        for _ in range(n):
            agent.play(view)
    return statistics.median(agent.times)


def starts(bot: Path, launcher: Launcher, n: int) -> float:
    times = []
    for _ in range(n):
        agent = RemoteAgent(bot, limits=ROOMY, launcher=launcher)
        with agent:
            agent.on_match_start(MatchInfo(seat=0, n_players=2, seed=1, names=("a", "b")))
            assert agent.startup_time is not None
            times.append(agent.startup_time)
    return statistics.median(times)


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _start(bot: Path, launcher: Launcher) -> tuple[float, float, str]:
    """One process start to ready (seconds), the CPU time of the bot's process tree from
    its start to its exit (seconds: what its reaped processes used; bwrap's or the zygote
    child's tree, all of it the host's children), and the bot's stderr."""
    cpu = _children_cpu()
    agent = RemoteAgent(bot, limits=ROOMY, launcher=launcher)
    with agent:
        agent.on_match_start(MatchInfo(seat=0, n_players=2, seed=1, names=("a", "b")))
        assert agent.startup_time is not None
        took = agent.startup_time
    return took, _children_cpu() - cpu, agent.stderr


ORDERS = list(itertools.permutations(("libs", "nolibs", "numpy")))


class _NoLibs:
    """``COW006_BOTLIBS=off`` while in the block: bots start as before the libraries."""

    def __enter__(self) -> None:
        self.old = os.environ.get(launch.ENV_BOTLIBS)
        os.environ[launch.ENV_BOTLIBS] = "off"

    def __exit__(self, *exc: object) -> None:
        if self.old is None:
            os.environ.pop(launch.ENV_BOTLIBS, None)
        else:
            os.environ[launch.ENV_BOTLIBS] = self.old


def libs_figures(
    trivial: Path, numpy_bot: Path, modes: dict[str, Launcher], n: int
) -> dict[str, Any]:
    """The bot libraries' figures (see the module), each mode's starts interleaved."""
    if launch.botlibs_dir() is None:
        return {"botlibs": None}
    out: dict[str, Any] = {"botlibs": launch.botlibs_dir()}
    for name, launcher in modes.items():
        _start(trivial, launcher)  # warm: the zygote, the staged runtime, the page cache
        _start(numpy_bot, launcher)
        walls: dict[str, list[float]] = {"libs": [], "nolibs": [], "numpy": []}
        cpus: dict[str, list[float]] = {"libs": [], "nolibs": [], "numpy": []}
        numpy_import, numpy_import_cpu = [], []
        for i in range(n):
            order = ORDERS[i % len(ORDERS)]  # every order in turn: no kind always follows another
            for kind in order:
                if kind == "nolibs":
                    with _NoLibs():
                        took, cpu, err = _start(trivial, launcher)
                else:
                    took, cpu, err = _start(numpy_bot if kind == "numpy" else trivial, launcher)
                walls[kind].append(took)
                cpus[kind].append(cpu)
                if kind == "numpy":
                    line = [ln for ln in err.splitlines() if ln.startswith("IMPORT_NUMPY_S ")]
                    numpy_import.append(float(line[0].split()[1]))
                    numpy_import_cpu.append(float(line[0].split()[2]))
        for kind in walls:
            out[f"start_ms_{name}_{kind}"] = round(statistics.median(walls[kind]) * 1e3, 1)
            out[f"cpu_ms_{name}_{kind}"] = round(statistics.median(cpus[kind]) * 1e3, 1)
        out[f"import_numpy_ms_{name}"] = round(statistics.median(numpy_import) * 1e3, 1)
        out[f"import_numpy_cpu_ms_{name}"] = round(statistics.median(numpy_import_cpu) * 1e3, 1)
        for what, values in (("start", walls), ("cpu", cpus)):
            ratio = statistics.median(values["libs"]) / statistics.median(values["nolibs"])
            out[f"libs_{what}_ratio_{name}"] = round(ratio, 3)
    return out


def _zygote_pids() -> list[int]:
    pids = getattr(sandbox, "zygote_pids", None)  # None: an SDK without the zygote
    return list(pids()) if pids is not None else []


def _zygote_cpu() -> float:
    """CPU seconds of the live zygotes themselves (their forks' parent side), ns-precise."""
    total = 0
    for pid in _zygote_pids():
        try:
            with open(f"/proc/{pid}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total / 1e9


def _zygote_children_cpu() -> float:
    """CPU seconds of what the zygotes reaped (the short-lived forks that hand each sandbox
    to the host), in clock ticks: spread over the matches, not timed per match."""
    total = 0
    for pid in _zygote_pids():
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[13]) + int(fields[14])  # cutime, cstime
        except (OSError, ValueError, IndexError):
            pass
    return total / os.sysconf("SC_CLK_TCK")


def _cpu() -> float:
    """CPU seconds used so far by this process and by its reaped descendants (the bot
    processes, bwrap's or the zygote's processes of each sandbox), and by the zygotes."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime + _zygote_cpu()


def match_play(bot: Path, sb: sandbox.Sandbox | None, seed: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one match as ``cow006 play`` runs it (``spec.play``: the
    processes are started together, then greeted)."""
    c, t = _cpu(), time.perf_counter()
    log = spec.play([str(bot)] * 4, seed, limits=ROOMY, sandbox=sb)
    elapsed, cpu = time.perf_counter() - t, _cpu() - c
    if log["faults"]:
        raise SystemExit(f"a trivial bot faulted: {log['faults'][:2]}")
    return elapsed, cpu


def match_sequential(bot: Path, launcher: Launcher, seed: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one ``play_match`` of unstarted RemoteAgents (the runner
    starts each process when it greets its seat, one after the other)."""
    c, t = _cpu(), time.perf_counter()
    agents = [RemoteAgent(bot, limits=ROOMY, launcher=launcher) for _ in range(4)]
    try:
        log = play_match(agents, seed=seed)
    finally:
        for agent in agents:
            agent.close()
    elapsed, cpu = time.perf_counter() - t, _cpu() - c
    if log["faults"]:
        raise SystemExit(f"a trivial bot faulted: {log['faults'][:2]}")
    return elapsed, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=15, help="4-player matches per mode")
    ap.add_argument("--decisions", type=int, default=3000, help="round trips per mode")
    ap.add_argument("--starts", type=int, default=20, help="process starts per mode")
    ap.add_argument("--old", help="a worktree of the old commit (with .venv) to run first")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument("--libs-only", action="store_true", help="only the bot libraries' figures")
    args = ap.parse_args()

    old = None
    if args.old:
        old = run_old(Path(args.old), args)
        if old is None:
            return 2
    out = measure(args)
    if out is None:
        return 2
    if args.json:
        print(json.dumps(out if old is None else {"new": out, "old": old}))
        return 0
    report(out)
    if old is not None:
        compare(old, out)
    return 0


def run_old(where: Path, args: argparse.Namespace) -> dict[str, Any] | None:
    """The same benchmark run by the old commit's own code and interpreter (``--json``)."""
    cmd = [str(where / ".venv" / "bin" / "python"), str(where / "bench" / "sandbox.py")]
    cmd += ["--matches", str(args.matches), "--decisions", str(args.decisions)]
    cmd += ["--starts", str(args.starts), "--json"]
    done = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(f"the old benchmark failed: {done.stderr.strip()[-500:]}", file=sys.stderr)
        return None
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(args: argparse.Namespace) -> dict[str, Any] | None:
    """Every figure of this commit, or None (and why, on stderr) without a sandbox."""
    sb = sandbox.Sandbox()
    t = time.perf_counter()
    status = sandbox.probe(sb)
    probe_s = time.perf_counter() - t
    if not status.ok:
        print(f"the sandbox does not work here: {status.reason}", file=sys.stderr)
        return None
    modes: dict[str, Launcher] = {"bare": launch.launch, "sandbox": sb.launch}
    sandboxes: dict[str, sandbox.Sandbox | None] = {"bare": None, "sandbox": sb}
    zygote = bool(getattr(sb, "zygote_on", lambda: False)())
    if zygote:  # the bwrap path too, for comparison
        bw = sandbox.Sandbox(zygote=False)
        if not sandbox.probe(bw).ok:
            print(f"bwrap does not work here: {sandbox.probe(bw).reason}", file=sys.stderr)
            return None
        modes["bwrap"], sandboxes["bwrap"] = bw.launch, bw
    out: dict[str, Any] = {
        "probe_s": round(probe_s, 3),
        "bwrap": status.version,
        "zygote": zygote,
    }
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # readable by the slot uids: bound as it is, not copied
        bot = Path(tmp) / "trivial.py"
        bot.write_text(BOT)
        os.chmod(bot, 0o644)
        numpy_bot = Path(tmp) / "numpy_bot.py"
        numpy_bot.write_text(NUMPY_BOT)
        os.chmod(numpy_bot, 0o644)
        out.update(libs_figures(bot, numpy_bot, modes, args.starts))
        if getattr(args, "libs_only", False):
            out["load_avg"] = round(os.getloadavg()[0], 2)
            return out
        for name, launcher in modes.items():
            trip = round_trips(bot, launcher, args.decisions)
            out[f"round_trip_us_{name}"] = round(trip * 1e6, 1)
        for name, launcher in modes.items():
            out[f"start_ms_{name}"] = round(starts(bot, launcher, args.starts) * 1e3, 1)
        # Alternate the modes (and their order), so a change in the machine's load hits
        # them alike.
        per: dict[str, list[tuple[float, float]]] = {
            f"{m}{p}": [] for m in modes for p in ("", "_sequential")
        }
        forks = {name: 0.0 for name in per}  # what the zygotes' short-lived forks cost
        for seed in range(args.matches):
            for name in list(modes)[:: 1 if seed % 2 else -1]:
                before = _zygote_children_cpu()
                per[name].append(match_play(bot, sandboxes[name], seed))
                middle = _zygote_children_cpu()
                per[f"{name}_sequential"].append(match_sequential(bot, modes[name], seed))
                forks[name] += middle - before
                forks[f"{name}_sequential"] += _zygote_children_cpu() - middle
        for name, values in per.items():
            share = forks[name] / len(values)
            out[f"match_ms_{name}"] = round(statistics.median(w for w, _ in values) * 1e3, 1)
            cpu = statistics.median(c for _, c in values) + share
            out[f"match_cpu_ms_{name}"] = round(cpu * 1e3, 1)
    for suffix in ("", "_sequential"):
        for kind in ("ms", "cpu_ms"):
            ratio = out[f"match_{kind}_sandbox{suffix}"] / out[f"match_{kind}_bare{suffix}"]
            out[f"match_{kind.replace('ms', 'ratio')}{suffix}"] = round(ratio, 3)
    out["load_avg"] = round(os.getloadavg()[0], 2)
    return out


def report(out: dict[str, Any]) -> None:
    """This commit's figures, one line each, with the targets."""
    path = "from the zygote" if out.get("zygote") else "through bwrap"
    print(
        f"sandbox: bwrap {out['bwrap']}, Python bots {path}, probe {out['probe_s']} s, "
        f"load {out['load_avg']}"
    )
    report_libs(out)
    if "round_trip_us_sandbox" not in out:  # --libs-only
        return
    print(
        f"decision round trip (median): sandboxed {out['round_trip_us_sandbox']} us, "
        f"bare {out['round_trip_us_bare']} us   (target <= 150 us sandboxed)"
    )
    bw = f", through bwrap {out['start_ms_bwrap']} ms" if "start_ms_bwrap" in out else ""
    print(
        f"process start to ready (median): sandboxed {out['start_ms_sandbox']} ms{bw}, "
        f"bare {out['start_ms_bare']} ms   (target <= 10 ms sandboxed)"
    )
    bw = f", through bwrap {out['match_ms_bwrap']} ms" if "match_ms_bwrap" in out else ""
    print(
        f"4-player match of trivial bots, as cow006 play runs it (median): sandboxed "
        f"{out['match_ms_sandbox']} ms{bw}, bare {out['match_ms_bare']} ms, "
        f"ratio {out['match_ratio']}   (targets: <= 60 ms sandboxed, ratio <= 1.2)"
    )
    bw = f", through bwrap {out['match_cpu_ms_bwrap']} ms" if "match_cpu_ms_bwrap" in out else ""
    print(
        f"  CPU per match (host, bot processes, zygote): sandboxed "
        f"{out['match_cpu_ms_sandbox']} ms{bw}, bare {out['match_cpu_ms_bare']} ms, "
        f"ratio {out['match_cpu_ratio']}   (targets: <= 60 ms sandboxed, ratio <= 1.2)"
    )
    print(
        f"  with play_match starting each process at its hello, one after the other: "
        f"sandboxed {out['match_ms_sandbox_sequential']} ms, bare "
        f"{out['match_ms_bare_sequential']} ms, ratio {out['match_ratio_sequential']}"
    )


def report_libs(out: dict[str, Any]) -> None:
    """The bot libraries' lines (medians, one run, starts interleaved)."""
    if not out.get("botlibs"):
        print("bot libraries: none here (make venv installs them into .venv/botlibs)")
        return
    print(f"bot libraries: {out['botlibs']}")
    for name in ("sandbox", "bwrap", "bare"):
        if f"start_ms_{name}_libs" not in out:
            continue
        print(
            f"  {name:7}: a bot without numpy: start {out[f'start_ms_{name}_libs']} ms with the "
            f"libraries, {out[f'start_ms_{name}_nolibs']} ms without (ratio "
            f"{out[f'libs_start_ratio_{name}']}); CPU of its process "
            f"{out[f'cpu_ms_{name}_libs']} ms with, {out[f'cpu_ms_{name}_nolibs']} ms without "
            f"(ratio {out[f'libs_cpu_ratio_{name}']})"
        )
        print(
            f"  {'':7}  a bot importing numpy: start {out[f'start_ms_{name}_numpy']} ms, CPU "
            f"{out[f'cpu_ms_{name}_numpy']} ms; its import numpy "
            f"{out[f'import_numpy_ms_{name}']} ms ({out[f'import_numpy_cpu_ms_{name}']} ms CPU)"
        )


COMPARED = (
    ("start_ms_sandbox", "start to ready, sandboxed (ms)", "<= 10"),
    ("start_ms_bare", "start to ready, bare (ms)", ""),
    ("match_cpu_ms_sandbox", "4-player match CPU, sandboxed (ms)", "<= 60"),
    ("match_ms_sandbox", "4-player match wall, sandboxed (ms)", "<= 60"),
    ("match_cpu_ms_bare", "4-player match CPU, bare (ms)", ""),
    ("match_ms_bare", "4-player match wall, bare (ms)", ""),
    ("match_cpu_ratio", "sandboxed / bare, CPU", "<= 1.2"),
    ("match_ratio", "sandboxed / bare, wall", "<= 1.2"),
    ("round_trip_us_sandbox", "decision round trip, sandboxed (us)", "<= 150"),
)


def compare(old: dict[str, Any], new: dict[str, Any]) -> None:
    """Each headline figure of the old commit beside this one's (same session)."""
    print(f"\nold commit (load {old.get('load_avg')}) against this one (load {new['load_avg']}):")
    print(f"  {'':38} {'old':>9} {'new':>9}  target")
    for key, label, target in COMPARED:
        print(f"  {label:38} {old.get(key, '-'):>9} {new.get(key, '-'):>9}  {target}")


if __name__ == "__main__":
    sys.exit(main())
