"""Rows: the columns that name a version, pages of rows (``?limit=&offset=``, the total, a
``Page`` validated in one call), a row's fields, a row by name or id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel
from sqlalchemy import Row, Select, func, select
from sqlalchemy.orm import DeclarativeBase, Session

from ..models import Agent, AgentVersion, User
from ..schemas import Page

M = TypeVar("M", bound=BaseModel)
# A query of any columns (SQLAlchemy types a select by its columns).
Query = Select[*tuple[Any, ...]]

# A version's agent and its owner, and how answers name a version (its label and those),
# selected from a query joined ``with_version``.
AGENT_FIELDS = (Agent.name.label("agent"), Agent.owner_id, User.name.label("owner"))
VERSION_FIELDS = (AgentVersion.label, *AGENT_FIELDS)


def with_version(query: Query, version_id: Any) -> Query:
    """``query`` joined with the version ``version_id`` names, its agent and their owner."""
    return (
        query.join(AgentVersion, AgentVersion.id == version_id)
        .join(Agent, Agent.id == AgentVersion.agent_id)
        .join(User, User.id == Agent.owner_id)
    )


@dataclass
class Paging:
    """One page of a list: at most ``limit`` items from ``offset`` on."""

    limit: int
    offset: int


def count(session: Session, query: Query) -> int:
    """The number of rows ``query`` would return (without its ordering)."""
    sub = query.order_by(None).subquery()
    return session.scalar(select(func.count()).select_from(sub)) or 0


def page(
    item: type[M],
    rows: Sequence[Any],
    total: int,
    paging: Paging,
    context: dict[str, Any] | None = None,
) -> Page[M]:
    """A ``Page[item]`` of ``rows`` (rows or objects read by attribute, or dicts).

    The whole page is validated in one call of pydantic's core: a page of fifty models built
    one by one in Python costs more than the queries that fill it.  ``context`` goes to the
    schemas' validators (who may see what: ``schemas.OwnerOnly``, the seeds).
    """
    # A generic model parametrized at run time: mypy reads ``Page[item]`` as a type
    # expression, where a variable is not allowed.
    model: type[Page[M]] = Page[item]  # type: ignore[valid-type]
    # Rows of columns as dicts: pydantic reads a dict faster than a Row's attributes.
    items = [r._asdict() for r in rows] if rows and isinstance(rows[0], Row) else rows
    data = {"items": items, "total": total, "limit": paging.limit, "offset": paging.offset}
    return model.model_validate(data, from_attributes=True, context=context)


def page_json(items: Sequence[str], total: int, paging: Paging) -> bytes:
    """A ``Page``'s JSON from its items' JSON: the bytes ``Page.model_dump_json`` writes."""
    return (
        f'{{"items":[{",".join(items)}],"total":{total},'
        f'"limit":{paging.limit},"offset":{paging.offset}}}'
    ).encode()


def paged(
    session: Session,
    item: type[M],
    query: Query,
    paging: Paging,
    context: dict[str, Any] | None = None,
) -> Page[M]:
    """One page of ``query``'s rows (its entities if it selects one) as ``Page[item]``."""
    total = count(session, query)
    result = session.execute(query.limit(paging.limit).offset(paging.offset))
    rows = result.scalars().all() if len(query.column_descriptions) == 1 else result.all()
    return page(item, rows, total, paging, context)


def counted(session: Session, query: Query, paging: Paging) -> tuple[Sequence[Row[Any]], int]:
    """One page of a column query's rows, and its total in the same round trip.

    The total rides along as a window count (``count(*) OVER ()``, computed before LIMIT);
    only a page past the end needs a separate count.  For queries whose full result is small
    (a ladder's entries, one agent's history), not for scans of a whole big table.
    """
    total_col = func.count().over().label("_total")
    rows = session.execute(
        query.add_columns(total_col).limit(paging.limit).offset(paging.offset)
    ).all()
    total = int(rows[0]._total) if rows else 0 if paging.offset == 0 else count(session, query)
    return rows, total


def paged_counted(session: Session, item: type[M], query: Query, paging: Paging) -> Page[M]:
    """``counted`` as ``Page[item]``."""
    return page(item, *counted(session, query, paging), paging)


def fields(row: DeclarativeBase) -> dict[str, Any]:
    """A row's column values by name: for a model that shows a table's columns and a field
    or two more (``{**fields(ladder), "entries": n}``); the model picks what it shows."""
    return {c.key: getattr(row, c.key) for c in row.__mapper__.column_attrs}


def by_name_or_id(session: Session, model: Any, ref: str) -> Any | None:
    """The ``model`` row named ``ref``, or else with the id ``ref`` (the admin command's way
    of naming users, ladders and agents); None if there is none."""
    found = session.scalar(select(model).where(model.name == ref))
    if found is None and ref.isdigit():
        found = session.get(model, int(ref))
    return found
