"""HTTP-level answers (``cow006_platform.answers``): error pages vs JSON, HEAD, gzip."""

from __future__ import annotations

import gzip
import re
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient
from helpers.api import Api
from helpers.web import Seeded, parse_html, seed

from cow006_platform import answers
from cow006_platform.cache import _middleware

PAGE = "text/html"
JSON = "application/json"


@pytest.fixture
def site(api: Api) -> tuple[Any, Seeded]:
    return api.client, seed(api.session_factory, matches=2)


def kind(r: Any) -> str:
    return str(r.headers.get("content-type", "")).split(";")[0]


def test_errors_are_pages_on_the_site_and_json_under_api(site: tuple[Any, Seeded]) -> None:
    client, s = site
    for path in ("/nope", "/matches/1/x", "/users", "/agents/1/x", "/login/x", "/guide/x"):
        r = client.get(path)
        assert (r.status_code, kind(r)) == (404, PAGE), path
        doc = parse_html(r.text)
        assert doc.find("p", class_="error-detail").text() == "There is no such page here."
        assert doc.find("a", href="/")  # a way home
        assert "script-src 'self'" in r.headers["content-security-policy"]
    for path in ("/api/nope", "/api/ladders/999999", "/static/nope.js"):
        r = client.get(path)
        assert (r.status_code, kind(r)) == (404, JSON), path
        assert isinstance(r.json()["detail"], str)
    # A route's own 404 sentence is kept.
    r = client.get("/agents/999999")
    assert "No such agent" in parse_html(r.text).find("p", class_="error-detail").text()
    # 405: a page, with Allow; the API's stays JSON.
    r = client.post("/")
    assert (r.status_code, kind(r)) == (405, PAGE)
    assert "GET" in r.headers["allow"]
    r = client.delete("/api/ladders")
    assert (r.status_code, kind(r)) == (405, JSON)
    # 422: a page's unreadable query says so in one sentence and echoes nothing.
    hostile = "<script>alert(1)</script>"
    r = client.get(f"/ladders/{s.ladder_id}", params={"refresh": hostile})
    assert (r.status_code, kind(r)) == (422, PAGE)
    assert hostile not in r.text and "alert(1)" not in r.text
    r = client.get("/api/matches", params={"limit": "many"})
    assert (r.status_code, kind(r)) == (422, JSON)


def test_a_bug_is_a_500_page_on_the_site_and_json_under_api(api: Api) -> None:
    app = api.client.app
    broken = APIRouter()

    @broken.get("/boom")
    @broken.get("/api/boom")
    def boom() -> None:
        raise RuntimeError("a bug")

    app.include_router(broken)
    with TestClient(app, raise_server_exceptions=False) as client:
        r = client.get("/boom")
        assert (r.status_code, kind(r)) == (500, PAGE)
        assert "a bug" not in r.text
        assert "went wrong" in parse_html(r.text).find("p", class_="error-detail").text()
        r = client.get("/api/boom")
        assert (r.status_code, r.json()) == (500, {"detail": "internal server error"})


def get_routes(app: Any) -> list[str]:
    paths = []
    for route in iter_route_contexts(list(app.routes)):
        methods = getattr(route, "methods", None) or set()
        if "GET" in methods:
            paths.append(route.path)
    return paths


def test_head_answers_like_get_on_every_get_route(site: tuple[Any, Seeded]) -> None:
    client, s = site
    ids = {
        "ladder_id": s.ladder_id,
        "league_id": s.league_id,
        "agent_id": s.agent_ids[0],
        "other_id": s.agent_ids[1],
        "match_id": s.match_ids[0],
        "user_id": s.alice_id,
        "number": 2,
        "name": "app.css",
        "version_id": s.version_ids[0],
    }
    auth = {"Authorization": f"Bearer {s.alice_token}"}
    checked = 0
    for template in get_routes(client.app):
        path = re.sub(r"\{(\w+)(:\w+)?\}", lambda m: str(ids.get(m.group(1), 1)), template)
        for headers in ({}, auth):
            client.get(path, headers=headers)  # the first /openapi.json is generated anew
            got = client.get(path, headers=headers)
            head = client.head(path, headers=headers)
            assert head.status_code == got.status_code != 405, path
            assert head.content == b"", path
            assert head.headers.get("content-type") == got.headers.get("content-type"), path
            if "content-length" in got.headers and got.status_code == 200:
                assert head.headers["content-length"] == got.headers["content-length"], path
        checked += 1
    assert checked > 20
    # Cached answers too: the HEAD of a page in the cache is its headers.
    client.get("/api/matches?limit=13")
    head = client.head("/api/matches?limit=13")
    assert head.headers["x-cache"] == "hit" and head.content == b""


def test_gzip_when_accepted_and_worth_it(site: tuple[Any, Seeded]) -> None:
    client, s = site
    for path in (
        "/",
        f"/ladders/{s.ladder_id}",
        "/static/app.css",
        "/static/app.js",
        "/openapi.json",
        "/api/matches",
    ):
        plain = client.get(path, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200 and "content-encoding" not in plain.headers, path
        assert len(plain.content) > answers.GZIP_MIN_BYTES, path
        # httpx decodes gzip itself: read the raw bytes to see what travelled.
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as r:
            raw = b"".join(r.iter_raw())
            assert r.headers["content-encoding"] == "gzip", path
            assert "accept-encoding" in r.headers["vary"].lower(), path
            assert int(r.headers["content-length"]) == len(raw) < len(plain.content), path
        assert gzip.decompress(raw) == plain.content, path
    refused = client.get("/", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers
    small = client.get(f"/api/ladders/{s.ladder_id}", headers={"Accept-Encoding": "gzip"})
    assert len(small.content) < answers.GZIP_MIN_BYTES
    assert "content-encoding" not in small.headers


def test_cached_pages_are_compressed_once_with_their_own_etag(
    site: tuple[Any, Seeded], monkeypatch: pytest.MonkeyPatch
) -> None:
    client, _ = site
    cache = client.app.state.page_cache
    compressed: list[int] = []
    real = gzip.compress

    def counting(data: bytes, *args: Any, **kwargs: Any) -> bytes:
        compressed.append(len(data))
        return real(data, *args, **kwargs)

    monkeypatch.setattr(_middleware.gzip, "compress", counting)
    path = "/api/matches?limit=11"  # a page of its own: the cache's renderer never touches it
    plain = client.get(path, headers={"Accept-Encoding": "identity"})
    assert plain.headers["x-cache"] == "miss" and len(plain.content) > answers.GZIP_MIN_BYTES
    size = cache.size
    etags = set()
    for _ in range(3):
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as r:
            raw = b"".join(r.iter_raw())
            assert r.headers["x-cache"] == "hit" and r.headers["content-encoding"] == "gzip"
            etags.add(r.headers["etag"])
        assert gzip.decompress(raw) == plain.content
    assert len(compressed) == 1  # one compression for three hits
    assert cache.size == size + len(raw)  # the copy counts against the budget
    (gz_etag,) = etags
    assert gz_etag != plain.headers["etag"]
    # 304 for each representation's own ETag.
    r = client.get(path, headers={"Accept-Encoding": "gzip", "If-None-Match": gz_etag})
    assert r.status_code == 304 and r.content == b""
    r = client.get(path, headers={"Accept-Encoding": "identity", "If-None-Match": gz_etag})
    assert r.status_code == 200
    r = client.get(path, headers={"If-None-Match": plain.headers["etag"], "Accept-Encoding": ""})
    assert r.status_code == 304


@pytest.mark.parametrize(
    ("header", "accepted"),
    [
        (None, False),
        (b"gzip", True),
        (b"deflate, GZIP", True),
        (b"br;q=1.0, gzip;q=0.5", True),
        (b"gzip;q=0", False),
        (b"gzip;q=0.0, identity", False),
        (b"gzip;q=nonsense", False),
        (b"*", True),
        (b"identity", False),
        (b"\xff\xfe" * 100, False),
    ],
)
def test_accepts_gzip(header: bytes | None, accepted: bool) -> None:
    headers = [] if header is None else [(b"accept-encoding", header)]
    assert answers.accepts_gzip({"headers": headers}) is accepted


def test_page_sentences() -> None:
    assert answers.page_sentence(404, "Not Found") == "there is no such page here"
    assert answers.page_sentence(404, "no such agent") == "no such agent"
    assert answers.page_sentence(405, "Method Not Allowed").startswith("this address")
    assert answers.page_sentence(418, None) == "this request could not be answered"
    assert answers.is_api("/api/ladders") and answers.is_api("/openapi.json")
    assert not answers.is_api("/apis") and not answers.is_api("/ladders/1")
