"""Challenges from an agent's page: its signed-in owner names up to ``OPPONENTS`` opponents
(agents, by name) and ``POST /agents/{id}/challenge`` asks for an unrated match of their
newest active versions, with the same query-layer call, caps and refusals as
``POST /api/challenges`` (``crud.matches.create_challenge``), then shows the queued match.

The names are the user's text: looked up exactly as stored (never as ids), bounded; an
unknown one, a name given twice, a cap reached (a 429 with ``Retry-After``) each answer an
error page of one sentence.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError

from .. import crud, throttle
from ..deps import ExecutorDep, SessionDep, SettingsDep, WebUser, web_user
from ..schemas import ChallengeCreate
from .account import Form, check_csrf
from .lab import sign_in_first
from .routes import CHALLENGE_FIELDS, PageRoute, ident

router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])

OPPONENTS = CHALLENGE_FIELDS  # opponent fields on the form (the API seats up to 10)
SHOWN_NAME = 60  # characters of an unknown name repeated in its error


def opponent_names(fields: dict[str, str]) -> list[str]:
    """The names typed in the form's opponent fields, in order, blanks left out."""
    names = (fields.get(f"opponent{i}", "").strip() for i in range(1, OPPONENTS + 1))
    return [name for name in names if name]


def _shown(name: str) -> str:
    """A name as an error repeats it: bounded, control characters dropped (Jinja escapes
    the rest)."""
    printable = "".join(c for c in name if c.isprintable())
    return printable if len(printable) <= SHOWN_NAME else printable[:SHOWN_NAME] + "…"


@router.post("/agents/{agent_id}/challenge", response_class=HTMLResponse)
def challenge(
    request: Request,
    agent_id: str,
    fields: Form,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
    me: WebUser,
) -> Response:
    """The agent page's challenge form: the agent and the named opponents, their newest
    active versions, in an unrated match; then that match's page (queued)."""
    aid = ident(agent_id, "agent")
    check_csrf(request, fields, me)
    if me is None:
        return sign_in_first(request, f"/agents/{aid}")
    agent = crud.agents.get_agent(session, aid)
    if agent.owner_id != me.user.id:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "only its owner challenges with an agent")
    names = opponent_names(fields)
    if not names:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "name at least one opponent")
    found = crud.agents.ids_by_name(session, names)
    for name in names:
        if name not in found:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"no agent is named {_shown(name)}")
    try:
        body = ChallengeCreate(agent_ids=[aid, *(found[name] for name in names)])
    except ValidationError as exc:
        raise HTTPException(
            status.HTTP_400_BAD_REQUEST, "an agent is named twice (or is this agent itself)"
        ) from exc
    address = throttle.client_address(request)
    match_id, admitted = crud.matches.create_challenge(session, settings, body, me.user, address)
    for admitted_id, kind in crud.matches.kinds(session, admitted).items():
        executor.submit_match(admitted_id, kind=kind)
    response = RedirectResponse(f"/matches/{match_id}", status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response
