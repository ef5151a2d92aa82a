"""/api/users: registration (the token is shown once), the caller's account, public profiles."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from ..deps import CurrentUser, IdPath, PagingDep, SessionDep
from ..models import User
from ..schemas import Message, Page, UserCreate, UserCreated, UserPublic
from ..security import NameTakenError, create_user

router = APIRouter(prefix="/users", tags=["users"])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    responses={409: {"model": Message, "description": "The name is taken."}},
)
def register(body: UserCreate, session: SessionDep) -> UserCreated:
    """Register a user.  The response holds the API token: it is shown this once."""
    try:
        user, token = create_user(session, body.name)
        session.commit()
    except (NameTakenError, IntegrityError) as exc:  # IntegrityError: a concurrent twin
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, f"the name {body.name!r} is taken") from exc
    return UserCreated(**UserPublic.of(user).model_dump(), token=token)


@router.get("", responses={401: {"model": Message}})
def list_users(session: SessionDep, paging: PagingDep) -> Page[UserPublic]:
    """All users, oldest first."""
    total = session.scalar(select(func.count()).select_from(User)) or 0
    users = session.scalars(
        select(User).order_by(User.id).limit(paging.limit).offset(paging.offset)
    ).all()
    return Page(
        items=[UserPublic.of(u) for u in users],
        total=total,
        limit=paging.limit,
        offset=paging.offset,
    )


@router.get("/me", responses={401: {"model": Message}})
def me(user: CurrentUser) -> UserPublic:
    """The caller's own account."""
    return UserPublic.of(user)


@router.get("/{user_id}", responses={404: {"model": Message}, 401: {"model": Message}})
def get_user(user_id: IdPath, session: SessionDep) -> UserPublic:
    """A user's public profile."""
    user = session.get(User, user_id)
    if user is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such user")
    return UserPublic.of(user)
