"""Fixtures of the web tests: the app served by uvicorn on a seeded database, and Chromium.

The browser tests need Playwright for Python and Debian's Chromium (``apt-get install
chromium``; Playwright's own browser downloads are never used).  Without them the browser
tests skip with one reason, except under CI=true, where they fail instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import web
from helpers.browser import CHROMIUM, CHROMIUM_ARGS, LiveServer, Pages, require_browser

from cow006_platform.app import create_app
from cow006_platform.settings import Settings
from cow006_workers.embedded import InProcessExecutor


def _serve(tmp: Path, threads: int = 1) -> Iterator[LiveServer]:
    """uvicorn in a thread on 127.0.0.1 (a free port), with the workers' code run in this
    process on ``threads`` threads (``InProcessExecutor``)."""
    import uvicorn

    require_browser()
    settings = Settings(database_url=f"sqlite:///{tmp / 'arena.db'}", data_dir=tmp / "data")
    executor = InProcessExecutor(settings, threads=threads)
    app = create_app(settings, executor)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    seeded = web.seed(app.state.session_factory, matches=8)
    yield LiveServer(f"http://127.0.0.1:{port}", app, settings, seeded)
    server.should_exit = True
    thread.join(timeout=15)
    executor.close()


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The live server, so an uploaded version is really validated (in the sandbox) while
    the page polls."""
    yield from _serve(tmp_path_factory.mktemp("web"))


@pytest.fixture(scope="module")
def play_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The live server for matches against the bots: a person's match holds a worker thread
    while it waits on the person, so two threads; the person's seat polls its answer every
    20 ms rather than 250 (a match has a hundred decisions or so)."""
    from cow006_workers import human

    saved = human.POLL_SECONDS
    human.POLL_SECONDS = 0.02
    try:
        yield from _serve(tmp_path_factory.mktemp("play"), threads=2)
    finally:
        human.POLL_SECONDS = saved


@pytest.fixture
def play_pages(browser: Any, play_server: LiveServer) -> Iterator[Pages]:
    opened = Pages(browser, play_server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors: {opened.errors}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def pages(browser: Any, live_server: LiveServer) -> Iterator[Pages]:
    opened = Pages(browser, live_server)
    yield opened
    opened.close()
    assert not opened.errors, f"JavaScript errors: {opened.errors}"
