"""Fairness benchmark: how much a CPU hog at the table slows a fair bot (issue 13).

In one run, sandboxed: a fair bot that spends 30 ms of CPU time on every move plays
``--matches`` 2-player matches against a plain bot and as many against a CPU hog (the hostile
battery's ``cpu_hog.py``: it forks 30 busy children, each in a session of its own, and
answers every request at once), the two kinds alternating so that a change in the machine's
load hits both alike.  Reported: the fair bot's median decision time (the host's round trip
of ``play``) against each, and their ratio (target <= 1.5 with the slot cgroups: the hog's
children share its one-core quota, not the machine).  ``--without-cgroups`` plays the same
matches a second time with the cgroups off (``Sandbox(cgroups=False)``: per-process rlimits
only), for comparison.

The machine's load (other work) stretches every decision alike; the figure that matters is
the ratio.  Needs a working sandbox with its cgroups (run as root); without it, prints why
and exits 2.

    python bench/fairness.py [--matches N] [--cpu-ms MS] [--without-cgroups] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from cow006 import bots, play_match, sandbox
from cow006.host import Limits, RemoteAgent, TimedAgent

FAIR = '''"""A fair bot: {ms} ms of CPU time (not wall time) per move."""
import time

from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        end = time.thread_time() + {s}
        while time.thread_time() < end:
            pass
        return max(view.hand)
'''
PLAIN = '''"""A plain bot: answers at once."""
from cow006 import Agent


class Bot(Agent):
    def play(self, view):
        return min(view.hand)
'''
# The hostile battery's CPU hog: 30 busy children, each in a session of its own, answering
# every request at once itself.
HOG = Path(__file__).resolve().parents[1] / "tests/hostile/bots/resources/cpu_hog.py"
# Roomy limits: the benchmark measures decision times, it must not forfeit anyone.
ROOMY = Limits(startup=30.0, decision=10.0, bank=120.0)


def one_match(fair: Path, other: Path, sb: sandbox.Sandbox, seed: int) -> list[float]:
    """The fair bot's decision times in one match against ``other``."""
    agents = [
        TimedAgent(fair, limits=ROOMY, launcher=sb.launch),
        RemoteAgent(other, limits=ROOMY, launcher=sb.launch),
    ]
    try:
        log = play_match([*agents, bots.make("random")], seed=seed)
    finally:
        for agent in agents:
            agent.close()
    if log["faults"]:
        raise SystemExit(f"a bot faulted: {log['faults'][:2]}")
    return agents[0].times


def measure(
    bots_dir: Path, modes: dict[str, sandbox.Sandbox], matches: int
) -> dict[str, dict[str, float]]:
    """Per mode: the fair bot's median decision time against each opponent, and the ratio.
    The modes and opponents alternate (and their order), match by match."""
    fair = bots_dir / "fair.py"
    times: dict[tuple[str, str], list[float]] = {
        (m, o): [] for m in modes for o in ("plain", "hog")
    }
    runs = [(m, o) for m in modes for o in ("plain", "hog")]
    for seed in range(matches):
        for mode, opp in runs[:: 1 if seed % 2 else -1]:
            times[mode, opp] += one_match(fair, bots_dir / f"{opp}.py", modes[mode], seed)
    out = {}
    for mode in modes:
        plain_ms = statistics.median(times[mode, "plain"]) * 1e3
        hog_ms = statistics.median(times[mode, "hog"]) * 1e3
        out[mode] = {
            "fair_median_ms_vs_plain": round(plain_ms, 1),
            "fair_median_ms_vs_hog": round(hog_ms, 1),
            "ratio": round(hog_ms / plain_ms, 2),
            "decisions": len(times[mode, "plain"]) + len(times[mode, "hog"]),
        }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matches", type=int, default=4, help="matches against each opponent")
    ap.add_argument("--cpu-ms", type=float, default=30.0, help="the fair bot's CPU per move")
    ap.add_argument("--without-cgroups", action="store_true", help="also play with the cgroups off")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args()

    sb = sandbox.Sandbox()
    status = sandbox.probe(sb)
    if not status.ok or not sb._cgroups_on():
        why = status.reason if not status.ok else "the slot cgroups are off"
        print(f"the sandbox does not work here: {why}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {"cpu_ms": args.cpu_ms, "load_avg_start": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory() as tmp:
        os.chmod(tmp, 0o755)  # readable by the slot uids: bound as it is, not copied
        for name, text in (
            ("fair", FAIR.format(ms=args.cpu_ms, s=args.cpu_ms / 1000)),
            ("plain", PLAIN),
            ("hog", HOG.read_text()),
        ):
            (Path(tmp) / f"{name}.py").write_text(text)
            os.chmod(Path(tmp) / f"{name}.py", 0o644)
        modes = {"cgroups": sb}
        if args.without_cgroups:
            modes["without_cgroups"] = sandbox.Sandbox(cgroups=False)
        out.update(measure(Path(tmp), modes, args.matches))
    out["load_avg_end"] = round(os.getloadavg()[0], 2)
    if args.json:
        print(json.dumps(out))
        return 0
    print(
        f"fair bot, {args.cpu_ms:g} ms of CPU per move; load average "
        f"{out['load_avg_start']} -> {out['load_avg_end']}"
    )
    for key, label in (("cgroups", "slot cgroups on"), ("without_cgroups", "cgroups off")):
        if key in out:
            r = out[key]
            print(
                f"{label}: median decision vs plain {r['fair_median_ms_vs_plain']} ms, "
                f"vs hog {r['fair_median_ms_vs_hog']} ms, ratio {r['ratio']}"
                + ("   (target <= 1.5)" if key == "cgroups" else "")
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
