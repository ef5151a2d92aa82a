"""Train the example bot (bot.py beside this file) with numpy against the built-ins.

    python examples/rl/train.py                      # the documented run (README.md)
    python examples/rl/train.py --tiny --out /tmp/b  # seconds: the CI configuration

Two phases, one loop: every iteration plays a batch of matches in ``cow006.rl.Cow006Env``
(the learner at a rotating seat, three ``builtin:greedy`` opponents), sampling its cards from
the network's softmax over the hand, then takes one Adam step on the batch:

1. **imitation** (the warm start): the loss is the cross-entropy to the card
   ``builtin:safe`` would play in the same position, on the positions the learner itself
   reaches (DAgger), so the network starts from a sound heuristic;
2. **policy gradient** (REINFORCE with a baseline): the loss is ``-advantage * log p(card)``,
   the advantage being minus the heads taken from that turn to the end of the deal, less
   the batch's mean at the same turn, so the network learns what the heuristic misses.

Every ``--eval-every`` iterations (and at the end of imitation) the argmax policy plays
``--eval-matches`` fixed, seat-rotated matches against three ``builtin:greedy``: that is the
learning curve, written to ``curve.csv`` (and drawn by ``plot_curve.py``).  The end writes
``weights.npz`` next to a copy of bot.py in ``--out`` (the default is this folder), a
submittable bot folder.
Everything is seeded by ``--seed``: the same command trains the same weights.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from bot import N_FEATURES, Bot, Policy, card_features  # noqa: E402

from cow006 import View, play_match  # noqa: E402
from cow006.bots import make  # noqa: E402
from cow006.rl import Cow006Env  # noqa: E402
from cow006.rl.obs import ROW0  # noqa: E402

OPPONENTS = ("builtin:greedy",) * 3
EVAL_SEED = 10_000_000  # evaluation match seeds start here, far from the training seeds


# -- the network and its gradient ---------------------------------------------------------------
def init_params(rng: np.random.Generator, hidden: int) -> dict[str, np.ndarray]:
    return {
        "w1": (rng.standard_normal((N_FEATURES, hidden)) / math.sqrt(N_FEATURES)).astype(
            np.float32
        ),
        "b1": np.zeros(hidden, np.float32),
        "w2": (rng.standard_normal(hidden) * 0.1).astype(np.float32),
        "b2": np.zeros((), np.float32),
    }


def grad_log_softmax(
    params: dict[str, np.ndarray],
    x: np.ndarray,
    legal: np.ndarray,
    target: np.ndarray,
    weight: np.ndarray,
) -> tuple[dict[str, np.ndarray], float]:
    """Gradient of ``-mean(weight * log p(target))`` over a batch of positions.

    ``x`` is [B, 10, F] (the hand's features, padded), ``legal`` [B, 10] marks the real
    cards: the softmax runs over them only (the mask), ``target`` [B] the card index.
    """
    h = np.tanh(x @ params["w1"] + params["b1"])  # [B, 10, H]
    s = h @ params["w2"] + params["b2"]  # [B, 10]
    s = np.where(legal, s, -1e9)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s) * legal
    p /= p.sum(axis=1, keepdims=True)
    b = np.arange(len(target))
    loss = -float(np.mean(weight * np.log(p[b, target] + 1e-12)))
    ds = p.copy()
    ds[b, target] -= 1.0
    ds *= (weight / len(target))[:, None]  # d loss / d score
    grads = {
        "w2": np.einsum("bk,bkh->h", ds, h),
        "b2": np.asarray(ds.sum(), np.float32),
    }
    dh = ds[:, :, None] * params["w2"] * (1 - h * h)  # [B, 10, H]
    grads["w1"] = np.einsum("bkf,bkh->fh", x, dh)
    grads["b1"] = dh.sum(axis=(0, 1))
    return grads, loss


@dataclass
class Adam:
    lr: float
    m: dict[str, np.ndarray] = field(default_factory=dict)
    v: dict[str, np.ndarray] = field(default_factory=dict)
    t: int = 0

    def step(self, params: dict[str, np.ndarray], grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        for k, g in grads.items():
            m = self.m[k] = 0.9 * self.m.get(k, 0) + 0.1 * g
            v = self.v[k] = 0.999 * self.v.get(k, 0) + 0.001 * g * g
            m_hat = m / (1 - 0.9**self.t)
            v_hat = v / (1 - 0.999**self.t)
            params[k] = (params[k] - self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)).astype(np.float32)


# -- playing: a batch of training matches -------------------------------------------------------
@dataclass
class Batch:
    x: list[np.ndarray] = field(default_factory=list)  # features of each decision's hand
    action: list[int] = field(default_factory=list)  # the index played
    teacher: list[int] = field(default_factory=list)  # the index builtin:safe plays
    turn: list[int] = field(default_factory=list)
    ret: list[float] = field(default_factory=list)  # minus the heads from here to the deal's end
    heads: float = 0.0
    deals: int = 0

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        x = np.zeros((len(self.x), 10, N_FEATURES), np.float32)
        legal = np.zeros((len(self.x), 10), bool)
        for i, f in enumerate(self.x):
            x[i, : len(f)] = f
            legal[i, : len(f)] = True
        return x, legal


def play_batch(
    envs: list[Cow006Env],
    policy: Policy,
    seeds: list[int],
    rng: np.random.Generator,
) -> Batch:
    """Play one match per seed, the learner sampling its cards; record every card decision."""
    teacher = make("safe")
    out = Batch()
    for i, seed in enumerate(seeds):
        env = envs[i % len(envs)]
        observation, info = env.reset(seed=seed)
        done = False
        deal_start, deal = len(out.x), None
        while not done:
            view = View.from_dict(info["view"])
            mask = observation["action_mask"]
            if info["phase"] == "row":
                action = ROW0 + view.cheapest_row()
            else:
                if view.round != deal:  # a new deal: returns stop at the end of a deal
                    deal_start, deal = len(out.x), view.round
                    out.deals += 1
                x = card_features(view)
                s = policy.scores(x)
                p = np.exp(s - s.max())
                k = int(rng.choice(len(p), p=p / p.sum()))
                out.x.append(x)
                out.action.append(k)
                out.teacher.append(view.hand.index(teacher.play(view)))
                out.turn.append(view.turn)
                out.ret.append(0.0)
                action = view.hand[k] - 1
            assert mask[action], "the policy chose an action the mask forbids"
            observation, reward, done, _, info = env.step(action)
            # the heads a turn takes count for every decision of the deal up to it
            for j in range(deal_start, len(out.x)):
                out.ret[j] += reward
            out.heads -= reward
    return out


# -- evaluating: the argmax policy against three builtin:greedy ---------------------------------
def evaluate(policy: Policy, matches: int, players: int = 4) -> dict[str, float]:
    """Seat-rotated full matches, the bot against ``players - 1`` ``builtin:greedy``."""
    wins = strict = 0
    bot_heads = greedy_heads = 0.0
    deals = 0
    for m in range(matches):
        seat = m % players
        agents = [make("greedy") for _ in range(players - 1)]
        agents.insert(seat, Bot(policy))
        log = play_match(agents, seed=EVAL_SEED + m, agent_seeds=[m] * players)
        scores = log["scores"]
        best = min(scores)
        wins += scores[seat] == best
        strict += scores[seat] == best and scores.count(best) == 1
        deals += len(log["rounds"])
        bot_heads += scores[seat]
        greedy_heads += (sum(scores) - scores[seat]) / (players - 1)
    return {
        "win_rate": wins / matches,
        "strict_rate": strict / matches,
        "bot_heads_per_deal": bot_heads / deals,
        "greedy_heads_per_deal": greedy_heads / deals,
    }


# -- the loop -----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out", default=HERE, help="folder for bot.py + weights.npz (default: here)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--imitate", type=int, default=30, help="imitation iterations")
    ap.add_argument("--imitate-steps", type=int, default=20, help="Adam steps per iteration")
    ap.add_argument("--reinforce", type=int, default=370, help="policy-gradient iterations")
    ap.add_argument("--matches", type=int, default=32, help="training matches per iteration")
    ap.add_argument("--lr", type=float, default=3e-3, help="imitation learning rate")
    ap.add_argument("--pg-lr", type=float, default=1e-3, help="policy-gradient learning rate")
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--eval-matches", type=int, default=200)
    ap.add_argument("--tiny", action="store_true", help="a few seconds' run, for CI")
    args = ap.parse_args(argv)
    if args.tiny:
        args.imitate, args.reinforce, args.matches = 2, 2, 2
        args.eval_every, args.eval_matches = 2, 4

    rng = np.random.default_rng(args.seed)
    params = init_params(rng, args.hidden)
    envs = [Cow006Env(opponents=OPPONENTS, seat=s) for s in range(4)]
    os.makedirs(args.out, exist_ok=True)
    curve_path = os.path.join(args.out, "curve.csv")
    rows: list[dict[str, float | str]] = []
    start = time.monotonic()
    iterations = args.imitate + args.reinforce
    imitation, reinforce = Adam(args.lr), Adam(args.pg_lr)
    trained = 0
    seen: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # the imitation data

    def checkpoint(it: int) -> None:
        res = evaluate(Policy(params), args.eval_matches)
        phase = "start" if it == 0 else "imitate" if it <= args.imitate else "reinforce"
        row: dict[str, float | str] = {"iteration": it, "phase": phase, "matches": trained}
        row["minutes"] = (time.monotonic() - start) / 60
        row["cpu_minutes"] = time.process_time() / 60
        row.update(res)
        rows.append(row)
        with open(curve_path, "w", newline="") as f:  # rewritten at each point: watchable
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(
            f"it {it:4d}  matches {trained:6d}  {row['minutes']:5.1f} min  "
            f"win {res['win_rate']:.3f}  heads/deal {res['bot_heads_per_deal']:.2f}"
            f" vs greedy {res['greedy_heads_per_deal']:.2f}",
            flush=True,
        )

    checkpoint(0)
    for it in range(1, iterations + 1):
        seeds = [args.seed * 1_000_000 + trained + i for i in range(args.matches)]
        batch = play_batch(envs, Policy(params), seeds, rng)
        trained += args.matches
        x, legal = batch.arrays()
        if it <= args.imitate:
            # DAgger: the teacher's labels on every position the learner reached so far,
            # several minibatch steps per iteration (one would learn far too slowly)
            seen.append((x, legal, np.array(batch.teacher)))
            xs, ls, ts = (np.concatenate(a) for a in zip(*seen, strict=True))
            for _ in range(args.imitate_steps):
                pick = rng.integers(0, len(ts), size=min(len(ts), 1024))
                grads, _ = grad_log_softmax(
                    params, xs[pick], ls[pick], ts[pick], np.ones(len(pick), np.float32)
                )
                imitation.step(params, grads)
        else:
            ret = np.array(batch.ret, np.float32)
            turn = np.array(batch.turn)
            adv = ret.copy()
            for t in range(1, 11):  # the baseline: the batch's mean return at that turn
                at = turn == t
                if at.any():
                    adv[at] -= ret[at].mean()
            adv /= adv.std() + 1e-6
            grads, _ = grad_log_softmax(params, x, legal, np.array(batch.action), adv)
            reinforce.step(params, grads)
        if it % args.eval_every == 0 or it in (args.imitate, iterations):
            checkpoint(it)
    for env in envs:
        env.close()

    weights = os.path.join(args.out, "weights.npz")
    np.savez(weights, w1=params["w1"], b1=params["b1"], w2=params["w2"], b2=params["b2"])
    if os.path.realpath(args.out) != HERE:
        shutil.copy(os.path.join(HERE, "bot.py"), os.path.join(args.out, "bot.py"))
    print(
        f"wrote {args.out}/weights.npz and curve.csv in {(time.monotonic() - start) / 60:.1f} min"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
