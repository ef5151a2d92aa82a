"""/api/users: registration (the token is shown once), the caller's account, public profiles.

Registration follows ``settings.registration``: open to anyone, by invite code, or open with
each new account pending until an admin approves it; and at most
``registrations_per_hour_per_address`` an hour per client address (``throttle``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response, status

from .. import crud, throttle
from ..deps import CurrentUser, IdPath, PagingDep, SessionDep, SettingsDep
from ..schemas import Message, Page, UserCreate, UserCreated, UserPublic
from ..settings import Settings
from .common import ERR_429, ApiRoute, Responses, respond

router = APIRouter(prefix="/users", tags=["users"], route_class=ApiRoute)
REGISTRATION: Responses = {
    403: {"model": Message, "description": "Registration needs a valid invite code."},
    409: {"model": Message, "description": "The name is taken."},
    **ERR_429,
}


def count_registration(request: Request, settings: Settings) -> None:
    """Count a registration of the caller's address (the API's and the site's together);
    429 past ``registrations_per_hour_per_address``."""
    # Counted before anything is checked: a flood of taken names or bad codes counts too.
    throttle.count_or_refuse(
        request,
        throttle.REGISTER,
        settings.registrations_per_hour_per_address,
        3600,
        "registrations",
    )


@router.post("", response_model=UserCreated, status_code=201, responses=REGISTRATION)
def register(
    body: UserCreate, request: Request, session: SessionDep, settings: SettingsDep
) -> Response:
    """Register a user.  The response holds the API token: it is shown this once.

    Where the arena registers by invitation, ``invite`` must be a code from its admins; where
    it approves new users, the account is ``pending`` (its token refused) until approved.
    """
    count_registration(request, settings)
    return respond(crud.users.register(session, settings, body), status.HTTP_201_CREATED)


@router.get("", response_model=Page[UserPublic])
def list_users(session: SessionDep, paging: PagingDep) -> Response:
    """All users, oldest first."""
    return respond(crud.users.list_users(session, paging))


@router.get("/me", response_model=UserPublic)
def me(user: CurrentUser) -> Response:
    """The caller's own account."""
    return respond(UserPublic.model_validate(user, from_attributes=True))


@router.get("/{user_id}", response_model=UserPublic, responses={404: {"model": Message}})
def get_user(user_id: IdPath, session: SessionDep) -> Response:
    """A user's public profile."""
    return respond(crud.users.get_user(session, user_id))
