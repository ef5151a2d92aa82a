"""End to end through the real pieces: the HTTP API (``CeleryExecutor``), Redis, worker
processes, the beat, PostgreSQL, sandboxed bots.

Users register, create agents and upload bots; the workers validate them (a broken one is
rejected with its reason); the owners enter a ladder; the beat's scheduler fills its queue,
the workers play, the leaderboard moves; a challenge is played too.  Every stored log
replays, every rated match is rated exactly once, and no two runs of a match overlap.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers import servers
from helpers import workers as wt

from cow006_platform import db, security
from cow006_platform.app import create_app
from cow006_platform.executor import CeleryExecutor

# Real worker processes on Redis and PostgreSQL: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

BROKEN = "import no_such_module_anywhere\n\ndef play(view):\n    return view.hand[0]\n"


def test_upload_validate_and_play_a_ladder_through_celery(arena: wt.Arena) -> None:
    arena.worker(concurrency=1)
    arena.worker(concurrency=1)
    arena.beat()
    executor = CeleryExecutor(arena.broker_url)
    app = create_app(arena.settings, executor=executor)
    with TestClient(app) as client:
        with db.session_scope(arena.session_factory) as s:
            _, admin_token = security.create_user(s, "admin", is_admin=True)
        admin = {"Authorization": f"Bearer {admin_token}"}
        r = client.post(
            "/api/ladders",
            json={"name": "main", "players": 4, "decision_time": 1.0, "time_bank": 5.0},
            headers=admin,
        )
        assert r.status_code == 201, r.text
        ladder_id = r.json()["id"]

        owners: list[tuple[dict[str, str], int, int]] = []
        for name, source in wt.BOTS.items():
            r = client.post("/api/users", json={"name": f"owner-{name}"})
            assert r.status_code == 201, r.text
            headers = {"Authorization": f"Bearer {r.json()['token']}"}
            r = client.post("/api/agents", json={"name": f"bot-{name}"}, headers=headers)
            assert r.status_code == 201, r.text
            agent_id = r.json()["id"]
            r = client.post(
                f"/api/agents/{agent_id}/versions",
                files={"file": ("bot.py", source.encode(), "text/x-python")},
                headers=headers,
            )
            assert r.status_code == 201, r.text
            assert r.json()["status"] == "pending"
            owners.append((headers, agent_id, r.json()["number"]))
        # A broken upload: rejected by its validation, with the traceback for its owner.
        bad_headers, bad_agent, _ = owners[0]
        r = client.post(
            f"/api/agents/{bad_agent}/versions",
            files={"file": ("bot.py", BROKEN.encode(), "text/x-python")},
            headers=bad_headers,
        )
        assert r.status_code == 201, r.text
        bad_number = r.json()["number"]

        def version(headers: dict[str, str], agent_id: int, number: int) -> dict[str, Any]:
            r = client.get(f"/api/agents/{agent_id}/versions/{number}", headers=headers)
            assert r.status_code == 200, r.text
            return dict(r.json())

        def validated() -> bool:
            states = [version(h, a, n)["status"] for h, a, n in owners]
            return all(s != "pending" for s in states) and (
                version(bad_headers, bad_agent, bad_number)["status"] != "pending"
            )

        servers.wait_for(validated, 90, every=0.5)
        assert all(version(h, a, n)["status"] == "active" for h, a, n in owners)
        bad = version(bad_headers, bad_agent, bad_number)
        assert bad["status"] == "rejected"
        assert "no_such_module_anywhere" in (bad["reason"] or "")

        for headers, agent_id, number in owners:
            v = version(headers, agent_id, number)
            r = client.post(
                f"/api/ladders/{ladder_id}/entries",
                json={"agent_id": agent_id, "version_id": v["id"]},
                headers=headers,
            )
            assert r.status_code == 201, r.text

        def board() -> list[dict[str, Any]]:
            r = client.get(f"/api/ladders/{ladder_id}/leaderboard")
            assert r.status_code == 200, r.text
            return list(r.json()["items"])

        # The leaderboard moves: every entry has played, the ratings have spread.
        servers.wait_for(lambda: all(row["matches"] >= 3 for row in board()), 120, every=0.5)
        rows = board()
        assert len({round(row["mu"], 6) for row in rows}) > 1
        assert all(row["sigma"] < 25.0 / 3 for row in rows)

        # A challenge goes through the broker as well.
        headers = owners[1][0]
        r = client.post(
            "/api/challenges",
            json={"agent_ids": [owners[1][1], owners[2][1], owners[3][1]]},
            headers=headers,
        )
        assert r.status_code == 201, r.text
        challenge = r.json()["id"]
        servers.wait_for(
            lambda: client.get(f"/api/matches/{challenge}").json()["status"] == "finished",
            60,
            every=0.5,
        )
    executor.close()
    for proc in list(arena.procs):
        arena.stop(proc)
    assert wt.assert_rated_once(arena.session_factory) >= 3
    assert wt.assert_logs_verify(arena.session_factory) >= 4
    wt.assert_no_overlap(wt.run_intervals(arena.journal(), {}))
    assert not wt.failures(arena.session_factory)
