"""The local runner: plays a match between agents and writes its log.

It owns what the pure engine does not: asking agents for decisions, turning bad decisions
and agent errors into faults with deterministic fallbacks, forfeiting a seat after too many
faults, and recording everything as a ``cow006-match-1`` log.  Agents may be in-process
``Agent`` objects or proxies of bot processes (``cow006.host``): the runner treats them alike.
"""

from __future__ import annotations

import math
import os
import random
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from . import engine
from ._agent import Agent, MatchInfo
from ._errors import IllegalMoveError, SetupError
from ._faults import MAX_DETAIL, MAX_FAULTS, BotFault, FaultKind, fallback_card
from ._view import View, new_table, pending_table
from .cards import HAND_SIZE, MAX_PLAYERS
from .log import FORMAT, Fault, MatchLog, Round, Turn
from .untrusted import clean

Deal = tuple[Sequence[Sequence[int]], Sequence[Sequence[int]]]

if TYPE_CHECKING:
    from ._view import Pending


class MatchOptions(TypedDict, total=False):
    """The options of a match besides its agents and seed (``play_match``, ``MatchRunner``)."""

    names: Sequence[str] | None  # the players' names in the log (default: the agents' names)
    deals: Sequence[Deal] | None  # explicit (hands, rows) deals for the first rounds, for tests
    settings: dict[str, Any] | None  # free-form match configuration, told to the agents
    agent_seeds: Sequence[int] | None  # the agents' own seeds, one per seat (a log's)


_OPTIONS = frozenset(MatchOptions.__annotations__)

# An interpreter that does not count references (``sys.getrefcount`` is CPython's): no view is
# ever known to be let go, as NaN equals nothing, not even itself (``MatchRunner._play_turns``).
_getrefcount: Callable[[object], float] = getattr(sys, "getrefcount", lambda obj: math.nan)

# Agent seeds and match seeds are in 0 .. 2**63 - 1 (a signed BIGINT, a JSON integer).
MAX_SEED = 2**63 - 1


def new_agent_seeds(n_players: int) -> list[int]:
    """Per-seat seeds for the agents' own randomness, drawn from the operating system.

    Never derived from the match seed: a bot that guesses the match seed (a ``--seed 3``, a
    challenge's chosen seed) must not be able to confirm the guess from its own seed, nor
    predict another seat's.  The log records them once the match is over (``agent_seeds``),
    and ``play_match(..., agent_seeds=log["agent_seeds"])`` plays the match again.
    """
    # One read of the operating system's randomness for all seats (what SystemRandom does
    # per seat: 8 bytes, the top 63 bits), instead of one per seat.
    # The bytes read as native unsigned 64-bit integers, then their top 63 bits: no slice
    # and no ``int.from_bytes`` call per seat (every match draws its seats' seeds).
    return [word >> 1 for word in memoryview(os.urandom(8 * n_players)).cast("Q")]


def seat_labels(n_players: int) -> tuple[str, ...]:
    """The opaque labels bots are told for the seats (``MatchInfo.names``): ``p0``, ``p1``...

    A bot is never told who it plays (agent names, owners): it cannot recognise a built-in
    opponent (validation) or a friend (collusion).  The log keeps the real names.
    """
    labels = _LABELS.get(n_players)
    return labels if labels is not None else tuple(f"p{seat}" for seat in range(n_players))


# The labels of every table size a match can have, made once (tuples of strings: shared).
_LABELS = {n: tuple(f"p{seat}" for seat in range(n)) for n in range(MAX_PLAYERS + 1)}


def _check_agent_seeds(seeds: Sequence[int], n_players: int) -> list[int]:
    out = list(seeds)
    if len(out) != n_players:
        raise SetupError(f"{len(out)} agent seeds given for {n_players} agents")
    for s in out:
        if type(s) is not int or not 0 <= s <= MAX_SEED:
            raise SetupError(f"an agent seed is an integer in 0 .. 2**63 - 1, not {s!r}")
    return out


# The notification hooks whose base versions do nothing: an agent type that keeps them is not
# notified (``_overridden``), which keeps a match of plain agents fast.
_HOOKS = ("on_round_start", "on_round_end", "on_match_end")
_BASE_TAKE_ROW = Agent.take_row


def _overridden(agents: Sequence[Any]) -> set[str]:
    """The notification hooks (``_HOOKS``) that some agent's type overrides."""
    own = set()
    for kind in {*map(type, agents)}:  # the agents' types, each once (often one type)
        for hook in _HOOKS:
            base = getattr(Agent, hook)
            if getattr(kind, hook, base) is not base:
                own.add(hook)
    return own


def _name(agent: Any, seat: int) -> str:
    name = getattr(agent, "name", None)
    if name:
        return str(name)
    # ``f"{type(agent).__name__}#{seat}"``, its seat's part made once
    suffix = _SEAT_SUFFIXES[seat] if seat < MAX_PLAYERS else f"#{seat}"
    return type(agent).__name__ + suffix


_SEAT_SUFFIXES = tuple(f"#{seat}" for seat in range(MAX_PLAYERS))


def play_match(
    agents: Sequence[Agent], seed: int | None = None, **options: Unpack[MatchOptions]
) -> MatchLog:
    """Play one match between ``agents`` (seat order) and return its cow006-match-1 log.

    ``seed`` fixes the deals only (a random one is drawn and recorded if None).  Each agent's
    own seed (``MatchInfo.seed``) is drawn independently, or taken from ``agent_seeds`` (one
    per seat): the log records them as ``agent_seeds``, so passing ``seed=log["seed"],
    agent_seeds=log["agent_seeds"]`` plays the same match again with reproducible agents.
    ``names`` are the players' names in the log, ``settings`` free-form configuration told to
    the agents (``MatchInfo.settings``), and ``deals`` explicit (hands, rows) deals for the
    first rounds, for tests.  The match always completes: a seat whose agent misbehaves gets
    fallbacks.
    """
    return MatchRunner(agents, seed, **options).run()


class MatchRunner:
    """One match in progress; ``run()`` plays it to the end and returns its log."""

    def __init__(
        self, agents: Sequence[Agent], seed: int | None = None, **options: Unpack[MatchOptions]
    ) -> None:
        """See ``play_match`` for the arguments."""
        if options and not options.keys() <= _OPTIONS:  # a misspelt option must not be ignored
            unknown = options.keys() - _OPTIONS
            raise TypeError(f"unexpected keyword argument {', '.join(sorted(unknown))}")
        n = len(agents)
        self.state = engine.new_match(n)  # checks the number of players first
        if seed is None:
            seed = random.SystemRandom().getrandbits(63)
        if type(seed) is not int or seed < 0:
            raise SetupError(f"a seed is a non-negative integer, not {seed!r}")
        # Kept off the log until the match is over (``run``): nothing a seat can see mid-match
        # holds another seat's seed.
        agent_seeds = options.get("agent_seeds") if options else None
        self.agent_seeds = (
            _check_agent_seeds(agent_seeds, n) if agent_seeds is not None else new_agent_seeds(n)
        )
        self.agents = agents = list(agents)
        self.seed = seed
        names = options.get("names") if options else None
        self.names = list(names) if names is not None else [*map(_name, agents, range(n))]
        if len(self.names) != n:
            raise SetupError(f"{len(self.names)} names given for {n} agents")
        self.deals = list(options.get("deals") or ()) if options else []
        self.settings = dict(options.get("settings") or {}) if options else {}
        self.rng = random.Random(seed)
        self.faults: list[Fault] = []
        self.fault_count = [0] * n
        self.forfeited = [False] * n
        self.log: MatchLog = {
            "format": FORMAT,
            "seed": seed,
            "players": [{"seat": i, "agent": name} for i, name in enumerate(self.names)],
            "rounds": [],
            "scores": [],
            "ranks": [],
            "faults": self.faults,
            "forfeited": [],
        }
        if self.settings:
            self.log["settings"] = self.settings
        if self.deals:  # the first rounds were not dealt from the seed (cow006.log.verify)
            self.log["given_deals"] = len(self.deals)
        self._plays = [a.play for a in agents]
        own = _overridden(agents)
        self._default_take_row = [type(a).take_row is _BASE_TAKE_ROW for a in agents]
        # Like the two lines above, read once a match: whether to make round-start views and
        # to call the round hooks at all.
        self._round_hooks = ("on_round_start" in own, "on_round_end" in own)
        self._end_hook = "on_match_end" in own
        # A turn's views make their table when an agent first reads it (``View._pending``),
        # from the log's copy of the rows before the turn, which nothing changes any more...
        # unless an ``on_round_end`` hook, handed the round's entry, changes it: then each
        # turn's table is made before its views are handed out, as a snapshot of its own.
        self._lazy = not self._round_hooks[1]
        # What the current turn's table is made of (and the table once made), also for its
        # take-row views.
        self._pending: Pending = [None]

    # -- faults ----------------------------------------------------------------------------
    def _fault(self, seat: int, kind: str, detail: str, fatal: bool = False) -> None:
        """Record a fault of ``seat`` (``kind``: a FaultKind); forfeit it if it must go."""
        st = self.state
        self.faults.append(
            {
                "seat": seat,
                # a fault before the first deal (at start-up) is filed under round 0, turn 0
                "round": max(st.round, 0),
                "turn": st.turn if st.round >= 0 else 0,
                "kind": str(kind),  # the log holds plain JSON strings
                # In-process agents' exceptions are text from bot code too: cleaned here.
                "detail": clean(detail, MAX_DETAIL),
            }
        )
        self.fault_count[seat] += 1
        if fatal or self.fault_count[seat] >= MAX_FAULTS:
            self._forfeit(seat)

    def _forfeit(self, seat: int) -> None:
        if self.forfeited[seat]:
            return
        self.forfeited[seat] = True
        close = getattr(self.agents[seat], "forfeit", None)
        if close is not None:
            try:
                close()
            except Exception:  # a bot that fails while being shut down changes nothing
                pass

    def _guard(self, seat: int, exc: BaseException) -> None:
        if isinstance(exc, BotFault):
            self._fault(seat, exc.kind, exc.detail, exc.fatal)
        elif isinstance(exc, IllegalMoveError):
            self._fault(seat, exc.kind, str(exc))
        else:
            self._fault(seat, FaultKind.EXCEPTION, f"{type(exc).__name__}: {exc}")

    def _notify(self, seat: int, hook: str, arg: Any) -> None:
        if self.forfeited[seat]:
            return
        try:
            getattr(self.agents[seat], hook)(arg)
        except (Exception, SystemExit) as exc:
            self._guard(seat, exc)

    # -- decisions -------------------------------------------------------------------------
    # Each decision is checked here, where it comes in: a bad one is a fault and is replaced
    # by its fallback, so the engine is only ever handed legal cards and rows.
    def _choose_row(self, seat: int, card: int) -> int:
        st = self.state
        if self._default_take_row[seat]:
            # Agent.take_row takes the cheapest row, exactly the fallback (``fallback_row``):
            # skip the view.
            return st.cheapest_row()
        if not self.forfeited[seat]:
            # Only the turn's lowest card can be below every row end, and it is placed first:
            # the table is still the one the turn's cards were played on.
            table = pending_table(self._pending)
            view = View(seat, tuple(st.hands[seat]), table, None, card, tuple(st.revealed[-1]))
            try:
                row = self.agents[seat].take_row(view)
                if type(row) is not int:
                    raise BotFault(
                        FaultKind.BAD_TYPE,
                        f"seat {seat} chose row {row!r}, which is not an integer",
                    )
                return engine.check_row(seat, row)
            except (Exception, SystemExit) as exc:
                self._guard(seat, exc)
        return st.cheapest_row()  # fallback_row(st.rows), from the rule's columns

    def _play_turns(self, starters: tuple[int, ...], rows: list[list[int]]) -> list[Turn]:
        """Play the round's turns (its deal is made: ``starters``, and the log's copy of its
        ``rows``); returns their records."""
        st = self.state
        # Read once a round: every turn of every match runs the loop below.
        n = st.n_players
        hands = st.hands
        new_view = object.__new__
        plays = self._plays
        forfeited = self.forfeited
        # No seat's agent has its own ``take_row``: every seat takes the cheapest row (so does
        # a forfeited seat's fallback), which the engine finds itself, with no call.
        choose_row = None if all(self._default_take_row) else self._choose_row
        settle = engine.settle
        revealed = st.revealed  # this round's (``engine.deal_round`` makes a new list)
        lazy = self._lazy
        # What the views of a turn share, kept as tuples between the turns that change them:
        # the totals change once a round, this round's penalties only with a take.
        scores = tuple(st.scores)
        penalties = tuple(st.penalties)
        before = rows  # the rows before the turn, as the log holds them: lists no one changes
        turns: list[Turn] = []
        # A view no agent kept is made again in place for the next seat, instead of a new one
        # (an object made and freed each seat and turn costs more than the rest of the view),
        # the way CPython's own ``zip`` reuses its tuples: only when nothing but this function
        # holds it, which its reference count tells, measured here on a view no one else has
        # seen (the same test below, so an interpreter that counts differently compares like
        # with like).  A view an agent keeps is never touched again.
        getrefcount = _getrefcount
        view = new_view(View)
        alone = getrefcount(view)
        for played in range(HAND_SIZE):
            self._pending = pending = [
                None,
                before,
                scores,
                penalties,
                revealed,  # the turns so far (the engine's): a table takes its first ones
                played,
                starters,
                st.round,
                st.turn,
                n,
            ]
            table = None if lazy else pending_table(pending)
            cards: list[int] = []
            for seat in range(n):
                hand = hands[seat]
                if not forfeited[seat]:
                    try:
                        # ``View(seat, tuple(hand), table)`` without the call of ``__init__``
                        # (four views a turn), and with what the table is made of: every one
                        # of the slots, set here (an agent may have changed a view it let go).
                        if getrefcount(view) != alone:  # kept: a new one
                            view = new_view(View)
                        view.seat = seat
                        view.hand = tuple(hand)
                        view._table = table
                        view._pending = pending
                        view.time_left = view.card = view.current = None
                        card = plays[seat](view)
                        if type(card) is int and card in hand:
                            # The card leaves the hand here, as it is checked (what the engine's
                            # ``reveal`` does for the whole turn): only this seat reads its hand.
                            hand.remove(card)
                            cards.append(card)
                            continue
                        if type(card) is not int:
                            raise BotFault(
                                FaultKind.BAD_TYPE,
                                f"seat {seat} played {card!r}, which is not an integer",
                            )
                        engine.check_card(st, seat, card)
                    except (Exception, SystemExit) as exc:
                        self._guard(seat, exc)
                card = fallback_card(hand)
                hand.remove(card)
                cards.append(card)
            # The turn's cards are revealed: they have left the hands (above), and the state
            # keeps this very list as the turn's reveal, which is also the log's (nothing
            # changes either): ``engine.play_turn`` without a check, a copy or a call of its own.
            revealed.append(cards)
            takes = settle(st, sorted(range(n), key=cards.__getitem__), cards, choose_row)
            st.turn += 1  # ``engine.end_turn``, without its call
            if takes:
                penalties = tuple(st.penalties)
            # The log's copy of the rows, which is also the next turn's table's: the table has
            # N_ROWS rows (``engine.start_round`` holds to it), and four method calls cost less
            # than ``[*map(list.copy, rows)]`` (a map object and a call through it per row).
            a, b, c, d = st.rows
            before = [a.copy(), b.copy(), c.copy(), d.copy()]
            turns.append({"cards": cards, "takes": takes, "rows": before})
        return turns

    # -- the match -------------------------------------------------------------------------
    def play_round(self) -> Round:
        st = self.state
        r = st.round + 1
        if r < len(self.deals):
            engine.start_round(st, *self.deals[r])
        else:
            engine.deal_round(st, self.rng)
        # The table has N_ROWS rows (``_play_turns`` copies them the same way): the starters
        # and the log's copy of the rows without a comprehension or a map.
        a, b, c, d = st.rows
        starters = (a[0], b[0], c[0], d[0])
        rows = [a.copy(), b.copy(), c.copy(), d.copy()]
        hands = [*map(list.copy, st.hands)]
        n = st.n_players
        if self._round_hooks[0]:
            table = new_table(
                tuple(map(tuple, st.rows)),
                tuple(st.scores),
                tuple(st.penalties),
                (),
                starters,
                st.round,
                st.turn,
                n,
            )
            for seat in range(n):
                self._notify(seat, "on_round_start", View(seat, tuple(st.hands[seat]), table))
        entry: Round = {
            "rows": rows,
            "hands": hands,
            "turns": self._play_turns(starters, rows),
            "penalties": engine.finish_round(st),
        }
        if self._round_hooks[1]:
            for seat in range(n):
                self._notify(seat, "on_round_end", entry)
        return entry

    def run(self) -> MatchLog:
        st = self.state
        n = st.n_players
        seeds = self.agent_seeds
        labels = seat_labels(n)
        # Bot processes start together, so their start-ups overlap instead of adding up.
        for agent in self.agents:
            start = getattr(agent, "start", None)
            if callable(start):
                try:
                    start()
                except Exception:  # reported as a startup fault by on_match_start below
                    pass
        for seat, info in enumerate(MatchInfo._for_seats(n, seeds, labels, self.settings)):
            self._notify(seat, "on_match_start", info)
        rounds = self.log["rounds"]
        while True:
            rounds.append(self.play_round())
            if st.match_over:
                break
        self.log["scores"] = list(st.scores)
        self.log["ranks"] = engine.ranks(st.scores)
        self.log["forfeited"] = [s for s in range(n) if self.forfeited[s]]
        # The match is over: its agent seeds may be known now, and make it reproducible.
        self.log["agent_seeds"] = list(seeds)
        result = {"scores": self.log["scores"], "ranks": self.log["ranks"]}
        # Every bot process hears the end before any is waited for (``RemoteAgent``'s
        # ``announce_end``): their exits overlap instead of adding up.
        for seat in range(n):
            announce = getattr(self.agents[seat], "announce_end", None)
            if callable(announce) and not self.forfeited[seat]:
                try:
                    announce(result)
                except Exception:  # on_match_end below meets the same trouble and says so
                    pass
        if self._end_hook:
            for seat in range(n):
                self._notify(seat, "on_match_end", result)
        return self.log
