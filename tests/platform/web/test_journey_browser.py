"""The whole author journey in a real browser (Playwright driving Debian's Chromium): an admin
creates a ladder on /admin; an author registers on /upload, creates two agents, uploads a bot
for each and watches each validate (its place in the queue, then its validation match as a
replay), enters both in the ladder from their pages, sees the first rated result arrive on
the leaderboard and replays it, challenges the other agent by name and watches that match;
the admin then pauses the ladder.

Everything the users do goes through the browser (the pages and their scripts): the test
itself calls no API.  Outside the browser it only makes the admin's account (as the
``cow006 admin`` command does) and plays the workers' scheduler tick that queues the ladder's
first match (``scheduler.refill_ladder``; the embedded executor has no beat).  The bots are
validated and played in the sandbox: without it the test skips (fails under
COW006_REQUIRE_SANDBOX=1).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from helpers.browser import LiveServer, Pages, require_browser, screenshot

from cow006 import sandbox
from cow006_platform import db, security
from cow006_workers import scheduler

pytestmark = pytest.mark.slow

require_browser(module=True)

LOW_BOT = "def play(view):\n    return min(view.hand)\n"
HIGH_BOT = "def play(view):\n    return max(view.hand)\n"
# Every text #upload-note shows, in order (it changes faster than a test can poll).
RECORD_NOTES = """
window.__notes = [];
document.addEventListener('DOMContentLoaded', () => {
  const note = document.getElementById('upload-note');
  if (!note) return;
  new MutationObserver(() => window.__notes.push(note.textContent)).observe(
    note, {childList: true, subtree: true, characterData: true});
});
"""


def require_sandbox() -> None:
    if not sandbox.probe().ok:
        if os.environ.get("COW006_REQUIRE_SANDBOX") == "1":
            pytest.fail(
                f"COW006_REQUIRE_SANDBOX=1 but the sandbox does not work: {sandbox.probe()}"
            )
        pytest.skip("the sandbox does not work here: uploads cannot be validated")


def upload(page: Any, agent: str, source: str) -> None:
    """Create ``agent`` on the upload page and upload ``source`` as its bot.py; wait until
    it has passed validation."""
    page.fill("#agent-name", agent)
    page.click("#agent-form button[type=submit]")
    page.wait_for_selector(f"#my-agents a:text('{agent}')")
    page.select_option("#upload-agent", label=agent)
    page.evaluate("window.__notes = []")
    page.set_input_files(
        "#upload-file",
        files=[{"name": "bot.py", "mimeType": "text/x-python", "buffer": source.encode()}],
    )
    page.click("#upload-form button[type=submit]")
    page.wait_for_function(
        "() => document.getElementById('upload-status').textContent === 'active'", timeout=90_000
    )
    page.wait_for_selector("#upload-note a.validation-match")
    notes = page.evaluate("window.__notes")
    assert any("in line, about" in n for n in notes), notes


def test_the_author_journey_in_the_browser(pages: Pages, live_server: LiveServer) -> None:
    require_sandbox()
    factory = live_server.app.state.session_factory
    with db.session_scope(factory) as session:
        _, admin_token = security.create_user(session, "root", is_admin=True)
    requested: list[str] = []

    # The admin signs in (the /login form) and creates a ladder where one owner's agents
    # may meet, with short limits.
    admin = pages.open("/login?next=/admin")
    admin.on("request", lambda r: requested.append(r.url))
    admin.fill("#token-input", admin_token)
    admin.click("#signin-form button[type=submit]")
    admin.wait_for_url("**/admin")
    admin.fill("#ladder-name", "journey")
    admin.fill("#ladder-players", "2")
    admin.fill("#ladder-decision", "1")
    admin.check("input[name=allow_same_owner]")
    admin.click("#ladder-form button[type=submit]")
    admin.wait_for_selector("#admin-ladder-list tr:has(a:text('journey'))")
    row = admin.locator("#admin-ladder-list tr", has=admin.locator("a:text('journey')"))
    ladder_id = int(row.get_attribute("data-ladder") or 0)
    screenshot(admin, "journey-admin")

    # The author registers on the upload page and uploads two bots; each validates.
    author = pages.open("/upload")
    author.add_init_script(RECORD_NOTES)
    author.reload()
    author.on("request", lambda r: requested.append(r.url))
    assert author.locator("a[href='/starter/python.zip']").count() == 1
    author.fill("#register-name", "dana")
    author.click("#register-form button[type=submit]")
    author.wait_for_selector("#new-token:not([hidden])")
    token = author.inner_text("#new-token-value").strip()
    author.wait_for_selector("#upload-section:not([hidden])")
    upload(author, "dana-low", LOW_BOT)
    upload(author, "dana-high", HIGH_BOT)
    screenshot(author, "journey-upload")

    # Its validation match, as a replay.
    author.click("#upload-note a.validation-match")
    author.wait_for_selector("#viewer #controls:not([hidden])")
    assert "validation" in author.inner_text(".match-context")
    assert author.locator("#players a").all_inner_texts() == ["dana-high@1"]

    # Each agent enters the ladder from its page.
    agent_ids = {}
    for name in ("dana-low", "dana-high"):
        author.goto("/me")
        author.click(f"a:text('{name}')")
        agent_ids[name] = int(author.url.rsplit("/", 1)[1])
        version = author.locator("#versions tr[data-version='1']")
        assert version.locator("a.validation-match").count() == 1
        author.select_option("#enter-ladder", label="journey (2 players)")
        author.click("#enter-form button[type=submit]")
        author.wait_for_selector(f"#entries tr[data-ladder='{ladder_id}']")

    # The workers' beat queues the ladder's first match; its rated result reaches the
    # leaderboard, which refreshes itself.
    executor = live_server.app.state.executor
    for match_id in scheduler.refill_ladder(factory, ladder_id, 1):
        executor.submit_match(match_id)
    author.goto(f"/ladders/{ladder_id}?refresh=1")
    author.wait_for_function(
        """() => [...document.querySelectorAll('#leaderboard tbody tr[data-agent]')]
            .some(tr => Number(tr.children[7].textContent) >= 1)""",
        timeout=90_000,
    )
    screenshot(author, "journey-ladder")
    author.reload()
    author.click("#recent-matches tbody tr:has(.badge-finished) a[href^='/matches/']")
    author.wait_for_selector("#viewer #controls:not([hidden])")
    assert "Ladder match" in author.inner_text(".match-context")

    # A challenge, by name, from the agent's page: then its match, played and replayed.
    author.goto(f"/agents/{agent_ids['dana-low']}")
    screenshot(author, "journey-agent")
    author.fill("#challenge-opponent1", "dana-high")
    author.click("#challenge-form button[type=submit]")
    author.wait_for_url("**/matches/*")
    assert "Challenge match" in author.inner_text(".match-context")
    author.wait_for_selector("#viewer #controls:not([hidden])", timeout=90_000)
    names = author.locator("#result tbody td a").all_inner_texts()
    assert names == ["dana-low@1", "dana-high@1"]
    screenshot(author, "journey-challenge")

    # The admin pauses the ladder: no more matches are scheduled there.
    admin.goto("/admin")
    admin.select_option(f"#state-{ladder_id}", "paused")
    admin.click(f"#ladder-{ladder_id} .state-form button")
    admin.wait_for_selector(f"#ladder-{ladder_id} .badge-paused")

    # No token was ever in a URL the browser asked for.
    assert requested and not [u for u in requested if token in u or admin_token in u]
