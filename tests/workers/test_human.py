"""A person's match against the bots, through the real code path: ``crud.plays.create`` queues
it, ``runs.run_match`` plays it with the built-ins sandboxed and ``human.HumanSeat`` at the
person's seat, and the person answers through ``crud.plays.answer`` from another thread, as
the API would.  The stored log replays (``cow006.log.verify``) and names the person's seat
after the user; a person who never answers is played for by the fallback, as a bot that
times out, and forfeits after three faults.

Needs the sandbox: without it the tests skip with the reason, except when
``COW006_REQUIRE_SANDBOX=1`` (CI), where they fail.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from helpers import services
from sqlalchemy.orm import Session, sessionmaker

from cow006 import BotFault, View
from cow006 import log as cow_log
from cow006_platform import crud, db, results, security
from cow006_platform.models import Match, MatchKind, MatchStatus, Play, User
from cow006_platform.schemas import PlayCreate, PlayMove
from cow006_platform.settings import Settings
from cow006_workers import human, runs

Factory = sessionmaker[Session]


def _start(factory: Factory, settings: Settings, opponents: list[str]) -> tuple[int, int, int]:
    with factory() as session:
        user, _token = security.create_user(session, "alice")
        session.commit()
        play_id = crud.plays.create(session, settings, PlayCreate(opponents=opponents), user)
        play = session.get(Play, play_id)
        assert play is not None
        return user.id, play_id, play.match_id


def _person(factory: Factory, user_id: int, play_id: int, stop: threading.Event) -> list[str]:
    """Answer every decision asked: the lowest card, the row with the fewest heads."""
    asked: list[str] = []
    while not stop.is_set():
        with factory() as session:
            user = session.get(User, user_id)
            assert user is not None
            state = crud.plays.get(session, play_id, user)
            if state.status in (MatchStatus.finished, MatchStatus.failed):
                return asked
            if state.asked is None or state.view is None:
                time.sleep(0.005)
                continue
            asked.append(state.asked)
            if state.asked == "card":
                move = PlayMove(card=min(state.view["hand"]), decision=state.decision)
            else:
                heads = [len(row) for row in state.view["rows"]]
                move = PlayMove(row=heads.index(min(heads)), decision=state.decision)
            crud.plays.answer(session, play_id, user, move)
    return asked


@pytest.mark.slow
def test_a_person_plays_a_full_match_against_two_builtins(
    session_factory: Factory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    services.require_sandbox()
    monkeypatch.setattr(human, "POLL_SECONDS", 0.01)
    user_id, play_id, match_id = _start(
        session_factory, settings, ["builtin:greedy", "builtin:safe"]
    )
    stop = threading.Event()
    answers: list[list[str]] = []
    person = threading.Thread(
        target=lambda: answers.append(_person(session_factory, user_id, play_id, stop))
    )
    person.start()
    try:
        outcome = runs.run_match(session_factory, settings, match_id, None)
    finally:
        stop.set()
        person.join(30)
    assert outcome.status == "finished"
    with db.session_scope(session_factory) as session:
        match = session.get(Match, match_id)
        play = session.get(Play, play_id)
        assert match is not None and play is not None
        assert match.kind is MatchKind.play and not match.rated
        log = results.read_log(session, match_id)
        seat = play.seat
        assert play.asked is None and play.missed == 0
    assert log is not None
    cow_log.verify(log)
    assert max(log["scores"]) >= 66
    assert log["players"][seat]["agent"] == "alice"
    assert not [f for f in log["faults"] if f["seat"] == seat]
    # Every card of the person's was asked for: ten a round.
    assert answers and answers[0].count("card") == 10 * len(log["rounds"])


@pytest.mark.slow
def test_a_person_who_never_answers_is_played_for_and_forfeits(
    session_factory: Factory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    services.require_sandbox()
    monkeypatch.setattr(human, "POLL_SECONDS", 0.01)
    settings = settings.model_copy(update={"play_decision_seconds": 0.2})
    _user, play_id, match_id = _start(session_factory, settings, ["builtin:random"])
    outcome = runs.run_match(session_factory, settings, match_id, None)
    assert outcome.status == "finished"
    with db.session_scope(session_factory) as session:
        play = session.get(Play, play_id)
        assert play is not None
        log = results.read_log(session, match_id)
        seat, missed = play.seat, play.missed
        assert play.asked is None and play.pending is None
    assert log is not None
    cow_log.verify(log)
    mine = [f for f in log["faults"] if f["seat"] == seat]
    assert [f["kind"] for f in mine] == ["timeout"] * 3 and missed == 3
    assert log["forfeited"] == [seat]


def _view() -> View:
    return View.from_dict(
        {
            "seat": 0,
            "hand": [1, 50, 99],
            "rows": [[3], [20], [40], [60]],
            "scores": [0, 0],
            "penalties": [0, 0],
            "revealed": [],
            "starters": [3, 20, 40, 60],
            "round": 0,
            "turn": 0,
            "n_players": 2,
        }
    )


class _Clock:
    """A fake clock whose ``sleep`` runs ``on_sleep`` (the person, meanwhile) and moves on."""

    def __init__(self, on_sleep: Callable[[int], None] = lambda n: None) -> None:
        self.now = 0.0
        self.sleeps = 0
        self.on_sleep = on_sleep

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps += 1
        self.on_sleep(self.sleeps)
        self.now += seconds


def test_the_seat_plays_the_answer_given_while_it_waits(
    session_factory: Factory, settings: Settings
) -> None:
    user_id, play_id, _match = _start(session_factory, settings, ["builtin:random"])

    def person(n: int) -> None:
        if n == 3:  # the third look finds it
            with session_factory() as session:
                user = session.get(User, user_id)
                assert user is not None
                crud.plays.answer(session, play_id, user, PlayMove(card=50))

    fake = _Clock(person)
    seat = human.HumanSeat(
        session_factory, play_id, 10, poll=0.5, clock=fake.clock, sleep=fake.sleep
    )
    assert seat.play(_view()) == 50
    with db.session_scope(session_factory) as session:
        play = session.get(Play, play_id)
        assert play is not None
        assert play.decision == 1 and play.asked is None and play.pending is None
        assert play.missed == 0


def test_no_answer_by_the_deadline_is_a_timeout_fault(
    session_factory: Factory, settings: Settings
) -> None:
    _user, play_id, _match = _start(session_factory, settings, ["builtin:random"])
    fake = _Clock()
    seat = human.HumanSeat(
        session_factory, play_id, 2, poll=0.5, clock=fake.clock, sleep=fake.sleep
    )
    with pytest.raises(BotFault) as fault:
        seat.take_row(_view())
    assert fault.value.kind == "timeout" and fake.sleeps == 4
    with db.session_scope(session_factory) as session:
        play = session.get(Play, play_id)
        assert play is not None and play.missed == 1 and play.asked is None
    # Stopped (its worker lost the lease), the seat asks and gives up at once.
    seat.stop()
    with pytest.raises(BotFault):
        seat.play(_view())
    assert fake.sleeps == 4
