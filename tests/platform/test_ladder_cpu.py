"""A ladder's ``cpu_share``: the CPU quota of each bot's sandbox slot in its matches.

Set when an admin creates the ladder, shown read-only in the ladder's JSON, and passed by
the worker to the sandbox (``cow006_workers.play.play(..., cpu=)``): a bot that keeps two
threads busy gets no more CPU than its share, and the match log's sandbox entry records it.
The match test needs the sandbox with its cgroups: without it, it skips (fails with
``COW006_REQUIRE_SANDBOX=1``).
"""

from __future__ import annotations

import os
import re

import pytest
from helpers import data as dt
from helpers.api import Api
from sqlalchemy.orm import Session, sessionmaker

from cow006 import sandbox
from cow006_platform import db, results, storage
from cow006_platform.models import Match, MatchKind, MatchStatus
from cow006_platform.settings import Settings
from cow006_workers import runs

Factory = sessionmaker[Session]

# Burns two threads for 0.4 s of wall time on its first move and says how many cores of CPU
# it got over that time.
GREEDY_CPU = """
import sys, threading, time

done = False

def spin(until):
    while time.monotonic() < until:
        pass

def play(view):
    global done
    if not done:
        done = True
        until = time.monotonic() + 0.4
        cpu, wall = time.process_time(), time.monotonic()
        threads = [threading.Thread(target=spin, args=(until,)) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        used = (time.process_time() - cpu) / (time.monotonic() - wall)
        print(f"cores {used:.3f}", file=sys.stderr)
    return min(view.hand)
"""
PLAIN = "def play(view):\n    return max(view.hand)\n"


@pytest.mark.slow
def test_ladders_have_a_cpu_share(api: Api) -> None:
    admin = api.user("root", admin=True)
    r = api.client.post("/api/ladders", json={"name": "main"}, headers=admin)
    assert r.status_code == 201 and r.json()["cpu_share"] == 1.0
    r = api.client.post("/api/ladders", json={"name": "half", "cpu_share": 0.5}, headers=admin)
    assert r.status_code == 201 and r.json()["cpu_share"] == 0.5
    got = api.client.get(f"/api/ladders/{r.json()['id']}").json()
    assert got["cpu_share"] == 0.5
    for bad in (0, -1, 1000, "x"):
        r = api.client.post("/api/ladders", json={"name": "bad", "cpu_share": bad}, headers=admin)
        assert r.status_code == 422, bad


@pytest.mark.slow
def test_a_ladder_match_runs_with_the_ladders_cpu_share(
    session_factory: Factory, settings: Settings
) -> None:
    cfg = settings.model_copy(update={"sandbox": "on"})
    sb = sandbox.Sandbox()
    status = sandbox.probe(sb)
    if not status.ok or not sb._cgroups_on():
        reason = f"needs the sandbox with its cgroups: {status.reason}"
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    vids = []
    for source in (GREEDY_CPU, PLAIN):
        stored = storage.store_upload(cfg, "bot.py", source.encode())
        with db.session_scope(session_factory) as s:
            vids.append(dt.version(s, sha256=stored.sha256).id)
    with db.session_scope(session_factory) as s:
        lid = dt.ladder(s, players=2, decision_time=5.0, time_bank=10.0, cpu_share=0.25).id
        mid = results.create_match(
            s, kind=MatchKind.ladder, version_ids=vids, ladder_id=lid, seed=77
        ).id
    runs.run_match(session_factory, cfg, mid, None)
    with db.session_scope(session_factory) as s:
        m = s.get(Match, mid)
        assert m is not None and m.status is MatchStatus.finished, m and m.error
        log = results.read_log(s, mid)
        # Seats may be shuffled: the greedy bot's is the one that says "cores".
        stderr = "".join(x.stderr or "" for x in m.seats if x.version_id == vids[0])
    assert log is not None and log["sandbox"]["cgroups"]["cpu"] == 0.25
    found = re.search(r"cores ([\d.]+)", stderr)
    assert found, (stderr, log["faults"], [x.stderr for x in m.seats])
    # Two busy threads, a quarter of a core: the quota holds (with room for one period).
    assert float(found[1]) < 0.45, stderr
