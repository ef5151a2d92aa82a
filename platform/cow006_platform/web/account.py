"""Signing in and out on the site: ``/login``, ``/register`` and ``/logout`` as plain forms,
and ``/upload`` (signing in or registering, then an upload) that opens with them.

The token is posted in a form body, never put in a URL; a signed-in browser holds the session
cookie (``websession``), and every form carries its CSRF field (``check_csrf``).  The pages
themselves are ``routes``; this module only opens and closes sessions.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request, Response, status
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from .. import crud, deps, security, throttle, websession
from ..deps import MAX_TOKEN_CHARS, SessionDep, SettingsDep, WebUser, web_user
from ..models import ApiToken, User
from ..routers.common import http_error as crud_error
from ..routers.users import count_registration
from ..schemas import UserCreate, UserCreated
from ..settings import Settings
from .routes import PageRoute, render, set_cookie

router = APIRouter(include_in_schema=False, route_class=PageRoute, dependencies=[Depends(web_user)])


# --- signing in and out (the session cookie: cow006_platform.websession) ------------------

SIGN_IN_FIELDS = 8  # the most fields a sign-in or registration form may send
FIELD_BYTES = 16 * 1024
BAD_CSRF = "this form has expired or did not come from this site: reload the page and send it again"
BAD_TOKEN = "invalid API token (unknown, revoked or expired)"
LATEST_UPLOADS = 10  # a signed-in user's uploads listed on /upload


def _see_other(path: str) -> Response:
    response = RedirectResponse(path, status.HTTP_303_SEE_OTHER)
    response.headers["Cache-Control"] = "no-store"
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def local_path(value: str | None) -> str:
    """Where to go after signing in: a path of this site (never another site's URL, a
    scheme-relative ``//host`` or a backslash trick), else ``/upload``."""
    if (
        not value
        or len(value) > 200
        or not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or not value.isascii()
        or not value.isprintable()
    ):
        return "/upload"
    return value


async def form_fields(request: Request) -> dict[str, str]:
    """A form's text fields (urlencoded or multipart; no files), bounded in number and size:
    hostile bodies are a 400 page, not an error."""
    try:
        form = await request.form(max_files=0, max_fields=SIGN_IN_FIELDS, max_part_size=FIELD_BYTES)
    except HTTPException:
        raise
    except Exception as exc:  # a parser's complaint about the body: the sender's fault
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "the form could not be read") from exc
    try:
        return {
            key[:64]: value[:FIELD_BYTES]
            for key, value in form.multi_items()
            if isinstance(value, str)
        }
    finally:
        await form.close()


Form = Annotated[dict[str, str], Depends(form_fields)]


def check_csrf(request: Request, fields: dict[str, str], me: websession.SignedIn | None) -> None:
    """403 unless the form's ``csrf`` field is this browser's token (see websession)."""
    expected = (
        websession.csrf_of(me.secret)
        if me is not None
        else request.cookies.get(websession.CSRF_COOKIE)
    )
    if me is None and not websession.well_formed(expected):
        expected = None
    if not websession.same(expected, fields.get(websession.CSRF_FIELD)):
        raise HTTPException(status.HTTP_403_FORBIDDEN, BAD_CSRF)


def _form_page(
    request: Request,
    context: dict[str, Any],
    status_code: int = status.HTTP_200_OK,
    fields: dict[str, str] | None = None,
) -> HTMLResponse:
    """The page a sign-in or registration form is on (``page``: the upload page or /login;
    a form posted says which in its ``page`` field), with what the form's answer says."""
    base: dict[str, Any] = {
        "title": "Sign in",
        "error": None,
        "register_error": None,
        "created": None,
        "uploads": [],
    }
    on = context.pop("page", None) or (fields or {}).get("page")
    if on == "upload":
        extra = {"title": "Upload a bot", "form_page": "upload"}
        return render(
            request, "upload.html", {**base, **context, **extra, "forms": True}, status_code
        )
    return render(
        request, "login.html", {**base, **context, "form_page": "login", "forms": True}, status_code
    )


def _token_owner(factory: sessionmaker[Session], token: str) -> tuple[User, ApiToken] | None:
    with factory() as session:
        found = security.token_owner(session, token)
        if found is not None:
            session.expunge_all()
        return found


def _signed_in_answer(request: Request, target: str, secret: str) -> Response:
    response = _see_other(target)
    hours = request.app.state.settings.session_hours
    set_cookie(request, response, websession.COOKIE, secret, int(hours * 3600))
    return response


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str | None = None) -> Response:
    """Sign in with an API token, or register a name (the forms work without JavaScript)."""
    return _form_page(request, {"next": local_path(next)})


@router.post("/login", response_class=HTMLResponse)
async def login(request: Request, fields: Form, me: WebUser) -> Response:
    """Check the token, open a session (the cookie), go on to ``next``.  The token travels
    in the POST body only: never in a URL, never echoed, never logged."""
    check_csrf(request, fields, me)
    target = local_path(fields.get("next"))
    address = throttle.client_address(request)
    refusal = deps.blocked(request, address)
    token = fields.get("token", "").strip()
    found = None
    if refusal is None:
        if token and len(token) <= MAX_TOKEN_CHARS and token.isascii() and token.isprintable():
            factory = request.app.state.session_factory
            found = await run_in_threadpool(_token_owner, factory, token)
        if found is None:
            refusal = await deps.refused_token(request, address, BAD_TOKEN)
    if refusal is not None:
        detail = str(refusal.detail)
        return _form_page(request, {"next": target, "error": detail}, refusal.status_code, fields)
    assert found is not None
    user, api_token = found
    if user.disabled or user.pending:
        why = "is disabled" if user.disabled else "is waiting for an admin's approval"
        return _form_page(
            request,
            {"next": target, "error": f"the account {user.name} {why}"},
            status.HTTP_403_FORBIDDEN,
            fields,
        )
    secret = await run_in_threadpool(_switch_session, request, me, user.id, api_token.id)
    return _signed_in_answer(request, target, secret)


def _switch_session(
    request: Request, me: websession.SignedIn | None, user_id: int, token_id: int
) -> str:
    """A new session (never the old one kept: no session fixation), the old one closed."""
    settings: Settings = request.app.state.settings
    with request.app.state.session_factory() as session:
        if me is not None:
            websession.close_session(session, me.secret)
        return websession.open_session(session, user_id, token_id, settings.session_hours)


def _register(
    request: Request, settings: Settings, body: UserCreate, me: websession.SignedIn | None
) -> tuple[UserCreated, str | None]:
    count_registration(request, settings)
    with request.app.state.session_factory() as session:
        created = crud.users.register(session, settings, body)
    if created.pending:
        return created, None
    with request.app.state.session_factory() as session:
        token_id = session.scalar(
            select(ApiToken.id).where(ApiToken.hash == security.hash_token(created.token))
        )
    assert token_id is not None
    return created, _switch_session(request, me, created.id, token_id)


@router.post("/register", response_class=HTMLResponse)
async def register(request: Request, fields: Form, me: WebUser, settings: SettingsDep) -> Response:
    """Register a name: the new API token is shown this once, and the browser is signed in
    (unless the arena approves new accounts first)."""
    check_csrf(request, fields, me)
    target = local_path(fields.get("next"))
    name = fields.get("name", "").strip()
    invite = fields.get("invite", "").strip() or None
    try:
        body = UserCreate(name=name, invite=invite)
    except ValidationError:
        problem = "a name is 2 to 40 letters, digits, '-' or '_'"
        if invite is not None and len(invite) > 100:
            problem = "that invite code is not one of this arena's"
        return _form_page(
            request,
            {"next": target, "register_error": problem},
            status.HTTP_400_BAD_REQUEST,
            fields,
        )
    try:
        created, secret = await run_in_threadpool(_register, request, settings, body, me)
    except crud.Refused as refused:
        error = crud_error(refused)
        return _form_page(
            request,
            {"next": target, "register_error": str(error.detail)},
            error.status_code,
            fields,
        )
    except HTTPException as error:  # 429: too many registrations from this address
        return _form_page(
            request,
            {"next": target, "register_error": str(error.detail)},
            error.status_code,
            fields,
        )
    if secret is not None:
        # The answer shows the new user signed in, with the sign-out form of the new session.
        request.state.signed_in = websession.SignedIn(
            User(id=created.id, name=created.name, is_admin=False), secret
        )
    response = _form_page(
        request, {"title": "Registered", "created": created, "next": target}, fields=fields
    )
    if secret is not None:
        set_cookie(request, response, websession.COOKIE, secret, int(settings.session_hours * 3600))
    return response


@router.post("/logout", response_class=HTMLResponse)
async def logout(request: Request, fields: Form, me: WebUser) -> Response:
    """Sign out: the session is deleted and its cookie cleared."""
    if me is not None:
        check_csrf(request, fields, me)
        factory = request.app.state.session_factory
        await run_in_threadpool(_close, factory, me.secret)
    response = _see_other(local_path(fields.get("next")) if fields.get("next") else "/")
    response.delete_cookie(websession.COOKIE, path="/")
    return response


def _close(factory: sessionmaker[Session], secret: str) -> None:
    with factory() as session:
        websession.close_session(session, secret)


@router.get("/upload", response_class=HTMLResponse)
def upload_page(request: Request, session: SessionDep, me: WebUser) -> Response:
    """Sign in or register, create an agent, upload a version and watch it validate; for a
    signed-in user, their latest uploads with their validation (a reload shows the news,
    without JavaScript too)."""
    if request.url.query:
        # An old form sent the token in the query (``/upload?token=...``): it must not stay in
        # the address bar, the history or a Referer.  The page reads no query but ``agent``.
        pairs = request.query_params.multi_items()
        name, agent = pairs[0] if len(pairs) == 1 else ("", "")
        if name != "agent" or not agent.isdigit() or len(agent) > 18:
            return _see_other("/upload")
    uploads = [] if me is None else crud.agents.latest_uploads(session, me.user, LATEST_UPLOADS)
    return _form_page(request, {"next": "/upload", "page": "upload", "uploads": uploads})
