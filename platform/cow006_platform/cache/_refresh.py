"""The page cache kept current: the change feed polled (other processes' commits) and
heard (this process's own), and pages rendered ahead of their readers (warming at start,
refresh after a change, one render per page at a time)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
from sqlalchemy.orm import Session, sessionmaker

from .. import changes
from ._routes import cache_key
from ._store import Entry, Store

logger = logging.getLogger(__name__)
T = TypeVar("T")
# The pages to warm (paths with their query), most read first, at most the int given.
WarmKeys = Callable[[Session, int], list[str]]

# How long a missing feed id is waited for: ids are taken just before a commit, so one
# committed out of order shows up within milliseconds; one that never shows was rolled back.
GAP_SECONDS = 10.0
# Pages rendered ahead at once: a render waits for the database and, on a busy machine, for
# a core; two keep one going meanwhile (each takes one of the routes' threads).
RENDER_AHEAD = 2


@dataclass
class Answer:
    """What the app answered for a page, whole."""

    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    route: str  # the label of the route that answered (``metrics.route_label``)


@dataclass
class Rendered:
    """An answer, and the entry it was stored as (None if it was not)."""

    answer: Answer
    entry: Entry | None


Renderer = Callable[[str, str], Awaitable[Answer]]


class FeedReader:
    """Reads the change feed in order, including ids that commit out of order."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory
        self.cursor: int | None = None
        self.gaps: dict[int, float] = {}  # missing id -> when it was first missed

    def poll(self) -> list[tuple[int, str]] | None:
        """The entries committed since the last poll; None at the first (start afresh)."""
        with self.factory() as session:
            if self.cursor is None:
                self.cursor = changes.latest(session)
                return None
            rows = changes.read_since(session, self.cursor)
            late = changes.read_ids(session, sorted(self.gaps)) if self.gaps else []
        now = time.monotonic()
        for ident, _tag in late:
            self.gaps.pop(ident, None)
        for ident, _tag in rows:
            for missing in range(self.cursor + 1, ident):
                self.gaps.setdefault(missing, now)
            self.cursor = max(self.cursor, ident)
        for ident, since in list(self.gaps.items()):
            if now - since > GAP_SECONDS:
                del self.gaps[ident]
        return [*late, *rows]


class PageCache(Store):
    """The cached answers of one API process, and the tasks that keep them current.

    ``warm`` lists the pages to render at start (``crud.ladders.warm_keys``), at most
    ``warm_pages``; the middleware ``attach``-es the app that renders pages and finds their
    tags.
    """

    def __init__(
        self,
        factory: sessionmaker[Session],
        *,
        max_bytes: int,
        poll_seconds: float,
        max_age: float,
        warm_pages: int = 0,
        stale_seconds: float = 0.0,
        warm: WarmKeys | None = None,
    ) -> None:
        super().__init__(max_bytes=max_bytes, max_age=max_age, stale_seconds=stale_seconds)
        self.factory = factory
        self.feed = FeedReader(factory)
        self.poll_seconds = poll_seconds
        self.warm_pages = warm_pages
        self.warm = warm
        self.last_poll = float("-inf")
        self.own: set[int] = set()  # feed ids of this process's commits, not yet polled
        self.inflight: dict[str, asyncio.Future[Rendered | None]] = {}
        self.renderer: Renderer | None = None
        self.tags_of: Callable[[str, str], set[str] | None] = lambda _path, _query: None
        self.hits = 0
        self.stale_hits = 0  # of the hits, answered with a page being rendered again
        self.misses = 0
        self.rendered_ahead = 0
        self.polls = 0  # polls of the feed done, their changes applied
        # Renders ahead under way, counted from the moment their page left ``pending`` or
        # ``deferred`` until what they found is applied (``inflight`` covers only the render).
        self.ahead = 0
        # Renders (misses and renders ahead) by the label of the route that answered: what
        # a change costs the readers, page kind by page kind.
        self.renders: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Future[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None

    def attach(self, renderer: Renderer, tags_of: Callable[[str, str], set[str] | None]) -> None:
        """How to render a page (path, query) ahead of its readers, and find its tags."""
        self.renderer = renderer
        self.tags_of = tags_of

    # -- lifecycle (the app's lifespan) ---------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()  # bound to this loop (a TestClient runs one per startup)
        self._unsubscribe = changes.subscribe(self._on_local_commit)
        self._tasks = [
            asyncio.create_task(self._render_ahead_forever()) for _ in range(RENDER_AHEAD)
        ]
        await self._poll_once()
        self._tasks.append(asyncio.create_task(self._poll_forever()))

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            try:
                await task
            except asyncio.CancelledError:
                pass
        self._tasks = []
        # Work already in a thread runs to its end first: the app disposes of its database
        # engines right after this, and closing a connection under a running query can crash
        # the driver.  Only this loop's: work of an earlier lifespan whose loop has closed
        # (a TestClient, an ASGI transport, runs one per startup) cannot be awaited here.
        loop = asyncio.get_running_loop()
        await asyncio.gather(
            *(f for f in self._busy if f.get_loop() is loop), return_exceptions=True
        )
        self._busy.clear()
        self.pending.clear()
        self.deferred.clear()
        self.clear()

    @property
    def settled(self) -> bool:
        """Nothing is left to do for the changes heard so far: no page queued, held back or
        being rendered ahead.  (This process's own commits not yet heard back from the feed
        are not work: their pages were dropped when they were made.)"""
        return not (self.pending or self.deferred or self.inflight or self.ahead)

    @property
    def live(self) -> bool:
        """Serving from the cache is allowed: the feed was read recently."""
        return time.monotonic() - self.last_poll < 4 * self.poll_seconds + 1.0

    async def _finished(self, work: Awaitable[T]) -> T:
        """Await ``work``, which runs to its end even if the caller is cancelled (``stop``
        waits for it)."""
        future = asyncio.ensure_future(work)
        self._busy.add(future)
        future.add_done_callback(self._busy.discard)
        return await asyncio.shield(future)

    async def _poll_once(self) -> None:
        try:
            rows = await self._finished(anyio.to_thread.run_sync(self.feed.poll))
        except Exception as exc:  # the database is away: stop serving from memory
            if self.feed.cursor is not None:  # said once per outage, not at every poll
                logger.warning("the change feed cannot be read (%s): page cache cleared", exc)
            self.clear()
            self.pending.clear()
            self.deferred.clear()
            self.feed.cursor = None
            return
        if rows is None:  # a start, or the feed is back after an outage: warm up afresh
            tags = {changes.EVERYTHING}
            if self.warm_pages > 0 and self.warm is not None:
                self._tasks = [t for t in self._tasks if not t.done()]
                self._tasks.append(asyncio.create_task(self._warm()))
        else:
            # This process's own commits were dropped when they happened: not again.
            tags = {tag for ident, tag in rows if ident not in self.own}
            self.own.difference_update(ident for ident, _ in rows)
        self.last_poll = time.monotonic()
        self.invalidate(tags)
        self.polls += 1
        if self.last_poll - self.last_sweep > max(1.0, self.max_age / 8):
            self.expire()

    async def _poll_forever(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            await self._poll_once()

    def _on_local_commit(self, ids: set[int], tags: set[str]) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._local(ids, tags)
        else:  # a route's worker thread: the invalidation runs on the loop, before the
            # thread's result is taken up there (callbacks run in order)
            loop.call_soon_threadsafe(self._local, ids, tags)

    def _local(self, ids: set[int], tags: set[str]) -> None:
        if len(self.own) > 100_000:  # echoes that never came (a feed reset): forget them
            self.own.clear()
        self.own |= ids
        self.invalidate(tags, local=True)

    # -- rendering ahead of the readers ---------------------------------------------------------
    async def _warm(self) -> None:
        try:
            keys = await self._finished(anyio.to_thread.run_sync(self._warm_keys))
        except Exception as exc:  # warming is an optimisation: the cache works cold
            logger.warning("the page cache could not list the pages to warm (%s)", exc)
            return
        for key in keys:
            path, _, query = key.partition("?")
            self.pending.setdefault(cache_key(path, query), True)
        self._wake.set()

    def _warm_keys(self) -> list[str]:
        assert self.warm is not None
        with self.factory() as session:
            return self.warm(session, self.warm_pages)

    def _queued(self) -> None:
        self._wake.set()

    async def _render_ahead_forever(self) -> None:
        while True:
            # Stale pages whose time has come first (the nearest to their bound), then the
            # pages dropped, renewed or warmed.
            key = self.next_due(time.monotonic())
            warm = False
            if key is None and self.pending:
                key, warm = self.pending.popitem(last=False)
            if key is not None:
                self.ahead += 1
                try:
                    await self._render_ahead(key, warm)
                finally:
                    self.ahead -= 1
            else:
                self._wake.clear()
                wait = None
                if self.deferred:
                    wait = max(0.0, next(iter(self.deferred.values())) - time.monotonic())
                try:
                    await asyncio.wait_for(self._wake.wait(), wait)
                except TimeoutError:
                    pass

    async def _render_ahead(self, key: str, warm: bool) -> None:
        renderer = self.renderer
        current = self.entries.get(key)
        if renderer is None or not self.live or key in self.inflight:
            return
        if current is not None and current.stale_since is None and not self._ageing(current):
            return
        if warm and self.size >= self.max_bytes * 0.9:
            return  # warming must not push out pages people have read
        path, _, query = key.partition("?")
        tags = self.tags_of(path, query)
        if tags is None:
            return
        try:
            rendered = await self._finished(
                self.fill(key, frozenset(tags), lambda: renderer(path, query))
            )
        except Exception:
            logger.exception("the page cache could not render %s", key)
            return
        self.rendered_ahead += 1
        if rendered.entry is not None:
            rendered.entry.warm = warm
        elif rendered.answer.status == 200:  # its data changed meanwhile: again, after the change
            self.pending.setdefault(key, warm)

    async def fill(
        self,
        key: str,
        tags: frozenset[str],
        render: Callable[[], Awaitable[Answer]],
    ) -> Rendered:
        """Render a page and store it (a 200 whose data did not change meanwhile).  While it
        renders, ``inflight[key]`` lets other readers of the page wait for it instead."""
        generation = self.generation
        flight: asyncio.Future[Rendered | None] = asyncio.get_running_loop().create_future()
        self.inflight[key] = flight
        result: Rendered | None = None
        try:
            answer = await render()
            self.renders[answer.route] = self.renders.get(answer.route, 0) + 1
            entry = None
            if answer.status == 200 and self._unchanged_since(generation, tags):
                digest = hashlib.blake2b(answer.body, digest_size=12).hexdigest()
                entry = Entry(
                    answer.status,
                    answer.headers,
                    answer.body,
                    f'"{digest}"'.encode(),
                    tags,
                    time.monotonic() + self.max_age,
                    route=answer.route,
                )
                self.put(key, entry)
            result = Rendered(answer, entry)
            return result
        finally:
            # None (the render failed) sends the waiting readers to render it themselves.
            flight.set_result(result)
            if self.inflight.get(key) is flight:
                del self.inflight[key]
