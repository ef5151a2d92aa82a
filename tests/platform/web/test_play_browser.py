"""A person plays a whole match against two built-ins in Chromium, with the keyboard alone.

Issue 17's test: signing in, choosing the opponents, starting the match and every decision
are Tab, Space, Enter and typing, nothing clicked, with JavaScript and without; the match
runs on the live server's in-process workers (the built-ins sandboxed, the person's seat
``HumanSeat``), and its log, read from the API afterwards, passes ``cow006.log.verify``.
The loop over decisions is bounded (a match to 66 has a few hundred decisions at most; a
wall-clock bound too).

Needs the sandbox and the browser (they skip with the reason, or fail under CI).
"""

from __future__ import annotations

import json
import time
import urllib.request
from typing import Any

import pytest
from helpers import services
from helpers.browser import LiveServer, Pages, screenshot

from cow006 import log as cow_log

MAX_DECISIONS = 400
MAX_SECONDS = 300
MAX_TABS = 60


def tab_to(page: Any, test: str) -> None:
    """Press Tab until the focused element passes ``test`` (a JS expression on ``el``)."""
    for _ in range(MAX_TABS):
        if page.evaluate(f"(() => {{ const el = document.activeElement; return !!({test}); }})()"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached an element where {test}")


def focus_id(page: Any, ident: str) -> None:
    tab_to(page, f"el && el.id === {json.dumps(ident)}")


def _state(page: Any) -> tuple[str, str, str]:
    box = page.locator("#play")
    return (
        box.get_attribute("data-decision") or "",
        box.get_attribute("data-asked") or "",
        box.get_attribute("data-status") or "",
    )


@pytest.mark.slow
@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_a_person_plays_a_full_match_against_two_builtins_with_the_keyboard(
    play_pages: Pages, play_server: LiveServer, javascript: bool
) -> None:
    services.require_sandbox()
    page = play_pages.open("/login", javascript=javascript)
    # Sign in: type the token into the sign-in form, Enter.
    focus_id(page, "token-input")
    page.keyboard.type(play_server.seeded.alice_token)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    page.wait_for_selector("#whoami[data-user=alice]")
    page.goto("/play")
    # Choose two built-ins (Space ticks a checkbox), then start (Enter on the button).
    for name in ("greedy", "safe"):
        focus_id(page, f"op-builtin-{name}")
        page.keyboard.press("Space")
    assert page.is_checked("#op-builtin-greedy") and page.is_checked("#op-builtin-safe")
    focus_id(page, "play-start")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert "/play/" in page.url
    started = time.monotonic()
    answered = 0
    for _ in range(MAX_DECISIONS):
        page.wait_for_selector("#play")
        decision, asked, status = _state(page)
        if status in ("finished", "failed"):
            break
        if not asked:  # not our turn: play.js (or the no-script refresh) reloads the page
            page.wait_for_function(
                "s => { const b = document.getElementById('play');"
                " return b && (b.dataset.decision + '/' + b.dataset.asked + '/'"
                " + b.dataset.status) !== s; }",
                arg=f"{decision}/{asked}/{status}",
                timeout=30_000,
            )
            continue
        if answered == 3:
            screenshot(page, "play-table" if javascript else "play-table-no-js")
        if answered == 5 and javascript:  # at phone width the table fits, no sideways scroll
            page.set_viewport_size({"width": 390, "height": 844})
            assert page.evaluate("document.documentElement.scrollWidth") <= 390
            screenshot(page, "play-table-phone")
            page.set_viewport_size({"width": 1280, "height": 900})
        # The decision's first button has autofocus; Tab reaches the others.
        tab_to(page, "el && el.closest && el.closest('#move-form') && el.tagName === 'BUTTON'")
        with page.expect_navigation():
            page.keyboard.press("Enter")
        answered += 1
        assert time.monotonic() - started < MAX_SECONDS, "the match took too long"
    else:
        raise AssertionError(f"no end after {MAX_DECISIONS} decisions")
    decision, asked, status = _state(page)
    assert status == "finished", page.inner_text("#play-status")
    assert answered >= 10
    screenshot(page, "play-finished" if javascript else "play-finished-no-js")
    # The replay, reached with the keyboard too.
    focus_id(page, "replay-link")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    match_id = int(page.url.rstrip("/").rsplit("/", 1)[1].split("#")[0])
    page.wait_for_selector("#board")
    with urllib.request.urlopen(f"{play_server.url}/api/matches/{match_id}/log") as r:
        log = json.load(r)
    cow_log.verify(log)
    names = [p["agent"] for p in log["players"]]
    assert "alice" in names and max(log["scores"]) >= 66
    seat = names.index("alice")
    assert not [f for f in log["faults"] if f["seat"] == seat]  # every move was the person's
    with urllib.request.urlopen(f"{play_server.url}/api/matches/{match_id}") as r:
        match = json.load(r)
    assert match["kind"] == "play" and match["rated"] is False
