"""A trained Корова 006 bot: a small numpy network scores each card of the hand.

``train.py`` (beside this file) learns the weights and writes ``weights.npz`` here; this file
is the whole bot: the card features, the forward pass and the Agent.  Upload this folder
(bot.py + weights.npz), or run it locally:

    cow006 match examples/rl builtin:greedy builtin:greedy builtin:greedy --no-sandbox

The network sees one row of features per card in the hand (what that card would cost on
the current rows, how likely other cards slip in before it, ...), maps it through one tanh
layer to a score, and plays the best-scoring card.  Scoring only the cards in the hand is
the action mask: an illegal card is never a candidate.  When its card is below every row
end it takes the cheapest row, as the built-ins do.
"""

from __future__ import annotations

import os
from bisect import bisect_left

import numpy as np

from cow006 import Agent
from cow006.cards import HEADS

WEIGHTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "weights.npz")

N_FEATURES = 20
ROW_LIMIT = 5  # a card that would be the 6th of its row takes the row


def card_features(view) -> np.ndarray:
    """One row of ``N_FEATURES`` numbers per card of ``view.hand`` (float32, in hand order)."""
    hand = sorted(view.hand)
    rows = view.rows
    ends = [r[-1] for r in rows]
    lengths = [len(r) for r in rows]
    heads = [sum(HEADS[c] for c in r) for r in rows]
    cheapest = min(heads)
    unseen = view.unseen()
    n_unseen = max(1, len(unseen))
    others = view.n_players - 1
    # Each other seat plays one of its cards: about others / n_unseen of the unseen cards
    # appear this turn (the unseen include the cards nobody was dealt).
    share = min(1.0, others / n_unseen)
    scores = view.scores
    me = scores[view.seat]
    best_other = min(s for i, s in enumerate(scores) if i != view.seat)
    out = np.zeros((len(view.hand), N_FEATURES), dtype=np.float32)
    for i, c in enumerate(view.hand):
        below_me = bisect_left(unseen, c)
        row = view.target_row(c)
        f = out[i]
        f[0] = c / 104
        f[1] = hand.index(c) / 10
        f[2] = below_me / n_unseen  # how many unseen cards are lower: the chance of being low
        f[3] = view.turn / 10
        f[4] = others / 9
        f[5] = len(hand) / 10
        f[6] = cheapest / 27
        f[7] = (me - best_other) / 66
        f[8] = me / 66
        if row < 0:  # below every end: takes the cheapest row (before anyone else's card)
            f[9] = 1.0
            f[10] = cheapest / 27
            f[11] = (min(ends) - c) / 104
        else:
            end, length = ends[row], lengths[row]
            gap = below_me - bisect_left(unseen, end)  # unseen cards that would land first
            expected = gap * share  # about how many of them appear this turn
            f[12] = (c - end) / 104
            f[13] = length / ROW_LIMIT
            f[14] = heads[row] / 27
            f[15] = gap / 20
            f[16] = expected
            f[17] = heads[row] / 27 if length == ROW_LIMIT else 0.0  # sure to take it
            f[18] = min(1.0, expected / max(1, ROW_LIMIT - length))  # room left, used up
            f[19] = (ROW_LIMIT - length) / ROW_LIMIT if length + expected >= ROW_LIMIT else 0.0
    return out


class Policy:
    """The network: features -> tanh(x W1 + b1) w2 + b2, one score per card."""

    def __init__(self, params: dict[str, np.ndarray]) -> None:
        self.w1, self.b1 = params["w1"], params["b1"]
        self.w2, self.b2 = params["w2"], params["b2"]

    @classmethod
    def load(cls, path: str = WEIGHTS) -> Policy:
        with np.load(path) as data:
            return cls({k: data[k] for k in ("w1", "b1", "w2", "b2")})

    def scores(self, features: np.ndarray) -> np.ndarray:
        hidden = np.tanh(features @ self.w1 + self.b1)
        return hidden @ self.w2 + self.b2


class Bot(Agent):
    """Plays the card the trained network scores highest."""

    def __init__(self, policy: Policy | None = None) -> None:
        self.policy = policy if policy is not None else Policy.load()

    def play(self, view):
        scores = self.policy.scores(card_features(view))
        return view.hand[int(np.argmax(scores))]

    def take_row(self, view):
        return view.cheapest_row()
