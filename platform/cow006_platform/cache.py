"""The public page cache: anonymous answers of the hot read routes, kept until their data changes.

Leaderboards, agent pages, rating histories and lists of matches are what people (and the
web pages' polling) read most, and all of them are public: the same bytes for every
anonymous caller.  Each API process keeps those answers in memory (least recently used
first out, bounded in bytes) with the tags of the data they show (``changes.tags_of``), and
drops them when the change feed names one of those tags:

* another process's commit (a worker storing a match result, another API process) is seen
  by polling the ``changes`` table every ``cache_poll_seconds``: a page may be that much
  older than the database, never more;
* this process's own commits invalidate at once (``changes.subscribe``): whoever writes
  reads their own write.

Requests with an ``Authorization`` header are never cached or answered from the cache (an
owner may see more than the public).  When the feed cannot be read (the database is down),
nothing is served from the cache until it can again.  ``cache_max_age`` is a backstop.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import anyio.to_thread
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import changes

logger = logging.getLogger(__name__)

# How long a missing feed id is waited for: ids are taken just before a commit, so one
# committed out of order shows up within milliseconds; one that never shows was rolled back.
GAP_SECONDS = 10.0


def _matches_tags(m: re.Match[str], query: str) -> set[str] | None:
    params = dict(parse_qsl(query))
    if "agent_id" in params and set(params) <= {"agent_id", "limit", "offset"}:
        if not params["agent_id"].isdigit():
            return None
        return {f"agent:{int(params['agent_id'])}"}
    return {changes.MATCHES}


def _one(kind: str) -> Callable[[re.Match[str], str], set[str] | None]:
    return lambda m, _q: {f"{kind}:{int(m[1])}"}


# The cached routes and the tags of what their answers show.  A route's tags must cover
# every row it reads: see changes.tags_of for what each write announces.
ROUTES: list[tuple[re.Pattern[str], Callable[[re.Match[str], str], set[str] | None]]] = [
    (re.compile(r"/api/ladders/(\d{1,18})(?:/leaderboard)?"), _one("ladder")),
    (re.compile(r"/api/agents/(\d{1,18})(?:/ratings)?"), _one("agent")),
    (re.compile(r"/api/matches"), _matches_tags),
    (re.compile(r"/api/matches/(\d{1,18})(?:/log)?"), _one("match")),
]


def route_tags(path: str, query: str) -> set[str] | None:
    """The tags of a cacheable GET, or None for a route that is not cached."""
    for pattern, tags in ROUTES:
        m = pattern.fullmatch(path)
        if m is not None:
            return tags(m, query)
    return None


@dataclass
class Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: bytes
    tags: frozenset[str]
    expires: float


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


class PageCache:
    """The cached answers of one API process, and the task that keeps them current."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        *,
        max_bytes: int,
        poll_seconds: float,
        max_age: float,
    ) -> None:
        self.feed = FeedReader(factory)
        self.max_bytes = max_bytes
        self.poll_seconds = poll_seconds
        self.max_age = max_age
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.by_tag: dict[str, set[str]] = {}
        self.size = 0
        # Bumped by every invalidation: an answer computed across one is not stored (it may
        # have read the data from before the change).
        self.generation = 0
        self.last_poll = float("-inf")
        self.own: set[int] = set()  # feed ids of this process's commits, not yet polled
        self.hits = 0
        self.misses = 0
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- lifecycle (the app's lifespan) ---------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._unsubscribe = changes.subscribe(self._on_local_commit)
        await self._poll_once()
        self._task = asyncio.create_task(self._poll_forever())

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self.clear()

    @property
    def live(self) -> bool:
        """Serving from the cache is allowed: the feed was read recently."""
        return time.monotonic() - self.last_poll < 4 * self.poll_seconds + 1.0

    async def _poll_once(self) -> None:
        try:
            rows = await anyio.to_thread.run_sync(self.feed.poll)
        except Exception as exc:  # the database is away: stop serving from memory
            if self.feed.cursor is not None:  # said once per outage, not at every poll
                logger.warning("the change feed cannot be read (%s): page cache cleared", exc)
            self.clear()
            self.feed.cursor = None
            return
        if rows is None:
            tags = {changes.EVERYTHING}
        else:
            # This process's own commits were dropped when they happened: not again.
            tags = {tag for ident, tag in rows if ident not in self.own}
            self.own.difference_update(ident for ident, _ in rows)
        self.invalidate(tags)
        self.last_poll = time.monotonic()

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
        self.invalidate(tags)

    # -- the store ------------------------------------------------------------------------------
    def clear(self) -> None:
        self.entries.clear()
        self.by_tag.clear()
        self.size = 0
        self.generation += 1

    def invalidate(self, tags: set[str]) -> None:
        if not tags:
            return
        self.generation += 1
        if changes.EVERYTHING in tags:
            self.clear()
            return
        for tag in tags:
            for key in self.by_tag.pop(tag, ()):
                self._drop(key)

    def _drop(self, key: str) -> None:
        entry = self.entries.pop(key, None)
        if entry is None:
            return
        self.size -= len(entry.body)
        for tag in entry.tags:
            keys = self.by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_tag[tag]

    def get(self, key: str) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        if entry.expires < time.monotonic():
            self._drop(key)
            return None
        self.entries.move_to_end(key)
        return entry

    def put(self, key: str, entry: Entry) -> None:
        if len(entry.body) > self.max_bytes // 8:
            return  # one huge answer would push out hundreds of small ones
        self._drop(key)
        self.entries[key] = entry
        self.size += len(entry.body)
        for tag in entry.tags:
            self.by_tag.setdefault(tag, set()).add(key)
        while self.size > self.max_bytes and self.entries:
            self._drop(next(iter(self.entries)))


class PublicCacheMiddleware:
    """ASGI middleware answering cacheable anonymous GETs from ``app.state.page_cache``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        cache: PageCache | None = getattr(scope["app"].state, "page_cache", None)
        query = scope["query_string"].decode("latin-1")
        tags = route_tags(scope["path"], query)
        if (
            cache is None
            or tags is None
            or not cache.live
            or any(name == b"authorization" for name, _ in scope["headers"])
        ):
            await self.app(scope, receive, send)
            return
        key = f"{scope['path']}?{query}"
        entry = cache.get(key)
        if entry is not None:
            cache.hits += 1
            await _send_entry(scope, send, entry)
            return
        cache.misses += 1
        await self._fill(cache, key, frozenset(tags), scope, receive, send)

    async def _fill(
        self,
        cache: PageCache,
        key: str,
        tags: frozenset[str],
        scope: Scope,
        receive: Receive,
        send: Send,
    ) -> None:
        generation = cache.generation
        start: Message | None = None
        chunks: list[bytes] = []
        # Held back, start and body: the ETag needs the whole body first (these routes
        # answer small, complete JSON bodies).
        held: list[Message] = []

        async def hold(message: Message) -> None:
            held.append(message)

        await self.app(scope, receive, hold)
        for message in held:
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
        if start is None:
            return
        body = b"".join(chunks)
        status = int(start["status"])
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        if status == 200 and cache.generation == generation:
            etag = b'"' + hashlib.blake2b(body, digest_size=12).hexdigest().encode() + b'"'
            entry = Entry(status, headers, body, etag, tags, time.monotonic() + cache.max_age)
            cache.put(key, entry)
            await _send_entry(scope, send, entry, hit=False)
            return
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})


async def _send_entry(scope: Scope, send: Send, entry: Entry, *, hit: bool = True) -> None:
    headers: list[Any] = [*entry.headers, (b"etag", entry.etag)]
    headers.append((b"x-cache", b"hit" if hit else b"miss"))
    if any(k == b"if-none-match" and entry.etag in v for k, v in scope["headers"]):
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    headers.append((b"content-length", str(len(entry.body)).encode()))
    await send({"type": "http.response.start", "status": entry.status, "headers": headers})
    await send({"type": "http.response.body", "body": entry.body})
