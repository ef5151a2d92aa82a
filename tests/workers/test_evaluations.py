"""An evaluation run through the real workers' code and the sandbox, end to end.

Bots are uploaded and validated, three of them enter a 4-player ladder; alice's version B
(a greedy bot) is evaluated paired with her version A (the lowest card) over 40 slots against
the ladder's top three.  Every bot is deterministic and the run's seed is fixed, so the
figures are the same on every run.  Promoting B enters it in the ladder.
"""

from __future__ import annotations

import os
from contextlib import closing
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from helpers.api import Api

from cow006 import sandbox, verify
from cow006_platform.app import create_app
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor

pytestmark = pytest.mark.slow

LOWEST = "def play(view):\n    return min(view.hand)\n"
HIGHEST = "def play(view):\n    return max(view.hand)\n"
MIDDLE = "def play(view):\n    return sorted(view.hand)[len(view.hand) // 2]\n"
THIRD = "def play(view):\n    return sorted(view.hand)[len(view.hand) // 3]\n"
# The card that costs the fewest heads now (the smallest card on a tie).
GREEDY = "def play(view):\n    return min(view.hand, key=lambda c: (view.simulate(c)[1], c))\n"
SLOTS = 40


def test_a_paired_evaluation_through_the_workers(tmp_path: Path) -> None:
    status = sandbox.probe()
    if not status.ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"COW006_REQUIRE_SANDBOX=1 but the sandbox does not work: {status}")
        pytest.skip(f"the sandbox does not work here: {'; '.join(status.problems)}")
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'eval.db'}",
        data_dir=tmp_path / "d",
        evaluation_slots=2,  # nothing else waits here: the run may take both threads
    )
    executor = InProcessExecutor(settings, threads=2)
    app = create_app(settings, executor)
    with closing(executor), TestClient(app) as client:
        api = Api(client, None, app.state.session_factory)  # type: ignore[arg-type]
        admin = api.user(admin=True)
        # Paused: the ladder schedules nothing; its top entries are the pool.
        lid = api.ladder(admin, players=4)
        client.patch(f"/api/ladders/{lid}", json={"state": "paused"}, headers=admin)
        pool = []
        for source in (HIGHEST, MIDDLE, THIRD):
            owner = api.user()
            agent = api.agent(owner)
            version = int(api.upload(owner, agent, source)["id"])
            pool.append(version)
        alice = api.user("alice")
        ant = api.agent(alice, "ant")
        a = int(api.upload(alice, ant, LOWEST)["id"])
        b = int(api.upload(alice, ant, GREEDY)["id"])
        assert executor.wait_idle(180)
        body = {"version_id": b, "baseline_id": a, "pool": pool, "matches": SLOTS, "seed": 5}
        r = client.post("/api/evaluations", json=body, headers=alice)
        assert r.status_code == 201, r.text
        run_id = r.json()["id"]
        assert executor.wait_idle(600)
        run = client.get(f"/api/evaluations/{run_id}", headers=alice).json()
        assert run["status"] == "finished", run
        assert run["finished"] == 2 * SLOTS and run["failed"] == 0
        assert run["version"]["faults"] == 0 and run["baseline"]["faults"] == 0
        c = run["comparison"]
        # The paired intervals are narrower than the unpaired ones on the same matches.
        paired = c["heads_per_round"]["high"] - c["heads_per_round"]["low"]
        unpaired = c["heads_per_round_unpaired"]["high"] - c["heads_per_round_unpaired"]["low"]
        assert paired < unpaired, c
        # Greedy takes fewer heads than always-lowest against this pool.
        assert run["version"]["heads_per_round"] < run["baseline"]["heads_per_round"]
        print(  # the figures docs/matchmaking.md quotes (pytest -s shows them)
            "evaluation:", run["version"], run["baseline"], c
        )
        # Every match of the run is a real, replayable, unrated match.
        page = client.get("/api/matches", params={"kind": "evaluation", "limit": 5}).json()
        assert page["total"] == 2 * SLOTS
        for m in page["items"]:
            verify(client.get(f"/api/matches/{m['id']}/log").json())

        # Promote: B enters the (paused, not closed) ladder.
        r = client.post(
            f"/api/evaluations/{run_id}/promote", json={"ladder_ids": [lid]}, headers=alice
        )
        assert r.status_code == 200, r.text
        entries = client.get(f"/api/ladders/{lid}/entries").json()["items"]
        assert [(e["agent_id"], e["version_id"]) for e in entries] == [(ant, b)]
