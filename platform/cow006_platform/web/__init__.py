"""The arena's web pages: Jinja2 templates, small vanilla scripts, server-rendered SVG plots.

``router`` serves the pages at ``/`` (home), ``/ladders/{id}``, ``/agents/{id}``,
``/leagues/{id}``, ``/matches/{id}`` (the replay viewer), ``/upload``, the sign-in pages and
the lab's ``/evaluations`` (``lab``), and their static
files under ``/static/``; ``create_app`` includes it next to the JSON API.  See docs/web.md.
"""

from fastapi import APIRouter

from . import lab, routes

router = APIRouter()
router.include_router(routes.router)
router.include_router(lab.router)

__all__ = ["router"]
