"""The results view's figures, kept when a match is rated (``ratings.apply_match``): each
rating's heads, rounds, faulted matches and its rank just before its latest match, and what
the query layer reads from them (``crud.ladders``: the board, an agent's entries with their
rank; ``crud.agents.rating_changes``).  Every figure is checked against a computation of its
own from the matches' logs and the rating history."""

from __future__ import annotations

import json
from typing import Any

from helpers import data as dt
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent, View, bots, play_match
from cow006_platform import crud, db, ratings, results
from cow006_platform.cache import Fragments
from cow006_platform.crud import Paging
from cow006_platform.models import (
    Agent as AgentRow,
)
from cow006_platform.models import (
    AgentVersion,
    LadderEntry,
    Match,
    MatchKind,
    Rating,
    RatingPoint,
)

Factory = sessionmaker[Session]


class Faulty(Agent):
    """Plays a card it does not hold: every turn is a fault (the host plays for it)."""

    def play(self, view: View) -> int:
        return 999


def _arena(factory: Factory, n: int = 5) -> tuple[int, list[int], list[int]]:
    """A ladder with ``n`` entered versions of distinct agents: (ladder, versions, agents)."""
    vids = dt.versions(factory, n)
    with db.session_scope(factory) as s:
        lid = dt.ladder(s, players=4).id
        agents = []
        for vid in vids:
            version = s.get(AgentVersion, vid)
            assert version is not None
            agents.append(version.agent_id)
            s.add(LadderEntry(ladder_id=lid, agent_id=version.agent_id, version_id=vid))
    return lid, vids, agents


def _play(factory: Factory, lid: int, seats: list[int], seed: int, faulty: int | None) -> int:
    """A rated ladder match of ``seats`` played by built-ins (seat ``faulty`` faulting)."""
    with db.session_scope(factory) as s:
        mid = results.create_match(
            s, kind=MatchKind.ladder, version_ids=seats, ladder_id=lid, seed=seed
        ).id
    players: list[Any] = [bots.make("greedy") for _ in seats]
    if faulty is not None:
        players[faulty] = Faulty()
    log = play_match(players, seed=seed, names=[f"v{v}" for v in seats])
    with db.session_scope(factory) as s:
        assert results.finish_match(s, mid, log, [None] * len(seats))
    return mid


def _season(factory: Factory) -> tuple[int, list[int], list[int], list[int]]:
    lid, vids, agents = _arena(factory)
    mids = []
    for i in range(6):
        seats = [vids[(i + k) % 5] for k in range(4)]
        mids.append(_play(factory, lid, seats, 300 + i, faulty=1 if i % 3 == 0 else None))
    return lid, vids, agents, mids


def _expected(factory: Factory, lid: int, vids: list[int]) -> dict[int, dict[str, Any]]:
    """Each version's figures computed from scratch: its heads and rounds from the stored
    logs, its faulted matches from the logs' faults, and its rank before its latest match
    from the rating points (the board as it stood after the match before)."""
    with db.session_scope(factory) as s:
        ladder = crud.ladders.get_ladder(s, lid)
        start = ratings.conservative(ladder.mu, ladder.sigma)
        entry_of = {
            e.version_id: e.id
            for e in s.scalars(select(LadderEntry).where(LadderEntry.ladder_id == lid))
        }
        matches = s.scalars(select(Match).where(Match.ladder_id == lid).order_by(Match.id)).all()
        logs = {m.id: results.read_log(s, m.id) for m in matches}
        points = s.execute(
            select(RatingPoint.match_id, RatingPoint.version_id, RatingPoint.mu, RatingPoint.sigma)
            .where(RatingPoint.ladder_id == lid)
            .order_by(RatingPoint.id)
        ).all()
        out: dict[int, dict[str, Any]] = {
            v: {"tallied": 0, "heads": 0, "rounds": 0, "faulted": 0, "previous_rank": None}
            for v in vids
        }
        now = dict.fromkeys(vids, start)
        for m in matches:
            log = logs[m.id]
            assert log is not None
            seats = sorted(m.seats, key=lambda x: x.seat)
            board = sorted(vids, key=lambda v: (-now[v], entry_of[v]))
            for seat in seats:
                figure = out[seat.version_id]
                figure["tallied"] += 1
                figure["heads"] += log["scores"][seat.seat]
                figure["rounds"] += len(log["rounds"])
                figure["faulted"] += any(f["seat"] == seat.seat for f in log["faults"])
                figure["previous_rank"] = board.index(seat.version_id) + 1
            for p in points:
                if p.match_id == m.id:
                    now[p.version_id] = ratings.conservative(p.mu, p.sigma)
    return out


def _stored(factory: Factory, lid: int) -> dict[int, dict[str, Any]]:
    with db.session_scope(factory) as s:
        rows = s.scalars(select(Rating).where(Rating.ladder_id == lid)).all()
        return {
            r.version_id: {
                "tallied": r.tallied,
                "heads": r.heads,
                "rounds": r.rounds,
                "faulted": r.faulted,
                "previous_rank": r.previous_rank,
            }
            for r in rows
        }


def test_rating_a_match_keeps_heads_rounds_faults_and_the_rank_before(
    session_factory: Factory,
) -> None:
    lid, vids, _, mids = _season(session_factory)
    expected = _expected(session_factory, lid, vids)
    assert _stored(session_factory, lid) == expected
    assert sum(e["faulted"] for e in expected.values()) == 2  # matches 0 and 3, one seat each
    with db.session_scope(session_factory) as s:
        for mid in mids:
            match = s.get(Match, mid)
            log = results.read_log(s, mid)
            assert match is not None and log is not None
            assert match.rounds == len(log["rounds"]) >= 1
    # A rerate rebuilds the very same figures from the stored matches.
    with db.session_scope(session_factory) as s:
        assert ratings.rerate(s, lid) == len(mids)
    assert _stored(session_factory, lid) == expected


def test_the_board_reads_the_figures_in_its_row(session_factory: Factory) -> None:
    lid, vids, agents, _ = _season(session_factory)
    expected = _expected(session_factory, lid, vids)
    with db.session_scope(session_factory) as s:
        board = crud.ladders.leaderboard(s, lid, Paging(50, 0)).items
        last = {
            r.version_id: r.last_played_at
            for r in s.scalars(select(Rating).where(Rating.ladder_id == lid))
        }
    assert [r.rank for r in board] == [1, 2, 3, 4, 5]
    for row in board:
        figure = expected[row.version_id]
        assert row.previous_rank == figure["previous_rank"]
        assert row.rank_change == figure["previous_rank"] - row.rank
        assert row.heads_per_round == figure["heads"] / figure["rounds"]
        assert row.fault_rate == figure["faulted"] / figure["tallied"]
        assert row.last_played_at is not None and last[row.version_id] is not None
    # The cached board's JSON (the API's) says the same as the validated rows.
    with db.session_scope(session_factory) as s:
        parts = Fragments(1 << 20)
        data = json.loads(crud.ladders.leaderboard_json(s, lid, Paging(50, 0), parts))
    assert data["items"] == [r.model_dump(mode="json") for r in board]
    # The agents' entries carry the same place and change.
    with db.session_scope(session_factory) as s:
        for row in board:
            (entry,) = crud.ladders.agent_entries(s, row.agent_id)
            assert (entry.rank, entry.rank_change) == (row.rank, row.rank_change)
            assert entry.heads_per_round == row.heads_per_round
            assert entry.fault_rate == row.fault_rate
    assert set(agents) == {r.agent_id for r in board}


def test_a_withdrawn_or_disabled_entry_has_no_rank_and_the_others_close_up(
    session_factory: Factory,
) -> None:
    lid, vids, agents, _ = _season(session_factory)
    with db.session_scope(session_factory) as s:
        board = crud.ladders.leaderboard(s, lid, Paging(50, 0)).items
        first, second = board[0].agent_id, board[1].agent_id
        s.execute(update(LadderEntry).where(LadderEntry.agent_id == first).values(active=False))
        s.execute(update(AgentRow).where(AgentRow.id == board[2].agent_id).values(disabled=True))
    with db.session_scope(session_factory) as s:
        assert crud.ladders.agent_entries(s, first)[0].rank is None
        assert crud.ladders.agent_entries(s, board[2].agent_id)[0].rank is None
        assert crud.ladders.agent_entries(s, second)[0].rank == 1
        assert crud.ladders.agent_entries(s, board[3].agent_id)[0].rank == 2
    assert len(agents) == len(vids) == 5


def test_a_match_rated_before_rounds_were_kept_is_not_tallied(session_factory: Factory) -> None:
    lid, vids, _ = _arena(session_factory, 4)
    mid = _play(session_factory, lid, vids, 11, faulty=0)
    with db.session_scope(session_factory) as s:
        match = s.get(Match, mid)
        assert match is not None
        match.rounds = None  # as a match finished before migration 0010 has it
    with db.session_scope(session_factory) as s:
        ratings.rerate(s, lid)
    stored = _stored(session_factory, lid)
    assert all(f["tallied"] == f["heads"] == f["faulted"] == 0 for f in stored.values())
    with db.session_scope(session_factory) as s:
        row = crud.ladders.leaderboard(s, lid, Paging(50, 0)).items[0]
    assert row.matches == 1 and row.heads_per_round is None and row.fault_rate is None


def test_rating_changes_are_the_steps_of_the_rating_history(session_factory: Factory) -> None:
    lid, vids, agents, mids = _season(session_factory)
    with db.session_scope(session_factory) as s:
        ladder = crud.ladders.get_ladder(s, lid)
        points = s.execute(
            select(RatingPoint.match_id, RatingPoint.version_id, RatingPoint.mu, RatingPoint.sigma)
            .where(RatingPoint.version_id == vids[0])
            .order_by(RatingPoint.id)
        ).all()
        changes = crud.agents.rating_changes(s, agents[0], mids)
        assert crud.agents.rating_changes(s, agents[0], []) == {}
    before = ratings.conservative(ladder.mu, ladder.sigma)
    expected = {}
    for p in points:
        after = ratings.conservative(p.mu, p.sigma)
        expected[(p.match_id, p.version_id)] = after - before
        before = after
    assert len(expected) == 5  # vids[0] sat in 5 of the 6 matches
    assert changes.keys() == expected.keys()
    for key, value in expected.items():
        assert abs(changes[key] - value) < 1e-9
