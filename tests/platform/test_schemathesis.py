"""Property-based fuzzing of the API against its own OpenAPI schema (Schemathesis, in-process).

Every operation gets a handful of generated requests (valid and invalid), sent as the owner
of a small seeded world or as an admin.  No answer may be a 5xx, every answer must match the
schema (status codes, content types, bodies).  Afterwards the seeded data must all still be
there: bad input never loses stored data.  Bounded: a few hundred requests per database.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import schemathesis
from fastapi import FastAPI
from fastapi.testclient import TestClient
from helpers.api import Api, RecordingExecutor, new_match, play_and_finish
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hsettings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)
from sqlalchemy import func, select

from cow006_platform import models, results
from cow006_platform.app import create_app
from cow006_platform.settings import Settings

# Hundreds of generated requests, over 10 s: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

MAX_EXAMPLES = 6
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@dataclass
class World:
    app: FastAPI
    api: Api
    owner: dict[str, str]
    admin: dict[str, str]
    counts: dict[str, int]
    match_id: int
    statuses: dict[int, int] = field(default_factory=dict)  # answers seen, by status code


def _counts(api: Api) -> dict[str, int]:
    with api.session_factory() as session:
        return {
            m.__tablename__: session.scalar(select(func.count()).select_from(m)) or 0
            for m in (
                models.User,
                models.Agent,
                models.AgentVersion,
                models.Ladder,
                models.LadderEntry,
                models.League,
                models.Match,
                models.MatchLog,
            )
        }


@pytest.fixture
def world(settings: Settings, executor: RecordingExecutor) -> Iterator[World]:
    app = create_app(settings, executor=executor)
    executor.session_factory = app.state.session_factory
    with TestClient(app) as client:  # runs the lifespan: schema created
        api = Api(client, executor, app.state.session_factory)
        admin, owner = api.user("root", admin=True), api.user("alice")
        a = api.agent(owner, "ant")
        bob = api.user("bob")
        b = api.agent(bob, "bee")
        va = api.upload(owner, a)["id"]
        vb = api.upload(bob, b)["id"]
        lid = api.ladder(admin, "main", players=2)
        client.post(
            f"/api/ladders/{lid}/entries", json={"agent_id": a, "version_id": va}, headers=owner
        )
        mid = new_match(api.session_factory, kind="ladder", version_ids=[va, vb], ladder_id=lid)
        play_and_finish(api.session_factory, mid, stderr=["hello", None])
        w = World(app, api, owner, admin, _counts(api), mid)
        yield w
        # Bad input never loses stored data: everything seeded is still there, the log reads.
        after = _counts(api)
        assert all(after[k] >= n for k, n in w.counts.items()), (w.counts, after)
        with api.session_factory() as session:
            assert results.read_log(session, mid) is not None


def _fuzz(world: World, operation: Any, mode: GenerationMode) -> None:
    @given(case=operation.as_strategy(generation_mode=mode))
    @hsettings(
        max_examples=MAX_EXAMPLES,
        deadline=None,
        derandomize=True,  # the same cases every run: a failure here is reproducible
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        # Half the cases as the owner, half as an admin (fixed by the case's content).
        key = zlib.crc32(repr((case.path_parameters, case.query, case.body)).encode())
        headers = world.admin if key % 2 else world.owner
        response = case.call_and_validate(headers=headers, checks=CHECKS)
        world.statuses[response.status_code] = world.statuses.get(response.status_code, 0) + 1

    run()


def test_api_conforms_to_its_schema(world: World) -> None:
    schema = schemathesis.openapi.from_asgi("/openapi.json", world.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _fuzz(world, operation, mode)
    # Bounded, yet not trivial: both successes and refusals were exercised.
    total = sum(world.statuses.values())
    assert 200 <= total <= 2000, world.statuses
    assert world.statuses.get(200, 0) > 0 and world.statuses.get(422, 0) > 0, world.statuses
    print(f"schemathesis: {total} requests, by status {sorted(world.statuses.items())}")
