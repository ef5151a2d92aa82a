"""Playing against the bots from the browser: ``/play`` (choose the opponents) and
``/play/{id}`` (the table), as ``/api/plays`` does for a script (``crud.plays``).

Without JavaScript every decision is a form (a button per card of the hand, or per row to
take), posted with the page's CSRF token; the answer redirects back to the table, which
reloads itself every two seconds while the match is not waiting on the player
(``<noscript>`` refresh).  With JavaScript, ``play.js`` polls ``/play/{id}/state`` (a small
JSON answer of this router, read with the session cookie: the API reads only the
``Authorization`` header, and a browser signed in without JavaScript has no token to send)
and reloads the table when the decision asked changes.  The first button of a decision has
``autofocus``: Enter plays it, Tab moves between them.  A finished match links to its
replay (``/matches/{id}``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response, status
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse

from .. import crud
from ..deps import ExecutorDep, SessionDep, SettingsDep, WebUser, web_user
from ..models import MatchKind, MatchStatus
from ..schemas import MAX_PLAYERS, MIN_PLAYERS, PlayCreate, PlayMove
from .account import check_csrf, read_form
from .lab import sign_in_first
from .routes import PageRoute, ident, render

router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])

OPPONENT_FIELD = "op_"  # a checkbox per opponent: op_builtin:NAME, op_<version id>
NEXT_WAIT = 1.5  # seconds a decision's answer waits for the next one before redirecting
PLAY_FIELDS = 400  # the start form: every listed opponent checked, players, the token


async def _start_fields(request: Request) -> dict[str, str]:
    return await read_form(request, PLAY_FIELDS)


async def _move_fields(request: Request) -> dict[str, str]:
    return await read_form(request, 8)


StartForm = Annotated[dict[str, str], Depends(_start_fields)]
MoveForm = Annotated[dict[str, str], Depends(_move_fields)]


def _see(url: str) -> Response:
    response = RedirectResponse(url, status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    return response


def _number(raw: str | None, low: int, high: int) -> int | None:
    """A small number from a form field; None for anything else."""
    if raw is None or not raw.isdigit() or len(raw) > 4:
        return None
    value = int(raw)
    return value if low <= value <= high else None


@router.get("/play", response_class=HTMLResponse)
def start_page(
    request: Request, session: SessionDep, settings: SettingsDep, me: WebUser
) -> Response:
    """Choose the opponents (built-ins, public active versions) and start a match."""
    if me is None:
        return sign_in_first(request)
    builtins, versions = crud.plays.choices(session, settings, me.user)
    current = crud.plays.latest(session, me.user)
    going = current if current is not None and current.status in crud.plays.UNFINISHED else None
    context: dict[str, Any] = {
        "title": "Play against the bots",
        "builtins": builtins,
        "versions": versions,
        "going": going,
        "players": range(MIN_PLAYERS, MAX_PLAYERS + 1),
        "decision_seconds": f"{settings.play_decision_seconds:g}",
    }
    return render(request, "play_start.html", context)


@router.post("/play", response_class=HTMLResponse)
def start(
    request: Request,
    fields: StartForm,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
    me: WebUser,
) -> Response:
    """The start form: the opponents checked, then the table of the new match."""
    check_csrf(request, fields, me)
    if me is None:
        return sign_in_first(request)
    opponents = [k.removeprefix(OPPONENT_FIELD) for k in fields if k.startswith(OPPONENT_FIELD)]
    if not opponents:
        raise crud.Invalid("Choose at least one opponent.")
    if len(opponents) > MAX_PLAYERS - 1:
        raise crud.Invalid(f"Choose at most {MAX_PLAYERS - 1} opponents.")
    players = _number(fields.get("players") or None, MIN_PLAYERS, MAX_PLAYERS)
    if fields.get("players") and players is None:
        raise crud.Invalid(f"A table has {MIN_PLAYERS} to {MAX_PLAYERS} seats.")
    try:
        body = PlayCreate(opponents=opponents, players=players)
    except ValueError:  # a hand-made field name: the form offers only real opponents
        raise crud.Invalid("That is not an opponent this page offers.") from None
    play_id = crud.plays.create(session, settings, body, me.user)
    play = crud.plays.get(session, play_id, me.user)
    executor.submit_match(play.match_id, kind=MatchKind.play)
    return _see(f"/play/{play_id}")


@router.get("/play/{play_id}", response_class=HTMLResponse)
def table_page(request: Request, play_id: str, session: SessionDep, me: WebUser) -> Response:
    """The table: the decision asked (a button per card or row), else what the match does."""
    pid = ident(play_id, "match against the bots")
    if me is None:
        return sign_in_first(request)
    play = crud.plays.get(session, pid, me.user)
    done = play.status in (MatchStatus.finished, MatchStatus.failed)
    context = {"title": "Play against the bots", "play": play, "done": done}
    return render(request, "play.html", context)


@router.get("/play/{play_id}/state")
def state(play_id: str, session: SessionDep, me: WebUser) -> Response:
    """What ``play.js`` polls: the decision asked and the match's status (the owner's only)."""
    pid = ident(play_id, "match against the bots")
    if me is None:
        return JSONResponse({"detail": "Sign in first."}, status.HTTP_401_UNAUTHORIZED)
    play = crud.plays.get(session, pid, me.user)
    body = {"decision": play.decision, "asked": play.asked, "status": play.status.value}
    return JSONResponse(body, headers={"Cache-Control": "no-store"})


@router.post("/play/{play_id}/move", response_class=HTMLResponse)
def move(
    request: Request, play_id: str, fields: MoveForm, session: SessionDep, me: WebUser
) -> Response:
    """A decision's form: the card (or row) of the button pressed, then the table again.

    A decision that is over (the deadline passed, another tab answered) is no error here:
    the table shows where the match is now."""
    pid = ident(play_id, "match against the bots")
    check_csrf(request, fields, me)
    if me is None:
        return sign_in_first(request)
    card = _number(fields.get("card"), 1, 104)
    row = _number(fields.get("row"), 1, 4)
    decision = _number(fields.get("decision"), 1, 9999)
    if (card is None) == (row is None):
        raise crud.Invalid("Choose one card of your hand, or one row.")
    answer = PlayMove(card=card, row=None if row is None else row - 1, decision=decision)
    try:
        answered = crud.plays.answer(session, pid, me.user, answer)
    except crud.Conflict:
        return _see(f"/play/{pid}")
    # The bots answer in milliseconds: wait a moment for the match's next question, so the
    # table the browser is sent to shows it (without JavaScript it would otherwise wait for
    # its refresh).  Bounded, and only after an answer was taken: one wait per decision.
    crud.plays.wait_for_next(session, pid, answered.decision, NEXT_WAIT)
    return _see(f"/play/{pid}")
