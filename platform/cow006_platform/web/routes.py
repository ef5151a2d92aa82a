"""The web pages: server-rendered HTML (Jinja2) with small vanilla JavaScript on top.

Every page works without JavaScript for what it shows (leaderboards, versions, plots,
schedules, standings, a match's turns as text); JavaScript adds what needs the browser:
refreshing the leaderboard from the JSON API, the owner's private views (the API token is kept
in ``localStorage`` and sent as a Bearer token, never as a cookie), the replay viewer, and the
upload page.  Pages read their data through the API's own route functions (the very JSON the
scripts poll), plus a few page-only queries (rating history, head-to-head summary).

Pages: ``/``, ``/ladders/{id}``, ``/agents/{id}``, ``/leagues/{id}``, ``/matches/{id}``,
``/upload``; static files under ``/static/``.  See docs/web.md.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, ParamSpec

import jinja2
from fastapi import APIRouter, HTTPException, Request, Response, status
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import and_, case, func, select
from sqlalchemy.orm import Session, aliased

from cow006.cards import HEADS, N_ROWS

from .. import leagues as league_service
from ..deps import Paging, SessionDep
from ..models import (
    Agent,
    AgentVersion,
    Ladder,
    LadderEntry,
    Match,
    MatchSeat,
    MatchStatus,
    Rating,
    RatingPoint,
)
from ..results import read_log
from ..routers import agents as agents_api
from ..routers import ladders as ladders_api
from ..routers import leagues as leagues_api
from ..routers import matches as matches_api
from ..schemas import MAX_ID
from . import plots
from .replay import replay_of

HERE = Path(__file__).parent
STATIC = HERE / "static"
_STATIC_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*\.(css|js|svg)$")
_MEDIA_TYPES = {"css": "text/css", "js": "text/javascript", "svg": "image/svg+xml"}

LIST_LIMIT = 200  # ladders, leagues, leaderboard rows, versions on one page
SCHEDULE_LIMIT = 1000  # league matches on the league page
RECENT_MATCHES = 15
MAX_PLOT_POINTS = 1000  # the latest rated matches plotted per ladder
HEAD_TO_HEAD_ROWS = 10
REFRESH_SECONDS = 5  # how often live pages poll (``?refresh=N`` overrides it, 1..60)

# Scripts and styles come from /static only; a replay's steps are embedded as a JSON data block
# (not executed).  Inline SVG uses presentation attributes, so no inline styles are needed.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)

router = APIRouter(include_in_schema=False)
P = ParamSpec("P")


# --- templates ---------------------------------------------------------------------------


@functools.cache
def static_version(name: str) -> str:
    """A short hash of a static file's content: its URL changes whenever the file does."""
    return hashlib.sha256((STATIC / name).read_bytes()).hexdigest()[:10]


def static_url(name: str) -> str:
    return f"/static/{name}?v={static_version(name)}"


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
    env.filters.update(heads=heads, when=when, number=number, percent=percent)
    return env


templates = Jinja2Templates(env=_environment())


def render(
    request: Request, name: str, context: dict[str, Any], status_code: int = status.HTTP_200_OK
) -> HTMLResponse:
    response = templates.TemplateResponse(request, name, context, status_code=status_code)
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    return response


def html_errors(page: Callable[P, Response]) -> Callable[P, Response]:
    """Turn an HTTPException (a 404 from a lookup) into an HTML error page, same status."""

    @functools.wraps(page)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> Response:
        try:
            return page(*args, **kwargs)
        except HTTPException as exc:
            request = kwargs["request"]
            assert isinstance(request, Request)
            detail = exc.detail if isinstance(exc.detail, str) else "not found"
            return render(
                request,
                "error.html",
                {"title": f"{exc.status_code}", "status": exc.status_code, "detail": detail},
                exc.status_code,
            )

    return wrapper


def ident(raw: str, what: str) -> int:
    """A page's id from its path: anything but an id that could exist is a 404."""
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_ID:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no such {what}")
    return int(raw)


def refresh_period(seconds: int) -> int:
    return min(60, max(1, seconds))


def api_json(response: Response) -> Any:
    """The body of an API route's JSON response (the routes serialize their own answers)."""
    return json.loads(bytes(response.body))


def _matches(session: Session, limit: int, **filters: Any) -> dict[str, Any]:
    page: dict[str, Any] = api_json(
        matches_api.list_matches(session=session, paging=Paging(limit, 0), **filters)
    )
    return page


# --- pages -------------------------------------------------------------------------------


@router.get("/", response_class=HTMLResponse)
@html_errors
def home(request: Request, session: SessionDep) -> Response:
    """Ladders and leagues with their state, and the latest matches."""
    paging = Paging(LIST_LIMIT, 0)
    ladders = api_json(ladders_api.list_ladders(session=session, paging=paging))
    leagues = api_json(leagues_api.list_leagues(session=session, paging=paging))
    recent = _matches(session, RECENT_MATCHES)
    return render(
        request,
        "home.html",
        {"title": "Arena", "ladders": ladders, "leagues": leagues, "recent": recent},
    )


@router.get("/ladders/{ladder_id}", response_class=HTMLResponse)
@html_errors
def ladder_page(
    request: Request, ladder_id: str, session: SessionDep, refresh: int = REFRESH_SECONDS
) -> Response:
    """The leaderboard (server-rendered, refreshed by ladder.js) and the latest matches."""
    lid = ident(ladder_id, "ladder")
    ladder = api_json(ladders_api.get_ladder(ladder_id=lid, session=session))
    board = api_json(
        ladders_api.leaderboard(ladder_id=lid, session=session, paging=Paging(LIST_LIMIT, 0))
    )
    recent = _matches(session, RECENT_MATCHES, ladder_id=lid)
    running = _matches(session, 1, ladder_id=lid, match_status=MatchStatus.running)["total"]
    queued = _matches(session, 1, ladder_id=lid, match_status=MatchStatus.queued)["total"]
    return render(
        request,
        "ladder.html",
        {
            "title": f"Ladder {ladder['name']}",
            "ladder": ladder,
            "board": board,
            "recent": recent,
            "running": running,
            "queued": queued,
            "refresh": refresh_period(refresh),
        },
    )


def _entries(session: Session, agent_id: int) -> list[dict[str, Any]]:
    """The agent's ladder entries with the current rating of the version each plays."""
    rows = session.execute(
        select(
            Ladder.id,
            Ladder.name,
            Ladder.state,
            Ladder.mu.label("ladder_mu"),
            Ladder.sigma.label("ladder_sigma"),
            LadderEntry.active,
            AgentVersion.number,
            Rating.mu,
            Rating.sigma,
            Rating.matches,
            Rating.wins,
        )
        .join(Ladder, Ladder.id == LadderEntry.ladder_id)
        .join(AgentVersion, AgentVersion.id == LadderEntry.version_id)
        .outerjoin(
            Rating,
            (Rating.ladder_id == LadderEntry.ladder_id)
            & (Rating.version_id == LadderEntry.version_id),
        )
        .where(LadderEntry.agent_id == agent_id)
        .order_by(Ladder.id)
    ).all()
    out = []
    for r in rows:
        mu = r.mu if r.mu is not None else r.ladder_mu
        sigma = r.sigma if r.sigma is not None else r.ladder_sigma
        out.append(
            {
                "ladder_id": r.id,
                "ladder": r.name,
                "state": r.state.value,
                "active": r.active,
                "version": r.number,
                "mu": mu,
                "sigma": sigma,
                "conservative": mu - 3 * sigma,
                "matches": r.matches or 0,
                "wins": r.wins or 0,
            }
        )
    return out


def _histories(session: Session, agent_id: int) -> list[dict[str, Any]]:
    """Per ladder the agent was rated in: its latest rating points and their plot."""
    version_ids = select(AgentVersion.id).where(AgentVersion.agent_id == agent_id)
    ladders = session.execute(
        select(Ladder.id, Ladder.name, func.count(RatingPoint.id))
        .join(RatingPoint, RatingPoint.ladder_id == Ladder.id)
        .where(RatingPoint.version_id.in_(version_ids))
        .group_by(Ladder.id, Ladder.name)
        .order_by(Ladder.id)
    ).all()
    out = []
    for ladder_id, name, total in ladders:
        rows = session.execute(
            select(RatingPoint.match_id, AgentVersion.number, RatingPoint.mu, RatingPoint.sigma)
            .join(AgentVersion, AgentVersion.id == RatingPoint.version_id)
            .where(RatingPoint.version_id.in_(version_ids), RatingPoint.ladder_id == ladder_id)
            .order_by(RatingPoint.id.desc())
            .limit(MAX_PLOT_POINTS)
        ).all()
        points = [plots.RatingPoint(r[0], r[1], r[2], r[3]) for r in reversed(rows)]
        out.append(
            {
                "ladder_id": ladder_id,
                "ladder": name,
                "total": total,
                "shown": len(points),
                "last": points[-1],
                "svg": plots.rating_history_svg(
                    points, f"Rating history in ladder {name}", f"plot-{ladder_id}"
                ),
            }
        )
    return out


def _head_to_head(session: Session, agent_id: int) -> list[dict[str, Any]]:
    """The agents this one met most in finished matches, with who finished ahead (like
    ``ratings.head_to_head``, for the top opponents at once)."""
    me, other = aliased(MatchSeat), aliased(MatchSeat)
    met = func.count().label("matches")
    rows = session.execute(
        select(
            other.agent_id,
            Agent.name,
            met,
            func.coalesce(func.sum(case((me.score < other.score, 1), else_=0)), 0),
            func.coalesce(func.sum(case((me.score > other.score, 1), else_=0)), 0),
            func.coalesce(func.sum(case((me.score == other.score, 1), else_=0)), 0),
            func.avg(me.score),
            func.avg(other.score),
        )
        .select_from(Match)
        .join(me, and_(me.match_id == Match.id, me.agent_id == agent_id))
        .join(other, and_(other.match_id == Match.id, other.agent_id != agent_id))
        .join(Agent, Agent.id == other.agent_id)
        .where(Match.status == MatchStatus.finished)
        .group_by(other.agent_id, Agent.name)
        .order_by(met.desc(), other.agent_id)
        .limit(HEAD_TO_HEAD_ROWS)
    ).all()
    return [
        {
            "agent_id": r[0],
            "agent": r[1],
            "matches": int(r[2]),
            "ahead": int(r[3]),
            "behind": int(r[4]),
            "ties": int(r[5]),
            "mean_score": None if r[6] is None else float(r[6]),
            "their_mean_score": None if r[7] is None else float(r[7]),
        }
        for r in rows
    ]


@router.get("/agents/{agent_id}", response_class=HTMLResponse)
@html_errors
def agent_page(request: Request, agent_id: str, session: SessionDep) -> Response:
    """Versions (reasons for the owner, by agent.js), ladders, rating plots, matches, rivals."""
    aid = ident(agent_id, "agent")
    agent = api_json(agents_api.get_agent(agent_id=aid, session=session))
    versions = api_json(
        agents_api.list_versions(
            agent_id=aid, user=None, session=session, paging=Paging(LIST_LIMIT, 0)
        )
    )
    return render(
        request,
        "agent.html",
        {
            "title": f"Agent {agent['name']}",
            "agent": agent,
            "versions": versions,
            "entries": _entries(session, aid),
            "histories": _histories(session, aid),
            "recent": _matches(session, RECENT_MATCHES, agent_id=aid),
            "rivals": _head_to_head(session, aid),
        },
    )


@router.get("/leagues/{league_id}", response_class=HTMLResponse)
@html_errors
def league_page(
    request: Request, league_id: str, session: SessionDep, refresh: int = REFRESH_SECONDS
) -> Response:
    """Progress, standings and the schedule round by round."""
    lid = ident(league_id, "league")
    league = api_json(leagues_api.get_league(league_id=lid, session=session))
    table = api_json(leagues_api.standings(league_id=lid, session=session))
    schedule = api_json(
        leagues_api.schedule(league_id=lid, session=session, paging=Paging(SCHEDULE_LIMIT, 0))
    )
    by_round: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for m in schedule["items"]:
        by_round[m["league_round"] or 0].append(m)
    progress = league["progress"]
    settled = progress["finished"] + progress["failed"]
    per_round = len(league_service.table_sizes(len(league["entrants"]), league["table_size"]))
    return render(
        request,
        "league.html",
        {
            "title": f"League {league['name']}",
            "league": league,
            "standings": table,
            "schedule": schedule,
            "rounds": sorted(by_round.items()),
            "settled": settled,
            "expected": max(per_round * league["rounds"], progress["matches"]),
            "refresh": refresh_period(refresh),
        },
    )


@router.get("/matches/{match_id}", response_class=HTMLResponse)
@html_errors
def match_page(
    request: Request, match_id: str, session: SessionDep, refresh: int = REFRESH_SECONDS
) -> Response:
    """The replay viewer (replay.js) over the steps the server replayed, with a text view."""
    mid = ident(match_id, "match")
    match = api_json(matches_api.get_match(match_id=mid, session=session))
    log = read_log(session, mid) if match["status"] == MatchStatus.finished.value else None
    viewer, rounds, broken = replay_of(log)
    seats = [
        {
            "seat": p["seat"],
            "label": p["label"],
            "agent_id": p["agent_id"],
            "owner_id": p["owner_id"],
            "owner": p["owner"],
        }
        for p in match["participants"]
    ]
    return render(
        request,
        "match.html",
        {
            "title": f"Match {mid}",
            "match": match,
            "log": log,
            "seats": seats,
            "replay": viewer,
            "rounds": rounds,
            "replay_error": broken,
            "refresh": refresh_period(refresh),
        },
    )


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request) -> Response:
    """Sign in or register, create an agent, upload a version and watch it validate."""
    return render(request, "upload.html", {"title": "Upload a bot"})


@router.get("/static/{name}")
def static_file(name: str) -> Response:
    """The pages' scripts and styles (a flat folder; nothing else is served)."""
    path = STATIC / name
    if not _STATIC_NAME.match(name) or not path.is_file():
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return FileResponse(
        path,
        media_type=_MEDIA_TYPES[name.rsplit(".", 1)[1]],
        headers={"Cache-Control": "public, max-age=3600", "X-Content-Type-Options": "nosniff"},
    )
