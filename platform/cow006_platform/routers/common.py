"""Helpers the routers share: lookups that 404, ownership checks that 403, page building."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from fastapi import HTTPException, Response, status
from pydantic import BaseModel, TypeAdapter
from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from ..deps import Paging
from ..models import Agent, User
from ..schemas import Message, Page

M = TypeVar("M")

# OpenAPI documentation of the error answers (all {"detail": sentence}).
ERR_400 = {400: {"model": Message, "description": "Malformed request (an unparsable body)."}}
ERR_401 = {401: {"model": Message, "description": "No valid API token."}}
ERR_403 = {403: {"model": Message, "description": "Not allowed for the caller."}}
ERR_404 = {404: {"model": Message, "description": "No such resource."}}
ERR_409 = {409: {"model": Message, "description": "Conflicts with the resource's state."}}
ERR_429 = {429: {"model": Message, "description": "Rate limit reached."}}


def respond(model: BaseModel, status_code: int = status.HTTP_200_OK) -> Response:
    """``model`` as a JSON response, serialized here, in the route's worker thread.

    Routes declare ``response_model`` (for the schema) and return this rather than the model.
    Returned as a model, FastAPI would validate it again in a second trip through the thread
    pool while the request's session still holds its database connection: every request pays
    the extra hop, and under load requests that hold connections wait for threads while the
    threads wait for connections (the pool then deadlocks until its timeout).
    """
    return Response(model.model_dump_json(), status_code=status_code, media_type="application/json")


_page_adapters: dict[type[BaseModel], TypeAdapter[Any]] = {}


def respond_page(
    item: type[BaseModel], items: Sequence[Any], total: int, paging: Paging
) -> Response:
    """A ``Page[item]`` of ``items`` (dicts, or rows read by attribute) as a JSON response.

    The whole page is validated and serialized in one call of pydantic's core: a page of
    fifty models built one by one in Python costs more than the queries that fill it.
    """
    adapter = _page_adapters.get(item)
    if adapter is None:
        adapter = _page_adapters[item] = TypeAdapter(Page[item])  # type: ignore[valid-type]
    page = {"items": items, "total": total, "limit": paging.limit, "offset": paging.offset}
    body = adapter.dump_json(adapter.validate_python(page, from_attributes=True))
    return Response(body, media_type="application/json")


def get_or_404(session: Session, model: type[M], ident: int, what: str) -> M:
    row = session.get(model, ident)
    if row is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no such {what}")
    return row


def require_owner(agent: Agent, user: User, *, admin_too: bool = True) -> None:
    """403 unless ``user`` owns ``agent`` (or, with ``admin_too``, is an admin)."""
    if agent.owner_id == user.id or (admin_too and user.is_admin):
        return
    raise HTTPException(status.HTTP_403_FORBIDDEN, "only the agent's owner may do this")


def conflict(detail: str) -> HTTPException:
    return HTTPException(status.HTTP_409_CONFLICT, detail)


def count(session: Session, query: Select[Any]) -> int:
    """The number of rows ``query`` would return (without its ordering)."""
    sub = query.order_by(None).subquery()
    return session.scalar(select(func.count()).select_from(sub)) or 0


def page_rows(session: Session, query: Select[Any], paging: Paging) -> tuple[Sequence[Any], int]:
    """One page of ``query``'s rows (scalars if it selects one entity) and the total."""
    total = count(session, query)
    rows = session.execute(query.limit(paging.limit).offset(paging.offset))
    if len(query.column_descriptions) == 1:
        return rows.scalars().all(), total
    return rows.all(), total


def page_counted(session: Session, query: Select[Any], paging: Paging) -> tuple[Sequence[Any], int]:
    """One page of a column query and the total, in one round trip where it can.

    The total rides along as a window count (``count(*) OVER ()``, computed before LIMIT);
    only a page past the end needs a separate count.  For queries whose full result is small
    (a ladder's entries, one agent's history), not for scans of a whole big table.
    """
    total_col = func.count().over().label("_total")
    rows = session.execute(
        query.add_columns(total_col).limit(paging.limit).offset(paging.offset)
    ).all()
    if rows:
        return rows, int(rows[0]._total)
    return rows, 0 if paging.offset == 0 else count(session, query)
