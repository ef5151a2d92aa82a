"""Helpers of the API tests: a recording executor, an ``Api`` client with shortcuts, and
real match results stored the way workers store them."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from cow006 import Agent, play_match
from cow006_platform import db, models, results, security

BOT_SOURCE = "def play(view):\n    return min(view.hand)\n"


class RecordingExecutor:
    """An executor that runs nothing: it records what was submitted and, with ``activate``,
    marks each version active at once (as a passing validation would)."""

    def __init__(self, activate: bool = True) -> None:
        self.activate = activate
        self.matches: list[int] = []
        self.validations: list[int] = []
        self.session_factory: sessionmaker[Session] | None = None

    def submit_match(self, match_id: int, kind: object = None) -> None:
        self.matches.append(match_id)

    def submit_validation(self, version_id: int) -> None:
        self.validations.append(version_id)
        if self.activate and self.session_factory is not None:
            with db.session_scope(self.session_factory) as session:
                version = session.get(models.AgentVersion, version_id)
                assert version is not None
                version.status = models.VersionStatus.active

    def close(self) -> None:
        pass


class Api:
    """A TestClient on a fresh app, with helpers that make users, agents and versions."""

    def __init__(self, client: Any, executor: RecordingExecutor, factory: sessionmaker[Session]):
        self.client = client
        self.executor = executor
        self.session_factory = factory
        self._n = 0

    def user(self, name: str | None = None, *, admin: bool = False) -> dict[str, str]:
        """A new user; returns its auth headers (admins are made as the CLI does)."""
        self._n += 1
        name = name or f"user{self._n}"
        if admin:
            with db.session_scope(self.session_factory) as session:
                _, token = security.create_user(session, name, is_admin=True)
        else:
            r = self.client.post("/api/users", json={"name": name})
            assert r.status_code == 201, r.text
            token = r.json()["token"]
        return {"Authorization": f"Bearer {token}"}

    def agent(self, headers: dict[str, str], name: str | None = None) -> int:
        self._n += 1
        r = self.client.post(
            "/api/agents", json={"name": name or f"agent{self._n}"}, headers=headers
        )
        assert r.status_code == 201, r.text
        return int(r.json()["id"])

    def upload(
        self, headers: dict[str, str], agent_id: int, source: str | None = None
    ) -> dict[str, Any]:
        """Upload a bot.py (distinct content each time unless ``source`` is given)."""
        self._n += 1
        body = source if source is not None else f"{BOT_SOURCE}# {self._n}\n"
        r = self.client.post(
            f"/api/agents/{agent_id}/versions",
            files={"file": ("bot.py", body.encode(), "text/x-python")},
            headers=headers,
        )
        assert r.status_code == 201, r.text
        return dict(r.json())

    def entrant(self, ladder: int) -> tuple[int, int]:
        """A new user's agent with a fresh version, entered in ``ladder``: (agent, version)."""
        owner = self.user()
        agent = self.agent(owner)
        version = int(self.upload(owner, agent)["id"])
        r = self.client.post(
            f"/api/ladders/{ladder}/entries",
            json={"agent_id": agent, "version_id": version},
            headers=owner,
        )
        assert r.status_code in (200, 201), r.text
        return agent, version

    def enter_uploads(
        self, ladder: int, uploads: dict[str, tuple[str, bytes]], wait: Callable[[], bool]
    ) -> dict[str, tuple[dict[str, str], int, int]]:
        """Each upload (name: (filename, bytes)) by an author of its own, validated (``wait``:
        until the executor is idle) and entered in ``ladder``: name -> (owner, agent, version).
        """
        versions = {}
        for name, (filename, data) in uploads.items():
            owner = self.user(f"{name}-author")
            agent = self.agent(owner, f"{name}-bot")
            r = self.client.post(
                f"/api/agents/{agent}/versions",
                files={"file": (filename, data, "application/octet-stream")},
                headers=owner,
            )
            assert r.status_code == 201, r.text
            versions[name] = (owner, agent, int(r.json()["id"]))
        assert wait()
        for name, (owner, agent, vid) in versions.items():
            v = self.client.get(f"/api/agents/{agent}/versions", headers=owner).json()["items"][0]
            assert v["status"] == "active", (name, v.get("reason"))
            r = self.client.post(
                f"/api/ladders/{ladder}/entries",
                json={"agent_id": agent, "version_id": vid},
                headers=owner,
            )
            assert r.status_code in (200, 201), r.text
        return versions

    def ladder(self, admin: dict[str, str], name: str | None = None, **fields: Any) -> int:
        self._n += 1
        r = self.client.post(
            "/api/ladders", json={"name": name or f"ladder{self._n}", **fields}, headers=admin
        )
        assert r.status_code == 201, r.text
        return int(r.json()["id"])


def play_and_finish(
    factory: sessionmaker[Session], match_id: int, stderr: list[str | None] | None = None
) -> dict[str, Any]:
    """Play match ``match_id`` in-process (seeded random agents at its seats, its seed) and
    store the result through ``results.finish_match``, as a worker would."""

    class Random(Agent):
        def on_match_start(self, info: Any) -> None:
            self.rng = random.Random(info.seed)

        def play(self, view: Any) -> int:
            return int(self.rng.choice(view.hand))

    with factory() as session:
        match = session.get(models.Match, match_id)
        assert match is not None
        seed, n = match.seed, len(match.seats)
    log = play_match([Random() for _ in range(n)], seed=seed)
    with db.session_scope(factory) as session:
        assert results.finish_match(session, match_id, log, stderr or [None] * n)
    return log


def new_match(factory: sessionmaker[Session], **fields: Any) -> int:
    """Queue a match through ``results.create_match``; returns its id."""
    with db.session_scope(factory) as session:
        return results.create_match(session, **fields).id
