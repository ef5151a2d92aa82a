"""Helpers of the browser tests: the live server's handle, Chromium, pages, screenshots.

The browser tests need Playwright for Python and Debian's Chromium (``apt-get install
chromium``; Playwright's own browser downloads are never used).  Without them the browser
tests skip with one reason, except under CI=true, where they fail instead.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import select

from cow006_platform import crud, db, models, security
from cow006_platform.models import MatchKind
from cow006_platform.schemas import EvaluationCreate
from cow006_platform.settings import Settings
from helpers import web
from helpers.api import play_and_finish

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = os.environ.get("COW006_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def browser_problem(*, axe: bool = False) -> str | None:
    """Why the browser tests (with ``axe``, the accessibility check too) cannot run here, or
    None."""
    if axe and importlib.util.find_spec("axe_playwright_python") is None:
        return "axe-playwright-python is not installed (make venv)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def require_browser(*, module: bool = False, axe: bool = False) -> None:
    """Skip (the whole module, with ``module``) unless the browser tests (with ``axe``, the
    accessibility check too) can run; under CI=true fail instead."""
    problem = browser_problem(axe=axe)
    if problem is None:
        return
    reason = f"BROWSER TESTS NOT RUN: {problem}"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=module)


@dataclass
class LiveServer:
    """The app on a real socket, its database seeded."""

    url: str
    app: FastAPI
    settings: Settings
    seeded: web.Seeded

    def play_ladder_match(self) -> int:
        """One more finished ladder match (seats rotated by the number of matches so far)."""
        ids = self.seeded.version_ids
        n = len(self.seeded.match_ids)
        order = ids[n % 4 :] + ids[: n % 4]
        match_id = web.play_stored(
            self.app.state.session_factory,
            order,
            2000 + n,
            web.BUILTINS,
            kind=MatchKind.ladder,
            ladder_id=self.seeded.ladder_id,
        )
        self.seeded.match_ids.append(match_id)
        return match_id


class Pages:
    """New browser pages on the live server; each fails its test on a JavaScript error."""

    def __init__(self, browser: Any, live: LiveServer) -> None:
        self.browser = browser
        self.live = live
        self.contexts: list[Any] = []
        self.errors: list[str] = []

    def open(
        self,
        path: str = "/",
        *,
        token: str | None = None,
        width: int = 1280,
        height: int = 900,
        javascript: bool = True,
    ) -> Any:
        context = self.browser.new_context(
            base_url=self.live.url,
            viewport={"width": width, "height": height},
            java_script_enabled=javascript,
        )
        if token is not None:
            context.add_init_script(f"localStorage.setItem('cow006.token', {token!r});")
        self.contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.on("pageerror", lambda exc: self.errors.append(f"{page.url}: {exc}"))
        page.goto(path)
        return page

    def close(self) -> None:
        for context in self.contexts:
            context.close()


def api(live: LiveServer, path: str) -> Any:
    """The JSON of ``path`` on the live server's API (a failing status raises)."""
    import httpx

    r = httpx.get(live.url + path, timeout=10)
    r.raise_for_status()
    return r.json()


def position(page: Any) -> tuple[int, int, int]:
    """Where the replay viewer of ``page`` stands: (round, turn, step)."""
    data = page.eval_on_selector(
        "#viewer", "v => [v.dataset.round, v.dataset.turn, v.dataset.step].map(Number)"
    )
    return data[0], data[1], data[2]


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot as a test artifact (artifacts/screenshots/NAME.png)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


# --- every page, signed in, and axe-core ----------------------------------------------------


def sign_in(page: Any, token: str) -> None:
    """Sign ``page``'s browser in with the /login form (the session cookie, as a user does)."""
    page.goto("/login")
    page.fill("#token-input", token)
    with page.expect_navigation():
        page.click("#signin-form button[type=submit]")
    page.wait_for_selector("#whoami[data-user]")


def admin_token(live: LiveServer) -> str:
    """The token of a new admin user (made as the CLI makes one)."""
    with db.session_scope(live.app.state.session_factory) as session:
        count = session.scalar(select(models.User.id).order_by(models.User.id.desc()).limit(1))
        _, token = security.create_user(session, f"root{count}", is_admin=True)
    return token


def seed_evaluation(live: LiveServer) -> int:
    """An evaluation run of alice's (alpha against beta as baseline, on gamma's tables) with
    its matches played: the id of the run, for /evaluations/{id}."""
    s = live.seeded
    factory = live.app.state.session_factory
    body = EvaluationCreate(
        version_id=s.version_ids[0],
        baseline_id=s.version_ids[1],
        pool=[s.version_ids[2]],
        players=2,
        matches=2,
        seed=5,
    )
    with factory() as session:
        alice = session.get(models.User, s.alice_id)
        assert alice is not None
        run, _ = crud.evaluations.create(session, live.settings, body, alice)
        ids = session.scalars(
            select(models.Match.id).where(models.Match.evaluation_id == run.id)
        ).all()
    for match_id in ids:
        play_and_finish(factory, match_id)
    return run.id


def every_page(live: LiveServer, evaluation_id: int) -> dict[str, str]:
    """A name for each page of the site (one of each kind, error pages included) -> its path.
    The signed-in ones (/me, /evaluations...) send a visitor to /login."""
    s = live.seeded
    return {
        "home": "/",
        "ladder": f"/ladders/{s.ladder_id}",
        "agent": f"/agents/{s.agent_ids[0]}",
        "league": f"/leagues/{s.league_id}",
        "match": f"/matches/{s.match_ids[0]}",
        "match-step": f"/matches/{s.match_ids[1]}#r2t5s3",  # mid-turn, cards being placed
        "match-queued": f"/matches/{s.queued_match_id}",
        "match-failed": f"/matches/{s.failed_match_id}",
        "matches": "/matches",
        "agent-matches": f"/matches?agent_id={s.agent_ids[0]}",
        "upload": "/upload",
        "login": "/login",
        "user": f"/users/{s.alice_id}",
        "guide": "/guide",
        "me": "/me",
        "evaluations": "/evaluations",
        "evaluation": f"/evaluations/{evaluation_id}",
        "admin": "/admin",  # a visitor is sent to /login, a user who is no admin gets a 403
        "error-404": "/agents/999999",
        "error-422": f"/ladders/{s.ladder_id}?refresh=%3Cscript%3E",
        "error-405": "/logout",
    }


# axe-core, from the axe-playwright-python wheel (a pinned dev dependency): only its
# axe.min.js is used, run inside the page.  The sha256 makes a new axe a deliberate change.
AXE_VERSION = "4.12.1"
AXE_SHA256 = "84494fec757e4710dc751c8d7a636e457f4532f08f85c86dc9070133fbff53bc"
# What fails the check: axe's two highest impacts ("moderate" and "minor" are reported only).
AXE_FAILING = ("serious", "critical")


def axe_source() -> str:
    """axe.min.js, checked against its pinned sha256."""
    spec = importlib.util.find_spec("axe_playwright_python")
    assert spec is not None and spec.origin is not None, "require_browser(axe=True) first"
    data = (Path(spec.origin).parent / "axe.min.js").read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    assert digest == AXE_SHA256, f"axe.min.js is not axe {AXE_VERSION} ({digest})"
    return data.decode("utf-8")


def axe_violations(page: Any, source: str) -> list[dict[str, Any]]:
    """axe's violations on ``page`` as it is now, each as {id, impact, help, nodes: [html]}.
    The script goes in through the DevTools protocol (``evaluate``), which the page's CSP
    does not govern: the page's own policy stays as strict as it is for users."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(source)
    found = page.evaluate(
        """() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(
            v => ({id: v.id, impact: v.impact, help: v.help,
                   nodes: v.nodes.map(n => n.html.slice(0, 200))})))"""
    )
    return list(found)
