"""/api/users: registration (the token is shown once), the caller's account, public profiles."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Response, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ..deps import CurrentUser, IdPath, PagingDep, SessionDep
from ..models import User
from ..schemas import Message, Page, UserCreate, UserCreated, UserPublic
from ..security import NameTakenError, create_user
from .common import respond

router = APIRouter(prefix="/users", tags=["users"])


@router.post(
    "",
    response_model=UserCreated,
    status_code=status.HTTP_201_CREATED,
    responses={409: {"model": Message, "description": "The name is taken."}},
)
def register(body: UserCreate, session: SessionDep) -> Response:
    """Register a user.  The response holds the API token: it is shown this once."""
    try:
        user, token = create_user(session, body.name)
        session.commit()
    except (NameTakenError, IntegrityError) as exc:  # IntegrityError: a concurrent twin
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, f"the name {body.name!r} is taken") from exc
    return respond(
        UserCreated(**UserPublic.of(user).model_dump(), token=token), status.HTTP_201_CREATED
    )


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
