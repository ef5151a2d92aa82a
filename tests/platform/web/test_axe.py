"""axe-core over every page of the site, signed out and signed in: no serious violation.

axe (a pinned copy, see ``helpers.browser.axe_source``) runs inside each page in Chromium, on
the page as a reader gets it (scripts run, the network idle), at desktop and phone widths,
and once without the site's scripts.  Impact
"serious" or "critical" fails; the others are left to judgement.  /docs and /redoc are the
vendored Swagger UI and ReDoc, not this site's pages: left out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from helpers.api import new_match, play_and_finish
from helpers.browser import (
    AXE_FAILING,
    LiveServer,
    Pages,
    admin_token,
    axe_source,
    axe_violations,
    every_page,
    require_browser,
    seed_evaluation,
    sign_in,
)

from cow006_platform import db, models

# Chromium drives every page here: slow (make test-fast leaves it out).
pytestmark = pytest.mark.slow

require_browser(module=True, axe=True)  # one skip for the module (a failure under CI=true)

SCRIPT = re.compile(r"\.js(\?|$)")  # the site's scripts (static_url adds ?v=HASH)


@pytest.fixture(scope="module")
def evaluation_id(live_server: LiveServer) -> int:
    return seed_evaluation(live_server)


def check_every_page(page: Any, live: LiveServer, evaluation_id: int) -> list[str]:
    """The failing violations of every page, one line each: page, rule, impact, what axe
    says and the first elements."""
    source = axe_source()
    failing: list[str] = []
    for name, path in every_page(live, evaluation_id).items():
        page.goto(path)
        page.wait_for_load_state("networkidle")
        for v in axe_violations(page, source):
            if v["impact"] in AXE_FAILING:
                where = " | ".join(v["nodes"][:3])
                failing.append(f"{name} {path}: {v['id']} ({v['impact']}) {v['help']}: {where}")
    return failing


@pytest.mark.parametrize(
    ("signed_in", "width", "scripts"),
    [(False, 1366, True), (True, 1366, True), (True, 390, True), (False, 390, False)],
    ids=["visitor", "signed-in", "signed-in-phone", "visitor-phone-no-scripts"],
)
def test_no_serious_violation_on_any_page(
    pages: Pages,
    live_server: LiveServer,
    evaluation_id: int,
    signed_in: bool,
    width: int,
    scripts: bool,
) -> None:
    page = pages.open("/", width=width, height=900 if width > 1000 else 844)
    if signed_in:
        sign_in(page, live_server.seeded.alice_token)
    if not scripts:
        # The pages as they are without their scripts.  Not with JavaScript off: axe itself
        # needs timers, which never fire then (axe.run would never answer).
        blocked: list[str] = []
        page.context.route(SCRIPT, lambda route: blocked.append(route.request.url) or route.abort())
    assert check_every_page(page, live_server, evaluation_id) == []
    assert scripts or blocked


@pytest.mark.parametrize("width", [1366, 390])
def test_no_serious_violation_on_the_admin_pages(
    pages: Pages, live_server: LiveServer, width: int
) -> None:
    page = pages.open("/", width=width, height=900 if width > 1000 else 844)
    sign_in(page, admin_token(live_server))
    source = axe_source()
    for path in ("/admin", "/"):  # the forms, and the header with its admin link
        page.goto(path)
        page.wait_for_load_state("networkidle")
        assert page.locator('header a[href="/admin"]').count() == 1
        failing = [v for v in axe_violations(page, source) if v["impact"] in AXE_FAILING]
        assert failing == [], path


def test_axe_finds_what_it_should(pages: Pages, live_server: LiveServer) -> None:
    # The check can fail: an image without text, a field without a label, grey on grey.
    page = pages.open("/")
    page.evaluate(
        """() => {
            const main = document.querySelector('main');
            const img = document.createElement('img');
            img.src = '/static/none.png';
            const input = document.createElement('input');
            main.append(img, input);
        }"""
    )
    ids = {v["id"] for v in axe_violations(page, axe_source()) if v["impact"] in AXE_FAILING}
    assert {"image-alt", "label"} <= ids


# What a bot's author controls and the owner reads: a rejection reason and a seat's stderr,
# long (many lines, and one line with no break), with markup and direction overrides.
HOSTILE = (
    "<script>alert(1)</script> \u202eevil\u202c <b>bold</b>\n"
    + "Traceback line\n" * 400
    + "W" * 5000
    + "\n"
)


def test_hostile_text_keeps_the_owners_pages_accessible(
    pages: Pages, live_server: LiveServer
) -> None:
    s = live_server.seeded
    factory = live_server.app.state.session_factory
    with db.session_scope(factory) as session:
        session.add(
            models.AgentVersion(
                agent_id=s.agent_ids[0],
                number=3,
                sha256="0" * 64,
                filename="bot.py",
                size=1,
                unpacked_size=1,
                files=1,
                status=models.VersionStatus.rejected,
                reason=HOSTILE,
                validated_at=models.utcnow(),
            )
        )
    match_id = new_match(
        factory, kind=models.MatchKind.challenge, version_ids=s.version_ids[:2], seed=77
    )
    play_and_finish(factory, match_id, stderr=[HOSTILE, None])
    page = pages.open("/", width=390, height=844)
    sign_in(page, s.alice_token)
    source = axe_source()
    for path, shown in (
        (f"/agents/{s.agent_ids[0]}", '[data-reason-for="3"] pre'),
        (f"/matches/{match_id}", '[data-stderr-seat="0"]'),
    ):
        page.goto(path)
        page.wait_for_selector(shown)
        page.wait_for_load_state("networkidle")
        assert "W" * 5000 in page.inner_text(shown)  # shown as text, whole
        assert page.locator(f"{shown} b, {shown} script").count() == 0  # text, not markup
        failing = [v for v in axe_violations(page, source) if v["impact"] in AXE_FAILING]
        assert failing == [], path
        assert page.evaluate("document.documentElement.scrollWidth") <= 390, path
