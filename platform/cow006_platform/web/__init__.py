"""The arena's web pages: Jinja2 templates, small vanilla scripts, server-rendered SVG plots.

``router`` serves the pages, by module: ``routes`` (``/`` home, ``/ladders/{id}``,
``/agents/{id}``, ``/leagues/{id}``, ``/matches/{id}`` the replay viewer, ``/matches``,
``/users/{id}``, ``/guide``, and the static files under ``/static/``), ``account``
(``/login``, ``/register``, ``/logout``, ``/upload``), ``lab`` (``/me``, ``/evaluations``,
entering a ladder), ``challenge`` (a challenge from an agent's page), ``admin`` (``/admin``:
ladders and leagues) and ``kit`` (the starter kit's zip); ``create_app`` includes it next to
the JSON API.  See docs/web.md.
"""

from fastapi import APIRouter

from . import account, admin, challenge, kit, lab, routes

router = APIRouter()
router.include_router(routes.router)
router.include_router(account.router)
router.include_router(lab.router)
router.include_router(challenge.router)
router.include_router(admin.router)
router.include_router(kit.router)

__all__ = ["router"]
