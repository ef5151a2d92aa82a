"""Issue 14, tokens: several named tokens per user, listed by prefix only, revoked at once in
every API process, rotated; disabled users; malformed Authorization headers; failed sign-ins
throttled per address; an OpenAPI document that says which operations are public.

Each test drives the real app (TestClient) on a fresh database, SQLite and PostgreSQL; the
cross-process tests run two app instances on one database, as two API processes would.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers.api import Api, RecordingExecutor
from sqlalchemy import select, update

from cow006_platform import models
from cow006_platform.app import create_app
from cow006_platform.settings import Settings

TOKENS = "/api/users/me/tokens"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def register(client: TestClient, name: str) -> str:
    r = client.post("/api/users", json={"name": name})
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


@pytest.fixture
def two_apps(settings: Settings) -> Iterator[tuple[TestClient, TestClient]]:
    """Two API processes (two apps, each with its own page cache and pools) on one database."""
    with ExitStack() as stack:
        clients = []
        for _ in range(2):
            app = create_app(settings, executor=RecordingExecutor())
            clients.append(stack.enter_context(TestClient(app)))
        yield clients[0], clients[1]


@pytest.mark.slow
def test_tokens_are_named_listed_by_prefix_and_revoked(api: Api) -> None:
    c = api.client
    first = register(c, "alice")
    r = c.post(TOKENS, json={"name": "laptop"}, headers=bearer(first))
    assert r.status_code == 201, r.text
    laptop = r.json()
    secret = laptop["token"]
    assert len(secret) >= 40 and laptop["prefix"] == secret[:8] and laptop["name"] == "laptop"
    assert c.get("/api/users/me", headers=bearer(secret)).json()["name"] == "alice"

    listed = c.get(TOKENS, headers=bearer(secret))
    assert listed.status_code == 200
    items = listed.json()["items"]
    assert [t["name"] for t in items] == ["default", "laptop"]
    assert [t["current"] for t in items] == [False, True]
    # Never a secret or its hash in a list, nor in the database.
    for token in (first, secret):
        assert token not in listed.text
        assert hashlib.sha256(token.encode()).hexdigest() not in listed.text
    with api.session_factory() as session:
        hashes = set(session.scalars(select(models.ApiToken.hash)))
    assert hashes == {hashlib.sha256(t.encode()).hexdigest() for t in (first, secret)}

    # A second live token of the same name is refused; the list is unchanged.
    r = c.post(TOKENS, json={"name": "laptop"}, headers=bearer(first))
    assert r.status_code == 409 and "laptop" in r.json()["detail"]

    # Revoked: refused at once, on public reads too; the other token still works.
    assert c.delete(f"{TOKENS}/{laptop['id']}", headers=bearer(first)).status_code == 204
    r = c.get("/api/users/me", headers=bearer(secret))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    assert c.get("/api/ladders", headers=bearer(secret)).status_code == 401
    assert c.get("/api/users/me", headers=bearer(first)).status_code == 200
    assert [t["name"] for t in c.get(TOKENS, headers=bearer(first)).json()["items"]] == ["default"]
    every = c.get(TOKENS, params={"revoked": "true"}, headers=bearer(first)).json()["items"]
    assert [t["revoked_at"] is not None for t in every] == [False, True]
    # Revoking again changes nothing; a name may be reused once its token is revoked.
    assert c.delete(f"{TOKENS}/{laptop['id']}", headers=bearer(first)).status_code == 204
    assert c.post(TOKENS, json={"name": "laptop"}, headers=bearer(first)).status_code == 201

    # Another user cannot see, revoke or rotate alice's tokens.
    bob = register(c, "bob")
    assert c.delete(f"{TOKENS}/{laptop['id']}", headers=bearer(bob)).status_code == 404
    assert c.post(f"{TOKENS}/{items[0]['id']}/rotate", headers=bearer(bob)).status_code == 404
    assert "alice" not in c.get(TOKENS, headers=bearer(bob)).text
    assert c.get("/api/users/me", headers=bearer(first)).status_code == 200

    # Bad names and lifetimes are 422s.
    for body in ({"name": ""}, {"name": "a b"}, {"name": "x" * 41}, {"name": "ok", "x": 1}):
        assert c.post(TOKENS, json=body, headers=bearer(first)).status_code == 422, body
    r = c.post(TOKENS, json={"name": "ok", "expires_days": 0}, headers=bearer(first))
    assert r.status_code == 422
    # Anonymous callers have no tokens to manage.
    assert c.get(TOKENS).status_code == 401


def test_rotation_replaces_a_token_in_one_call(api: Api) -> None:
    c = api.client
    first = register(c, "alice")
    current = c.get(TOKENS, headers=bearer(first)).json()["items"][0]
    r = c.post(f"{TOKENS}/{current['id']}/rotate", headers=bearer(first))
    assert r.status_code == 201, r.text
    new = r.json()
    assert new["name"] == "default" and new["id"] != current["id"] and new["token"] != first
    # The old secret is refused from the moment the new one exists.
    assert c.get("/api/users/me", headers=bearer(first)).status_code == 401
    assert c.get("/api/users/me", headers=bearer(new["token"])).status_code == 200
    # A revoked token cannot be rotated (someone may have revoked it for a reason).
    r = c.post(f"{TOKENS}/{current['id']}/rotate", headers=bearer(new["token"]))
    assert r.status_code == 409 and "revoked" in r.json()["detail"]


@pytest.mark.slow
def test_expired_tokens_are_refused_and_the_number_of_tokens_is_capped(api: Api) -> None:
    c = api.client
    first = register(c, "alice")
    r = c.post(TOKENS, json={"name": "short", "expires_days": 1}, headers=bearer(first))
    short = r.json()
    assert r.status_code == 201 and short["expires_at"] is not None
    assert c.get("/api/users/me", headers=bearer(short["token"])).status_code == 200
    with api.session_factory.begin() as session:
        past = models.utcnow() - timedelta(seconds=1)
        session.execute(
            update(models.ApiToken).where(models.ApiToken.id == short["id"]).values(expires_at=past)
        )
    assert c.get("/api/users/me", headers=bearer(short["token"])).status_code == 401
    r = c.post(f"{TOKENS}/{short['id']}/rotate", headers=bearer(first))
    assert r.status_code == 409 and "expired" in r.json()["detail"]
    # At most max_tokens_per_user live tokens (the expired one does not count).
    cap = Settings().max_tokens_per_user
    for i in range(cap - 1):
        r = c.post(TOKENS, json={"name": f"t{i}"}, headers=bearer(first))
        assert r.status_code == 201, r.text
    r = c.post(TOKENS, json={"name": "one-too-many"}, headers=bearer(first))
    assert r.status_code == 409 and "revoke one first" in r.json()["detail"]
    assert len(c.get(TOKENS, headers=bearer(first)).json()["items"]) == cap


@pytest.mark.slow
def test_a_revoked_token_is_refused_at_once_by_every_api_process(
    two_apps: tuple[TestClient, TestClient],
) -> None:
    a, b = two_apps
    first = register(a, "alice")
    made = a.post(TOKENS, json={"name": "ci"}, headers=bearer(first)).json()
    # Both processes accept it (b has read it, so any per-process cache would now hold it).
    for client in (a, b):
        for _ in range(3):
            assert client.get("/api/users/me", headers=bearer(made["token"])).status_code == 200
    assert a.delete(f"{TOKENS}/{made['id']}", headers=bearer(first)).status_code == 204
    # No wait, no poll interval: the very next request to the other process is refused.
    r = b.get("/api/users/me", headers=bearer(made["token"]))
    assert r.status_code == 401 and "revoked" in r.json()["detail"]
    assert b.get("/api/ladders", headers=bearer(made["token"])).status_code == 401
    # Rotation in b is seen by a the same way.
    current = b.get(TOKENS, headers=bearer(first)).json()["items"][0]
    rotated = b.post(f"{TOKENS}/{current['id']}/rotate", headers=bearer(first)).json()
    assert a.get("/api/users/me", headers=bearer(first)).status_code == 401
    assert a.get("/api/users/me", headers=bearer(rotated["token"])).status_code == 200


MALFORMED: list[Any] = [
    "Bearer ",
    "Bearer",
    "bearer    ",
    "Basic eDp5",
    "Token abc",
    "garbage",
    "Bearer two words",
    "Bearer " + "x" * 300,
    "Bearer caf\u00e9".encode(),  # not ASCII
    "Bearer a\tb",
]


@pytest.mark.slow
def test_a_malformed_authorization_header_is_a_401_not_anonymous(api: Api) -> None:
    c = api.client
    good = register(c, "alice")
    api.ladder(api.user("root", admin=True), "main")
    for route in ("/api/ladders", "/api/users", "/api/ladders/1/leaderboard", "/api/users/me"):
        assert c.get(route).status_code == (401 if route.endswith("/me") else 200)
        for value in MALFORMED:
            r = c.get(route, headers={"Authorization": value})
            assert r.status_code == 401, (route, value, r.text)
            detail = r.json()["detail"]
            assert isinstance(detail, str) and "\n" not in detail, detail
            assert r.headers["www-authenticate"] == "Bearer"
    assert "Bearer TOKEN" in c.get("/api/ladders", headers={"Authorization": "Bearer "}).text
    # Two Authorization headers are ambiguous: refused, even if one of them is good.
    r = c.get(
        "/api/users/me",
        headers=[("Authorization", f"Bearer {good}"), ("Authorization", "Bearer x")],
    )
    assert r.status_code == 401
    # The scheme's case and surrounding spaces do not matter.
    for value in (f"bearer {good}", f"BEARER  {good} "):
        assert c.get("/api/users/me", headers={"Authorization": value}).status_code == 200


def fresh_window(period: int, need: float) -> None:
    """Wait for the next ``period``-second window if fewer than ``need`` seconds are left in
    this one: the counters are per fixed window, and a test's events must share one."""
    left = period - time.time() % period
    if left < need:
        time.sleep(left + 0.05)


@pytest.mark.slow
def test_failed_sign_ins_are_throttled_per_address_across_processes(settings: Settings) -> None:
    limited = settings.model_copy(update={"auth_failures_per_minute_per_address": 3})
    apps = [create_app(limited, executor=RecordingExecutor()) for _ in range(2)]
    with TestClient(apps[0]) as a, TestClient(apps[1]) as b:
        good = register(a, "alice")
        fresh_window(60, 20)
        for _ in range(3):
            assert a.get("/api/ladders", headers=bearer("guess")).status_code == 401
        r = a.get("/api/ladders", headers=bearer("guess"))
        assert r.status_code == 429 and "too many refused" in r.json()["detail"]
        assert 1 <= int(r.headers["retry-after"]) <= 60
        # Blocked in that process without another lookup, even with a good token...
        assert a.get("/api/users/me", headers=bearer(good)).status_code == 429
        # ...while anonymous reads go on.
        assert a.get("/api/ladders").status_code == 200
        # The other process shares the count: its first refusal is already over the limit.
        r = b.get("/api/ladders", headers={"Authorization": "Basic eDp5"})
        assert r.status_code == 429
        # Another address is not affected.
        with TestClient(apps[1], client=("198.51.100.7", 4000)) as other:
            assert other.get("/api/users/me", headers=bearer(good)).status_code == 200
            assert other.get("/api/users/me", headers=bearer("guess")).status_code == 401


def test_disabled_users_are_refused_with_a_sentence(api: Api) -> None:
    c = api.client
    token = register(c, "alice")
    with api.session_factory.begin() as session:
        session.execute(
            update(models.User).where(models.User.name == "alice").values(disabled=True)
        )
    for route in ("/api/users/me", "/api/ladders"):
        r = c.get(route, headers=bearer(token))
        assert r.status_code == 403, r.text
        assert r.json()["detail"] == "the account alice is disabled; ask the arena's admins"


def test_client_addresses_group_ipv6_by_64() -> None:
    from starlette.requests import Request

    from cow006_platform import throttle

    def addr(host: str) -> str:
        return throttle.client_address(Request({"type": "http", "client": (host, 1)}))

    assert addr("203.0.113.9") == "203.0.113.9"
    assert addr("2001:db8:1:2:aaaa::1") == addr("2001:db8:1:2:bbbb::9") == "2001:db8:1:2::/64"
    assert addr("2001:db8:1:3::1") != addr("2001:db8:1:2::1")
    assert addr("::ffff:198.51.100.1") == "198.51.100.1"
    assert addr("testclient") == "testclient"


@pytest.mark.slow
def test_the_openapi_document_says_which_operations_are_public(api: Api) -> None:
    paths = api.client.get("/openapi.json").json()["paths"]
    required = [{"HTTPBearer": []}]
    optional = [{}, {"HTTPBearer": []}]

    def security(method: str, path: str) -> Any:
        return paths[path][method].get("security")

    # Public: registration and public reads carry no security requirement.
    for method, path in [
        ("post", "/api/users"),
        ("get", "/api/users"),
        ("get", "/api/ladders"),
        ("get", "/api/ladders/{ladder_id}/leaderboard"),
        ("get", "/api/matches/{match_id}/log"),
    ]:
        assert security(method, path) is None, (method, path)
    # A token is needed.
    for method, path in [
        ("get", "/api/users/me"),
        ("post", "/api/agents"),
        ("post", "/api/ladders"),
        ("get", TOKENS),
        ("delete", TOKENS + "/{token_id}"),
    ]:
        assert security(method, path) == required, (method, path)
    # Optional: the owner sees more.
    assert security("get", "/api/agents/{agent_id}/versions") == optional
    # Every operation is one of the three.
    for ops in paths.values():
        for op in ops.values():
            assert op.get("security") in (None, required, optional)
