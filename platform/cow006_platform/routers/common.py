"""What the routers share: the route class that answers the query layer's refusals as HTTP
errors, the JSON answer, and the documented error answers."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import HTTPException, Request, Response, status
from fastapi.routing import APIRoute
from pydantic import BaseModel

from .. import crud
from ..cache import Fragments
from ..schemas import Message

# OpenAPI documentation of the error answers (all {"detail": sentence}).
Responses = dict[int | str, dict[str, Any]]
ERR_400: Responses = {
    400: {"model": Message, "description": "Malformed request (an unparsable body)."}
}
ERR_401: Responses = {401: {"model": Message, "description": "No valid API token."}}
ERR_403: Responses = {403: {"model": Message, "description": "Not allowed for the caller."}}
ERR_404: Responses = {404: {"model": Message, "description": "No such resource."}}
ERR_409: Responses = {
    409: {"model": Message, "description": "Conflicts with the resource's state."}
}
ERR_429: Responses = {429: {"model": Message, "description": "Rate limit reached."}}

_STATUS: dict[type[crud.Refused], int] = {
    crud.Invalid: status.HTTP_400_BAD_REQUEST,
    crud.Forbidden: status.HTTP_403_FORBIDDEN,
    crud.NotFound: status.HTTP_404_NOT_FOUND,
    crud.Conflict: status.HTTP_409_CONFLICT,
    crud.TooMany: status.HTTP_429_TOO_MANY_REQUESTS,
}


def http_error(refused: crud.Refused) -> HTTPException:
    """The HTTP error of a refusal (with ``Retry-After`` when asking later may succeed)."""
    headers = {"Retry-After": str(refused.retry_after)} if refused.retry_after else None
    return HTTPException(_STATUS[type(refused)], refused.detail, headers=headers)


class ApiRoute(APIRoute):
    """An API route: a refusal of the query layer (``crud.Refused``) is its HTTP error.

    A subclass may answer errors its own way (``answer_error``: the web pages' HTML)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handle = super().get_route_handler()

        async def answer(request: Request) -> Response:
            try:
                return await handle(request)
            except crud.Refused as refused:
                return self.answer_error(request, http_error(refused))
            except HTTPException as error:
                return self.answer_error(request, error)

        return answer

    def answer_error(self, request: Request, error: HTTPException) -> Response:
        raise error  # FastAPI's own answer: {"detail": ...} with its status and headers


def respond(model: BaseModel, status_code: int = status.HTTP_200_OK) -> Response:
    """``model`` as a JSON response, serialized here, in the route's worker thread.

    Routes declare ``response_model`` (for the schema) and return this rather than the model.
    Returned as a model, FastAPI would validate it again in a second trip through the thread
    pool while the request's session still holds its database connection: every request pays
    the extra hop, and under load requests that hold connections wait for threads while the
    threads wait for connections (the pool then deadlocks until its timeout).
    """
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


def page_parts(request: Request) -> Fragments | None:
    """The parts pages are built from (``cache.Fragments``), if the app keeps a page cache."""
    cache = getattr(request.app.state, "page_cache", None)
    return None if cache is None else cache.fragments


def respond_json(body: bytes, status_code: int = status.HTTP_200_OK) -> Response:
    """JSON built by the query layer (from parts), as ``respond`` answers a model."""
    return Response(body, status_code=status_code, media_type="application/json")
