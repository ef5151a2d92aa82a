"""Sandbox benchmark: what bwrap, the slot uid and seccomp cost a bot process.

In one run, for a trivial Python bot, sandboxed (``cow006.sandbox``) and bare
(``cow006.launch``):

* decision round trip: the median of ``RemoteAgent.play`` over many requests (the view out,
  the bot's reply back, both parsed); target <= 150 us sandboxed;
* process start: spawn to ``ready``, median;
* a full 4-player match of four such bots, process starts and shutdowns included, median
  wall time; targets: sandboxed / bare <= 1.3, and <= 100 ms per sandboxed match.  The
  headline figure plays it as ``cow006 play`` does (``cow006.spec.play``: the four processes
  are started together, then the match greets them); the second one as ``play_match`` alone
  plays unstarted ``RemoteAgent`` objects (each process started when its seat is greeted,
  one after the other).  Every match spawns four fresh processes (in the sandbox: four
  bwrap sandboxes, each with its seccomp filter and slot uid).

The figures are printed (``--json`` for one JSON object).  Needs a working sandbox (run as
root for per-slot uids); without one it prints why and exits 2.

    python bench/sandbox.py [--matches N] [--decisions N] [--starts N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
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


def _cpu() -> float:
    """CPU seconds used so far by this process and by its reaped descendants (the bot
    processes, and in the sandbox bwrap's processes too)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


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
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    sb = sandbox.Sandbox()
    t = time.perf_counter()
    status = sandbox.probe(sb)
    probe_s = time.perf_counter() - t
    if not status.ok:
        print(f"the sandbox does not work here: {status.reason}", file=sys.stderr)
        return 2
    modes: dict[str, Launcher] = {"bare": launch.launch, "sandbox": sb.launch}
    out: dict[str, Any] = {"probe_s": round(probe_s, 3), "bwrap": status.version}
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # readable by the slot uids: bound as it is, not copied
        bot = Path(tmp) / "trivial.py"
        bot.write_text(BOT)
        os.chmod(bot, 0o644)
        for name, launcher in modes.items():
            trip = round_trips(bot, launcher, args.decisions)
            out[f"round_trip_us_{name}"] = round(trip * 1e6, 1)
        for name, launcher in modes.items():
            out[f"start_ms_{name}"] = round(starts(bot, launcher, args.starts) * 1e3, 1)
        # Alternate the modes (and their order), so a change in the machine's load hits
        # both alike.
        sandboxes: dict[str, sandbox.Sandbox | None] = {"bare": None, "sandbox": sb}
        per: dict[str, list[tuple[float, float]]] = {
            f"{m}{p}": [] for m in modes for p in ("", "_sequential")
        }
        for seed in range(args.matches):
            for name in list(modes)[:: 1 if seed % 2 else -1]:
                per[name].append(match_play(bot, sandboxes[name], seed))
                per[f"{name}_sequential"].append(match_sequential(bot, modes[name], seed))
        for name, values in per.items():
            out[f"match_ms_{name}"] = round(statistics.median(w for w, _ in values) * 1e3, 1)
            out[f"match_cpu_ms_{name}"] = round(statistics.median(c for _, c in values) * 1e3, 1)
    for suffix in ("", "_sequential"):
        for kind in ("ms", "cpu_ms"):
            ratio = out[f"match_{kind}_sandbox{suffix}"] / out[f"match_{kind}_bare{suffix}"]
            out[f"match_{kind.replace('ms', 'ratio')}{suffix}"] = round(ratio, 3)
    out["load_avg"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(out))
        return 0
    print(f"sandbox: bwrap {out['bwrap']}, probe {out['probe_s']} s, load {out['load_avg']}")
    print(
        f"decision round trip (median): sandboxed {out['round_trip_us_sandbox']} us, "
        f"bare {out['round_trip_us_bare']} us   (target <= 150 us sandboxed)"
    )
    print(
        f"process start to ready (median): sandboxed {out['start_ms_sandbox']} ms, "
        f"bare {out['start_ms_bare']} ms"
    )
    print(
        f"4-player match of trivial bots, as cow006 play runs it (median): sandboxed "
        f"{out['match_ms_sandbox']} ms, bare {out['match_ms_bare']} ms, "
        f"ratio {out['match_ratio']}   (targets: ratio <= 1.3, <= 100 ms sandboxed)"
    )
    print(
        f"  CPU per match (host and bot processes): sandboxed {out['match_cpu_ms_sandbox']} ms, "
        f"bare {out['match_cpu_ms_bare']} ms, ratio {out['match_cpu_ratio']}"
    )
    print(
        f"  with play_match starting each process at its hello, one after the other: "
        f"sandboxed {out['match_ms_sandbox_sequential']} ms, bare "
        f"{out['match_ms_bare_sequential']} ms, ratio {out['match_ratio_sequential']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
