"""The public page cache: anonymous answers of the hot read routes, kept until their data changes.

Leaderboards, agent pages, rating histories and lists of matches are what people (and the
web pages' polling) read most, and all of them are public: the same bytes for every
anonymous caller.  Each API process keeps those answers in memory (least recently used
first out, bounded in bytes) with the tags of the data they show (``changes.tags_of``), and
drops them when the change feed names one of those tags:

* another process's commit (a worker storing a match result, another API process) is seen
  by polling the ``changes`` table every ``cache_poll_seconds``; a page people read is then
  answered, marked stale, for up to ``cache_stale_seconds`` more while it is rendered again
  (below): a page may be that much older than the database, never more;
* this process's own commits invalidate at once (``changes.subscribe``): whoever writes
  reads their own write.

Requests with an ``Authorization`` header are never cached or answered from the cache (an
owner may see more than the public).  When the feed cannot be read (the database is down),
nothing is served from the cache until it can again.  ``cache_max_age`` bounds every entry's
age, read or not (the polls sweep out expired entries).

Keys mean what the route reads (``page_key``): a query with a parameter given twice or a
long value is never cached (``limits.strict_query`` refuses repeated and unknown parameters
with a 422), and the budget counts each entry's key and headers as well as its body.

Misses are what make a busy API slow (a page costs milliseconds of CPU to build, a hit tens of
microseconds), so the cache also works ahead of its readers:

* **warming**: at start, one background task renders the pages most read (``warm_keys``: each
  open ladder's leaderboard pages, then the agents entered in it, best first), at most
  ``cache_warm_pages`` of them and never past the memory budget;
* **refresh**: a page that was read (or warmed) and whose data changed is queued to be
  rendered again at once by that task, so the next reader finds it ready;
* **one render per page at a time**: readers that miss on a page already being rendered wait
  for that render instead of repeating it (a leaderboard dropped under 32 readers is built
  once, not 32 times).

The background task renders one page at a time, on the same worker threads as requests, so
it takes at most one of them.  A rendered page is stored only if none of the tags it shows
changed while it was being rendered.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from . import changes
from .metrics import ROUTE_LABEL, route_label
from .models import Ladder, LadderEntry, LadderState, Rating

logger = logging.getLogger(__name__)
T = TypeVar("T")

# How long a missing feed id is waited for: ids are taken just before a commit, so one
# committed out of order shows up within milliseconds; one that never shows was rolled back.
GAP_SECONDS = 10.0


def _matches_tags(m: re.Match[str], query: str) -> set[str] | None:
    params = dict(parse_qsl(query))
    if "agent_id" in params and set(params) <= {"agent_id", "limit", "offset"}:
        if not params["agent_id"].isdigit() or len(params["agent_id"]) > MAX_VALUE:
            return None  # not an id (int() of a 60,000-digit string raises)
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


# Query parameters equal to their default (``deps.get_paging``): ``?limit=50&offset=0`` is the
# same page as no query at all, and is cached once.
_DEFAULT_PARAMS = frozenset({("limit", "50"), ("offset", "0")})


# A query value longer than this is not cached: the routes read ids and small numbers, and a
# long value (``limit=000...050``) would only make a big key for an ordinary page.
MAX_VALUE = 32


def page_key(path: str, query: str) -> str | None:
    """The cache key of a request, or None when its answer must not be cached.

    A parameter given twice is never cached: the route reads only one of them (FastAPI takes
    the last; ``limits.strict_query`` refuses it), while dropping defaults from the key
    (``?offset=2&offset=0`` -> ``?offset=2``) would name another page, so the answer for one
    would be stored under the key of the other.  Neither is a value longer than ``MAX_VALUE``.
    A name the route does not read gets a key of its own, and the route's 422 is not stored.
    """
    pairs = parse_qsl(query, keep_blank_values=True)
    names = [name for name, _ in pairs]
    if len(set(names)) != len(names) or any(len(v) > MAX_VALUE for _, v in pairs):
        return None
    return cache_key(path, query)


def cache_key(path: str, query: str) -> str:
    """The key of a page: its path and its query parameters sorted, defaults left out.

    Only the order of different parameters changes (the sort is stable, so a repeated one
    keeps its order): the key names exactly the answer the route gives for the raw query.
    """
    params = [p for p in parse_qsl(query, keep_blank_values=True) if p not in _DEFAULT_PARAMS]
    params.sort(key=lambda p: p[0])
    return f"{path}?{urlencode(params)}" if params else path


@dataclass
class Entry:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes
    etag: bytes
    tags: frozenset[str]
    expires: float
    reads: int = 0  # hits since it was stored
    warm: bool = False  # rendered ahead by warming: worth keeping even before a first read
    stale_since: float | None = None  # its data changed elsewhere; being rendered again
    route: str = ""  # the label of the route that answered: request metrics count its hits under it
    cost: int = 0  # the bytes it is counted for against the budget (``entry_cost``)


# Bytes an entry costs beyond its key, body and headers: the Entry, its dict slots and tags.
ENTRY_OVERHEAD = 512


def entry_cost(key: str, entry: Entry) -> int:
    """What an entry holds in memory, as counted against ``cache_bytes``: its key too (a key
    may be kilobytes long, the answer a few bytes)."""
    headers = sum(len(k) + len(v) for k, v in entry.headers)
    return ENTRY_OVERHEAD + len(key) + len(entry.body) + headers + len(entry.etag)


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


class PageCache:
    """The cached answers of one API process, and the tasks that keep them current."""

    def __init__(
        self,
        factory: sessionmaker[Session],
        *,
        max_bytes: int,
        poll_seconds: float,
        max_age: float,
        warm_pages: int = 0,
        stale_seconds: float = 0.0,
    ) -> None:
        self.factory = factory
        self.feed = FeedReader(factory)
        self.max_bytes = max_bytes
        self.poll_seconds = poll_seconds
        self.max_age = max_age
        self.warm_pages = warm_pages
        self.stale_seconds = stale_seconds
        self.entries: OrderedDict[str, Entry] = OrderedDict()
        self.by_tag: dict[str, set[str]] = {}
        self.size = 0
        # Bumped by every invalidation, whose tags are remembered for a while: an answer
        # rendered across an invalidation of one of its tags is not stored (it may show the
        # data from before the change).
        self.generation = 0
        self.recent: deque[tuple[int, frozenset[str]]] = deque(maxlen=1024)
        self.last_poll = float("-inf")
        self.last_sweep = time.monotonic()
        self.own: set[int] = set()  # feed ids of this process's commits, not yet polled
        self.inflight: dict[str, asyncio.Future[Rendered | None]] = {}
        # Pages to render ahead (warming, refresh), in order; the value: warmed (True) or
        # refreshed after a read (False).
        self.pending: OrderedDict[str, bool] = OrderedDict()
        self.renderer: Renderer | None = None
        self.hits = 0
        self.stale_hits = 0  # of the hits, answered with a page being rendered again
        self.misses = 0
        self.rendered_ahead = 0
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Future[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._unsubscribe: Callable[[], None] | None = None

    # -- lifecycle (the app's lifespan) ---------------------------------------------------------
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()  # bound to this loop (a TestClient runs one per startup)
        self._unsubscribe = changes.subscribe(self._on_local_commit)
        self._tasks = [asyncio.create_task(self._render_ahead_forever())]
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
        # the driver.
        await asyncio.gather(*self._busy, return_exceptions=True)
        self.pending.clear()
        self.clear()

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
            self.feed.cursor = None
            return
        if rows is None:  # a start, or the feed is back after an outage: warm up afresh
            tags = {changes.EVERYTHING}
            if self.warm_pages > 0:
                self._tasks = [t for t in self._tasks if not t.done()]
                self._tasks.append(asyncio.create_task(self._warm()))
        else:
            # This process's own commits were dropped when they happened: not again.
            tags = {tag for ident, tag in rows if ident not in self.own}
            self.own.difference_update(ident for ident, _ in rows)
        self.last_poll = time.monotonic()
        self.invalidate(tags)
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
            self.pending.setdefault(key, True)
        self._wake.set()

    def _warm_keys(self) -> list[str]:
        with self.factory() as session:
            return warm_keys(session, self.warm_pages)

    def _queue(self, keys: Iterable[str]) -> None:
        """Queue pages people read to be rendered again, ahead of any warming still to do."""
        for key in keys:
            self.pending[key] = False
            self.pending.move_to_end(key, last=False)
        if self.pending:
            self._wake.set()

    async def _render_ahead_forever(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self.pending:
                key, warm = self.pending.popitem(last=False)
                await self._render_ahead(key, warm)

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
        tags = route_tags(path, query)
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

    def _unchanged_since(self, generation: int, tags: frozenset[str]) -> bool:
        if generation == self.generation:
            return True
        later = [(g, t) for g, t in self.recent if g > generation]
        if len(later) < self.generation - generation:  # forgotten: assume the worst
            return False
        return not any(changes.EVERYTHING in t or not t.isdisjoint(tags) for _, t in later)

    # -- the store ------------------------------------------------------------------------------
    def clear(self) -> None:
        self.entries.clear()
        self.by_tag.clear()
        self.size = 0
        self.generation += 1
        self.recent.append((self.generation, frozenset({changes.EVERYTHING})))

    def invalidate(self, tags: set[str], *, local: bool = False) -> None:
        """Drop the pages showing ``tags``, and queue those worth having to be rendered again.

        A change made elsewhere (``local`` False: polled from the feed) already reaches this
        process up to a poll late; a page that readers want is then kept, marked stale, and
        answered for up to ``stale_seconds`` more while it is rendered again, so that readers
        do not queue behind its render.  This process's own changes drop their pages at once:
        whoever wrote reads their write.
        """
        if not tags:
            return
        if changes.EVERYTHING in tags:
            self._queue(key for key, entry in self.entries.items() if entry.reads or entry.warm)
            self.clear()
            return
        self.generation += 1
        self.recent.append((self.generation, frozenset(tags)))
        now = time.monotonic()
        keep_stale = not local and self.stale_seconds > 0
        again = []
        for tag in tags:
            for key in list(self.by_tag.get(tag, ())):
                entry = self.entries[key]
                wanted = bool(entry.reads or entry.warm)
                if wanted:
                    again.append(key)
                if wanted and keep_stale:
                    if entry.stale_since is None:  # the bound runs from the first change
                        entry.stale_since = now
                else:
                    self._drop(key)
        self._queue(again)

    def _drop(self, key: str) -> Entry | None:
        entry = self.entries.pop(key, None)
        if entry is None:
            return None
        self.size -= entry.cost
        for tag in entry.tags:
            keys = self.by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.by_tag[tag]
        return entry

    def get(self, key: str) -> Entry | None:
        entry = self.entries.get(key)
        if entry is None:
            return None
        now = time.monotonic()
        if entry.expires < now or (
            entry.stale_since is not None and now - entry.stale_since > self.stale_seconds
        ):
            self._drop(key)
            return None
        self.entries.move_to_end(key)
        if entry.stale_since is None and self._ageing(entry) and key not in self.pending:
            self._queue([key])  # read and near ``max_age``: renewed before it runs out
        return entry

    def _ageing(self, entry: Entry) -> bool:
        return entry.expires - time.monotonic() < self.max_age * 0.1

    def expire(self) -> None:
        """Drop every entry past its maximum age, read or not (``get`` drops only what it
        reads: an entry nobody reads again would otherwise stay until pushed out)."""
        now = self.last_sweep = time.monotonic()
        for key in [k for k, e in self.entries.items() if e.expires < now]:
            self._drop(key)

    def put(self, key: str, entry: Entry) -> None:
        entry.cost = entry_cost(key, entry)
        if entry.cost > self.max_bytes // 8:
            return  # one huge answer would push out hundreds of small ones
        self._drop(key)
        self.entries[key] = entry
        self.size += entry.cost
        for tag in entry.tags:
            self.by_tag.setdefault(tag, set()).add(key)
        while self.size > self.max_bytes and self.entries:
            self._drop(next(iter(self.entries)))


def warm_keys(session: Session, limit: int) -> list[str]:
    """The pages to render before anyone asks, most read first, at most ``limit``.

    For each ladder that is not closed: the ladder, its leaderboard pages (as the API's
    default page size and as the ladder web page reads it), its latest matches; then the
    pages of its entered agents (the agent, its rating history, its matches), best first.
    """
    keys: list[str] = ["/api/matches"]
    agents: list[int] = []
    ladders = session.scalars(
        select(Ladder.id).where(Ladder.state != LadderState.closed).order_by(Ladder.id)
    ).all()
    for ladder in ladders:
        base = f"/api/ladders/{ladder}"
        keys += [base, f"{base}/leaderboard", cache_key(f"{base}/leaderboard", "limit=200")]
        keys.append(cache_key("/api/matches", f"ladder_id={ladder}&limit=15"))
        rows = session.execute(
            select(LadderEntry.agent_id)
            .outerjoin(
                Rating,
                (Rating.ladder_id == LadderEntry.ladder_id)
                & (Rating.version_id == LadderEntry.version_id),
            )
            .where(LadderEntry.ladder_id == ladder, LadderEntry.active.is_(True))
            .order_by(func.coalesce(Rating.conservative, -1e9).desc(), LadderEntry.agent_id)
        ).scalars()
        entered = list(rows)
        keys += [f"{base}/leaderboard?offset={k}" for k in range(50, len(entered), 50)]
        agents += entered
    seen: set[int] = set()
    for agent in agents:
        if agent not in seen:
            seen.add(agent)
            a = f"/api/agents/{agent}"
            keys += [a, f"{a}/ratings", f"/api/matches?agent_id={agent}"]
    return keys[:limit]


class PublicCacheMiddleware:
    """ASGI middleware answering cacheable anonymous GETs from ``app.state.page_cache``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            # The cache renders pages ahead through the app below this middleware.
            cache = getattr(scope["app"].state, "page_cache", None)
            if cache is not None:
                cache.renderer = self._renderer(scope["app"])
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        cache = getattr(scope["app"].state, "page_cache", None)
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
        key = page_key(scope["path"], query)
        if key is None:
            await self.app(scope, receive, send)
            return
        entry = cache.get(key)
        if entry is not None:
            scope[ROUTE_LABEL] = entry.route  # the request metrics' label: no router saw it
            cache.hits += 1
            entry.reads += 1
            if entry.stale_since is not None:
                cache.stale_hits += 1
            await _send_entry(scope, send, entry)
            return
        flight = cache.inflight.get(key)
        if flight is not None:
            rendered = await asyncio.shield(flight)
            if rendered is not None and (
                rendered.entry is not None or rendered.answer.status != 200
            ):
                scope[ROUTE_LABEL] = rendered.answer.route
                cache.hits += 1
                await _send_rendered(scope, send, rendered, hit=True)
                return
        cache.misses += 1
        rendered = await cache.fill(key, frozenset(tags), lambda: self._render(scope, receive))
        await _send_rendered(scope, send, rendered, hit=False)

    async def _render(self, scope: Scope, receive: Receive) -> Answer:
        """The app's answer, whole (these routes answer small, complete JSON bodies; the
        ETag needs the whole body first)."""
        status = 500
        headers: list[tuple[bytes, bytes]] = []
        chunks: list[bytes] = []

        async def hold(message: Message) -> None:
            nonlocal status, headers
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [
                    (k, v) for k, v in message.get("headers", []) if k.lower() != b"content-length"
                ]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app(scope, receive, hold)
        return Answer(status, headers, b"".join(chunks), route_label(scope))

    def _renderer(self, root: Any) -> Renderer:
        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def render(path: str, query: str) -> Answer:
            scope: Scope = {
                "type": "http",
                "asgi": {"version": "3.0", "spec_version": "2.3"},
                "http_version": "1.1",
                "method": "GET",
                "scheme": "http",
                "server": ("127.0.0.1", 80),
                "client": ("127.0.0.1", 0),
                "root_path": "",
                "path": path,
                "raw_path": path.encode(),
                "query_string": query.encode(),
                "headers": [(b"host", b"page-cache")],
                "app": root,
                "state": {},
            }
            return await self._render(scope, receive)

        return render


async def _send_rendered(scope: Scope, send: Send, rendered: Rendered, *, hit: bool) -> None:
    if rendered.entry is not None:
        await _send_entry(scope, send, rendered.entry, hit=hit)
        return
    answer = rendered.answer
    headers = [*answer.headers, (b"content-length", str(len(answer.body)).encode())]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


async def _send_entry(scope: Scope, send: Send, entry: Entry, *, hit: bool = True) -> None:
    headers: list[Any] = [*entry.headers, (b"etag", entry.etag)]
    state = b"miss" if not hit else b"hit" if entry.stale_since is None else b"stale"
    headers.append((b"x-cache", state))
    if any(k == b"if-none-match" and entry.etag in v for k, v in scope["headers"]):
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    headers.append((b"content-length", str(len(entry.body)).encode()))
    await send({"type": "http.response.start", "status": entry.status, "headers": headers})
    await send({"type": "http.response.body", "body": entry.body})
