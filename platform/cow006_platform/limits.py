"""Request limits checked before any work: body sizes, anonymous uploads, query parameters.

A request body is hostile bytes that cost memory, disk and time before anything looks at
them, so they are bounded where they enter (``RequestLimits``, an ASGI middleware in front of
the routes):

* every route has a body cap: the upload route ``settings.max_upload_bytes`` plus room for the
  multipart framing, every other route ``settings.max_json_bytes`` (64 KiB: the API's JSON
  bodies are a few hundred bytes);
* a ``Content-Length`` over the cap is a 413 at once, before a byte of the body is read; a
  body sent without one (chunked) is counted as it arrives and cut off with a 413 as soon as
  it passes the cap, so neither the process's memory nor a temporary file ever holds more;
* an upload without an ``Authorization`` header is a 401 before its body is read.

The upload route does not declare its file as a FastAPI parameter (FastAPI would read and
spool the whole multipart body before checking the token): its ``UploadDep`` dependency reads
the body (``read_upload``) once the caller's token was checked, on the event loop (a slow
sender holds neither a worker thread nor a database connection), so a request refused for a
bad token has none of its body read.  A body must arrive in full within
``settings.body_seconds`` (a 408 otherwise).

The refusals close the connection (``Connection: close``): the server then drops the rest of
the body instead of reading it to the end to keep the connection.

``strict_query`` (a dependency of every ``/api`` route) refuses query parameters the route
does not read and parameters given twice: FastAPI silently takes the last of repeated ones,
which let a cached page be stored under a key that named another page (docs/operations.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from fastapi import Depends, HTTPException, Request, status
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.routing import APIRoute
from starlette.datastructures import UploadFile
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .deps import current_user
from .models import User
from .settings import Settings

# The multipart framing around an uploaded file: boundaries, part headers, a long file name.
MULTIPART_ROOM = 16 * 1024
UPLOAD_ROUTE = re.compile(r"/api/agents/[^/]+/versions")
_CLOSE = {"Connection": "close"}


def is_upload(method: str, path: str) -> bool:
    return method == "POST" and UPLOAD_ROUTE.fullmatch(path) is not None


def body_cap(settings: Settings, method: str, path: str) -> int:
    """The most bytes of body this request may send."""
    if is_upload(method, path):
        return settings.max_upload_bytes + MULTIPART_ROOM
    return settings.max_json_bytes


def _too_large(cap: int) -> str:
    return f"the request body is larger than this route accepts ({cap} bytes)"


def upload_too_large(max_bytes: int) -> str:
    """The one sentence of every refusal of an oversized upload (the body's cap, a declared
    Content-Length, the file itself): the cap of the file, in MiB and in bytes."""
    return f"an upload is at most {max_bytes / (1 << 20):g} MiB ({max_bytes} bytes)"


def too_large(settings: Settings, method: str, path: str) -> str:
    """What a 413 says for this request: an upload names the file's cap, not the framing's."""
    if is_upload(method, path):
        return upload_too_large(settings.max_upload_bytes)
    return _too_large(body_cap(settings, method, path))


class BodyTooLarge(HTTPException):
    """A body that passed its cap while it was being read (rendered as a 413 by FastAPI)."""

    def __init__(self, detail: str) -> None:
        super().__init__(status.HTTP_413_CONTENT_TOO_LARGE, detail, headers=_CLOSE)


async def _refuse(send: Send, code: int, detail: str, headers: dict[str, str]) -> None:
    body = ('{"detail":"' + detail.replace('"', "'") + '"}').encode()
    raw = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *((k.lower().encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": code, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class RequestLimits:
    """ASGI middleware: body caps per route and anonymous uploads, before the app runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        settings: Settings = scope["app"].state.settings
        method, path = scope["method"], scope["path"]
        cap = body_cap(settings, method, path)
        declared = None
        anonymous = True
        for name, value in scope["headers"]:
            if name == b"content-length":
                declared = value
            elif name == b"authorization":
                anonymous = False
        if declared is not None:
            if not declared.isdigit() or len(declared) > 18:
                await _refuse(send, 400, "the Content-Length header is not a number", {})
                return
            if int(declared) > cap:
                await _refuse(send, 413, too_large(settings, method, path), {})
                return
        if anonymous and is_upload(method, path):
            await _refuse(
                send,
                401,
                "this needs an API token (Authorization: Bearer TOKEN)",
                {"WWW-Authenticate": "Bearer"},
            )
            return
        # The refusal's sentence is made only for a body that passes its cap (every request
        # comes through here, and almost none does).
        refusal = functools.partial(too_large, settings, method, path)
        await self.app(scope, _counted(receive, cap, settings.body_seconds, refusal), send)


def _counted(receive: Receive, cap: int, seconds: float, refusal: Callable[[], str]) -> Receive:
    """``receive``, raising BodyTooLarge (saying ``refusal()``) as soon as the body passes
    ``cap`` bytes, and a 408 if the body has not arrived in full ``seconds`` after it was first
    asked for."""
    seen = 0
    deadline: float | None = None
    done = False

    async def counted() -> Message:
        nonlocal seen, deadline, done
        if done:  # after the body: waits for a disconnect, as long as the answer takes
            return await receive()
        now = anyio.current_time()
        deadline = now + seconds if deadline is None else deadline
        try:
            with anyio.fail_after(max(0.0, deadline - now)):
                message = await receive()
        except TimeoutError:
            raise HTTPException(
                status.HTTP_408_REQUEST_TIMEOUT,
                f"the request body did not arrive within {seconds:g} seconds",
                headers=_CLOSE,
            ) from None
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > cap:
                raise BodyTooLarge(refusal())
            done = not message.get("more_body", False)
        else:
            done = True
        return message

    return counted


async def read_upload(request: Request, max_bytes: int) -> tuple[str, bytes]:
    """The uploaded file's name and bytes from the request's multipart body (field ``file``).

    Read here, after the route's checks, not by FastAPI before them (see the module).  The
    body is already capped by ``RequestLimits``; a file over ``max_bytes`` is a 413.
    """
    form = await request.form(max_files=1, max_fields=8, max_part_size=64 * 1024)
    try:
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            detail = [
                {
                    "type": "missing",
                    "loc": ["body", "file"],
                    "msg": "Field required: the bot as a file field named 'file'",
                    "input": None,
                }
            ]
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail)
        # One byte past the cap: an oversized file is refused without keeping it all.
        data = await upload.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, upload_too_large(max_bytes))
        return upload.filename or "", data
    finally:
        await form.close()


@dataclass
class Upload:
    """The file of an upload request: its name as sent, and its bytes."""

    filename: str
    data: bytes


async def uploaded_file(request: Request, _user: Annotated[User, Depends(current_user)]) -> Upload:
    """The request's uploaded file, read after its token was checked (see the module)."""
    settings: Settings = request.app.state.settings
    filename, data = await read_upload(request, settings.max_upload_bytes)
    return Upload(filename, data)


UploadDep = Annotated[Upload, Depends(uploaded_file)]


# The multipart body of the upload route, for the OpenAPI document (the route reads it
# itself: see the module).
UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "A bot: one .py file, or a .zip with bot.py at "
                            "its root.",
                        }
                    },
                }
            }
        },
    }
}


_known: dict[int, frozenset[str]] = {}


def _dependant_queries(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params}
    for sub in dependant.dependencies:
        names |= _dependant_queries(sub)
    return names


def _query_names(route: APIRoute) -> frozenset[str]:
    """The query parameters a route reads (its own and its dependencies')."""
    names = _known.get(id(route))
    if names is None:
        names = _known[id(route)] = frozenset(_dependant_queries(route.dependant))
    return names


def query_problem(pairs: list[tuple[str, str]], known: frozenset[str]) -> dict[str, Any] | None:
    """What is wrong with a query's parameters (a validation error whose ``msg`` is one
    sentence), or None."""
    seen: set[str] = set()
    for name, value in pairs:
        if name not in known:
            reads = ", ".join(sorted(known)) or "none"
            msg = f"unknown query parameter {name[:40]!r} (this route reads: {reads})"
            return {"type": "extra_forbidden", "loc": ["query", name[:40]], "msg": msg}
        if name in seen:
            msg = f"the query parameter {name!r} is given more than once"
            return {"type": "repeated", "loc": ["query", name], "msg": msg, "input": value[:40]}
        seen.add(name)
    return None


async def strict_query(request: Request) -> None:
    """422 for a query parameter the route does not read, or one given twice (shaped like
    FastAPI's own validation errors: the schema documents those for 422)."""
    route = request.scope.get("route")
    if not isinstance(route, APIRoute) or not request.scope.get("query_string"):
        return
    problem = query_problem(request.query_params.multi_items(), _query_names(route))
    if problem is not None:
        raise RequestValidationError([problem])
