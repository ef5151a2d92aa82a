"""``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served from the package's own files.

FastAPI's built-in pages load their scripts from a CDN, on the origin whose ``localStorage``
holds the users' API tokens (a compromised CDN script would read them), and are blank on a
network without the internet.  These pages load the vendored viewers from
``static/docs/`` (versions and licenses: its README.md) and start them with a static script
(no inline script), under the same Content-Security-Policy as every page of the site.
"""

from __future__ import annotations

import re
import secrets

from fastapi import APIRouter, Response
from fastapi.responses import HTMLResponse

from .routes import CSP, STATIC, file_response, static_url

DOCS = STATIC / "docs"
_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*\.(css|js)$")

# The two <style> elements redoc.standalone.js adds as it loads, before ReDoc can be given a
# nonce (an empty one, and its scrollbar styles): allowed by their sha256.  A new ReDoc
# bundle may change them: tests/platform/web/test_apidocs.py fails on any refused style.
REDOC_STYLES = (
    "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=' "
    "'sha256-QMIg+bpjm3JdElJ388KYke01izlUW0UoNOeKjpMxdgc='"
)

router = APIRouter(include_in_schema=False)


def asset_url(name: str) -> str:
    """The URL of a vendored file: its content hash changes it whenever the file does."""
    return static_url(f"docs/{name}")


def _page(
    title: str, body: str, css: list[str], scripts: list[str], csp: str = CSP
) -> HTMLResponse:
    links = "".join(f'<link rel="stylesheet" href="{asset_url(c)}">' for c in css)
    tags = "".join(f'<script src="{asset_url(s)}"></script>' for s in scripts)
    html = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{title}</title>{links}</head><body>{body}{tags}</body></html>"
    )
    return HTMLResponse(
        html,
        headers={
            "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "same-origin",
        },
    )


@router.get("/docs")
def swagger_ui() -> HTMLResponse:
    """The API's reference, with "try it out" (Swagger UI)."""
    return _page(
        "Корова 006 arena API",
        '<div id="swagger-ui"></div>',
        ["swagger-ui.css"],
        ["swagger-ui-bundle.js", "swagger-init.js"],
    )


@router.get("/redoc")
def redoc() -> HTMLResponse:
    """The API's reference as one page (ReDoc).

    ReDoc styles itself with ``<style>`` elements it creates (styled-components): the policy
    stays the site's, plus a nonce of this response's for those styles and the hashes of the
    two it adds as it loads (no ``'unsafe-inline'``; scripts still come from the site only).
    ``redoc-init.js`` hands the nonce to ReDoc, which sets it on its style elements.  ReDoc's
    attribution logo (an image on cdn.redoc.ly) is refused by ``img-src 'self'``: never
    fetched.
    """
    nonce = secrets.token_urlsafe(16)
    csp = CSP.replace("style-src 'self'", f"style-src 'self' 'nonce-{nonce}' {REDOC_STYLES}")
    return _page(
        "Корова 006 arena API",
        f'<div id="redoc" data-nonce="{nonce}"></div>',
        [],
        ["redoc.standalone.js", "redoc-init.js"],
        csp,
    )


@router.get("/static/docs/{name}")
def docs_asset(name: str) -> Response:
    """The viewers' scripts and styles (this folder's, nothing else)."""
    return file_response(DOCS, name, _NAME, 86400)
