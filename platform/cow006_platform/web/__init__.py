"""The arena's web pages: Jinja2 templates, small vanilla scripts, server-rendered SVG plots.

``router`` serves the pages at ``/`` (home), ``/ladders/{id}``, ``/agents/{id}``,
``/leagues/{id}``, ``/matches/{id}`` (the replay viewer) and ``/upload``, and their static
files under ``/static/``; ``create_app`` includes it next to the JSON API.  See docs/web.md.
"""

from .routes import router

__all__ = ["router"]
