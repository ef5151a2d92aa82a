"""The authorization matrix: every endpoint, as anonymous, another user, the owner, an admin.

Each row of ``MATRIX`` is one endpoint with the exact status each caller gets.  The rows run
in order against one world (so a row may rely on an earlier row's success: the owner's entry
exists when the withdrawal row runs), and for each row the callers go anonymous, other,
owner, admin, then a caller with a stale token (401 everywhere under /api).  "owner" is the
owner of the resource in question; stderr is checked from both seats' sides.  A test also
checks that the matrix covers every operation of the app's OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from helpers.api import Api, new_match, play_and_finish
from sqlalchemy import select

from cow006_platform import models

ACTORS = ("anon", "other", "owner", "admin")
Check = Callable[[str, Any], bool]


@dataclass
class Row:
    method: str
    path: str  # a route template: {A} owner's agent, {B} other's agent, {L} ladder, ...
    expect: tuple[int, int, int, int]  # anon, other, owner, admin
    body: Callable[[str], Any] | None = None  # JSON body for the caller
    upload: bool = False  # multipart bot upload instead of JSON
    check: Check | None = None  # on a 2xx answer: what the caller may see


def _private_reason(actor: str, body: Any) -> bool:
    items = body.get("items", [body])
    rejected = [v for v in items if v["status"] == "rejected"]
    assert rejected, body
    return all((v["reason"] is not None) == (actor in ("owner", "admin")) for v in rejected)


EVERYONE = (200, 200, 200, 200)


def public(*paths: str, check: Check | None = None) -> list[Row]:
    """GET rows that every caller reads alike."""
    return [Row("GET", path, EVERYONE, check=check) for path in paths]


def _stderr(secret: str) -> Check:
    return lambda actor, body: bool(body["stderr"] == secret)


MATRIX: list[Row] = [
    # users
    Row("POST", "/api/users", (201, 201, 201, 201), body=lambda a: {"name": f"new-{a}"}),
    *public("/api/users"),
    Row("GET", "/api/users/me", (401, 200, 200, 200)),
    *public("/api/users/{U}"),
    # tokens: each caller's own; another's token is not found (admins use the admin CLI)
    Row("GET", "/api/users/me/tokens", (401, 200, 200, 200)),
    Row("POST", "/api/users/me/tokens", (401, 201, 201, 201), body=lambda a: {"name": f"t-{a}"}),
    Row("POST", "/api/users/me/tokens/{R}/rotate", (401, 404, 201, 404)),
    Row("DELETE", "/api/users/me/tokens/{T}", (401, 404, 204, 404)),
    # agents and versions
    Row("POST", "/api/agents", (401, 201, 201, 201), body=lambda a: {"name": f"agent-{a}"}),
    *public("/api/agents", "/api/agents/{A}"),
    Row("PATCH", "/api/agents/{A}", (401, 403, 403, 200), body=lambda a: {"disabled": False}),
    Row("POST", "/api/agents/{A}/versions", (401, 403, 201, 403), upload=True),
    *public("/api/agents/{A}/versions", "/api/agents/{A}/versions/2", check=_private_reason),
    Row("GET", "/api/agents/{A}/versions/1/source", (401, 403, 200, 200)),
    *public("/api/agents/{A}/ratings", "/api/agents/{A}/head-to-head/{B}"),
    # ladders
    Row("POST", "/api/ladders", (401, 403, 403, 201), body=lambda a: {"name": f"ladder-{a}"}),
    *public("/api/ladders", "/api/ladders/{L}"),
    Row("PATCH", "/api/ladders/{L}", (401, 403, 403, 200), body=lambda a: {"state": "open"}),
    Row(
        "POST",
        "/api/ladders/{L}/entries",
        (401, 403, 201, 403),
        body=lambda a: {"agent_id": "{A}", "version_id": "{V}"},
    ),
    *public("/api/ladders/{L}/entries", "/api/ladders/{L}/leaderboard", "/api/ladders/{L}/logs"),
    Row("DELETE", "/api/ladders/{L}/entries/{A}", (401, 403, 204, 403)),
    # leagues
    Row(
        "POST",
        "/api/leagues",
        (401, 403, 403, 201),
        body=lambda a: {"name": f"league-{a}", "entrants": ["{V}", "{W}"], "table_size": 2},
    ),
    *public("/api/leagues", "/api/leagues/{G}", "/api/leagues/{G}/schedule"),
    *public("/api/leagues/{G}/standings"),
    Row("POST", "/api/leagues/{G}/start", (401, 403, 403, 200)),
    # challenges and matches
    Row(
        "POST",
        "/api/challenges",
        (401, 201, 201, 201),
        body=lambda a: {"version_ids": ["{V}", "{W}"]},
    ),
    # evaluation runs: a run is its owner's (an admin reads it too); others get a 404
    Row(
        "POST",
        "/api/evaluations",
        (401, 403, 201, 403),
        body=lambda a: {"version_id": "{V}", "pool": ["{W}"], "players": 2, "matches": 2},
    ),
    Row("GET", "/api/evaluations", (401, 200, 200, 200)),
    Row("GET", "/api/evaluations/{E}", (401, 404, 200, 200)),
    Row(
        "POST",
        "/api/evaluations/{E}/promote",
        (401, 404, 200, 409),
        body=lambda a: {"ladder_ids": ["{L}"]},
    ),
    Row("POST", "/api/evaluations/{F}/discard", (401, 404, 200, 409)),
    # matches against the bots: a play is its player's alone (admins included: 404); the
    # owner has one going already, so a second is refused
    Row(
        "POST", "/api/plays", (401, 201, 429, 201), body=lambda a: {"opponents": ["builtin:random"]}
    ),
    Row("GET", "/api/plays/{P}", (401, 404, 200, 404)),
    Row("POST", "/api/plays/{P}/move", (401, 404, 409, 404), body=lambda a: {"card": 5}),
    *public("/api/matches", "/api/matches/{M}", "/api/matches/{M}/log"),
    # Seat 0 is the owner's bot, seat 1 the other user's: each reads only their own.
    Row(
        "GET",
        "/api/matches/{M}/seats/0/stderr",
        (401, 403, 200, 200),
        check=_stderr("owner's secret"),
    ),
    Row(
        "GET",
        "/api/matches/{M}/seats/1/stderr",
        (401, 200, 403, 200),
        check=_stderr("other's secret"),
    ),
]

# A row's path as the app's route template: its placeholders and literal numbers by name.
NAMES = {
    "{U}": "{user_id}",
    "{A}": "{agent_id}",
    "{B}": "{other_id}",
    "{L}": "{ladder_id}",
    "{G}": "{league_id}",
    "{M}": "{match_id}",
    "{E}": "{run_id}",
    "{F}": "{run_id}",
    "{P}": "{play_id}",
    "{R}": "{token_id}",
    "{T}": "{token_id}",
    "/versions/1/": "/versions/{number}/",
    "/versions/2": "/versions/{number}",
    "/seats/0/": "/seats/{seat}/",
    "/seats/1/": "/seats/{seat}/",
}


def _template(row: Row) -> str:
    path = row.path
    for key, name in NAMES.items():
        path = path.replace(key, name)
    return path.replace("/{other_id}", "/{agent_id}") if "/entries/" in path else path


def _world(api: Api) -> tuple[dict[str, dict[str, str]], dict[str, int]]:
    """Admin, owner (alice), other (bob); alice's agent with an active and a rejected
    version, bob's agent, a ladder, a league and a finished match between the two."""
    admin, owner, other = api.user("root", admin=True), api.user("alice"), api.user("bob")
    a, b = api.agent(owner, "ant"), api.agent(other, "bee")
    va = api.upload(owner, a)["id"]
    rejected = api.upload(owner, a)["id"]
    vb = api.upload(other, b)["id"]
    with api.session_factory.begin() as session:
        version = session.get(models.AgentVersion, rejected)
        assert version is not None
        version.status = models.VersionStatus.rejected
        version.reason = "it crashed"
        uid = session.scalars(select(models.User.id).where(models.User.name == "alice")).one()
    lid = api.ladder(admin, "main", players=2)
    spare = [
        api.client.post("/api/users/me/tokens", json={"name": n}, headers=owner).json()["id"]
        for n in ("spare", "to-rotate")
    ]
    r = api.client.post(
        "/api/leagues",
        json={"name": "cup", "entrants": [va, vb], "table_size": 2},
        headers=admin,
    )
    gid = r.json()["id"]
    mid = new_match(api.session_factory, kind="ladder", version_ids=[va, vb], ladder_id=lid)
    play_and_finish(api.session_factory, mid, stderr=["owner's secret", "other's secret"])
    headers = {
        "anon": {},
        "other": other,
        "owner": owner,
        "admin": admin,
        "stale": {"Authorization": "Bearer not-a-token"},
    }
    runs = [
        api.client.post(
            "/api/evaluations",
            json={"version_id": va, "pool": [vb], "players": 2, "matches": 2},
            headers=owner,
        ).json()["id"]
        for _ in range(2)
    ]
    ids = {"{U}": uid, "{A}": a, "{B}": b, "{V}": va, "{W}": vb, "{L}": lid, "{G}": gid, "{M}": mid}
    ids |= {"{E}": runs[0], "{F}": runs[1]}
    with api.session_factory() as session:  # run E played out: the owner may start another
        played = session.scalars(
            select(models.Match.id).where(models.Match.evaluation_id == runs[0])
        ).all()
    for match_id in played:
        play_and_finish(api.session_factory, match_id)
    ids |= {"{T}": spare[0], "{R}": spare[1]}
    play = api.client.post("/api/plays", json={"opponents": ["builtin:random"]}, headers=owner)
    ids["{P}"] = play.json()["id"]
    return headers, ids


def _fill(value: Any, ids: dict[str, int]) -> Any:
    if isinstance(value, str):
        if value in ids:
            return ids[value]
        for key, ident in ids.items():
            value = value.replace(key, str(ident))
        return value
    if isinstance(value, list):
        return [_fill(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, ids) for k, v in value.items()}
    return value


def test_the_matrix_covers_every_route(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    routes = {(method.upper(), path) for path, ops in paths.items() for method in ops}
    covered = {(row.method, _template(row)) for row in MATRIX}
    assert routes == covered


@pytest.mark.slow
def test_authorization_matrix(api: Api) -> None:
    headers, ids = _world(api)
    wrong: list[str] = []
    for row in MATRIX:
        path = _fill(row.path, ids)
        for actor, expected in [*zip(ACTORS, row.expect, strict=True), ("stale", 401)]:
            kwargs: dict[str, Any] = {"headers": headers[actor]}
            if row.body is not None:
                kwargs["json"] = _fill(row.body(actor), ids)
            if row.upload:
                source = f"def play(view):\n    return min(view.hand)  # {actor}\n"
                kwargs["files"] = {"file": ("bot.py", source.encode())}
            r = api.client.request(row.method, path, **kwargs)
            if r.status_code != expected:
                wrong.append(
                    f"{row.method} {path} as {actor}: {r.status_code} != {expected}"
                    f" ({r.text[:120]})"
                )
            elif r.status_code < 300 and row.check and r.content and not row.check(actor, r.json()):
                wrong.append(f"{row.method} {path} as {actor}: shows what it should not")
            if r.status_code >= 400:
                assert isinstance(r.json()["detail"], str | list | dict)
    assert not wrong, "\n".join(wrong)


@pytest.mark.slow
def test_docs_are_public(api: Api) -> None:
    assert api.client.get("/docs").status_code == 200
    schema = api.client.get("/openapi.json").json()
    assert "/api/ladders/{ladder_id}/leaderboard" in schema["paths"]
    assert schema["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"
