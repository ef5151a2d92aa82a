"""Where a sandboxed match's CPU goes, part by part, each measured in isolation.

Three measurements of the pieces ``bench/throughput.py`` measures together, each steadier
than the whole (no other process shares its clock), for comparing two versions of one part
side by side (run it in each tree, alternately):

``starts``   a trivial Python bot started in the sandbox, greeted (hello, ready) and closed,
             ``--n`` times: the CPU of the sandbox's own processes (pid 1 and the bot, the
             host's reaped children), of the zygote (its forks' parent side), and of the
             host's thread, per start; and the sandbox's page faults.
``match``    a 4-player match of trivial bots as a worker plays it (``cow006_workers.play``,
             sandboxed), ``--n`` times: the host thread's CPU and the bot processes' CPU.
``store``    a ladder match claimed and its result stored with its follow-ups
             (``lease.claim_match``, ``runs.settle``: the log verified, stored, rated, the
             ladder refilled), in this process against PostgreSQL (``--url``), ``--n``
             times: the thread CPU of each (the logs are played by built-ins beforehand).

    python bench/parts.py starts|match|store [--n N] [--url postgresql://...]

Means over the runs, in ms.  The sandbox's numbers need root and bubblewrap (as the tests'
sandbox does); ``store`` needs PostgreSQL and makes a database of its own
(``cow006_bench_parts``, dropped first).
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import recreate_database, with_db

from cow006 import MatchInfo, bots, play_match, sandbox
from cow006.host import Limits, RemoteAgent

BOTS = [
    "def play(view):\n    return min(view.hand)\n",
    "def play(view):\n    return max(view.hand)\n",
    "def play(view):\n    return view.hand[0]\n",
    "def play(view):\n    return view.hand[-1]\n",
]
ROOMY = Limits(startup=30.0, decision=5.0, bank=60.0)
TICK = os.sysconf("SC_CLK_TCK")


def _bot_folders() -> list[str]:
    """The four trivial bots in folders the slot uids can read."""
    root = Path(tempfile.mkdtemp(prefix="cow006-parts-"))
    root.chmod(0o755)
    out = []
    for i, source in enumerate(BOTS):
        folder = root / f"bot{i}"
        folder.mkdir()
        folder.chmod(0o755)
        (folder / "bot.py").write_text(source)
        (folder / "bot.py").chmod(0o644)
        out.append(str(folder))
    return out


def _sandbox() -> sandbox.Sandbox:
    sb = sandbox.Sandbox()
    status = sandbox.probe(sb)
    if not status.ok:
        raise SystemExit(f"no sandbox here: {status.reason}")
    return sb


def _zygote_cpu() -> float:
    total = 0
    for pid in sandbox.zygote_pids():
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICK


def starts(n: int) -> None:
    bot = Path(_bot_folders()[0])
    launcher = sandbox.launcher(_sandbox())

    def one() -> None:
        agent = RemoteAgent(bot, limits=ROOMY, launcher=launcher)
        with agent:
            agent.on_match_start(MatchInfo(seat=0, n_players=2, seed=1, names=("a", "b")))

    for _ in range(5):
        one()
    kids0, me0, zyg0 = (
        resource.getrusage(resource.RUSAGE_CHILDREN),
        time.thread_time(),
        _zygote_cpu(),
    )
    wall = time.perf_counter()
    for _ in range(n):
        one()
    wall = time.perf_counter() - wall
    kids1, me1, zyg1 = (
        resource.getrusage(resource.RUSAGE_CHILDREN),
        time.thread_time(),
        _zygote_cpu(),
    )
    cpu = kids1.ru_utime + kids1.ru_stime - kids0.ru_utime - kids0.ru_stime
    print(
        f"per start: sandbox (pid 1 and the bot) {1e3 * cpu / n:.2f} ms, "
        f"{(kids1.ru_minflt - kids0.ru_minflt) / n:.0f} page faults; "
        f"zygote {1e3 * (zyg1 - zyg0) / n:.2f} ms; host thread {1e3 * (me1 - me0) / n:.2f} ms; "
        f"wall {1e3 * wall / n:.2f} ms ({n} starts)"
    )


def match(n: int) -> None:
    from cow006_workers.play import play

    folders = _bot_folders()
    sb = _sandbox()
    limits = Limits(decision=1.0, bank=10.0)
    for seed in range(5):
        play(folders, ["a", "b", "c", "d"], seed, limits, sb)
    host, kids = [], []
    for seed in range(1000, 1000 + n):
        r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.thread_time()
        log, _stderr = play(folders, ["a", "b", "c", "d"], seed, limits, sb)
        host.append(time.thread_time() - t0)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        kids.append(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime)
        if log["faults"]:
            raise SystemExit(f"a trivial bot faulted: {log['faults'][:2]}")
    print(
        f"per match: host thread {1e3 * statistics.mean(host):.2f} ms, "
        f"bot processes {1e3 * statistics.mean(kids):.2f} ms ({n} matches)"
    )


def store(n: int, url: str) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from helpers import data
    from sqlalchemy import select

    from cow006_platform import db, storage
    from cow006_platform.app import prepare_database
    from cow006_platform.models import LadderEntry, Match, MatchStatus, VersionStatus
    from cow006_platform.settings import Settings
    from cow006_workers import runs, scheduler
    from cow006_workers.lease import claim_match

    recreate_database(url, "cow006_bench_parts")
    db_url = with_db(url, "cow006_bench_parts")
    settings = Settings(database_url=db_url, data_dir=tempfile.mkdtemp(), ladder_queue_depth=8)
    engine = db.make_engine(db_url)
    prepare_database(settings, engine)
    factory = db.make_sessionmaker(engine)
    with db.session_scope(factory) as s:
        ladder = data.ladder(s, players=4)
        for source in BOTS * 2:
            v = data.version(s, status=VersionStatus.active)
            folder = storage.bot_path(settings, v.sha256)
            folder.mkdir(parents=True)
            (folder / "bot.py").write_text(source)
            s.add(LadderEntry(ladder_id=ladder.id, agent_id=v.agent_id, version_id=v.id))
        ladder_id = ladder.id
    rng = random.Random(1)
    sent: list[int] = []

    def one() -> tuple[float, float]:
        scheduler.refill_ladder(factory, ladder_id, 8, rng)
        with db.session_scope(factory) as s:
            m = s.scalars(
                select(Match)
                .where(Match.ladder_id == ladder_id, Match.status == MatchStatus.queued)
                .order_by(Match.id)
                .limit(1)
            ).one()
            mid, seats, seed = m.id, len(m.seats), m.seed
        log = play_match([bots.make("random") for _ in range(seats)], seed=seed)
        t0 = time.thread_time()
        claim = claim_match(factory, settings, mid, lease_seconds=60)
        t1 = time.thread_time()
        assert claim is not None
        outcome = runs.settle(
            factory,
            settings,
            runs.Played(claim, log, [None] * seats, time.monotonic()),
            sent.extend,
            rng,
        )
        t2 = time.thread_time()
        if outcome.status != "finished":
            raise SystemExit(f"a match was not stored: {outcome.status}")
        return t1 - t0, t2 - t1

    for _ in range(20):
        one()
    got = [one() for _ in range(n)]
    engine.dispose()
    print(
        f"per match: claim {1e3 * statistics.mean(c for c, _ in got):.2f} ms, "
        f"store and follow-ups {1e3 * statistics.mean(s for _, s in got):.2f} ms ({n} matches)"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("part", choices=("starts", "match", "store"))
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--url", default="postgresql://root@127.0.0.1:5432/postgres")
    args = ap.parse_args()
    if args.part == "starts":
        starts(args.n)
    elif args.part == "match":
        match(args.n)
    else:
        store(args.n, args.url)


if __name__ == "__main__":
    main()
