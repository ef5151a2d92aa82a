"""Engine benchmark: full 4-player matches per second through ``cow006.play_match``.

Random agents, in-process, one core.  In the same run a minimal inline reference loop plays
the same game (same deal procedure, same random policy, no views, no log) so the figure can be
read as a ratio that survives a noisy machine.  Targets: >= 2,500 matches/s, ratio >= 0.8
(issue 16; it was 0.5).

    python bench/engine.py [--seconds S] [--repeats R] [--json]
    python bench/engine.py --play N [--reference]   (N matches, agents seeded 0, 1, 2...)

Figures (2-core AMD EPYC shared with other jobs, Python 3.11.7, 2026-12-02).  The steadier
figure is the instruction count, the same games every run (``PYTHONHASHSEED=0 valgrind
--tool=callgrind python bench/engine.py --play 200``, minus ``--play 0``, per match;
``--reference`` for the reference loop).  Old = c3baa5d (main before the eng branch), new = the
eng branch, measured in one session:

    play_match      old 4.595 M instructions a match   new 3.907 M (-15.0 %)
    reference loop      3.251 M                            3.251 M
    ratio           old 0.708                          new 0.832   (target 0.8: met)

Wall clock, the same session, the machine at a load average of 5-8 on its 2 cores (other
agents' jobs), ``--seconds 1 --repeats 7``, old and new run alternately five times each:

    old  ratio 0.574 / 0.473 / 0.527 / 0.560 / 0.463   (median 0.527)
    new  ratio 0.622 / 0.730 / 0.664 / 0.565 / 0.592   (median 0.622)

and old against new in one process, interleaved in 0.3 s windows (15 each): new plays
1.17 times as many matches a second as old (median of three runs: 1.12, 1.17, 1.24; four
more runs at a load average of 8 spread from 0.89 to 2.07).  On that machine the wall-clock
ratio does not reach 0.8: the figures move with the load by more than the change, and
play_match, which builds a log the reference loop does not, touches more memory (about 16
thousand first-level cache misses a match against the reference's 3 thousand, ``valgrind
--tool=cachegrind --cache-sim=yes``), which a shared machine's caches punish more than
instructions.  (The garbage collector is not it: 17 young-generation collections in 2,000
matches, under a millisecond in all.)

Where the instructions went (old to new): a view makes its table when an agent first reads
it, from the log's copies of the rows (a turn of agents that read only their hands makes
none, about 5,000 instructions a turn); a view no agent kept is made again in place for the
next seat (``sys.getrefcount``; about 1,000 a view); a round's turns run in one loop with its
names bound once; the runner's checked cards leave the hands in one C loop; the engine finds
the cheapest row itself when no agent has its own ``take_row``, from the rule's columns
(``State.cheapest_row``); ``rule_rows`` without a Python call per row.  ``lay`` still holds
the placement rule alone: the turn inlines only its common case, as before.  Tried and left
out: a seat loop over ``zip`` (+1.4 %) and a turn's cards set by index (+0.5 %).  The
built-in bots (greedy, safe, lowest, random at one table) cost 34.3 M instructions a match
new, 34.6 M old: their own thinking, not the views, is what they spend.

Measured again on a quieter machine (load average about 2.8, main at ``0ecba70``), three
runs of ``python bench/engine.py``: ratio 0.66 / 0.674 / 0.67, 2,364 matches/s against
3,458 for the reference.  The wall-clock ratio stays under 0.8 while the instruction ratio
is over it: ``play_match`` also builds the log, and takes about five times the reference's
first-level cache misses doing so.

2026-12-02 (main after ``ca2932e``): a round is dealt and set up in one function
(``engine.deal_round``: the same draw, the rows as the rule reads them made from the four
starters), the runner's views read the engine's own reveals instead of a copy per turn, and
the match options and ``on_match_end`` hooks are looked at only when there are any.
Instructions (callgrind as above): play_match 3.911 M -> 3.788 M a match (-3.1 %), against
the reference loop's 3.251 M: instruction ratio 0.858.  This script now plays the two loops
in alternating batches of 25 matches (some 15 ms each; before, 2 s windows one after the
other), so a burst of other work falls on both.  Wall clock on a quiet machine (load average
0.5 to 1.8), this script run alternately with this commit's SDK and ``ca2932e``'s, three
times each: new 0.743 / 0.742 / 0.743, old 0.708 / 0.707 / 0.731; one more run each with
``--json``: new 2,014 matches/s against the reference's 2,742 (0.742), old 1,617 against
2,246 (0.720).  The wall-clock target (0.8) is still not met on this machine; the remaining
difference is spread over the runner's own work (the views, the log's copies of the rows,
the fault checks: no single part above a few per cent of a match).

2026-12-02, later (the ``engine`` branch, from main at ``7472a41``): a third of what
``play_match`` spent beyond the reference was the match's set-up and end, not its turns:
about 175 thousand instructions a match (a ``MatchRunner`` made and ``run`` with the rounds
taken out, 4 agents; ``random.Random(seed)``, which both loops pay, is 37 thousand of it).
Now the hooks are looked up once per agent type, not per hook and agent (``_overridden``),
the seat labels and the ``Type#seat`` names' suffixes are made once a process, the four
``MatchInfo`` are made at once (``MatchInfo._for_seats``), the agent seeds are read from one
``os.urandom`` as 64-bit words, ``engine.ranks`` bisects the sorted totals (18 thousand
instructions to 8), and the log's copies of the four rows (every turn, and the round's
starting rows) are four ``list.copy`` method calls instead of a ``map``: set-up and end
now take 123 thousand instructions besides the seeding (174 before).  Logs are
byte-identical: the golden test, and 2,040 seeded matches (random, row-choosing, view-keeping,
faulty, hooked agents; 2 to 5 seats; the built-ins) dumped before and after, compared with
``cmp`` (``python bench/engine_logs.py 2000 OUT``: sha256 ``87ab7223...64c0`` with either).
Instructions (callgrind as above, this commit against main):

    play_match      old 3.788 M a match            new 3.671 M (-3.1 %)
    reference loop      3.249 M                        3.249 M
    ratio           old 0.858                      new 0.885

First-level cache misses a match (``PYTHONHASHSEED=0 valgrind --tool=cachegrind
--cache-sim=yes python bench/engine.py --play 200``, minus ``--play 0``): play_match old
7,867 instruction and 14,829 data misses, new 7,487 and 15,726; the reference loop 2,916 and
3,304.  Tried and taken back: each seat, its hand and its ``play`` unpacked from one tuple a
round (``zip``): 17 thousand instructions fewer, but 1,200 more instruction-cache and 600
more data-cache misses a match.

Wall clock, the machine at a load average of 11 to 19 on its 2 cores (other sessions' work).
``python bench/engine.py --json --seconds 1 --repeats 5`` run alternately with this commit's
SDK and main's: at a load of 15 to 19 (200 to 400 matches a second), four times each, ratio
new 0.797 / 0.791 / 0.706 / 0.763, old 0.717 / 0.669 / 0.669 / 0.641; later, at 13 (1,250
to 1,600 a second), three times each, new 0.703 / 0.695 / 0.679, old 0.703 / 0.668 / 0.704.
Runs one after the other see different loads, so the two SDKs were also played in one
process (``python bench/engine_oldnew.py OLD_CHECKOUT``: main's SDK imported under another
name, the three loops in rotating batches of 25 matches, 15 runs of 3 s), four sessions at a
load of 11 to 13: median ratio to the reference new 0.715 / 0.727 / 0.731 / 0.736, old 0.693
/ 0.713 / 0.693 / 0.710; new against old 1.012 / 1.024 / 1.064 / 1.040 (the first session
seven runs).  So about 2 to 4 per cent more matches a second, what the instructions say; the
wall-clock target (0.8) is not met, on this machine and load at least: the reference loop
gains more from a quiet cache than ``play_match`` does (above).

2026-12-02, evening (the ``engine2`` branch, from main at ``4a81f42``): measured by ablation
first, each piece of a turn cut from a copy of ``_play_turns`` (cachegrind as below, per
match, main's runner: 3.667 M instructions, 7.5 thousand instruction- and 15.2 thousand
data-cache misses): the log's row copies 112 thousand instructions, the turn's dict 70, the
reveal's copy with ``play_turn``'s call 77, ``tuple(hand)`` 62, the ``pending`` list 34;
all of them together would have made the wall-clock ratio 0.844 (0.723 with none, same
process).  Kept, of what the log's contract and the views allow:

* a seat's card leaves its hand as the runner checks it (``hand.remove`` after the ``in``
  test), so a turn needs neither ``reveal``'s ``any(map(list.remove, ...))`` nor its checks;
  the state keeps the runner's own ``cards`` list as the turn's reveal (it is the log's
  turn's ``cards`` too; nothing changes either), and the runner calls ``engine.settle``
  (was ``_settle``) and ends the turn itself: no ``list(cards)``, no ``play_turn`` frame;
* ``engine.deal_round`` draws a plain ``random.Random``'s cards itself (``engine._sample``):
  the same ``getrandbits`` calls in the same order as ``Random.sample`` (CPython 3.11 to 3.13
  have the same algorithm), so the same deals, without ``_randbelow``'s Python call per card
  (44 a round); a subclass of ``Random`` still draws through its own ``sample``.  This part
  makes the deal cheaper than the reference loop's ``rng.sample``: the SDK now runs fewer
  instructions a match than the reference, so the ratio below no longer measures the
  runner's overhead alone (without it, the runner's part reaches 0.77, see below).

Instructions and first-level misses a match (``PYTHONHASHSEED=0 valgrind --tool=cachegrind
--cache-sim=yes python bench/engine.py --play 200``, minus ``--play 0``):

    play_match      main 3.667 M, 7.5 K I1, 15.2 K D1    new 3.215 M, 4.8 K I1, 12.5-13.1 K D1
    reference loop       3.253 M, 2.9 K I1,  3.2 K D1

Logs are byte-identical (``python bench/engine_logs.py 2000 OUT``: sha256 ``87ab7223...64c0``
before and after, ``cmp`` equal).  Wall clock, the machine at a load average of 2.2 to 3.7
(the lead's and another helper's work on the other core), under ``nice -n 19``:
``python bench/engine.py --json`` three times, ratio 0.843 / 0.840 / 0.839 (3,300 to 3,358
matches/s against 3,939 to 3,982); ``python bench/engine_oldnew.py /tmp/engold`` (main's
``sdk`` from ``git archive``), 15 runs: median new / reference 0.835, main / reference 0.731,
new / main 1.144; against the first commit alone (the runner's part, ``1298c4b``): that
commit / reference 0.769, new / it 1.076 (the deal, and ``settle`` called directly).

Tried and left out: the log's rows copied only when they change (a row changed iff its last
card did; 2.2 of the 4 rows change in a turn of 4 random players), with the test written out
per row: 48 thousand instructions a match more, not fewer, and no fewer misses (the four
comparisons cost more than the 1.8 copies they save); the ``pending`` list cut to five
slots: 10 thousand instructions (0.3 %), not worth a second layout of it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

from cow006 import Agent, play_match

HEADS = (
    0,
    *(
        7 if c == 55 else 5 if c % 11 == 0 else 3 if c % 10 == 0 else 2 if c % 5 == 0 else 1
        for c in range(1, 105)
    ),
)


class RandomAgent(Agent):
    def on_match_start(self, info):  # type: ignore[no-untyped-def]
        self.rng = random.Random(info.seed)

    def play(self, view):  # type: ignore[no-untyped-def]
        return self.rng.choice(view.hand)


def sdk_match(seed: int) -> list[int]:
    return play_match([RandomAgent(), RandomAgent(), RandomAgent(), RandomAgent()], seed)["scores"]


def reference_match(seed: int) -> list[int]:
    """The same game in one function: the floor of what Python can do."""
    rng = random.Random(seed)
    pick = [random.Random(seed * 4 + s) for s in range(4)]
    scores = [0, 0, 0, 0]
    while max(scores) < 66:
        drawn = rng.sample(range(1, 105), 44)
        hands = [sorted(drawn[i * 10 : i * 10 + 10]) for i in range(4)]
        rows = [[c] for c in drawn[40:44]]
        pen = [0, 0, 0, 0]
        for _ in range(10):
            cards = []
            for s in range(4):
                c = pick[s].choice(hands[s])
                hands[s].remove(c)
                cards.append(c)
            for s in sorted(range(4), key=cards.__getitem__):
                c = cards[s]
                best, best_end = -1, 0
                for i in range(4):
                    e = rows[i][-1]
                    if best_end < e < c:
                        best, best_end = i, e
                if best < 0:
                    hs = [sum(HEADS[x] for x in r) for r in rows]
                    best = hs.index(min(hs))
                elif len(rows[best]) < 5:
                    rows[best].append(c)
                    continue
                pen[s] += sum(HEADS[x] for x in rows[best])
                rows[best] = [c]
        for s in range(4):
            scores[s] += pen[s]
    return scores


def play_only(n: int, reference: bool) -> None:
    """Play ``n`` matches and nothing else, the agents seeded from a counter (the same games
    every run), for an instruction counter such as callgrind."""
    counter = iter(range(2**62))

    def seeded(self: RandomAgent, info) -> None:  # type: ignore[no-untyped-def]
        self.rng = random.Random(next(counter))

    RandomAgent.on_match_start = seeded  # type: ignore[method-assign]
    fn = reference_match if reference else sdk_match
    for seed in range(n):
        fn(seed)


def rates(seconds: float, batch: int = 25) -> tuple[float, float]:
    """Matches a second of ``sdk_match`` and of ``reference_match``, played in alternating
    batches of ``batch`` matches (some 15 ms each) for about ``seconds`` in all: both see
    the same moments of a shared machine, so their ratio holds under its noise."""
    spent = {sdk_match: 0.0, reference_match: 0.0}
    played = {sdk_match: 0, reference_match: 0}
    clock = time.perf_counter
    end = clock() + seconds
    seed = 0
    while clock() < end:
        for fn in (sdk_match, reference_match):
            start = clock()
            for i in range(seed, seed + batch):
                fn(i)
            spent[fn] += clock() - start
            played[fn] += batch
        seed += batch
    return played[sdk_match] / spent[sdk_match], played[reference_match] / spent[reference_match]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="time per measurement")
    ap.add_argument("--repeats", type=int, default=5, help="alternating measurements of each")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    ap.add_argument("--play", type=int, metavar="N", help="only play N matches (see above)")
    ap.add_argument("--reference", action="store_true", help="with --play: the reference loop")
    args = ap.parse_args()
    if args.play is not None:
        play_only(args.play, args.reference)
        return 0
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core
    sdk, ref = [], []
    for _ in range(args.repeats):
        a, b = rates(2 * args.seconds)
        sdk.append(a)
        ref.append(b)
    ratios = [a / b for a, b in zip(sdk, ref, strict=True)]
    out = {
        "play_match_per_s": round(statistics.median(sdk)),
        "reference_per_s": round(statistics.median(ref)),
        "ratio": round(statistics.median(ratios), 3),
        "targets": {"play_match_per_s": 2500, "ratio": 0.8},
    }
    if args.json:
        print(json.dumps(out))
    else:
        print(f"play_match, 4 random agents : {out['play_match_per_s']:>7} matches/s (median)")
        print(f"inline reference loop       : {out['reference_per_s']:>7} matches/s (median)")
        print(
            f"ratio play_match/reference  : {out['ratio']:>7}   (target >= 0.8; >= 2500 matches/s)"
        )
    ok = out["play_match_per_s"] >= 2500 and out["ratio"] >= 0.8
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
