"""Screenshots of every page at desktop (1366x900) and phone (390x844) widths.

Each run writes them fresh to artifacts/screenshots/ (git-ignored): ``NAME-desktop.png`` and
``NAME-phone.png``, the whole page.  docs/web.md shows a set of them committed under
docs/screenshots/ (``DOCS_SET``, the first screen of each only, to keep them small); with
``COW006_DOCS_SCREENSHOTS=1`` this test rewrites that set too.  The public pages are taken as
a visitor sees them, the personal ones (/me, /evaluations, /upload) signed in as alice, /admin
as an admin.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from helpers.browser import (
    ROOT,
    SCREENSHOTS,
    LiveServer,
    Pages,
    admin_token,
    every_page,
    require_browser,
    seed_evaluation,
    sign_in,
)

# Chromium drives every page here: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

require_browser(module=True)  # one skip for the module (a failure under CI=true)

WIDTHS = {"desktop": (1366, 900), "phone": (390, 844)}
SIGNED_IN = {"me", "evaluations", "evaluation", "upload"}
DOCS = ROOT / "docs" / "screenshots"
DOCS_SET = {"home", "ladder", "agent", "match", "upload", "evaluation", "admin", "error-404"}


def shoot(page: Any, path: str, out: Path, docs: Path | None) -> None:
    page.goto(path)
    page.wait_for_load_state("networkidle")
    size = page.viewport_size
    page.mouse.move(size["width"] - 1, size["height"] - 1)  # no hover left from a click
    page.screenshot(path=str(out), full_page=True)
    if docs is not None:
        page.screenshot(path=str(docs))


@pytest.mark.parametrize("width", list(WIDTHS))
def test_every_page_at_both_widths(pages: Pages, live_server: LiveServer, width: str) -> None:
    evaluation = seed_evaluation(live_server)
    w, h = WIDTHS[width]
    visitor = pages.open("/", width=w, height=h)
    alice = pages.open("/", width=w, height=h)
    sign_in(alice, live_server.seeded.alice_token)
    root = pages.open("/", width=w, height=h)
    sign_in(root, admin_token(live_server))
    update_docs = os.environ.get("COW006_DOCS_SCREENSHOTS") == "1"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    if update_docs:
        DOCS.mkdir(parents=True, exist_ok=True)
    written = []
    for name, path in every_page(live_server, evaluation).items():
        page = root if name == "admin" else alice if name in SIGNED_IN else visitor
        out = SCREENSHOTS / f"{name}-{width}.png"
        docs = DOCS / f"{name}-{width}.png" if update_docs and name in DOCS_SET else None
        shoot(page, path, out, docs)
        written.append(out)
        # Nothing sticks out sideways at either width (wide tables scroll in their own box).
        assert page.evaluate("document.documentElement.scrollWidth") <= w, name
    for out in written:
        assert out.stat().st_size > 5000, out  # a page, not a blank
