"""What a request may be refused with (routes answer each as an HTTP error, pages as an
error page: ``routers.common.http_error``), and the checks that refuse."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from ..models import Agent, User

if TYPE_CHECKING:
    from ..workclasses import Refusal

T = TypeVar("T")


class Refused(Exception):
    """A request the arena refuses; ``detail`` says why in one sentence, for the caller."""

    def __init__(self, detail: str | dict[str, Any], *, retry_after: int | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.retry_after = retry_after  # seconds, when asking again later may succeed


class Invalid(Refused):
    """The request cannot be carried out as given (an unusable upload, two equal agents)."""


class Forbidden(Refused):
    """The caller may not do this (someone else's agent, a refused challenge)."""


class NotFound(Refused):
    """A named row does not exist."""


class Conflict(Refused):
    """The rows' state does not allow it (a taken name, a closed ladder, a duplicate)."""


class TooMany(Refused):
    """A cap was reached (``retry_after`` says when to ask again)."""


def get(session: Session, model: type[T], ident: int, what: str) -> T:
    """The ``model`` row ``ident``; NotFound ("no such WHAT") if there is none."""
    row = session.get(model, ident)
    if row is None:
        raise NotFound(f"no such {what}")
    return row


def require_owner(agent: Agent, user: User, *, admin_too: bool = True) -> None:
    """Forbidden unless ``user`` owns ``agent`` (or, with ``admin_too``, is an admin)."""
    if agent.owner_id == user.id or (admin_too and user.is_admin):
        return
    raise Forbidden("only the agent's owner may do this")


def require_free_name(session: Session, model: Any, name: str, what: str) -> None:
    """Conflict if a ``model`` row is named ``name`` already ("the WHAT name 'x' is taken")."""
    if session.scalar(select(model.id).where(model.name == name)) is not None:
        raise Conflict(f"the {what} name {name!r} is taken")


def commit(session: Session, conflict: str) -> None:
    """Commit; if a unique index refuses it (a concurrent twin got there first), roll back and
    refuse with ``conflict``."""
    try:
        session.commit()
    except IntegrityError as exc:
        session.rollback()
        raise Conflict(conflict) from exc


def refusal(refused: Refusal) -> Refused:
    """The error for a cap of ``workclasses`` (403: an owner who refuses challenges)."""
    kind = Forbidden if refused.status == 403 else TooMany
    return kind(refused.message, retry_after=refused.retry_after)
