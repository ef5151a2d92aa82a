"""The page cache's ASGI middleware: anonymous GETs of the cached routes answered from the
cache, misses rendered once and stored, and the renderer the cache renders ahead with."""

from __future__ import annotations

import asyncio
import gzip
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..answers import GZIP_LEVEL, GZIP_MIN_BYTES, accepts_gzip
from ..metrics import ROUTE_LABEL, route_label
from ._refresh import Answer, Rendered, Renderer
from ._routes import CachedRoutes, page_key
from ._store import Entry, Store

# A browser signed in on the site sends this cookie (``websession.COOKIE``; the name is
# spelled here so the cache does not import the web layer): such requests are personal.
SESSION_COOKIE = b"cow006_session"


def personal(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether a request carries a credential: an Authorization header, or the site's
    session cookie.  Its answer is never taken from the cache nor stored there."""
    for name, value in headers:
        if name == b"authorization" or (name == b"cookie" and SESSION_COOKIE in value):
            return True
    return False


class PublicCacheMiddleware:
    """ASGI middleware answering cacheable anonymous GETs from ``app.state.page_cache``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.routes: CachedRoutes | None = None

    def _routes(self, root: Any) -> CachedRoutes:
        """The app's cached routes (its routes are all there once it serves)."""
        if self.routes is None:
            self.routes = CachedRoutes(root.routes)
        return self.routes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            # The cache renders pages ahead through the app below this middleware.
            cache = getattr(scope["app"].state, "page_cache", None)
            if cache is not None:
                cache.attach(self._renderer(scope["app"]), self._routes(scope["app"]).tags)
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        cache = getattr(scope["app"].state, "page_cache", None)
        if cache is None or not cache.live or personal(scope["headers"]):
            await self.app(scope, receive, send)
            return
        query = scope["query_string"].decode("latin-1")
        key = page_key(scope["path"], query)
        if key is None:
            await self.app(scope, receive, send)
            return
        # Only a cached route's answers are ever stored: a hit needs no routing.
        entry = cache.get(key)
        if entry is not None:
            scope[ROUTE_LABEL] = entry.route  # the request metrics' label: no router saw it
            cache.hits += 1
            entry.reads += 1
            if entry.stale_since is not None:
                cache.stale_hits += 1
            await _send_entry(scope, send, entry, cache=cache, key=key)
            return
        flight = cache.inflight.get(key)
        if flight is not None:
            rendered = await asyncio.shield(flight)
            if rendered is not None and (
                rendered.entry is not None or rendered.answer.status != 200
            ):
                scope[ROUTE_LABEL] = rendered.answer.route
                cache.hits += 1
                await _send_rendered(scope, send, rendered, hit=True, cache=cache, key=key)
                return
        tags = self._routes(scope["app"]).tags(scope["path"], query)
        if tags is None:  # not a cached route
            await self.app(scope, receive, send)
            return
        cache.misses += 1
        rendered = await cache.fill(key, frozenset(tags), lambda: self._render(scope, receive))
        await _send_rendered(scope, send, rendered, hit=False, cache=cache, key=key)

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


async def _send_rendered(
    scope: Scope, send: Send, rendered: Rendered, *, hit: bool, cache: Store, key: str
) -> None:
    if rendered.entry is not None:
        await _send_entry(scope, send, rendered.entry, hit=hit, cache=cache, key=key)
        return
    answer = rendered.answer
    headers = [*answer.headers, (b"content-length", str(len(answer.body)).encode())]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": answer.body})


def _gzipped(entry: Entry, cache: Store, key: str) -> bytes:
    """The entry's body compressed: once per entry, kept with it (and counted against the
    cache's budget while it is stored), so a hit never compresses again."""
    if entry.gzipped is None:
        entry.gzipped = gzip.compress(entry.body, GZIP_LEVEL, mtime=0)
        cache.account(key, entry, len(entry.gzipped))
    return entry.gzipped


async def _send_entry(
    scope: Scope, send: Send, entry: Entry, *, hit: bool = True, cache: Store, key: str
) -> None:
    body, etag = entry.body, entry.etag
    headers: list[Any] = list(entry.headers)
    if len(entry.body) >= GZIP_MIN_BYTES:
        # Two representations of one page: each has its own ETag (a strong ETag names bytes).
        headers.append((b"vary", b"Accept-Encoding"))
        if accepts_gzip(scope):
            body = _gzipped(entry, cache, key)
            etag = entry.etag[:-1] + b'-gz"'
            headers.append((b"content-encoding", b"gzip"))
    headers.append((b"etag", etag))
    state = b"miss" if not hit else b"hit" if entry.stale_since is None else b"stale"
    headers.append((b"x-cache", state))
    if any(k == b"if-none-match" and etag in v for k, v in scope["headers"]):
        await send({"type": "http.response.start", "status": 304, "headers": headers})
        await send({"type": "http.response.body", "body": b""})
        return
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": entry.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
