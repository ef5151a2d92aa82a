"""/api/users: registration (the token is shown once), the caller's account, public profiles.

Registration follows ``settings.registration``: open to anyone, by invite code, or open with
each new account pending until an admin approves it; and at most
``registrations_per_hour_per_address`` an hour per client address (``throttle``).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, Response, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from .. import throttle
from ..deps import CurrentUser, IdPath, PagingDep, SessionDep, SettingsDep
from ..models import User
from ..schemas import Message, Page, UserCreate, UserCreated, UserPublic
from ..security import NameTakenError, create_user, use_invite
from .common import ERR_429, respond

router = APIRouter(prefix="/users", tags=["users"])


@router.post(
    "",
    response_model=UserCreated,
    status_code=status.HTTP_201_CREATED,
    responses={
        403: {"model": Message, "description": "Registration needs a valid invite code."},
        409: {"model": Message, "description": "The name is taken."},
        **ERR_429,
    },
)
def register(
    body: UserCreate, request: Request, session: SessionDep, settings: SettingsDep
) -> Response:
    """Register a user.  The response holds the API token: it is shown this once.

    Where the arena registers by invitation, ``invite`` must be a code from its admins; where
    it approves new users, the account is ``pending`` (its token refused) until approved.
    """
    limit = settings.registrations_per_hour_per_address
    if limit > 0:
        # Counted before anything is checked: a flood of taken names or bad codes counts too.
        counted = throttle.bump(
            request.app.state.session_factory,
            throttle.REGISTER,
            throttle.client_address(request),
            3600,
        )
        if counted.count > limit:
            raise throttle.too_many(
                f"too many registrations from your address; try again in {counted.retry_after} s",
                counted.retry_after,
            )
    if settings.registration == "invite":
        if body.invite is None:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                "this arena registers by invitation: send the invite code its admins gave you "
                'as "invite"',
            )
        if not use_invite(session, body.invite):
            raise HTTPException(
                status.HTTP_403_FORBIDDEN, "this invite code is unknown, used up or expired"
            )
    pending = settings.registration == "approval"
    try:
        user, token = create_user(session, body.name, pending=pending)
        session.commit()
    except (NameTakenError, IntegrityError) as exc:  # IntegrityError: a concurrent twin
        session.rollback()  # gives the invite's use back too
        raise HTTPException(status.HTTP_409_CONFLICT, f"the name {body.name!r} is taken") from exc
    created = UserCreated(**UserPublic.of(user).model_dump(), token=token, pending=pending)
    return respond(created, status.HTTP_201_CREATED)


@router.get("", response_model=Page[UserPublic])
def list_users(session: SessionDep, paging: PagingDep) -> Response:
    """All users, oldest first."""
    total = session.scalar(select(func.count()).select_from(User)) or 0
    users = session.scalars(
        select(User).order_by(User.id).limit(paging.limit).offset(paging.offset)
    ).all()
    return respond(
        Page(
            items=[UserPublic.of(u) for u in users],
            total=total,
            limit=paging.limit,
            offset=paging.offset,
        )
    )


@router.get("/me", response_model=UserPublic)
def me(user: CurrentUser) -> Response:
    """The caller's own account."""
    return respond(UserPublic.of(user))


@router.get("/{user_id}", response_model=UserPublic, responses={404: {"model": Message}})
def get_user(user_id: IdPath, session: SessionDep) -> Response:
    """A user's public profile."""
    user = session.get(User, user_id)
    if user is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such user")
    return respond(UserPublic.of(user))
