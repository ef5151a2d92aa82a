"""/api/evaluations: a version against a fixed pool before it goes live, paired with a baseline.

A run's matches are unrated and their own work class (``crud.evaluations``, ``workclasses``):
they never delay validations or ladder matches.  A run is its owner's (and the admins'): to
anyone else it does not exist (404).  The owner then promotes the version into ladders or
discards the run.
"""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from .. import crud
from ..deps import CurrentUser, ExecutorDep, IdPath, PagingDep, SessionDep, SettingsDep
from ..schemas import EvaluationCreate, EvaluationOut, Page, PromoteBody
from .common import ERR_403, ERR_404, ERR_409, ERR_429, ApiRoute, respond

router = APIRouter(prefix="/evaluations", tags=["evaluations"], route_class=ApiRoute)


@router.post(
    "",
    response_model=EvaluationOut,
    status_code=status.HTTP_201_CREATED,
    responses={**ERR_403, **ERR_404, **ERR_409, **ERR_429},
)
def create_evaluation(
    body: EvaluationCreate,
    user: CurrentUser,
    session: SessionDep,
    settings: SettingsDep,
    executor: ExecutorDep,
) -> Response:
    """Start an evaluation run: ``version_id`` (and ``baseline_id`` on the same deals, seats
    and opponents) against a ladder's top entries or named versions, ``matches`` slots."""
    run, admitted = crud.evaluations.create(session, settings, body, user)
    for match_id, kind in crud.matches.kinds(session, admitted).items():
        executor.submit_match(match_id, kind=kind)
    return respond(run, status.HTTP_201_CREATED)


@router.get("", response_model=Page[EvaluationOut])
def list_evaluations(user: CurrentUser, session: SessionDep, paging: PagingDep) -> Response:
    """The caller's runs, newest first."""
    return respond(crud.evaluations.list_runs(session, user, paging))


@router.get("/{run_id}", response_model=EvaluationOut, responses=ERR_404)
def get_evaluation(run_id: IdPath, user: CurrentUser, session: SessionDep) -> Response:
    """A run and its figures so far: each version's mean place, heads per round, win rate and
    faults, and B - A paired and unpaired with 95 % intervals."""
    return respond(crud.evaluations.get_run(session, run_id, user))


@router.post(
    "/{run_id}/promote", response_model=EvaluationOut, responses={**ERR_403, **ERR_404, **ERR_409}
)
def promote(
    run_id: IdPath, user: CurrentUser, session: SessionDep, body: PromoteBody | None = None
) -> Response:
    """Enter the run's version in ladders (default: the run's ladder and every ladder its
    agent is entered in)."""
    ladder_ids = body.ladder_ids if body is not None else None
    return respond(crud.evaluations.promote(session, run_id, user, ladder_ids))


@router.post("/{run_id}/discard", response_model=EvaluationOut, responses={**ERR_404, **ERR_409})
def discard(run_id: IdPath, user: CurrentUser, session: SessionDep) -> Response:
    """Discard the run: its matches not yet admitted are dropped."""
    return respond(crud.evaluations.discard(session, run_id, user))
