"""Attack: tells its validation from a ladder match, and rebuilds the validation's deal.

Everything the bot is told at the start (``MatchInfo``: the number of players, the seat
labels, the settings; the first request's ``time_left``, which is the decision time plus the
bank) goes into a fingerprint, with its seat and its first hand.  It also computes the deal of
a match seeded with its own upload's digest (the first 15 hex digits of the sha256 of its
``bot.py``, which the arena used as the validation seed, and which is also the name of the
folder it runs in), and says whether that is its hand.  It then raises on every play with the
fingerprint as the message: the owner reads it in the rejection reason (validation) or in the
match log's faults (a ladder match).
"""

import hashlib
import json
import os
import random
import sys

from cow006 import Agent, engine


class Bot(Agent):
    def on_match_start(self, info):
        print("ATTACK validation_probe", file=sys.stderr, flush=True)
        self.info = info
        self.hand = None

    def on_round_start(self, view):
        if self.hand is None:
            self.hand = list(view.hand)

    def play(self, view):
        info = self.info
        with open(os.path.join(os.getcwd(), "bot.py"), "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        hands, _rows = engine.deal(random.Random(int(digest[:15], 16)), info.n_players)
        rebuilt = sorted(hands[info.seat]) == sorted(self.hand or view.hand)
        probe = {
            "n": info.n_players,
            "names": list(info.names),
            "settings": info.settings,
            "time_left": view.time_left,
            "seat": info.seat,
            "hand": self.hand,
            "rebuilt": rebuilt,
        }
        if rebuilt:
            print("ESCAPED: the validation deal comes from my own digest", file=sys.stderr)
        raise RuntimeError("PROBE " + json.dumps(probe, separators=(",", ":"), sort_keys=True))
