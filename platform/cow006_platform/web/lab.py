"""The author's own pages: "My agents" (``/me``), entering an agent in a ladder from its page
(``POST /agents/{id}/enter``), and the lab's evaluation runs, listed and read
(``crud.evaluations``).

``/evaluations`` lists the signed-in user's runs, ``/evaluations/{id}`` shows one: each
version's mean place, heads per round, win rate and faults, and B - A paired and unpaired
with their 95 % intervals.  A run is its owner's (and the admins'): to anyone else, and to a
visitor who is not signed in, the pages answer as if it did not exist, or ask to sign in.
Starting, promoting and discarding runs go through the API (docs/bot-guide.md).
"""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.responses import HTMLResponse, RedirectResponse

from .. import crud
from ..crud import Paging
from ..deps import SessionDep, WebUser, web_user
from ..schemas import EntryCreate
from .account import Form, check_csrf
from .routes import LIST_LIMIT, PageRoute, ident, render

router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])


def sign_in_first(request: Request, back: str | None = None) -> Response:
    """Off to /login first, back to this page (or to ``back``, a path) after."""
    target = quote(back or request.url.path, safe="/")
    response = RedirectResponse(f"/login?next={target}", status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/me", response_class=HTMLResponse)
def my_page(request: Request, me: WebUser) -> Response:
    """ "My agents": the signed-in user's own page (their agents), else sign in first."""
    if me is None:
        return sign_in_first(request)
    response = RedirectResponse(f"/users/{me.user.id}", status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/agents/{agent_id}/enter", response_class=HTMLResponse)
def enter(
    request: Request, agent_id: str, fields: Form, session: SessionDep, me: WebUser
) -> Response:
    """The agent page's form: enter the agent in a ladder with one of its active versions
    (or switch its entry there to it), as ``POST /api/ladders/{id}/entries`` does."""
    aid = ident(agent_id, "agent")
    check_csrf(request, fields, me)
    if me is None:
        return sign_in_first(request)
    ladder_id = ident(fields.get("ladder_id", ""), "ladder")
    version_id = ident(fields.get("version_id", ""), "version")
    body = EntryCreate(agent_id=aid, version_id=version_id)
    crud.ladders.enter(session, ladder_id, body, me.user)  # refused: an error page says why
    response = RedirectResponse(f"/agents/{aid}#ladders", status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/evaluations", response_class=HTMLResponse)
def evaluations_page(request: Request, session: SessionDep, me: WebUser) -> Response:
    """The signed-in user's evaluation runs, newest first."""
    if me is None:
        return sign_in_first(request)
    runs = crud.evaluations.list_runs(session, me.user, Paging(LIST_LIMIT, 0))
    return render(request, "evaluations.html", {"title": "Evaluation runs", "runs": runs})


@router.get("/evaluations/{run_id}", response_class=HTMLResponse)
def evaluation_page(request: Request, run_id: str, session: SessionDep, me: WebUser) -> Response:
    """One run and its figures so far."""
    rid = ident(run_id, "evaluation run")
    if me is None:
        return sign_in_first(request)
    run = crud.evaluations.get_run(session, rid, me.user)
    return render(request, "evaluation.html", {"title": f"Evaluation run {rid}", "run": run})
