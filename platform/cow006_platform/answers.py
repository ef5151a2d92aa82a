"""How the app answers at the HTTP level: HEAD like GET, gzip, and errors as pages or JSON.

* ``HeadAsGet`` (ASGI middleware, outermost): a HEAD request is routed, cached and answered as
  the GET it stands for, and its body dropped: every page and API GET route answers HEAD
  with the GET's status and headers (``Content-Length`` included), never a 405.
* gzip: text answers over ``GZIP_MIN_BYTES`` are compressed when the client accepts it
  (``GZip``: Starlette's middleware, reading ``Accept-Encoding`` properly; the page cache
  keeps a compressed copy of each entry it serves compressed, so a hit is not compressed
  again: ``cache._middleware``).
* errors: under ``/api`` (and the machine endpoints) an error is JSON ``{"detail": ...}`` as
  it always was; anywhere else on the site it is an HTML page (``error.html``) with one
  sentence and a link home (``is_api``).
"""

from __future__ import annotations

import re

from starlette.middleware.gzip import GZipMiddleware, GZipResponder, IdentityResponder
from starlette.types import ASGIApp, Message, Receive, Scope, Send

GZIP_MIN_BYTES = 1024  # smaller answers gain little and cost a compressor each
GZIP_LEVEL = 6  # zlib's default: level 9 costs about twice the CPU for a few % less

# Answered as JSON whatever happens: the API, its schema, the machines' endpoints, and the
# static files (a script or style that is missing is nobody's page).
_JSON_PREFIXES = ("/api/", "/static/")
_JSON_PATHS = frozenset({"/api", "/openapi.json", "/healthz", "/readyz", "/metrics"})


def is_api(path: str) -> bool:
    """Whether the errors of ``path`` are JSON (else an HTML page of the site)."""
    return path in _JSON_PATHS or path.startswith(_JSON_PREFIXES)


# What an error page says for the statuses that carry no sentence of the route's own.
PAGE_ERRORS = {
    400: "this request could not be read",
    403: "this is not allowed",
    404: "there is no such page here",
    405: "this address does not take that kind of request",
    422: "this address has a value that this page cannot read",
    500: "something went wrong on the server: it has been logged, try again later",
}
# Starlette's own details ("Not Found", "Method Not Allowed"): replaced by the sentences above.
_GENERIC = re.compile(r"^[A-Z][a-z]+( [A-Z][a-z]+)*$")


def page_sentence(status: int, detail: object) -> str:
    """The one sentence of an error page: the route's detail when it wrote one (``"no such
    agent"``), else what ``PAGE_ERRORS`` says for the status."""
    if isinstance(detail, str) and detail and not _GENERIC.fullmatch(detail):
        return detail
    return PAGE_ERRORS.get(status, "this request could not be answered")


def accepts_gzip(scope: Scope) -> bool:
    """Whether the request's ``Accept-Encoding`` takes gzip (``gzip;q=0`` refuses it)."""
    for name, value in scope["headers"]:
        if name != b"accept-encoding":
            continue
        for part in value.split(b","):
            coding, _, params = part.strip().partition(b";")
            if coding.strip().lower() in (b"gzip", b"x-gzip", b"*"):
                q = params.strip().lower()
                if q.startswith(b"q="):
                    try:
                        if float(q[2:]) <= 0:
                            continue
                    except ValueError:
                        continue
                return True
    return False


class HeadAsGet:
    """ASGI middleware: HEAD answered as GET without the body (see the module)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        scope = {**scope, "method": "GET"}

        async def headless(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # the GET's body, chunk by chunk: none of it is sent
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app(scope, receive, headless)


class GZip(GZipMiddleware):
    """Starlette's gzip middleware, which takes any ``Accept-Encoding`` containing "gzip"
    for a yes (``gzip;q=0`` too): here the header is read as HTTP says (``accepts_gzip``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        responder: ASGIApp
        if accepts_gzip(scope):
            responder = GZipResponder(
                self.app,
                self.minimum_size,
                compresslevel=self.compresslevel,
                thread_minimum_size=self.thread_minimum_size,
                exclude_content_types=self.exclude_content_types,
            )
        else:
            responder = IdentityResponder(
                self.app, self.minimum_size, exclude_content_types=self.exclude_content_types
            )
        await responder(scope, receive, send)
