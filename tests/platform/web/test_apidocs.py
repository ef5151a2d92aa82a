"""``/docs`` and ``/redoc`` from the package's own files (issue 14): same-origin URLs only,
the site's Content-Security-Policy, the vendored assets served, and the viewers really
rendering the schema in Chromium with every other origin unreachable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from helpers.api import RecordingExecutor
from helpers.browser import LiveServer, Pages, require_browser, screenshot

from cow006_platform.app import create_app
from cow006_platform.settings import Settings
from cow006_platform.web.apidocs import REDOC_STYLES
from cow006_platform.web.routes import CSP

# Chromium renders the API docs: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow


@pytest.fixture
def client(tmp_path: Path) -> Any:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'a.db'}", data_dir=tmp_path / "d")
    with TestClient(create_app(settings, RecordingExecutor())) as c:
        yield c


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_pages_use_only_same_origin_urls_under_the_csp(client: Any, path: str) -> None:
    r = client.get(path)
    assert r.status_code == 200
    policy = r.headers["content-security-policy"]
    if path == "/redoc":  # the site's policy plus a nonce of this response's for styles
        nonce = re.search(r'data-nonce="([^"]+)"', r.text)
        assert nonce is not None and len(nonce[1]) >= 16
        extra = f"'nonce-{nonce[1]}' {REDOC_STYLES}"
        assert policy == CSP.replace("style-src 'self'", f"style-src 'self' {extra}")
        assert nonce[1] not in client.get(path).text, "the nonce is not fresh"
    else:
        assert policy == CSP
    assert "'unsafe-inline'" not in policy and "'unsafe-eval'" not in policy
    refs = re.findall(r'(?:src|href)="([^"]*)"', r.text)
    assert refs, "the page loads nothing"
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), f"{path} loads {ref}"
    assert "<script>" not in r.text, "an inline script"
    for ref in refs:
        asset = client.get(ref)
        assert asset.status_code == 200, ref
        kind = "text/css" if ref.split("?")[0].endswith(".css") else "text/javascript"
        assert asset.headers["content-type"].startswith(kind)
        assert len(asset.content) > 100


def test_only_the_vendored_files_are_served(client: Any) -> None:
    for bad in (
        "/static/docs/README.md",
        "/static/docs/swagger-ui-LICENSE.txt",
        "/static/docs/..%2F..%2Fapp.py",
        "/static/docs/nope.js",
        "/static/docs/.hidden.js",
    ):
        assert client.get(bad).status_code == 404, bad


def test_the_schema_stays_where_it_was(client: Any) -> None:
    assert client.get("/openapi.json").status_code == 200
    paths = client.get("/openapi.json").json()["paths"]
    assert "/docs" not in paths and "/redoc" not in paths


# -- in a browser ---------------------------------------------------------------------------


# ReDoc's attribution logo in its menu: an <img> of the bundle, refused by the policy's
# img-src 'self' (so never fetched; the route below would abort it too).
REDOC_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


def _offline(page: Any, live: LiveServer) -> tuple[list[str], list[str]]:
    """Every request to another origin is aborted and recorded, and CSP refusals are
    recorded too: (other origins asked for, CSP violations)."""
    foreign: list[str] = []
    violations: list[str] = []

    def route(r: Any) -> None:
        if r.request.url.startswith(live.url):
            r.continue_()
        else:
            foreign.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on(
        "console",
        lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None,
    )
    return foreign, violations


def _view_offline(
    pages: Pages, live: LiveServer, path: str, ready: str
) -> tuple[Any, list[str], list[str]]:
    """``path`` opened with every other origin refused, once ``ready`` (a selector) shows:
    the page, the URLs of other origins it asked for, the CSP violations it reported."""
    require_browser()
    page = pages.open("/healthz")
    foreign, violations = _offline(page, live)
    page.goto(path)
    page.wait_for_selector(ready, timeout=60_000)
    return page, foreign, violations


def test_swagger_ui_renders_the_schema_offline(pages: Pages, live_server: LiveServer) -> None:
    page, foreign, violations = _view_offline(
        pages, live_server, "/docs", ".swagger-ui .opblock-summary-path"
    )
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert any("/api/ladders/{ladder_id}/leaderboard" in p.replace("\u200b", "") for p in paths)
    screenshot(page, "api-docs", full_page=False)
    assert not foreign, f"asked other origins: {foreign}"
    assert not violations, violations


def test_redoc_renders_the_schema_offline(pages: Pages, live_server: LiveServer) -> None:
    page, foreign, violations = _view_offline(pages, live_server, "/redoc", "h1")
    page.wait_for_function(
        "() => document.body.innerText.includes('/api/ladders/{ladder_id}/leaderboard')",
        timeout=60_000,
    )
    screenshot(page, "api-redoc", full_page=False)
    assert set(foreign) <= {REDOC_LOGO}, f"asked other origins: {foreign}"
    assert all(REDOC_LOGO in v for v in violations), violations
