"""Write-behind (``cow006_workers.writebehind``): a worker process stores a played match's
result on a thread of its own while it plays the next match.

The writer runs work in order and holds at most two pieces (a third ``submit`` waits); a
failing piece is logged and the writer goes on; ``drain`` waits for what it holds.  Through
``runs.run_match`` a match handed to a writer is ``played`` at once and finished, rated and
followed up once the writer has run (real sandboxed bots, on SQLite and PostgreSQL).
"""

from __future__ import annotations

import logging
import signal
import threading
import time

import pytest
from helpers import servers, services
from helpers import workers as wt
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from cow006_platform import db, results
from cow006_platform.executor import CeleryExecutor
from cow006_platform.models import Match, MatchKind, MatchStatus
from cow006_platform.settings import Settings
from cow006_workers import runs, writebehind


def test_work_runs_in_order_on_the_writers_thread() -> None:
    w = writebehind.Writer()
    seen: list[tuple[int, str]] = []
    for i in range(5):
        w.submit(lambda i=i: seen.append((i, threading.current_thread().name)))
    assert w.drain(5)
    assert [i for i, _ in seen] == [0, 1, 2, 3, 4]
    assert {name for _, name in seen} == {"cow006-write-behind"}
    assert w.pending == 0


def test_a_third_piece_waits_while_two_are_held() -> None:
    w = writebehind.Writer()
    gate = threading.Event()
    w.submit(gate.wait)  # being run
    deadline = time.monotonic() + 5
    while w._queue.qsize() and time.monotonic() < deadline:  # the writer took it
        time.sleep(0.001)
    w.submit(lambda: None)  # waiting
    third = threading.Thread(target=w.submit, args=(lambda: None,))
    third.start()
    third.join(0.2)
    assert third.is_alive(), "a third piece of work was taken while two were held"
    assert not w.drain(0.05)
    gate.set()
    third.join(5)
    assert not third.is_alive()
    assert w.drain(5) and w.pending == 0


def test_a_failing_piece_is_logged_and_the_writer_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    w = writebehind.Writer()
    done: list[int] = []

    def boom() -> None:
        raise RuntimeError("the database said no")

    with caplog.at_level(logging.ERROR, logger="cow006_workers.writebehind"):
        w.submit(boom)
        w.submit(lambda: done.append(1))
        assert w.drain(5)
    assert done == [1]
    assert any("the database said no" in (r.exc_text or "") for r in caplog.records)


def test_only_a_main_thread_task_gets_a_writer_and_only_when_enabled() -> None:
    assert writebehind.for_task(False) is None
    mine = writebehind.for_task(True)
    assert mine is not None and mine is writebehind.writer()
    elsewhere: list[object] = []
    t = threading.Thread(target=lambda: elsewhere.append(writebehind.for_task(True)))
    t.start()
    t.join()
    assert elsewhere == [None]  # the threads pool stores in line
    assert writebehind.drain(5)


@pytest.mark.slow
def test_a_match_handed_to_a_writer_is_played_then_stored_rated_and_followed_up(
    session_factory: sessionmaker[Session], settings: Settings
) -> None:
    services.require_sandbox()
    low = "def play(view):\n    return min(view.hand)\n"
    vids = wt.active_versions(session_factory, settings, 5, source=low)
    lid = wt.ladder(session_factory, vids, decision_time=1.0, time_bank=5.0)
    with db.session_scope(session_factory) as s:
        mid = results.create_match(
            s, kind=MatchKind.ladder, version_ids=vids[:4], ladder_id=lid, seed=7
        ).id
    w = writebehind.Writer()
    gate = threading.Event()
    w.submit(gate.wait)  # the writer is busy: the match's result must wait its turn
    sent: list[int] = []
    outcome = runs.run_match(session_factory, settings, mid, sent.extend, writer=w)
    assert outcome.status == "played"
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.running  # played, not stored yet
    gate.set()
    assert w.drain(30)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.finished, m.error
        assert m.rating_applied and results.read_log(s, mid) is not None
    assert sent, "the ladder's refill after the match was not sent"
    # A second delivery of the task finds the match settled.
    assert runs.run_match(session_factory, settings, mid, None, writer=w).status == "skipped"


@pytest.mark.slow
def test_a_warm_shutdown_stores_the_match_its_worker_was_playing(arena: wt.Arena) -> None:
    """SIGTERM while a worker plays: it finishes the match, and its process waits for that
    result to be stored (the writer drains at shutdown) instead of leaving it to the reaper.

    The test holds the match's row lock (PostgreSQL) from just after the claim until well
    after the SIGTERM, so the store is still waiting when the worker has played the match."""
    vids = [arena.upload(f"owner{i}", f"bot{i}", wt.BOTS["low"]) for i in range(5)]
    lid = arena.ladder(vids, players=4, decision_time=1.0, time_bank=5.0)
    with db.session_scope(arena.session_factory) as s:
        for seed in range(6):
            results.create_match(
                s, kind=MatchKind.ladder, version_ids=vids[:4], ladder_id=lid, seed=seed
            )
    worker = arena.worker(concurrency=1)
    sender = CeleryExecutor(arena.broker_url)
    try:
        for mid in sorted(wt.in_flight(arena.session_factory)):
            sender.submit_match(mid)

        def playing() -> int | None:
            runs_ = wt.RUN.findall(arena.journal())
            ended = {m for what, m, *_ in runs_ if what == "end"}
            started = [int(m) for what, m, *_ in runs_ if what == "start" and m not in ended]
            return started[-1] if len(runs_) >= 3 and started else None

        mid = servers.wait_for(playing, 60, every=0.005)
        with db.session_scope(arena.session_factory) as held:
            held.execute(select(Match.id).where(Match.id == mid).with_for_update())
            worker.popen.send_signal(signal.SIGTERM)
            servers.wait_for(lambda: f"run end match={mid} " in arena.journal(), 30, every=0.01)
            time.sleep(2.5)  # the task has returned; its result waits for the lock
            assert worker.popen.poll() is None, "the worker left with a result not stored"
        worker.popen.wait(30)
    finally:
        sender.close()
        arena.stop_all()
    with db.session_scope(arena.session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.finished, (m and m.status, m and m.error)
    assert "not stored at shutdown" not in arena.journal()
