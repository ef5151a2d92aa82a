"""The admins' pages: ``/admin`` lists the ladders and leagues with forms to create a ladder,
open, pause or close one, create a league and start it.  Each form is a CSRF-checked POST
that makes the same query-layer call, with the same schema's checks, as the API's admin
route (``POST /api/ladders``, ``PATCH /api/ladders/{id}``, ``POST /api/leagues``,
``POST /api/leagues/{id}/start``), then comes back to ``/admin``.

Anyone but a signed-in admin gets a 403 page (a visitor is asked to sign in).  A form the
schema refuses is a 400 page naming the field and what is wrong, never echoing the input;
what the query layer refuses (a name taken, a version not active) is its own sentence.
"""

from __future__ import annotations

from typing import Any, TypeVar

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from .. import crud, websession
from ..crud import Paging
from ..deps import ExecutorDep, SessionDep, WebUser, web_user
from ..models import LadderState
from ..schemas import LadderCreate, LeagueCreate
from .account import Form, check_csrf
from .lab import sign_in_first
from .routes import LIST_LIMIT, PageRoute, ident, render

M = TypeVar("M", bound=BaseModel)

router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])

ADMINS_ONLY = "these pages are for the arena's admins"
NAME_RULE = "2 to 60 letters, digits, spaces, '.', '_' or '-' (not starting with a space or '.')"
MAX_ENTRANTS = 1000  # version labels read from the league form (LeagueCreate's own bound)


def _admin(me: websession.SignedIn | None) -> None:
    if me is None or not me.user.is_admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, ADMINS_ONLY)


def _back(anchor: str) -> Response:
    response = RedirectResponse(f"/admin#{anchor}", status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response


def _parsed(model: type[M], data: dict[str, Any]) -> M:
    """``model`` from a form's fields, or a 400 page: the first field refused and why (the
    schema's message, without the input)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_input=False, include_url=False)[0]
        where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
        why = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        if first.get("type") == "string_pattern_mismatch":  # not the regular expression
            why = NAME_RULE
        sentence = f"{where}: {why}" if where else why
        raise HTTPException(status.HTTP_400_BAD_REQUEST, sentence[:300]) from exc


def _number(fields: dict[str, str], name: str) -> str | None:
    """A number field as typed (the schema parses it), or None when left blank: the
    schema's default."""
    value = fields.get(name, "").strip()
    return value or None


def _given(fields: dict[str, str], *names: str) -> dict[str, Any]:
    return {n: v for n in names if (v := _number(fields, n)) is not None}


@router.get("/admin", response_class=HTMLResponse)
def admin_page(request: Request, session: SessionDep, me: WebUser) -> Response:
    """Ladders and leagues, with the forms that create and run them."""
    if me is None:
        return sign_in_first(request)
    _admin(me)
    paging = Paging(LIST_LIMIT, 0)
    ladders = crud.ladders.list_ladders(session, paging)
    leagues = crud.leagues.list_leagues(session, paging, admin=True)
    return render(
        request,
        "admin.html",
        {
            "title": "Admin",
            "ladders": ladders,
            "leagues": leagues,
            "states": [s.value for s in LadderState],
        },
    )


@router.post("/admin/ladders", response_class=HTMLResponse)
def create_ladder(request: Request, fields: Form, session: SessionDep, me: WebUser) -> Response:
    """A new open ladder (``POST /api/ladders``)."""
    check_csrf(request, fields, me)
    _admin(me)
    data = {
        "name": fields.get("name", "").strip(),
        "allow_same_owner": fields.get("allow_same_owner") == "on",
        **_given(fields, "players", "decision_time", "time_bank", "cpu_share"),
    }
    ladder = crud.ladders.create_ladder(session, _parsed(LadderCreate, data))
    return _back(f"ladder-{ladder.id}")


@router.post("/admin/ladders/{ladder_id}/state", response_class=HTMLResponse)
def ladder_state(
    request: Request, ladder_id: str, fields: Form, session: SessionDep, me: WebUser
) -> Response:
    """Open, pause or close a ladder (``PATCH /api/ladders/{id}``)."""
    lid = ident(ladder_id, "ladder")
    check_csrf(request, fields, me)
    _admin(me)
    state = fields.get("state", "")
    if state not in LadderState.__members__:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "a ladder is open, paused or closed")
    crud.ladders.set_state(session, lid, LadderState(state))
    return _back(f"ladder-{lid}")


def entrant_ids(session: Session, fields: dict[str, str]) -> list[int]:
    """The league form's entrants: the versions labelled ``agent@number`` in its text (by
    spaces, commas or lines), else the active entries of the ladder it names."""
    labels = fields.get("entrants", "").replace(",", " ").split()[:MAX_ENTRANTS]
    if labels:
        found = crud.agents.version_ids_by_label(session, labels)
        missing = [label for label in labels if label not in found]
        if missing:
            shown = missing[0] if len(missing[0]) <= 60 else missing[0][:60] + "…"
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no version is labelled {shown}")
        return [found[label] for label in labels]
    ladder = fields.get("from_ladder", "")
    if not ladder:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, "list the entrants, or take them from a ladder"
        )
    lid = ident(ladder, "ladder")
    entries = crud.ladders.entries(session, lid, Paging(MAX_ENTRANTS, 0))
    return [e.version_id for e in entries.items]


@router.post("/admin/leagues", response_class=HTMLResponse)
def create_league(request: Request, fields: Form, session: SessionDep, me: WebUser) -> Response:
    """A scheduled league of active versions (``POST /api/leagues``)."""
    check_csrf(request, fields, me)
    _admin(me)
    data = {
        "name": fields.get("name", "").strip(),
        "entrants": entrant_ids(session, fields),
        **_given(fields, "table_size", "rounds", "decision_time", "time_bank"),
    }
    league_id = crud.leagues.create_league(session, _parsed(LeagueCreate, data))
    return _back(f"league-{league_id}")


@router.post("/admin/leagues/{league_id}/start", response_class=HTMLResponse)
def start_league(
    request: Request,
    league_id: str,
    fields: Form,
    session: SessionDep,
    executor: ExecutorDep,
    me: WebUser,
) -> Response:
    """Schedule the league's matches and hand them to the workers
    (``POST /api/leagues/{id}/start``)."""
    lid = ident(league_id, "league")
    check_csrf(request, fields, me)
    _admin(me)
    for match_id in crud.leagues.start_league(session, lid):
        executor.submit_match(match_id)
    return _back(f"league-{lid}")
