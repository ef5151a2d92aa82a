"""Helpers of the browser tests: the live server's handle, Chromium, pages, screenshots.

The browser tests need Playwright for Python and Debian's Chromium (``apt-get install
chromium``; Playwright's own browser downloads are never used).  Without them the browser
tests skip with one reason, except under CI=true, where they fail instead.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI

from cow006_platform.models import MatchKind
from cow006_platform.settings import Settings
from helpers import web

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


def browser_problem() -> str | None:
    """Why the browser tests cannot run here, or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install playwright)"
    if not os.access(CHROMIUM, os.X_OK):
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


def require_browser(*, module: bool = False) -> None:
    """Skip (the whole module, with ``module``) unless the browser tests can run; under
    CI=true fail instead."""
    problem = browser_problem()
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


def screenshot(page: Any, name: str, *, full_page: bool = True) -> Path:
    """Save a screenshot as a test artifact (artifacts/screenshots/NAME.png)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
