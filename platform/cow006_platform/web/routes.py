"""The web pages: server-rendered HTML (Jinja2) with small vanilla JavaScript on top.

Every page works without JavaScript for what it shows (leaderboards, versions, plots,
schedules, standings, a match's turns as text), and signing in or registering works without it
too: plain POST forms (``/login``, ``/register``, ``/logout``) with a CSRF field, and a session
cookie the pages read the signed-in user from (``websession``, ``deps.web_user``).  JavaScript
adds what needs the browser: refreshing the leaderboard from the JSON API, the owner's private
views (the API token kept in ``localStorage`` and sent as a Bearer token: the API never reads
the cookie), the replay viewer, and uploading.  Pages read their data from the query layer
(``crud``) the API's routes answer from, plus a few page-only rows there (an agent's ladders,
rating history and rivals).

Pages: ``/``, ``/ladders/{id}``, ``/agents/{id}``, ``/leagues/{id}``, ``/matches/{id}``,
``/matches`` (``?agent_id=N``: one agent's results, centred on it), ``/users/{id}``,
``/upload``, ``/login``, ``/guide``; static files under ``/static/``.  See docs/web.md.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any

import jinja2
from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy.orm import Session

from cow006.cards import HEADS, N_ROWS

from .. import crud, websession
from .. import leagues as league_service
from ..crud import Paging
from ..deps import SessionDep, WebUser, web_user
from ..models import MatchStatus
from ..results import read_log
from ..routers.common import ApiRoute
from ..schemas import MAX_ID, MatchOut, Page
from . import guide, plots
from .replay import replay_of

HERE = Path(__file__).parent
STATIC = HERE / "static"
_STATIC_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(css|js|svg)$")
LIST_LIMIT = 200  # ladders, leagues, leaderboard rows, versions on one page
SCHEDULE_LIMIT = 1000  # league matches on the league page
RECENT_MATCHES = 15
QUEUE_IDS = 5  # queued (and running) matches named in an agent's one-line summary
MATCH_LIST = 50  # matches on /matches
MAX_PLOT_POINTS = 1000  # the latest rated matches plotted per ladder
HEAD_TO_HEAD_ROWS = 10
GUIDE_URL = "/guide"
STARTER_URL = "/starter/python.zip"  # the starter kit (``kit``)
CHALLENGE_FIELDS = 3  # opponents named on an agent page's challenge form (web.challenge)
CHALLENGE_SUGGESTIONS = 200  # agent names its datalist suggests
REFRESH_SECONDS = 5  # how often live pages poll (``?refresh=N`` overrides it, 1..60)

# Scripts and styles come from /static only; a replay's steps are embedded as a JSON data block
# (not executed).  Inline SVG uses presentation attributes, so no inline styles are needed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

_NOSNIFF = {"X-Content-Type-Options": "nosniff"}
# Static files answer a plain 404 (JSON), not an error page: the pages' router includes them.
files = APIRouter(include_in_schema=False)


# --- templates ---------------------------------------------------------------------------


@functools.cache
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


def static_url(name: str) -> str:
    """The URL of a file under ``static/`` (``docs/NAME`` for the API viewers'): a short hash
    of its content in the query changes it whenever the file does."""
    return f"/static/{name}?v={_digest(STATIC / name)}"


def heads(card: int) -> int:
    """Bull heads on a card (55: 7, multiples of 11: 5, of 10: 3, of 5: 2, else 1)."""
    return HEADS[card]


def when(value: str | datetime | None) -> str:
    """A timestamp as ``YYYY-MM-DD HH:MM UTC`` (the API's are RFC 3339 strings)."""
    if value is None:
        return "–"
    moment = datetime.fromisoformat(value) if isinstance(value, str) else value
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def signed(value: float | None, digits: int = 2) -> str:
    """A change with its sign (a true minus sign), or a dash for none."""
    if value is None:
        return "–"
    text = f"{abs(value):.{digits}f}"
    if text == f"{0:.{digits}f}":
        return "±" + text
    return ("+" if value > 0 else "−") + text


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def sentence(text: str) -> str:
    """A sentence's first letter made upper case, the rest left alone (Jinja's
    ``capitalize`` lowers it: a user named "Alice" would become "alice")."""
    return text[:1].upper() + text[1:]


def queue_note(seconds: int) -> str:
    """About how long a wait is: "about 40 s", "about 3 min"."""
    return f"about {seconds} s" if seconds < 120 else f"about {round(seconds / 60)} min"


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals["static_url"] = static_url
    env.globals["N_ROWS"] = N_ROWS
    env.globals["guide_url"] = GUIDE_URL
    env.globals["starter_url"] = STARTER_URL
    env.filters.update(
        heads=heads,
        when=when,
        number=number,
        percent=percent,
        sentence=sentence,
        signed=signed,
        ordinal=ordinal,
        wait=queue_note,
    )
    return env


templates = Jinja2Templates(env=_environment())


@functools.cache
def page_script(template: str) -> str | None:
    """A page's own script: ``static/<page>.js`` for ``<page>.html``, when there is one."""
    script = Path(template).with_suffix(".js").name
    return script if (STATIC / script).is_file() else None


def render(
    request: Request, name: str, context: dict[str, Any], status_code: int = status.HTTP_200_OK
) -> HTMLResponse:
    """A page: ``me`` (the signed-in user, or None) and ``csrf`` (the token of its forms) are
    in every template's context.  A page with either is personal: never stored by anyone."""
    signed_in: websession.SignedIn | None = getattr(request.state, "signed_in", None)
    csrf = websession.csrf_of(signed_in.secret) if signed_in is not None else None
    fresh_csrf = None
    if context.pop("forms", False) and csrf is None:
        csrf, fresh_csrf = _anonymous_csrf(request)
    context = {
        "script": page_script(name),
        "me": signed_in.user if signed_in is not None else None,
        "csrf": csrf,
        "registration": request.app.state.settings.registration,
        # The upload caps, as the API enforces them (the upload page states and checks them).
        "max_upload_bytes": request.app.state.settings.max_upload_bytes,
        "max_unpacked_bytes": request.app.state.settings.max_unpacked_bytes,
        **context,
    }
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    response.headers["Content-Security-Policy"] = CSP
    response.headers.update(_NOSNIFF)
    response.headers["Referrer-Policy"] = "same-origin"
    if csrf is not None:
        response.headers["Cache-Control"] = "no-store"
    if fresh_csrf is not None:
        set_cookie(request, response, websession.CSRF_COOKIE, fresh_csrf, None)
    return response


def _anonymous_csrf(request: Request) -> tuple[str, str | None]:
    """The double-submit token of a browser not signed in: its ``cow006_csrf`` cookie, or a
    new one (returned second too: the answer must set it)."""
    value = request.cookies.get(websession.CSRF_COOKIE)
    if websession.well_formed(value):
        return str(value), None
    fresh = websession.new_secret()
    return fresh, fresh


def set_cookie(
    request: Request, response: Response, name: str, value: str, max_age: int | None
) -> None:
    """An HttpOnly, SameSite=Lax cookie for the whole site, Secure over https."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


ERROR_TITLES = {
    400: "Bad request",
    401: "Not signed in",
    403: "Not allowed",
    404: "Not found",
    405: "Not allowed here",
    409: "Conflict",
    413: "Too large",
    422: "Unreadable address",
    429: "Too many requests",
    500: "Server error",
}


def error_page(request: Request, error: HTTPException) -> HTMLResponse:
    """The site's error page: the status, one sentence, links home (headers kept: a 405's
    ``Allow``, a 429's ``Retry-After``)."""
    detail = error.detail if isinstance(error.detail, str) else "not found"
    code = error.status_code
    response = render(
        request,
        "error.html",
        {"title": ERROR_TITLES.get(code, "Error"), "status": code, "detail": detail},
        code,
    )
    for name, value in (error.headers or {}).items():
        if name.lower() in ("allow", "retry-after"):
            response.headers[name] = value
    return response


class PageRoute(ApiRoute):
    """A page's route: a refusal of the query layer or an HTTPException (a 404 from a
    lookup) is an HTML error page of the same status."""

    def answer_error(self, request: Request, error: HTTPException) -> Response:
        return error_page(request, error)


# Every page knows who is signed in (the session cookie; ``deps.web_user``).
router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])


def ident(raw: str, what: str) -> int:
    """A page's id from its path: anything but an id that could exist is a 404."""
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ID:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no such {what}")
    return int(raw)


def refresh_period(seconds: int) -> int:
    return min(60, max(1, seconds))


async def _refresh(refresh: int = REFRESH_SECONDS) -> int:
    """``?refresh=N``: how often a live page polls, in seconds (1 to 60)."""
    return refresh_period(refresh)


# A live page's polling period, ``?refresh=N`` seconds.
Poll = Annotated[int, Depends(_refresh)]


def _matches(session: Session, limit: int, **filters: Any) -> Page[MatchOut]:
    return crud.matches.list_matches(session, Paging(limit, 0), **filters)


# --- pages -------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
def home(request: Request, session: SessionDep) -> Response:
    """Ladders and leagues with their state, and the latest matches."""
    paging = Paging(LIST_LIMIT, 0)
    ladders = crud.ladders.list_ladders(session, paging)
    leagues = crud.leagues.list_leagues(session, paging)
    recent = _matches(session, RECENT_MATCHES)
    return render(
        request,
        "home.html",
        {"title": "Arena", "ladders": ladders, "leagues": leagues, "recent": recent},
    )


@router.get("/ladders/{ladder_id}", response_class=HTMLResponse)
def ladder_page(request: Request, ladder_id: str, session: SessionDep, refresh: Poll) -> Response:
    """The leaderboard (server-rendered, refreshed by ladder.js) and the latest matches."""
    lid = ident(ladder_id, "ladder")
    ladder = crud.ladders.get_ladder(session, lid)
    board = crud.ladders.leaderboard(session, lid, Paging(LIST_LIMIT, 0))
    recent = _matches(session, RECENT_MATCHES, ladder_id=lid)
    running = _matches(session, 1, ladder_id=lid, status=MatchStatus.running).total
    queued = _matches(session, 1, ladder_id=lid, status=MatchStatus.queued).total
    return render(
        request,
        "ladder.html",
        {
            "title": f"Ladder {ladder.name}",
            "ladder": ladder,
            "board": board,
            "recent": recent,
            "running": running,
            "queued": queued,
            "refresh": refresh,
        },
    )


def _histories(session: Session, agent_id: int) -> list[dict[str, Any]]:
    """Per ladder the agent was rated in: its latest rating points and their plot."""
    out = []
    for series in crud.agents.rating_series(session, agent_id, MAX_PLOT_POINTS):
        points = [plots.RatingPoint(*p) for p in series.points]
        title = f"Rating history in ladder {series.ladder}"
        out.append(
            {
                "ladder_id": series.ladder_id,
                "ladder": series.ladder,
                "total": series.total,
                "shown": len(points),
                "last": points[-1],
                "svg": plots.rating_history_svg(points, title, f"plot-{series.ladder_id}"),
            }
        )
    return out


def agent_results(session: Session, agent_id: int, limit: int, more: int = 0) -> dict[str, Any]:
    """The agent's results, centred on it: its latest ``limit`` settled (finished or failed)
    matches, newest first, each with its own seats' place, heads, change of the conservative
    rating and faults; and its queued and running matches, summarised in one line (``more``:
    how many its longer list on /matches shows)."""
    settled = _matches(session, limit, agent_id=agent_id, settled=True)
    changes = crud.agents.rating_changes(session, agent_id, [m.id for m in settled.items])
    rows = []
    for m in settled.items:
        mine = [p for p in m.participants if p.agent_id == agent_id]
        for p in mine:  # two seats when two of its versions met
            rows.append(
                {
                    "match": m,
                    "seat": p,
                    # the log's players: a validation match keeps one seat (the version's)
                    "of": len(m.scores) if m.scores else len(m.participants),
                    "delta": changes.get((m.id, p.version_id)),
                    "several": len(mine) > 1,
                }
            )
    waiting = {
        state: _matches(session, QUEUE_IDS, agent_id=agent_id, status=state)
        for state in (MatchStatus.running, MatchStatus.queued)
    }
    return {"rows": rows, "settled": settled, "waiting": waiting, "more": more}


@router.get("/agents/{agent_id}", response_class=HTMLResponse)
def agent_page(request: Request, agent_id: str, session: SessionDep, me: WebUser) -> Response:
    """Versions (reasons for the owner, by agent.js), ladders, rating plots, matches, rivals;
    for its signed-in owner, the forms that enter it in a ladder (``lab.enter``) and
    challenge other agents (``challenge.challenge``)."""
    aid = ident(agent_id, "agent")
    agent = crud.agents.get_agent(session, aid)
    versions = crud.agents.list_versions(session, aid, None, Paging(LIST_LIMIT, 0))
    open_ladders = []
    rivals_to_name: list[str] = []
    if me is not None and me.user.id == agent.owner_id:
        ladders = crud.ladders.list_ladders(session, Paging(LIST_LIMIT, 0)).items
        open_ladders = [lad for lad in ladders if lad.state != "closed"]
        names = crud.agents.challengeable(session, me.user, CHALLENGE_SUGGESTIONS + 1)
        rivals_to_name = [n for n in names if n != agent.name][:CHALLENGE_SUGGESTIONS]
    return render(
        request,
        "agent.html",
        {
            "title": f"Agent {agent.name}",
            "agent": agent,
            "versions": versions,
            "entries": crud.ladders.agent_entries(session, aid),
            "histories": _histories(session, aid),
            "results": agent_results(session, aid, RECENT_MATCHES, MATCH_LIST),
            "rivals": crud.agents.rivals(session, aid, HEAD_TO_HEAD_ROWS),
            "open_ladders": open_ladders,
            "challenge_names": rivals_to_name,
            "challenge_fields": CHALLENGE_FIELDS,
        },
    )


@router.get("/leagues/{league_id}", response_class=HTMLResponse)
def league_page(request: Request, league_id: str, session: SessionDep, refresh: Poll) -> Response:
    """Progress, standings and the schedule round by round."""
    lid = ident(league_id, "league")
    league = crud.leagues.get_league(session, lid)
    table = crud.leagues.standings(session, lid)
    schedule = crud.leagues.schedule(session, lid, Paging(SCHEDULE_LIMIT, 0))
    by_round: dict[int, list[MatchOut]] = defaultdict(list)
    for m in schedule.items:
        by_round[m.league_round or 0].append(m)
    progress = league.progress
    settled = progress.finished + progress.failed
    per_round = len(league_service.table_sizes(len(league.entrants), league.table_size))
    return render(
        request,
        "league.html",
        {
            "title": f"League {league.name}",
            "league": league,
            "standings": table,
            "schedule": schedule,
            "rounds": sorted(by_round.items()),
            "settled": settled,
            "expected": max(per_round * league.rounds, progress.matches),
            "refresh": refresh,
        },
    )


@router.get("/matches/{match_id}", response_class=HTMLResponse)
def match_page(request: Request, match_id: str, session: SessionDep, refresh: Poll) -> Response:
    """The replay viewer (replay.js) over the steps the server replayed, with a text view."""
    mid = ident(match_id, "match")
    match = crud.matches.get_match(session, mid)
    log = read_log(session, mid) if match.status == MatchStatus.finished else None
    viewer, rounds, broken = replay_of(log)
    seats = [
        p.model_dump(include={"seat", "label", "agent_id", "owner_id", "owner"})
        for p in match.participants
    ]
    return render(
        request,
        "match.html",
        {
            "title": f"Match {mid}",
            "match": match,
            "log": log,
            "seats": seats,
            # The log's seat -> the agent at it (a validation match seats one agent only).
            "seat_agents": {p.seat: p.agent_id for p in match.participants},
            "replay": viewer,
            "rounds": rounds,
            "replay_error": broken,
            "refresh": refresh,
        },
    )


@router.get("/matches", response_class=HTMLResponse)
def matches_page(request: Request, session: SessionDep, agent_id: str | None = None) -> Response:
    """The latest matches of every kind; ``?agent_id=N``: that agent's results, centred on
    it (its place, heads, rating change and faults in each)."""
    if agent_id is not None:
        agent = crud.agents.get_agent(session, ident(agent_id, "agent"))
        results = agent_results(session, agent.id, MATCH_LIST)
        context = {"title": f"Results of {agent.name}", "agent": agent, "results": results}
        return render(request, "matches.html", context)
    latest = _matches(session, MATCH_LIST)
    return render(request, "matches.html", {"title": "Matches", "latest": latest, "agent": None})


@router.get("/ladders", response_class=HTMLResponse)
def ladders_page() -> Response:
    """The ladders are listed on the home page."""
    return RedirectResponse("/#ladders", status.HTTP_303_SEE_OTHER)


@router.get("/users/{user_id}", response_class=HTMLResponse)
def user_page(request: Request, user_id: str, session: SessionDep) -> Response:
    """A user: when they joined, and their agents."""
    uid = ident(user_id, "user")
    user = crud.users.get_user(session, uid)
    agents = crud.agents.list_agents(session, Paging(LIST_LIMIT, 0), owner_id=uid)
    return render(
        request, "user.html", {"title": f"User {user.name}", "user": user, "agents": agents}
    )


@router.get("/guide", response_class=HTMLResponse)
def guide_page(request: Request) -> Response:
    """The bot guide (docs/bot-guide.md): how to write, test and submit a bot."""
    title, body = guide.page()
    return render(request, "guide.html", {"title": title, "body": body})


_MEDIA_TYPES = {"css": "text/css", "js": "text/javascript", "svg": "image/svg+xml"}


def file_response(folder: Path, name: str, pattern: re.Pattern[str], max_age: int) -> Response:
    """The file ``name`` of ``folder`` if the name matches ``pattern`` (a flat name: nothing
    outside the folder is served) and it exists, cached ``max_age`` seconds; else a 404."""
    path = folder / name
    if not pattern.match(name) or not path.is_file():
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return FileResponse(
        path,
        media_type=_MEDIA_TYPES[name.rsplit(".", 1)[1]],
        headers={
            "Cache-Control": f"public, max-age={max_age}",
            "X-Content-Type-Options": "nosniff",
        },
    )


@files.get("/static/{name}")
def static_file(name: str) -> Response:
    """The pages' scripts and styles (a flat folder; nothing else is served)."""
    return file_response(STATIC, name, _STATIC_NAME, 3600)


router.include_router(files)
