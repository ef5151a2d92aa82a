"""/api/users: registration shows the token once and stores only its hash; profiles; pages."""

from __future__ import annotations

import hashlib

import pytest
from helpers.api import Api
from sqlalchemy import select

from cow006_platform import models


@pytest.mark.slow
def test_register_shows_the_token_once_and_stores_its_hash(api: Api) -> None:
    r = api.client.post("/api/users", json={"name": "alice"})
    assert r.status_code == 201
    body = r.json()
    token = body["token"]
    assert body["name"] == "alice" and body["is_admin"] is False
    assert len(token) >= 40
    with api.session_factory() as session:
        user = session.scalars(select(models.User)).one()
        assert user.token_hash == hashlib.sha256(token.encode()).hexdigest()
        assert token not in user.token_hash
    auth = {"Authorization": f"Bearer {token}"}
    me = api.client.get("/api/users/me", headers=auth)
    assert me.status_code == 200
    assert me.json()["id"] == body["id"] and "token" not in me.json()
    profile = api.client.get(f"/api/users/{body['id']}").json()
    assert profile == {k: body[k] for k in ("id", "name", "is_admin", "created_at")}
    assert profile["created_at"].endswith(("Z", "+00:00"))  # RFC 3339 on both databases


@pytest.mark.slow
def test_register_refuses_taken_and_bad_names(api: Api) -> None:
    assert api.client.post("/api/users", json={"name": "bob"}).status_code == 201
    r = api.client.post("/api/users", json={"name": "bob"})
    assert r.status_code == 409 and "taken" in r.json()["detail"]
    for bad in ["x", "a" * 41, "with space", "é-accent", "", "bob\x00"]:
        assert api.client.post("/api/users", json={"name": bad}).status_code == 422, bad
    assert api.client.post("/api/users", json={"name": "ok", "is_admin": True}).status_code == 422
    assert api.client.post("/api/users", content=b"{not json").status_code == 422
    with api.session_factory() as session:
        assert session.scalars(select(models.User.name)).all() == ["bob"]


@pytest.mark.slow
def test_tokens_are_checked(api: Api) -> None:
    assert api.client.get("/api/users/me").status_code == 401
    r = api.client.get("/api/users/me", headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    assert r.headers["www-authenticate"] == "Bearer"
    # A wrong token is refused on public endpoints too (a client must learn it is stale).
    assert api.client.get("/api/users", headers={"Authorization": "Bearer nope"}).status_code == 401
    # Another scheme is a malformed header: refused, not read as anonymous (issue 14).
    assert api.client.get("/api/users", headers={"Authorization": "Basic eDp5"}).status_code == 401


@pytest.mark.slow
def test_profiles_and_pages(api: Api) -> None:
    for i in range(5):
        api.user(f"user-{i}")
    assert api.client.get("/api/users/999").status_code == 404
    assert api.client.get("/api/users/0").status_code == 422
    assert api.client.get(f"/api/users/{2**40}").status_code == 422
    page = api.client.get("/api/users", params={"limit": 2, "offset": 1}).json()
    assert page["total"] == 5 and page["limit"] == 2 and page["offset"] == 1
    assert [u["name"] for u in page["items"]] == ["user-1", "user-2"]
    # The page size is capped by settings.max_page_size (200), never refused below 1000.
    assert api.client.get("/api/users", params={"limit": 500}).json()["limit"] == 200
    assert api.client.get("/api/users", params={"limit": 0}).status_code == 422
    assert api.client.get("/api/users", params={"offset": -1}).status_code == 422


@pytest.mark.slow
def test_errors_are_json_even_for_bugs(api: Api) -> None:
    from fastapi.testclient import TestClient

    def boom() -> None:
        raise RuntimeError("a bug")

    app = api.client.app
    app.add_api_route("/api/boom", boom)  # type: ignore[attr-defined]
    r = TestClient(app, raise_server_exceptions=False).get("/api/boom")
    assert r.status_code == 500 and r.json() == {"detail": "internal server error"}
    assert api.client.get("/api/nowhere").json() == {"detail": "Not Found"}
    r = api.client.delete("/api/users")
    assert r.status_code == 405 and "detail" in r.json()
