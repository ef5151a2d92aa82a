"""/api/ladders: ladders (admins create and open/pause/close them), entries, the leaderboard.

An owner enters an agent with the version to play; posting the entry again switches the
version (each version keeps its own rating and history), deleting it withdraws the agent.
The leaderboard ranks active entries by the conservative rating mu - 3 sigma; an entry whose
version has not played yet shows the ladder's initial rating (``crud.ladders``).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response, status

from .. import crud, exports, throttle
from ..cache import cached
from ..deps import AdminUser, CurrentUser, IdPath, PagingDep, SessionDep, SettingsDep
from ..schemas import (
    MAX_ID,
    EntryCreate,
    EntryOut,
    LadderCreate,
    LadderOut,
    LadderUpdate,
    LeaderboardRow,
    Page,
)
from .common import (
    ERR_403,
    ERR_404,
    ERR_409,
    ERR_429,
    ApiRoute,
    Responses,
    page_parts,
    respond,
    respond_json,
)

router = APIRouter(prefix="/ladders", tags=["ladders"], route_class=ApiRoute)
LADDER_TAGS = "ladder:{ladder_id}"


@router.post(
    "",
    response_model=LadderOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_409},
)
def create_ladder(body: LadderCreate, _admin: AdminUser, session: SessionDep) -> Response:
    """Create a ladder (admins only); it starts open."""
    return respond(crud.ladders.create_ladder(session, body), status.HTTP_201_CREATED)


@router.get("", response_model=Page[LadderOut])
def list_ladders(session: SessionDep, paging: PagingDep) -> Response:
    return respond(crud.ladders.list_ladders(session, paging))


@router.get("/{ladder_id}", response_model=LadderOut, responses=ERR_404)
@cached(LADDER_TAGS)
def get_ladder(ladder_id: IdPath, session: SessionDep) -> Response:
    return respond(crud.ladders.get_ladder(session, ladder_id))


@router.patch("/{ladder_id}", response_model=LadderOut, responses={**ERR_403, **ERR_404})
def update_ladder(
    ladder_id: IdPath, body: LadderUpdate, _admin: AdminUser, session: SessionDep
) -> Response:
    """Open, pause or close a ladder (admins only).  A paused or closed ladder schedules
    no matches; a closed one takes no entries either."""
    return respond(crud.ladders.set_state(session, ladder_id, body.state))


# Entering anew answers 201; entering again (another version) switches the entry: 200.
ENTRY: Responses = {
    200: {"model": EntryOut, "description": "The entry's version was switched."},
    **ERR_403,
    **ERR_404,
    **ERR_409,
}


@router.post("/{ladder_id}/entries", response_model=EntryOut, status_code=201, responses=ENTRY)
def enter(ladder_id: IdPath, body: EntryCreate, user: CurrentUser, session: SessionDep) -> Response:
    """Enter an agent (owner only) with one of its active versions, or switch the version
    of an existing entry (200).  Earlier versions keep their ratings and history."""
    entry, created = crud.ladders.enter(session, ladder_id, body, user)
    return respond(entry, status.HTTP_201_CREATED if created else status.HTTP_200_OK)


@router.delete(
    "/{ladder_id}/entries/{agent_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={**ERR_403, **ERR_404},
)
def withdraw(ladder_id: IdPath, agent_id: IdPath, user: CurrentUser, session: SessionDep) -> None:
    """Withdraw an agent from the ladder (owner only); its ratings and matches stay."""
    crud.ladders.withdraw(session, ladder_id, agent_id, user)


@router.get("/{ladder_id}/entries", response_model=Page[EntryOut], responses=ERR_404)
def list_entries(
    ladder_id: IdPath, session: SessionDep, paging: PagingDep, include_withdrawn: bool = False
) -> Response:
    """The ladder's entries in order of entry (withdrawn ones on request)."""
    page = crud.ladders.entries(session, ladder_id, paging, include_withdrawn=include_withdrawn)
    return respond(page)


@router.get("/{ladder_id}/leaderboard", response_model=Page[LeaderboardRow], responses=ERR_404)
@cached(LADDER_TAGS)
def leaderboard(
    request: Request, ladder_id: IdPath, session: SessionDep, paging: PagingDep
) -> Response:
    """Active, enabled entries ranked by mu - 3 sigma of the version each plays here."""
    parts = page_parts(request)
    if parts is not None:  # a slice of the whole board, held until the ladder changes
        return respond_json(crud.ladders.leaderboard_json(session, ladder_id, paging, parts))
    return respond(crud.ladders.leaderboard(session, ladder_id, paging))


EXPORT: Responses = {
    200: {
        "description": "The page of logs: JSON lines (`format=jsonl`) or a tar with "
        "`index.jsonl` (`format=tar`). `Cow006-Next-Since` is the cursor to ask with next, "
        "`Cow006-More` whether the page was full.",
        "content": {"application/jsonl": {}, "application/x-tar": {}},
    },
    **ERR_404,
    **ERR_429,
}


@router.get("/{ladder_id}/logs", response_class=Response, responses=EXPORT)
def export_logs(
    ladder_id: IdPath,
    request: Request,
    session: SessionDep,
    settings: SettingsDep,
    since: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    limit: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    format: exports.Format = "jsonl",
) -> Response:
    """The ladder's finished matches after match ``since``, oldest first, with their logs:
    a bulk export for datasets, resumable with ``since`` (``cow006 logs --ladder``).

    Public (logs hold no stderr) and limited per client address.  ``limit`` is at most the
    arena's page size (``EXPORT_PAGE_MAX``, the default).
    """
    throttle.count_or_refuse(
        request, throttle.EXPORT, settings.exports_per_minute_per_address, 60, "exports"
    )
    page_size = min(limit or settings.export_page_max, settings.export_page_max)
    rows = crud.matches.ladder_logs(session, ladder_id, since, page_size)
    page = exports.build(rows, since, page_size, format)
    headers = {"Cow006-Next-Since": str(page.next_since), "Cow006-More": str(page.more).lower()}
    if page.more:
        query = f"since={page.next_since}&limit={page_size}&format={format}"
        headers["Link"] = f'</api/ladders/{ladder_id}/logs?{query}>; rel="next"'
    if format == "tar":
        name = f"ladder-{ladder_id}-logs-{since + 1}-{page.next_since}.tar"
        headers["Content-Disposition"] = f'attachment; filename="{name}"'
    return Response(page.body, media_type=page.media_type, headers=headers)
