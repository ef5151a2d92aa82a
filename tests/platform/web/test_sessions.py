"""Signing in on the site: the session cookie, CSRF, sign-out, expiry, and hostile input.

Over plain HTTP (no JavaScript): the forms of /login and /upload are posted as a browser
without scripts would post them.  Each test runs on SQLite and PostgreSQL (``api``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from helpers.api import Api
from helpers.web import Node, parse_html
from sqlalchemy import func, select, update

from cow006_platform import db, websession
from cow006_platform.models import ApiToken, User, WebSession, utcnow


def form_page(client: Any, path: str = "/login") -> Node:
    r = client.get(path)
    assert r.status_code == 200, r.text[:300]
    assert r.headers["cache-control"] == "no-store"
    return parse_html(r.text)


def csrf(doc: Node, form: str = "signin-form") -> str:
    return doc.by_id(form).find("input", name="csrf").get("value") or ""


def sign_in(client: Any, token: str, next_path: str = "/upload") -> Any:
    doc = form_page(client)
    return client.post(
        "/login",
        data={"csrf": csrf(doc), "token": token, "next": next_path},
        follow_redirects=False,
    )


def who(client: Any, path: str = "/") -> str | None:
    """The signed-in user the page's header names, or None."""
    r = client.get(path)
    assert r.status_code == 200
    return parse_html(r.text).by_id("whoami").get("data-user")


def token_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def sessions(api: Api) -> int:
    with db.session_scope(api.session_factory) as session:
        return int(session.scalar(select(func.count()).select_from(WebSession)) or 0)


def test_sign_in_sets_an_httponly_lax_cookie_and_the_pages_know_the_user(api: Api) -> None:
    client = api.client
    token = token_of(api.user("alice"))
    assert who(client) is None
    r = sign_in(client, token)
    assert r.status_code == 303 and r.headers["location"] == "/upload"
    assert token not in r.headers["location"]
    cookie = r.headers["set-cookie"]
    assert cookie.startswith(f"{websession.COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie  # plain http: a Secure cookie would never come back
    assert who(client) == "alice"
    assert who(client, "/upload") == "alice"
    page = client.get("/upload")
    assert page.headers["cache-control"] == "no-store"  # personal: nobody stores it
    assert token not in page.text  # the token is never echoed
    # Only the secret's hash is stored.
    secret = client.cookies.get(websession.COOKIE)
    with db.session_scope(api.session_factory) as session:
        row = session.scalars(select(WebSession)).one()
        assert row.hash == websession.hash_token(secret) and secret not in row.hash


def test_the_cookie_is_secure_over_https(api: Api) -> None:
    token = token_of(api.user("alice"))
    client = api.client
    client.base_url = "https://testserver"
    r = sign_in(client, token)
    assert r.status_code == 303
    assert "Secure" in r.headers["set-cookie"]


def test_sign_in_refuses_a_missing_or_wrong_csrf_token(api: Api) -> None:
    client = api.client
    token = token_of(api.user("alice"))
    doc = form_page(client)
    good = csrf(doc)
    for fields in (
        {"token": token},  # no field
        {"token": token, "csrf": ""},
        {"token": token, "csrf": good[:-1] + ("A" if good[-1] != "A" else "B")},
        {"token": token, "csrf": "x" * 10_000},  # huge
        {"token": token, "csrf": "\u00e9\u0000\ud7ff"},
    ):
        r = client.post("/login", data=fields, follow_redirects=False)
        assert r.status_code == 403, fields
        assert r.headers["content-type"].startswith("text/html")
        assert (
            "did not come from this site"
            in parse_html(r.text).find("p", class_="error-detail").text()
        )
        assert websession.COOKIE not in r.headers.get("set-cookie", "")
    # A field past the form's bounds: the form is not read at all (an HTML 400).
    r = client.post("/login", data={"token": token, "csrf": "x" * 20_000})
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    # The double-submit cookie is what the field must repeat: without it, no form passes.
    client.cookies.delete(websession.CSRF_COOKIE)
    r = client.post("/login", data={"token": token, "csrf": good}, follow_redirects=False)
    assert r.status_code == 403
    assert sessions(api) == 0 and who(client) is None


def test_a_wrong_token_is_refused_without_echoing_it(api: Api) -> None:
    client = api.client
    api.user("alice")
    wrong = "Q" * 43
    r = sign_in(client, wrong)
    assert r.status_code == 401
    doc = parse_html(r.text)
    assert "Invalid API token" in doc.by_id("signin-error").text()
    assert wrong not in r.text
    assert doc.by_id("token-input").get("value") is None
    assert sessions(api) == 0


def test_refused_sign_ins_count_with_the_apis(api: Api) -> None:
    api.client.app.state.settings.auth_failures_per_minute_per_address = 2
    codes = [sign_in(api.client, "nope").status_code for _ in range(4)]
    assert codes == [401, 401, 429, 429]
    # The API refuses the address too, even a good token, until the window ends.
    assert api.client.get("/api/users/me", headers={"Authorization": "Bearer x"}).status_code == 429


def test_sign_in_goes_only_to_a_path_of_this_site(api: Api) -> None:
    token = token_of(api.user("alice"))
    for target, expected in (
        ("/agents/1", "/agents/1"),
        ("//evil.example/x", "/upload"),
        ("https://evil.example/", "/upload"),
        ("/\\evil.example", "/upload"),
        ("/\u00e9", "/upload"),
        ("", "/upload"),
    ):
        r = sign_in(api.client, token, target)
        assert r.status_code == 303 and r.headers["location"] == expected, target


def test_sign_out_needs_its_csrf_token_and_deletes_the_session(api: Api) -> None:
    client = api.client
    token = token_of(api.user("alice"))
    sign_in(client, token)
    secret = client.cookies.get(websession.COOKIE)
    assert who(client) == "alice"
    header = parse_html(client.get("/").text).by_id("whoami")
    field = header.find("input", name="csrf").get("value") or ""
    assert field == websession.csrf_of(secret)
    # Another site's form (no field, or the anonymous cookie's token) is refused.
    for bad in ({}, {"csrf": client.cookies.get(websession.CSRF_COOKIE) or "x"}):
        assert client.post("/logout", data=bad, follow_redirects=False).status_code == 403
    assert who(client) == "alice" and sessions(api) == 1
    r = client.post("/logout", data={"csrf": field}, follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    assert f'{websession.COOKIE}=""' in r.headers["set-cookie"]
    assert sessions(api) == 0
    assert who(client) is None
    # The old cookie is dead: replaying it signs nobody in.
    client.cookies.set(websession.COOKIE, secret)
    assert who(client) is None


def test_a_session_ends_when_it_expires_or_its_token_is_revoked(api: Api) -> None:
    client = api.client
    headers = api.user("alice")
    sign_in(client, token_of(headers))
    assert who(client) == "alice"
    with db.session_scope(api.session_factory) as session:
        session.execute(update(WebSession).values(expires_at=utcnow() - timedelta(seconds=1)))
    assert who(client) is None
    # Signing in again opens a new session (and drops the expired one).
    sign_in(client, token_of(headers))
    assert who(client) == "alice" and sessions(api) == 1
    with db.session_scope(api.session_factory) as session:
        session.execute(update(ApiToken).values(revoked_at=utcnow()))
    assert who(client) is None
    # A disabled account is signed out too.
    fresh = api.user("bob")
    sign_in(client, token_of(fresh))
    assert who(client) == "bob"
    with db.session_scope(api.session_factory) as session:
        session.execute(update(User).where(User.name == "bob").values(disabled=True))
    assert who(client) is None


def test_signing_in_again_replaces_the_session(api: Api) -> None:
    """No session fixation: a new secret each time, the previous session closed."""
    client = api.client
    a, b = token_of(api.user("alice")), token_of(api.user("bob"))
    sign_in(client, a)
    first = client.cookies.get(websession.COOKIE)
    doc = form_page(client)  # signed in: the form's token is the session's
    assert csrf(doc) == websession.csrf_of(first)
    r = client.post("/login", data={"csrf": csrf(doc), "token": b}, follow_redirects=False)
    assert r.status_code == 303
    assert client.cookies.get(websession.COOKIE) != first
    assert who(client) == "bob" and sessions(api) == 1


def test_register_with_the_form_shows_the_token_once_and_signs_in(api: Api) -> None:
    client = api.client
    doc = form_page(client, "/upload")
    field = csrf(doc, "register-form")
    r = client.post("/register", data={"csrf": field, "name": "carol", "next": "/upload"})
    assert r.status_code == 200
    assert r.headers["cache-control"] == "no-store"
    page = parse_html(r.text)
    token = page.by_id("new-token-value").text().strip()
    assert len(token) >= 40 and "hidden" not in page.by_id("new-token").attrs
    assert page.by_id("whoami").get("data-user") == "carol"
    assert client.get("/api/users/me", headers={"Authorization": f"Bearer {token}"}).json()[
        "name"
    ] == ("carol")
    assert who(client, "/upload") == "carol"
    # The next page shows it no more.
    assert token not in client.get("/upload").text
    # A taken name and a bad one: the page again, with the reason under the form.
    for name, code, words in (("carol", 409, "taken"), ("x", 400, "2 to 40"), ("a b", 400, "")):
        r = client.post(
            "/register", data={"csrf": csrf(form_page(client), "register-form"), "name": name}
        )
        assert r.status_code == code, name
        assert words in parse_html(r.text).by_id("register-error").text()
    # Without the CSRF field: refused, nobody registered.
    r = client.post("/register", data={"name": "dave"})
    assert r.status_code == 403
    with db.session_scope(api.session_factory) as session:
        assert session.scalar(select(User).where(User.name == "dave")) is None


def test_hostile_cookies_and_forms_never_break_a_page(api: Api) -> None:
    client = api.client
    values = [b"x" * 4000, b"A" * 43 + b";", b"%00%ff", "\u00e9t\u00e9".encode(), b"..", b"a" * 43]
    values += [b"\xff\xfe", b'"quoted"', b"a" * 43 + b"; cow006_session=" + b"b" * 43]
    for value in values:
        raw = b"cow006_session=" + value + b"; cow006_csrf=" + value
        for path in ("/", "/login", "/upload", "/nope"):
            r = client.get(path, headers={"Cookie": raw})
            assert r.status_code in (200, 404), (value, path)
            assert r.headers["content-type"].startswith("text/html")
            assert parse_html(r.text).by_id("whoami").get("data-user") is None
        assert client.get("/api/ladders", headers={"Cookie": raw}).status_code == 200
        r = client.post(
            "/logout", data={"csrf": "x"}, headers={"Cookie": raw}, follow_redirects=False
        )
        assert r.status_code in (303, 403)
    client.cookies.clear()
    doc = form_page(client)
    field = csrf(doc)
    # Many fields, a file, a body that is not a form, bytes that are not UTF-8.
    many = {f"f{i}": "x" for i in range(50)} | {"csrf": field}
    assert client.post("/login", data=many).status_code == 400
    files = {"token": ("t.txt", b"secret", "text/plain")}
    assert client.post("/login", data={"csrf": field}, files=files).status_code in (400, 403)
    r = client.post(
        "/login",
        content=b"csrf=" + field.encode() + b"&token=%ff%fe\xff",
        headers={"Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 401 and r.headers["content-type"].startswith("text/html")
    r = client.post(
        "/login", content=b"\x00" * 100, headers={"Content-Type": "multipart/form-data"}
    )
    assert r.status_code in (400, 403)


@pytest.mark.parametrize("query", ["token=Q", "token=Q&agent=1", "agent=1x", "agent=1&agent=2"])
def test_a_token_in_the_upload_pages_query_is_sent_away(api: Api, query: str) -> None:
    secret = "S3cr3t" * 7
    r = api.client.get(f"/upload?{query.replace('Q', secret)}", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/upload"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert secret not in r.text
    assert api.client.get("/upload?agent=3").status_code == 200


def test_the_session_cookie_bypasses_the_page_cache(api: Api) -> None:
    client = api.client
    token = token_of(api.user("alice"))
    cache = client.app.state.page_cache
    # Pages of their own (keys nobody read: the cache's renderer never touches them).
    stored, fresh = "/api/matches?limit=9", "/api/matches?limit=7"
    assert client.get(stored).headers["x-cache"] == "miss"
    assert client.get(stored).headers["x-cache"] == "hit"
    sign_in(client, token)
    assert client.cookies.get(websession.COOKIE)
    # Not answered from the cache...
    r = client.get(stored)
    assert r.status_code == 200 and "x-cache" not in r.headers
    # ...nor stored there.
    r = client.get(fresh)
    assert r.status_code == 200 and "x-cache" not in r.headers
    assert not any(key.endswith("limit=7") for key in cache.entries)
    client.cookies.clear()
    assert client.get(fresh).headers["x-cache"] == "miss"
    # A garbage session cookie bypasses it too (it is a credential, however bad).
    client.cookies.set(websession.COOKIE, "garbage")
    assert "x-cache" not in client.get(stored).headers


def test_a_token_looking_query_is_never_stored(api: Api) -> None:
    client = api.client
    cache = client.app.state.page_cache
    secret = "T0k3n" * 8
    for path in ("/api/matches", "/api/ladders", "/api/agents/1"):
        r = client.get(f"{path}?token={secret}")
        assert r.status_code == 422
        assert secret not in r.text  # the unknown parameter's value is not echoed
    assert not any(secret in key for key in cache.entries)
    assert not any(secret.encode() in e.body for e in cache.entries.values())
